"""BFCL through the runner, on the simulator over loopback: native and prompt mode scored
apart, grades carrying BFCL's error types, and the CLI from `bfcl:` to the leaderboard."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.config.providers_file import ProvidersConfig
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.run.runner import regrade, run_prompt_set
from workbench.eval.store.database import Store
from workbench.eval.suites.bfcl import bfcl_dataset
from workbench.eval.suites.bfcl.reply import grade_reply
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.routing.cache import reply_from_dict
from workbench.sim import SimServer

FLEET = {
    "seed": 1,
    "persona": [
        {"id": "prose", "tool_style": "text", "latency_ms": 0},
        {"id": "fc", "tool_style": "native", "latency_ms": 0},
    ],
}


async def test_a_model_that_only_writes_prose_scores_zero_natively_and_more_in_prompt_mode(
    bfcl_wheel, tmp_path
):
    dataset = bfcl_dataset("simple_python,irrelevance", source=bfcl_wheel, limit=8)
    db = tmp_path / "bfcl.duckdb"
    async with SimServer(FLEET) as sim:

        def config(model: str) -> ProvidersConfig:
            return ProvidersConfig(
                model, [openai_compatible_provider("sim", sim.openai_url, "k", [model])]
            )

        with Store.open(db) as store:
            native = await run_prompt_set(
                dataset, [config("prose"), config("fc")], store, tools_mode="native", progress=False
            )
            native_requests = sim.requests()
            sim.reset()
            text = await run_prompt_set(
                dataset, [config("prose")], store, tools_mode="text", progress=False
            )
            text_requests = sim.requests()
            # What a resumed run would replay keeps the reply as written, and grades the same.
            saved = store.replies(text.run_id)
            again = await regrade(store, text.run_id, dataset)
            verdicts = {
                m: await store.capabilities.get("sim", m, _scope("k"), "tools")
                for m in ("prose", "fc")
            }
    with RunFrames.open(db) as wb:
        table = wb.bfcl_scores([native.run_id, text.run_id]).set_index(["model", "mode"])
        results = wb.bfcl_results([native.run_id, text.run_id])
    assert all(
        data.get("content", "").startswith("[")
        for turns in saved.values()
        for _, data in turns
        if data["tool_calls"]
    )
    assert (again.passed, again.graded) == (text.passed, text.graded) and text.passed > 0
    resumed = [
        grade_reply(
            item.expect.bfcl,
            reply_from_dict(saved[(item.id, 0, "prose")][0][1]).content or "",
            [],
            "text",
        ).valid
        for item in dataset.items
    ]
    assert sum(resumed) == text.passed
    # What each model can do is recorded from the same traffic: prose calls are still read.
    assert {m: v.verdict for m, v in verdicts.items() if v} == {"prose": "text", "fc": "native"}
    prose_native = table.loc[("sim:prose", "native")]
    assert prose_native["Python Simple AST"] == 0.0  # its prose is not a function call here
    assert prose_native["Irrelevance"] == 1.0  # ...so it never calls where it should not
    assert table.loc[("sim:prose", "text"), "Python Simple AST"] > 0.0
    assert table.loc[("sim:fc", "native"), "Python Simple AST"] > 0.0
    failed = results[
        (results.model == "sim:prose")
        & (results["mode"] == "native")
        & (results.category == "simple_python")
    ]
    assert set(failed.error_type) == {"ast_decoder:decoder_failed"}
    # Native mode sends BFCL's tools (underscored names); prompt mode sends BFCL's own prompt.
    sent = next(r["body"] for r in native_requests if "math_factorial" in json.dumps(r["body"]))
    assert "tools" in sent and "Here is a list of functions in json format" not in json.dumps(sent)
    prompted = next(r["body"] for r in text_requests if "math.factorial" in json.dumps(r["body"]))
    assert "tools" not in prompted
    assert prompted["messages"][0]["content"].startswith(
        "You are an expert in composing functions.You are given a question"
    )


def test_the_cli_runs_bfcl_categories_and_prints_the_leaderboard(bfcl_wheel, tmp_path):
    db = tmp_path / "cli.duckdb"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "run",
            "bfcl:simple_python,multiple",
            "--limit",
            "3",
            "--bfcl-source",
            str(bfcl_wheel),
            "--db",
            str(db),
            "--no-local",
            "--no-report",
            "--quiet",
            "--tools-mode",
            "native",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    with RunFrames.open(db) as wb:
        run_id = wb.latest_run()
        assert len(wb.bfcl_results(run_id)) == 6
    scores = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "bfcl", "scores", str(run_id), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert scores.returncode == 0, scores.stderr
    assert "Python Simple AST" in scores.stdout and "native" in scores.stdout


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["run", "bfcl:simple_pythonic"], "BFCL_CATEGORY_UNKNOWN"),
        (
            ["run", "bfcl:simple_python", "--bfcl-source", "/no/such/wheel.whl"],
            "BFCL_SOURCE_INVALID",
        ),
    ],
)
def test_bad_bfcl_arguments_exit_2_on_one_line(args, code, tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "workbench.cli", *args, "--db", str(tmp_path / "x.duckdb")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and code in run.stderr


def _scope(key: str) -> str:
    from workbench.capability import scope_key

    return scope_key(key)
