"""`workbench run bfcl:...` fetches BFCL's data the first time, saying so; without a registry
it says how to pass the data instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _run(tmp_path: Path, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "run",
            "bfcl:simple_python",
            "--limit",
            "1",
            "--no-local",
            "--db",
            str(tmp_path / "run.duckdb"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "WORKBENCH_BFCL_DIR": str(cache), **env},
    )


def test_the_first_bfcl_run_fetches_the_data_and_says_so(bfcl_wheel, tmp_path):
    cache = tmp_path / "bfcl"
    # pip finds the wheel in a local folder, as it would on the registry: no network needed.
    done = _run(tmp_path, cache, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(bfcl_wheel.parent))
    assert done.returncode == 0, done.stderr
    assert "downloading bfcl-eval==" in done.stderr and "nothing installed" in done.stderr
    assert (cache / bfcl_wheel.name).is_file()
    again = _run(tmp_path, cache, PIP_NO_INDEX="1")
    assert again.returncode == 0 and "downloading" not in again.stderr  # fetched once


def test_without_a_registry_the_run_says_how_to_pass_the_data(tmp_path):
    done = _run(tmp_path, tmp_path / "empty", PIP_NO_INDEX="1", PIP_FIND_LINKS="")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "BFCL_FETCH_FAILED" in last and "--bfcl-source PATH" in last
    assert "Traceback" not in done.stderr
