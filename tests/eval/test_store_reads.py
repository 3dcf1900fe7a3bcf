"""The store's typed reads (`Store.run`, `latest_run`, `leak_count`, `attempt_outcomes`,
`output_tally`) and the CLI's two tables (`RunFrames.verdict_rows`, `capability_rows`)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

import pytest

from workbench.capability.decide import make_record
from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.store.database import RunRecord, Store
from workbench.eval.store.schema import COLUMNS
from workbench.events import AttemptEvent, VerdictEvent

T0 = 1_767_225_600_000


@pytest.fixture
def store(tmp_path: Path):
    s = Store.open(tmp_path / "wb.duckdb", flush_s=1e9)
    yield s
    s.close()


def new_run(store: Store, name: str = "n") -> str:
    return store.start_run(
        name=name,
        dataset="smoke.jsonl",
        dataset_sha="sha",
        configs=["a", "b"],
        settings={"tools_mode": "auto"},
    )


def attempt(outcome: str, at_ms: int) -> AttemptEvent:
    return AttemptEvent(key="p:m", lane=None, outcome=outcome, start_ms=at_ms, latency_ms=1.0)


def verdict(provider: str, verdict: str, at_ms: int) -> VerdictEvent:
    return VerdictEvent(provider, "m", "default", "tools", verdict, True, "e", at_ms=at_ms)


def test_a_run_reads_as_a_frozen_record_of_its_row(store: Store):
    run_id = new_run(store)
    run = store.run(run_id)
    assert isinstance(run, RunRecord)
    assert (run.run_id, run.name, run.dataset, run.dataset_sha) == (
        run_id,
        "n",
        "smoke.jsonl",
        "sha",
    )
    assert run.status == "running" and run.finished_at is None
    assert isinstance(run.started_at, datetime) and run.version
    assert run.configs == ("a", "b") and run.settings == {"tools_mode": "auto"}
    store.finish_run(run_id, "finished")
    assert store.run(run_id).status == "finished" and store.run(run_id).finished_at is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = "failed"  # type: ignore[misc]


def test_every_column_of_runs_is_a_field_of_the_record():
    # A column added to `runs` (a migration) is read once it is a field: this says when.
    assert {f.name for f in dataclasses.fields(RunRecord)} == set(COLUMNS["runs"])


def test_an_unknown_run_is_run_unknown(store: Store):
    new_run(store)
    with pytest.raises(ConfigError) as err:
        store.run("nope-123")
    assert err.value.code == "RUN_UNKNOWN" and "nope-123" in str(err.value)


def test_the_latest_run_is_the_one_started_last_and_none_without_runs(store: Store):
    assert store.latest_run() is None
    first, second = new_run(store, "first"), new_run(store, "second")
    store.con.execute(
        "UPDATE runs SET started_at = started_at - INTERVAL 1 HOUR WHERE run_id = ?", [second]
    )
    latest = store.latest_run()
    assert latest is not None and latest.run_id == first and latest.name == "first"
    # Started in the same instant: the larger id (ids sort by start time) is the latest.
    store.con.execute("UPDATE runs SET started_at = TIMESTAMP '2026-01-01 00:00:00'")
    latest = store.latest_run()
    assert latest is not None and latest.run_id == max(first, second)


def test_leaks_are_counted_per_run(store: Store):
    run_id, other = new_run(store), new_run(store)
    assert store.leak_count(run_id) == 0
    store.add_leaks(
        [
            {"run_id": run_id, "item_id": "i1", "kind": "email", "value_sha": "x"},
            {"run_id": run_id, "item_id": "i2", "kind": "phone", "value_sha": "y"},
            {"run_id": other, "item_id": "i1", "kind": "email", "value_sha": "x"},
        ]
    )
    assert store.leak_count(run_id) == 2 and store.leak_count(other) == 1


def test_attempts_are_counted_per_outcome(store: Store):
    run_id, other = new_run(store), new_run(store)
    for i, outcome in enumerate(("ok", "error", "error", "skipped_quota")):
        store.write(attempt(outcome, T0 + i), run_id=run_id)
    store.write(attempt("ok", T0), run_id=other)
    store.flush()
    outcomes = store.attempt_outcomes(run_id)
    assert outcomes == {"ok": 1, "error": 2, "skipped_quota": 1}
    assert outcomes["partial"] == 0  # a Counter: an outcome the run never had is 0


def test_the_outputs_tally_counts_rows_distinct_outputs_unexplained_ones_and_codes(store: Store):
    run_id = new_run(store)
    store.add_output({"run_id": run_id, "item_id": "i1", "repeat": 0, "config": "a", "raw": "hi"})
    store.add_output(
        {"run_id": run_id, "item_id": "i2", "repeat": 0, "config": "a", "error_code": "ALL_FAILED"}
    )
    store.add_output(
        {"run_id": run_id, "item_id": "i3", "repeat": 0, "config": "a", "error_code": "ALL_FAILED"}
    )
    store.add_output({"run_id": run_id, "item_id": "i4", "repeat": 1, "config": "b"})
    store.flush()
    tally = store.output_tally(run_id)
    assert (tally.outputs, tally.distinct, tally.unexplained) == (4, 4, 1)
    assert tally.codes == {"ALL_FAILED": 2}
    assert store.output_tally("nope").outputs == 0


def test_the_clis_verdict_and_capability_tables(tmp_path: Path):
    db = tmp_path / "wb.duckdb"
    with Store.open(db) as store:
        run_id = new_run(store)
        for i, said in enumerate(("native", "native", "text")):
            store.write(verdict("p", said, T0 + i), run_id=run_id)
        store.write(verdict("a", "none", T0), run_id=new_run(store))
        store.put_capability(make_record("p", "m", "default", "tools", "native", "probe", "e"))
        store.put_capability(make_record("a", "z", "default", "tools", "none", "probe"))
    with RunFrames.open(db) as wb:
        verdicts = wb.verdict_rows(run_id)
        capabilities = wb.capability_rows()
    assert list(verdicts.columns) == [
        "provider",
        "model",
        "capability",
        "verdict",
        "protocol_family",
        "recorded",
        "evidence",
        "n",
    ]
    counted = sorted(zip(verdicts["verdict"], verdicts["n"], strict=True))
    assert counted == [("native", 2), ("text", 1)] and set(verdicts["provider"]) == {"p"}
    assert list(capabilities.columns) == [
        "provider",
        "model",
        "capability",
        "verdict",
        "protocol_family",
        "via",
        "observed_at",
        "evidence",
    ]
    assert list(zip(capabilities["provider"], capabilities["verdict"], strict=True)) == [
        ("a", "none"),
        ("p", "native"),
    ]
