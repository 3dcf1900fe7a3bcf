"""Shared by the benchmarks: the simulator in a separate process, and small statistics.

The simulator runs as `python -m workbench.cli sim serve --port P --fleet FILE` in its own
process, so the client under test and the server do not share one GIL (they still share the
machine's cores). The fleet is one zero-latency persona, so every figure is software cost,
never a deliberate sleep.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

PERSONA = "bench"
RESULTS = Path(__file__).with_name("results")

FLEET_TOML = f"""\
seed = 1
description = "benchmark fleet: one zero-latency persona"

[[persona]]
id = "{PERSONA}"
tool_style = "native"
vision = true
latency_ms = 0
latency_jitter_ms = 0
ttft_ms = 0
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SimProcess:
    """`with SimProcess() as sim:` starts the simulator in a child process and stops it."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.openai_url = self.base_url + "/v1"
        self._dir = tempfile.TemporaryDirectory(prefix="workbench-bench-")
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def __enter__(self) -> SimProcess:
        fleet = Path(self._dir.name) / "fleet.toml"
        fleet.write_text(FLEET_TOML, encoding="utf-8")
        cmd = [
            sys.executable,
            "-m",
            "workbench.cli",
            "sim",
            "serve",
            "--port",
            str(self.port),
            "--fleet",
            str(fleet),
        ]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode() if self._proc.stderr else ""
                raise RuntimeError(f"the simulator exited early ({self._proc.returncode}): {err}")
            try:
                if httpx.get(self.openai_url + "/models", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("the simulator did not answer GET /v1/models within 20 s")
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._dir.cleanup()

    def reset(self) -> None:
        """Clear the simulator's request log (it keeps every request body in memory)."""
        httpx.post(self.base_url + "/sim/reset", timeout=5)

    def cpu_seconds(self) -> float:
        """User + system CPU time the simulator process has used so far (Linux /proc)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
