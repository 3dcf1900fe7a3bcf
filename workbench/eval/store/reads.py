"""What the file says of a run, as typed records: the run's own row (`RunRecord`), and the
few counts the checks of a run read (leaks, attempts per outcome, the outputs' tally).

These are the reads a caller wants as Python values rather than DataFrames: the CLI's hint
of the run to resume, the report's facts of a run, the chaos run's checks. They are methods
of `Store` (`store.run(run_id)`, `store.latest_run()`, ...), which runs them under its lock;
their SQL lives here, beside the module that writes. DataFrames for analysis are `RunFrames`'.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from workbench.errors import ConfigError
from workbench.eval.store.schema import COLUMNS

__all__ = ["BatchRecord", "OutputTally", "RunRecord"]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One `runs` row. `started_at`/`finished_at` are naive UTC (as DuckDB's TIMESTAMP hands
    them back); JSON columns are read (`configs` as a tuple, `settings` and `config` as dicts).
    Each field
    is the column of its name: a column added to `runs` is read once it is a field here."""

    run_id: str
    name: str | None
    dataset: str | None
    dataset_sha: str | None
    started_at: datetime | None
    finished_at: datetime | None
    status: str | None
    version: str | None
    configs: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    # The run's whole `RunConfig`, field by field (`RunConfig.from_row` reads it back); None
    # for a run logged before the row kept it.
    config: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One `batches` row: a vendor's batch of a `--batch` run, journaled when the vendor gave it
    its id. `requests` are its custom ids; `status` is `submitted` until its answers are
    logged (`collected`), or what ended it otherwise (`expired`, `failed`, `cancelled`)."""

    run_id: str
    batch_id: str
    config: str
    provider: str
    model: str
    round: int
    requests: tuple[str, ...]
    status: str
    message: str | None = None
    submitted_ms: int | None = None
    updated_ms: int | None = None


_BATCH_FIELDS = tuple(f.name for f in fields(BatchRecord))
SELECT_BATCHES = f"SELECT {', '.join(_BATCH_FIELDS)} FROM batches WHERE run_id = ? ORDER BY submitted_ms, batch_id"


def batch_record(row: tuple[Any, ...]) -> BatchRecord:
    values = dict(zip(_BATCH_FIELDS, row, strict=True))
    values["requests"] = tuple(json.loads(values["requests"] or "[]"))
    return BatchRecord(**values)


_RUN_FIELDS = tuple(f.name for f in fields(RunRecord))
_SELECT_RUN = f"SELECT {', '.join(_RUN_FIELDS)} FROM runs"


def _record(row: tuple[Any, ...]) -> RunRecord:
    values = {
        name: json.loads(value) if COLUMNS["runs"][name] == "JSON" and value is not None else value
        for name, value in zip(_RUN_FIELDS, row, strict=True)
    }
    values["configs"] = tuple(values["configs"] or ())
    values["settings"] = dict(values["settings"] or {})
    return RunRecord(**values)


def run(con: duckdb.DuckDBPyConnection, path: Path, run_id: str) -> RunRecord:
    rows = con.execute(f"{_SELECT_RUN} WHERE run_id = ?", [run_id]).fetchall()
    if not rows:
        raise ConfigError(f"no run {run_id!r} in {path}", code="RUN_UNKNOWN")
    return _record(rows[0])


def latest_run(con: duckdb.DuckDBPyConnection) -> RunRecord | None:
    # Run ids start with their UTC start time: the id breaks a tie of two runs in one instant.
    rows = con.execute(f"{_SELECT_RUN} ORDER BY started_at DESC, run_id DESC LIMIT 1").fetchall()
    return _record(rows[0]) if rows else None


def leak_count(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    row = con.execute("SELECT count(*) FROM leaks WHERE run_id = ?", [run_id]).fetchone()
    return int(row[0]) if row else 0


def attempt_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> Counter[str]:
    rows = con.execute(
        "SELECT outcome, count(*) FROM attempts WHERE run_id = ? GROUP BY outcome", [run_id]
    ).fetchall()
    return Counter({str(outcome): int(n) for outcome, n in rows})


@dataclass(frozen=True, slots=True)
class OutputTally:
    """How a run's outputs add up: `outputs` rows, `distinct` (item, repeat, configuration)
    among them, `unexplained`: outputs with neither an answer nor an error code (a run
    promises none), and `codes`: outputs per error code."""

    outputs: int
    distinct: int
    unexplained: int
    codes: dict[str, int]


def output_tally(con: duckdb.DuckDBPyConnection, run_id: str) -> OutputTally:
    row = con.execute(
        "SELECT count(*), count(DISTINCT (item_id, repeat, config)), "
        "count(*) FILTER (WHERE error_code IS NULL AND raw IS NULL) FROM outputs "
        "WHERE run_id = ?",
        [run_id],
    ).fetchone()
    if row is None:  # an aggregate without GROUP BY always returns its row
        raise RuntimeError("counting a run's outputs returned no row")
    codes = con.execute(
        "SELECT error_code, count(*) FROM outputs WHERE run_id = ? "
        "AND error_code IS NOT NULL GROUP BY ALL",
        [run_id],
    ).fetchall()
    return OutputTally(int(row[0]), int(row[1]), int(row[2]), {str(c): int(n) for c, n in codes})
