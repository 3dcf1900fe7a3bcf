"""`inspect eval --model workbench/chain` finds the provider by the `inspect_ai` entry point that
pyproject.toml declares: nothing imported by hand, as a user who installed the extra runs it.

The test installs nothing: it lays a dist-info beside the checkout whose `entry_points.txt` is
the `[project.entry-points.inspect_ai]` table of pyproject.toml, read as it stands, and runs
Inspect's own command in a fresh process with that folder on its path."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from workbench.eval.analysis.frames import RunFrames

ROOT = Path(__file__).resolve().parents[3]
TASK = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def capitals():
    return Task(
        dataset=[Sample(id="fr", input="What is the capital of France?", target="Paris")],
        solver=generate(),
        scorer=includes(),
    )
"""


def _entry_points(tmp_path: Path) -> Path:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    lines = "".join(f"{name} = {target}\n" for name, target in declared["inspect_ai"].items())
    info = tmp_path / "site" / "workbench_entry_check-0.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: workbench-entry-check\n")
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")
    return info.parent


def _inspect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    site = _entry_points(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "WB_TEST_ENTRY_KEY": "sk-entry-point-secret",
        "INSPECT_LOG_DIR": str(tmp_path / "logs"),
    }
    (tmp_path / "task.py").write_text(TASK)
    command = [sys.executable, "-m", "inspect_ai", "eval", "task.py", *args]
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def test_inspect_eval_finds_workbench_by_its_entry_point(tmp_path, sim):
    providers = tmp_path / "providers.toml"
    providers.write_text(
        f'[router]\nname = "cli"\n[[providers]]\nid = "sim"\nbase_url = "{sim.openai_url}"\n'
        'key_env = "WB_TEST_ENTRY_KEY"\nmodels = ["sim-native"]\n'
    )
    db = tmp_path / "cli.duckdb"
    done = _inspect(
        tmp_path,
        "--model",
        "workbench/chain",
        "-M",
        f"providers={providers}",
        "-M",
        f"db={db}",
        "--display",
        "plain",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "sk-entry-point-secret" not in done.stdout + done.stderr
    with RunFrames.open(db, snapshot=True) as wb:
        [run] = wb.runs().to_dict("records")
        assert (run["dataset"], run["status"]) == ("inspect:capitals", "finished")
        assert list(wb.outputs(run["run_id"])["passed"]) == [True]
        assert list(wb.attempts(run["run_id"])["key"]) == ["sim:sim-native"]


def test_a_missing_providers_file_is_one_line_without_a_traceback(tmp_path):
    done = _inspect(tmp_path, "--model", "workbench/chain", "--display", "plain")
    assert done.returncode != 0
    said = (done.stdout + done.stderr).strip()
    assert "INSPECT_MODEL_INVALID: workbench/chain needs -M providers=FILE" in said
    assert "Traceback" not in said


def test_the_entry_point_imports_nothing_heavy():
    """Inspect loads every entry point whatever the model: an `inspect eval --model openai/...`
    must not pay for the router and DuckDB because the extra is installed."""
    code = (
        "import sys, inspect_ai\n"
        "before = set(sys.modules)\n"
        "import workbench.eval.inspect_model._registry\n"
        "heavy = {'duckdb', 'pandas', 'workbench.routing', 'workbench.eval.gateway'}\n"
        "print(sorted(heavy & (set(sys.modules) - before)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
