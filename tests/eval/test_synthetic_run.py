"""The synthetic run is a run as the readers see it: its rows add up the way a real run's do."""

from __future__ import annotations

import duckdb
import pytest

from workbench.eval.analysis.frames import RunFrames
from workbench.eval.store.synthetic import synthesize_run


def test_a_synthetic_run_reads_back_as_a_finished_run_with_every_shape(tmp_path):
    db = tmp_path / "big.duckdb"
    run_id = synthesize_run(db, 2_000)
    with RunFrames.open(db) as wb:
        assert wb.latest_run() == run_id
        outputs = wb.outputs(run_id)
        attempts = wb.attempts(run_id)
    assert len(outputs) == 2_000 and outputs["item_id"].is_unique
    assert outputs["item_id"].max() == "item-1999"  # zero-padded: the last sorts last
    assert set(outputs["unanswered"].dropna()) == {"max_wait"}
    assert {True, False} <= set(outputs["passed"].dropna())
    assert outputs["error_code"].notna().sum() > 0
    # A fallback: the first model refused with a 429, the second answered.
    chains = set(attempts.groupby("item_id")["outcome"].apply(tuple))
    assert {("error", "ok"), ("ok",), ("error", "error")} <= chains
    con = duckdb.connect(str(db), read_only=True)
    try:
        steps = con.execute("SELECT count(*), count(ok) FROM tool_steps").fetchone()
    finally:
        con.close()
    assert steps is not None and steps[0] == 2 * steps[1] > 0  # each step's start and end


def test_the_same_item_is_the_same_in_every_file(tmp_path):
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    synthesize_run(a, 50)
    synthesize_run(b, 500)
    with RunFrames.open(a) as x, RunFrames.open(b) as y:
        first = x.outputs().drop(columns=["at_ms"]).head(50)
        second = y.outputs().drop(columns=["at_ms"]).head(50)
    # The ids are padded to each run's width: compare by number.
    first["item_id"] = first["item_id"].str.replace("item-0*", "", regex=True)
    second["item_id"] = second["item_id"].str.replace("item-0*", "", regex=True)
    assert (
        first.sort_values("item_id")
        .reset_index(drop=True)
        .equals(
            second[second["item_id"].isin(first["item_id"])]
            .sort_values("item_id")
            .reset_index(drop=True)
        )
    )


def test_a_run_of_no_items_is_refused(tmp_path):
    with pytest.raises(ValueError):
        synthesize_run(tmp_path / "x.duckdb", 0)
