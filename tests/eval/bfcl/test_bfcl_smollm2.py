"""The real SmolLM2 plays a BFCL multi-turn entry through the runner, in prompting mode: each
turn asked, each step's calls run against BFCL's backends in the sandbox, the trace graded by
BFCL's rules. What it scores is
the model's business; that it is played and graded end to end is the test's."""

from __future__ import annotations

import dataclasses
import json
import os

import duckdb
import pytest

from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.eval.suites.bfcl import bfcl_dataset, grade_multi_turn
from workbench.local.provider_config import local_config
from workbench.local.server import local_model_available

if not local_model_available():
    if os.environ.get("CI"):
        pytest.fail("CI must install the `local` extra: the real-model test cannot be skipped")
    pytest.skip("the `local` extra is not installed", allow_module_level=True)

pytestmark = pytest.mark.local_model

ENTRY = "multi_turn_base_100"  # TradingBot alone, two turns: the smallest tools of the category


@pytest.mark.slow
async def test_smollm2_plays_a_multi_turn_entry_graded_as_bfcl_grades_it(bfcl_wheel, tmp_path):
    # Prompting mode: BFCL's system prompt and decoder. (In function calling, llama.cpp's chatml
    # calls keep this model calling up to BFCL's 20 steps a turn: minutes on a CPU.)
    mode, tools = "text", False
    from workbench.local.server import LocalModel

    dataset = bfcl_dataset("multi_turn_base", source=bfcl_wheel)
    item = next(i for i in dataset.items if i.id == ENTRY)
    dataset = dataclasses.replace(dataset, items=(item,))
    db = tmp_path / "smol.duckdb"
    with LocalModel(n_ctx=8192, tools=tools) as model, Store.open(db) as store:
        config = local_config(model.base_url, model.model_id, tools=tools)
        # Greedy and short: a call is a few dozen tokens, and a CPU is slow.
        config.providers[0].extra.update(temperature=0.0, max_tokens=96)
        summary = await run_prompt_set(
            dataset, config, store, tools_mode=mode, progress=False, concurrency=1
        )
    con = duckdb.connect(str(db), read_only=True)
    passed, grade, error = con.execute(
        "SELECT passed, grade, error_code FROM outputs WHERE run_id = ?", [summary.run_id]
    ).fetchone()
    assert error is None, error
    logged = json.loads(grade)
    assert 1 <= len(logged["turns"]) <= len(item.expect.bfcl.turns)
    steps = sum(len(turn) for turn in logged["turns"])
    attempts = con.execute(
        "SELECT count(*) FROM attempts WHERE run_id = ?", [summary.run_id]
    ).fetchone()[0]
    assert attempts >= steps  # every step was a logged model call
    # The verdict is BFCL's on the trace the run logged.
    again = grade_multi_turn(item.expect.bfcl, logged["turns"])
    assert (again.valid, again.error_type) == (passed, logged.get("error_type"))
