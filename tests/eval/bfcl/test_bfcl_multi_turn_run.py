"""BFCL's multi-turn entries through the runner: each turn's message in order, each step's
calls run against BFCL's own backends in the sandbox, every attempt, step and reply logged,
graded as BFCL grades the trace; and `kill -9` mid-entry, then `--resume`, rebuilds the
backends' state from the logged steps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import duckdb
import httpx
import pytest

from workbench.config.providers_file import ProvidersConfig
from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.eval.suites.bfcl import bfcl_dataset, grade_multi_turn
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.sim import SimServer
from workbench.sim.process import SimProcess

MULTI_TURN = "multi_turn_base,multi_turn_miss_func,multi_turn_miss_param,multi_turn_long_context"


def _config(sim: SimServer, persona: str) -> ProvidersConfig:
    return ProvidersConfig(
        persona, [openai_compatible_provider("sim", sim.openai_url, "k", [persona])]
    )


async def _run(bfcl_wheel, tmp_path, categories: str, persona: str, mode: str, limit: int):
    dataset = bfcl_dataset(categories, source=bfcl_wheel, limit=limit)
    db = tmp_path / f"{persona}-{mode}.duckdb"
    async with SimServer() as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(
                dataset, [_config(sim, persona)], store, tools_mode=mode, progress=False
            )
    return dataset, db, summary.run_id


@pytest.mark.parametrize("mode", ["native", "text"])
async def test_the_oracle_scores_every_multi_turn_category_in_both_modes(
    bfcl_wheel, tmp_path, mode
):
    dataset, db, run_id = await _run(bfcl_wheel, tmp_path, MULTI_TURN, "bfcl-oracle", mode, 3)
    with RunFrames.open(db) as wb:
        results = wb.bfcl_results(run_id)
    assert len(results) == len(dataset.items) == 12
    assert results["valid"].all(), results.loc[~results["valid"], ["item_id", "reason"]]


async def test_every_step_is_logged_and_the_trace_is_graded_as_logged(bfcl_wheel, tmp_path):
    dataset, db, _run_id = await _run(
        bfcl_wheel, tmp_path, "multi_turn_base", "bfcl-oracle", "native", 2
    )
    con = duckdb.connect(str(db), read_only=True)
    for item in dataset.items:
        entry = item.expect.bfcl
        (grade,) = con.execute("SELECT grade FROM outputs WHERE item_id = ?", [item.id]).fetchone()
        logged = json.loads(grade)
        # One turn per user turn; each turn's first step holds the ground truth's calls.
        assert len(logged["turns"]) == len(entry.turns)
        calls = sum(len(step) for turn in logged["turns"] for step in turn)
        assert calls == sum(len(t) for t in entry.ground_truth)
        steps = sum(len(turn) for turn in logged["turns"])
        attempts, replies, tool_steps = (
            con.execute(f"SELECT count(*) FROM {table} WHERE item_id = ?", [item.id]).fetchone()[0]
            for table in ("attempts", "replies", "tool_steps")
        )
        assert attempts == replies == steps  # every model call was an attempt and a journaled reply
        assert tool_steps == 2 * calls  # a step row when a call starts, one when it finished
        # The grade is BFCL's verdict on the trace the run logged.
        assert grade_multi_turn(entry, logged["turns"]).valid is True


async def test_a_mistake_is_graded_as_bfcl_grades_it(bfcl_wheel, tmp_path):
    dataset, db, _run_id = await _run(
        bfcl_wheel, tmp_path, "multi_turn_base", "bfcl-skips-step", "native", 12
    )
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT item_id, passed, grade FROM outputs ORDER BY item_id").fetchall()
    failed = [(i, json.loads(g)) for i, passed, g in rows if not passed]
    assert failed, "the persona skips a step on half of the entries"
    items = {item.id: item for item in dataset.items}
    for item_id, grade in failed:
        assert grade["error_type"].startswith("multi_turn:")
        again = grade_multi_turn(items[item_id].expect.bfcl, grade["turns"])
        assert (again.valid, again.error_type) == (False, grade["error_type"])


def test_batch_mode_refuses_multi_turn_entries(bfcl_wheel, tmp_path):
    import asyncio

    dataset = bfcl_dataset("multi_turn_base", source=bfcl_wheel, limit=1)
    with Store.open(tmp_path / "b.duckdb") as store, pytest.raises(ConfigError) as refused:
        asyncio.run(run_prompt_set(dataset, [], store, batch=True, progress=False))
    assert refused.value.code == "BATCH_UNSUPPORTED"


# ------------------------------------------------------------------ kill -9, then --resume

FLEET = """\
seed = 1
[[persona]]
id = "oracle-slow"
tool_style = "native"
bfcl = "oracle"
latency_ms = 60
latency_jitter_ms = 0
ttft_ms = 0
context_window = 1000000
"""


def _command(tmp_path, url: str, *extra: str) -> list[str]:
    providers = tmp_path / "providers.toml"
    providers.write_text(
        f'[router]\nname = "oracle"\n[[providers]]\nid = "sim"\nadapter = "openai"\n'
        f'base_url = "{url}/v1"\nkey_env = "SIM_KEY"\nmodels = ["oracle-slow"]\n'
    )
    return [
        sys.executable, "-m", "workbench.cli", "run", "bfcl:multi_turn_base", "--limit", "4",
        "--providers", str(providers), "--db", str(tmp_path / "run.duckdb"),
        "--tools-mode", "native", "--concurrency", "2", "--quiet", "--no-report", *extra,
    ]  # fmt: skip


def _asked(url: str) -> int:
    log = httpx.get(url + "/sim/requests", timeout=10).json()
    return sum(1 for r in log if r["path"].endswith("/completions"))


def test_kill_9_mid_entry_then_resume_rebuilds_the_backends_from_the_logged_steps(
    bfcl_wheel, tmp_path
):
    env = {**os.environ, "SIM_KEY": "sim-key", "WORKBENCH_BFCL_DIR": str(bfcl_wheel.parent)}
    with SimProcess(fleet_toml=FLEET) as sim:
        url = sim.base_url
        run = subprocess.Popen(_command(tmp_path, url), env=env, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _asked(url) < 5:  # a few steps in: entries started, none finished
            assert run.poll() is None, run.stderr.read() if run.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
        run.send_signal(signal.SIGKILL)
        run.wait()
        db = tmp_path / "run.duckdb"
        with Store.open(db) as store:
            run_id = store.con.execute("SELECT run_id FROM runs").fetchone()[0]
            journaled = sum(len(v) for v in store.replies(run_id).values())
            done = store.con.execute("SELECT count(*) FROM outputs").fetchone()[0]
        assert journaled >= 2 and done < 4  # killed mid-entry, with steps logged
        httpx.post(url + "/sim/reset", timeout=10)
        resumed = subprocess.run(
            _command(tmp_path, url, "--resume", run_id), env=env, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
        con = duckdb.connect(str(db), read_only=True)
        rows = con.execute("SELECT item_id, passed, grade FROM outputs ORDER BY item_id").fetchall()
        steps = sum(len(turn) for _, _, g in rows for turn in json.loads(g)["turns"])
        # Every entry finished once and passed; no journaled step was asked again.
        assert len(rows) == 4 and all(passed for _, passed, _ in rows)
        assert _asked(url) == steps - journaled

    # The backends answered the resumed entries exactly as an uninterrupted run's did: their
    # state was rebuilt from the logged steps before the next step ran.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    import asyncio

    async def uninterrupted():
        dataset = bfcl_dataset("multi_turn_base", source=bfcl_wheel, limit=4)
        async with SimServer() as s:
            with Store.open(fresh / "f.duckdb") as store:
                await run_prompt_set(
                    dataset, [_config(s, "bfcl-oracle")], store, tools_mode="native",
                    progress=False,
                )  # fmt: skip

    asyncio.run(uninterrupted())
    ours = {i: json.loads(g)["results"] for i, _, g in rows}
    theirs = dict(
        (i, json.loads(g)["results"])
        for i, g in duckdb.connect(str(fresh / "f.duckdb"), read_only=True)
        .execute("SELECT item_id, grade FROM outputs")
        .fetchall()
    )
    assert ours == theirs
