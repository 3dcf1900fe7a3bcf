"""The command starts without the heavy libraries a run does not use.

pandas and numpy, matplotlib, the notebook side (ipywidgets, IPython), pyarrow, jsonschema,
the simulator's web stack (starlette, uvicorn), redis, tqdm and llama.cpp each cost tens to
hundreds of milliseconds to import, against a one-item run that should take well under a
second. Each test imports in a fresh interpreter (this one has loaded everything) and
lists which of them got loaded; how long anything takes is measured in benchmarks/, never
here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = (
    "IPython",
    "ipywidgets",
    "jsonschema",
    "llama_cpp",
    "matplotlib",
    "numpy",
    "pandas",
    "pyarrow",
    "redis",
    "starlette",
    "tqdm",
    "uvicorn",
)


def _loaded_after(code: str, cwd: Path | None = None) -> list[str]:
    """The HEAVY modules a fresh interpreter holds after running `code`."""
    probe = f"{code}\nimport sys\nprint(json.dumps(sorted(set({HEAVY!r}) & set(sys.modules))))"
    out = subprocess.run(
        [sys.executable, "-c", f"import json\n{probe}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_cli_and_the_run_path_loads_no_heavy_module():
    loaded = _loaded_after(
        "import workbench, workbench.cli\n"
        "import workbench.eval.run.runner, workbench.eval.store.database, workbench.config.providers_file\n"
        "import workbench.eval.dataset.prompt_set, workbench.routing, workbench.providers\n"
        "import workbench.capability, workbench.text, workbench.tools\n"
    )
    assert loaded == []


def test_help_loads_neither_httpx_nor_duckdb():
    """`workbench --help` parses arguments: the provider stack and the store wait for a verb."""
    code = (
        "import contextlib, io, sys\n"
        "from workbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "print(json.dumps(sorted({'aiohttp', 'duckdb', 'httpx'} & set(sys.modules))))\n"
        "import workbench\n"  # the package's names resolve on first use all the same
        "assert workbench.ChatRequest.__module__ == 'workbench.types'\n"
    )
    assert _loaded_after(code) == []


def test_a_runs_options_load_neither_the_store_nor_pandas():
    """A `RunConfig` is made before any file is opened (a notebook, a test, the CLI's flags)."""
    code = (
        "import sys\nfrom workbench.eval import RunConfig, RunHooks\nRunConfig()\n"
        "print(sorted({'duckdb', 'pandas'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_reading_pending_actions_does_not_load_jsonschema():
    """The store reads `tools.pending` on every run; validating tool schemas is for tools."""
    assert "jsonschema" not in _loaded_after("import workbench.tools.pending, workbench.tools.demo")
    checks_a_schema = (
        "from workbench.tools import Tool, validate_native_tools\n"
        "validate_native_tools([Tool('t', 'd', {'type': 'object'}, 'read', print)])\n"
    )
    assert "jsonschema" in _loaded_after(checks_a_schema)  # still checked, when there are tools


def _one_item_run(tmp_path: Path, *flags: str) -> list[str]:
    """What a whole one-item `workbench run` (embedded simulator) left loaded."""
    dataset = tmp_path / "one.jsonl"
    dataset.write_text('{"id": "one", "prompt": "hi"}\n', encoding="utf-8")
    args = ["run", str(dataset), "--db", str(tmp_path / "one.duckdb"), "--no-local", "--quiet"]
    code = (
        "import contextlib, io\n"
        "from workbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({[*args, *flags]!r}) == 0\n"
    )
    return _loaded_after(code, cwd=tmp_path)


def test_a_one_item_run_loads_only_the_simulator_web_stack(tmp_path):
    """With the report off, nothing heavy but the embedded simulator's own server."""
    assert _one_item_run(tmp_path, "--no-report") == ["starlette", "uvicorn"]


def test_the_report_of_a_run_draws_without_matplotlib(tmp_path):
    """The report renders analysis's DataFrames (pandas), and draws its charts itself."""
    loaded = _one_item_run(tmp_path)
    assert "matplotlib" not in loaded
    # pyarrow only as pandas's own import: pandas loads it whenever it is installed (the
    # `inspect` extra brings it), and nothing of ours asks for it.
    assert set(loaded) <= {"numpy", "pandas", "pyarrow", "starlette", "uvicorn"}
    assert list((tmp_path / "reports").glob("*.html"))
