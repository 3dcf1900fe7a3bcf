"""Shared by the benchmarks: the simulator in a separate process, and small statistics.

`SimProcess` (from `workbench.sim.process`) runs `python -m workbench.cli sim serve` in its own
process, so the client under test and the server do not share one GIL (they still share the
machine's cores). Its default fleet is one zero-latency persona, `PERSONA`, so every figure is
software cost, never a deliberate sleep.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
from pathlib import Path
from typing import Any

import httpx

from workbench.sim.process import FLEET_TOML, PERSONA, SimProcess

__all__ = [
    "FLEET_TOML",
    "PERSONA",
    "RESULTS",
    "SimProcess",
    "machine",
    "median",
    "percentile",
    "write_json",
]

RESULTS = Path(__file__).with_name("results")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "httpx": httpx.__version__,
    }


def write_json(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path
