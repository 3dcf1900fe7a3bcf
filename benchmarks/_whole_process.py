"""Shared by the whole-process benchmarks: `workbench` and Inspect AI's `inspect`, as a user runs them.

Inspect AI is never a dependency of the project: it runs from `benchmarks/.venv-inspect`, a
venv built on first use (`python -m venv`, `pip install inspect-ai openai`, plus
`google-genai` for a benchmark that talks to a Gemini-style endpoint). Every measured program
is a child process timed from outside, so its start-up counts as a user's would.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INSPECT_VENV = HERE / ".venv-inspect"
INSPECT_PYTHON = INSPECT_VENV / "bin" / "python"
INSPECT_BIN = INSPECT_VENV / "bin" / "inspect"

# pip name -> the module it must make importable
_INSPECT_PACKAGES = {"inspect-ai": "inspect_ai", "openai": "openai"}
_GOOGLE_PACKAGES = {"google-genai": "google.genai"}

# The items as an Inspect task, for `inspect eval task.py -T items=ITEMS`: each line
# {"id": ..., "prompt": "Reply with exactly: pong 7"}, target the text after ": ".
INSPECT_TASK = '''\
"""The benchmark's prompts as an Inspect task: one generate() per sample, includes() scorer."""

import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def bench(items: str) -> Task:
    rows = [json.loads(line) for line in Path(items).read_text().splitlines() if line.strip()]
    samples = [
        Sample(id=r["id"], input=r["prompt"], target=r["prompt"].split(": ", 1)[1])
        for r in rows
    ]
    return Task(dataset=MemoryDataset(samples), solver=generate(), scorer=includes())
'''


def run_process(
    cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 1200
) -> dict[str, Any]:
    """Run `cmd` to completion: wall time, its CPU (and its reaped children's), output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall": wall,
        "cpu_s": cpu,
        "exit": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
    }


def workbench_cmd() -> list[str]:
    """The `workbench` console script next to this Python, else `python -m workbench.cli`."""
    script = Path(sys.executable).with_name("workbench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "workbench.cli"]


def inspect_version() -> dict[str, str] | None:
    code = (
        "import importlib.metadata as m, json;"
        "print(json.dumps({d: m.version(d) for d in ('inspect_ai', 'openai', 'httpx')}))"
    )
    try:
        out = subprocess.run([str(INSPECT_PYTHON), "-c", code], capture_output=True, text=True)
        return json.loads(out.stdout)
    except (OSError, ValueError):
        return None


def ensure_inspect_venv(*, google: bool = False) -> Path:
    """benchmarks/.venv-inspect with inspect-ai and openai (and google-genai) installed.

    Built on first use; a venv missing a package gets it installed, so a benchmark that needs
    Inspect's Google provider can share the venv another one built without it.
    """
    packages = _INSPECT_PACKAGES | (_GOOGLE_PACKAGES if google else {})
    probe = "import " + ", ".join(packages.values())
    if INSPECT_BIN.exists():
        if subprocess.run([str(INSPECT_PYTHON), "-c", probe], capture_output=True).returncode == 0:
            return INSPECT_BIN
        names = ", ".join(packages)
        print(f"{INSPECT_VENV} exists but cannot import one of {names}; installing into it")
    else:
        print(
            f"Inspect AI runs in its own venv, never in the project's: creating {INSPECT_VENV}\n"
            f"  (one time: python -m venv, pip install {' '.join(packages)}; needs PyPI; "
            "--no-inspect skips this part)",
            flush=True,
        )
        subprocess.run([sys.executable, "-m", "venv", str(INSPECT_VENV)], check=True)
    pip = [str(INSPECT_PYTHON), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *packages], check=True)
    return INSPECT_BIN
