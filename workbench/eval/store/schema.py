"""The DuckDB schema of the workbench store: its tables and the migrations that bring a file up
to date.

Migrations are an ordered list of ``(version, SQL)``. Opening a file (the store does it)
applies every migration newer than the file's ``schema_version`` in ONE transaction, so a file
is never left half upgraded; a file written by a newer workbench is refused
(``STORE_TOO_NEW``) rather than misread. A migration's SQL is frozen once released: change
the schema by appending one.

``COLUMNS`` is what the writer appends, in table order: it must describe the latest version
(a test compares it with the tables a fresh file gets). It is the code's one declaration of
each table's shape: the store builds every row from it; `OutputRow`'s fields are the `outputs`
columns (COLUMNS lists them from the dataclass); the `actions` columns come from the
pending-actions library (`workbench.tools.pending.COLUMN_TYPES`), which creates that table in
files of its own.

This module only declares; the store (`workbench.eval.store.database`) is the one writer of the file
and applies the migrations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import duckdb

from workbench.errors import ConfigError
from workbench.tools import pending as _actions

# Frozen as released, like every migration. Its `actions` table is the one the pending-actions
# library declares (`workbench.tools.pending.COLUMN_TYPES`): the tests compare a fresh file's
# tables with COLUMNS, and the library's own table with a fresh file's.
_V1 = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, name VARCHAR, dataset VARCHAR, dataset_sha VARCHAR,
    started_at TIMESTAMP, finished_at TIMESTAMP, status VARCHAR, configs JSON,
    settings JSON, version VARCHAR);
CREATE TABLE IF NOT EXISTS items (
    run_id VARCHAR, item_id VARCHAR, category VARCHAR, tags JSON, prompt VARCHAR, expect JSON,
    PRIMARY KEY (run_id, item_id));
CREATE TABLE IF NOT EXISTS attempts (
    run_id VARCHAR, item_id VARCHAR, repeat INTEGER, config VARCHAR, route_id VARCHAR,
    key VARCHAR, provider VARCHAR, model VARCHAR, lane VARCHAR, position INTEGER,
    outcome VARCHAR, status INTEGER, error_kind VARCHAR, error_code VARCHAR,
    error_message VARCHAR, tokens INTEGER, latency_ms DOUBLE, start_ms BIGINT, cached BOOLEAN,
    reason VARCHAR);
CREATE TABLE IF NOT EXISTS routes (
    run_id VARCHAR, item_id VARCHAR, repeat INTEGER, config VARCHAR, route_id VARCHAR,
    candidates JSON, chosen VARCHAR, partial BOOLEAN, fallback_depth INTEGER, skipped JSON,
    error_code VARCHAR, at_ms BIGINT);
CREATE TABLE IF NOT EXISTS verdicts (
    run_id VARCHAR, item_id VARCHAR, repeat INTEGER, config VARCHAR, provider VARCHAR,
    model VARCHAR, scope VARCHAR, capability VARCHAR, verdict VARCHAR, recorded BOOLEAN,
    evidence VARCHAR, via VARCHAR, at_ms BIGINT);
CREATE TABLE IF NOT EXISTS capabilities (
    provider VARCHAR, model VARCHAR, scope VARCHAR, capability VARCHAR, verdict VARCHAR,
    observed_at VARCHAR, via VARCHAR, evidence VARCHAR,
    PRIMARY KEY (provider, model, scope, capability));
CREATE TABLE IF NOT EXISTS tool_steps (
    run_id VARCHAR, item_id VARCHAR, repeat INTEGER, config VARCHAR, step_id VARCHAR,
    tool VARCHAR, params VARCHAR, ok BOOLEAN, at_ms BIGINT);
CREATE TABLE IF NOT EXISTS outputs (
    run_id VARCHAR, item_id VARCHAR, repeat INTEGER, config VARCHAR, key VARCHAR, raw VARCHAR,
    cleaned VARCHAR, tool_calls JSON, protocol VARCHAR, passed BOOLEAN, score DOUBLE,
    grade JSON, latency_ms DOUBLE, tokens_in INTEGER, tokens_out INTEGER, cached BOOLEAN,
    error_code VARCHAR, error_message VARCHAR, at_ms BIGINT,
    PRIMARY KEY (run_id, item_id, repeat, config));
CREATE TABLE IF NOT EXISTS actions (
    action_id VARCHAR PRIMARY KEY, run_id VARCHAR, action VARCHAR, payload JSON,
    status VARCHAR, proposed_by VARCHAR, decided_by VARCHAR, amended JSON,
    dedupe_key VARCHAR, history JSON, created_at_ms BIGINT, updated_at_ms BIGINT);
CREATE TABLE IF NOT EXISTS events (
    run_id VARCHAR, item_id VARCHAR, type VARCHAR, at_ms BIGINT, data JSON);
CREATE TABLE IF NOT EXISTS quota (
    run_id VARCHAR, item_id VARCHAR, key VARCHAR, provider VARCHAR, model VARCHAR,
    scope VARCHAR, "window" VARCHAR, "limit" DOUBLE, remaining DOUBLE, reset_at_ms BIGINT,
    source VARCHAR, observed_at_ms BIGINT);
CREATE TABLE IF NOT EXISTS response_cache (
    cache_key VARCHAR PRIMARY KEY, provider VARCHAR, model VARCHAR, reply JSON,
    created_at_ms BIGINT, expires_at_ms BIGINT);
"""

# Ordered; each applied once, all pending ones in one transaction.
# v2: the masking audit. A leak names the item whose sensitive value left the machine, the
# request that carried it, and where in the body; the value itself is stored only as a hash.
_V2 = """
CREATE TABLE leaks (
    run_id VARCHAR, item_id VARCHAR, kind VARCHAR, value_sha VARCHAR, value_len INTEGER,
    request_seq INTEGER, model VARCHAR, path VARCHAR, at_ms BIGINT
);
"""

# v3: the journal and the answers of a run. `journal_state` names the file (a journal beside
# another file is refused) and holds the last journal record the file has, moved in the same
# transaction as the rows, so that a replay is idempotent. `replies` keeps every answer the
# runner received, by turn, so that a resumed run grades from it instead of asking again.
_V3 = """
CREATE TABLE journal_state (store_id VARCHAR, applied_seq BIGINT);
INSERT INTO journal_state SELECT CAST(uuid() AS VARCHAR), 0;
CREATE TABLE replies (
    run_id VARCHAR, item_id VARCHAR, repeat INTEGER, config VARCHAR, turn INTEGER, key VARCHAR,
    reply JSON, at_ms BIGINT,
    PRIMARY KEY (run_id, item_id, repeat, config, turn)
);
"""

# v4: the prose format a `text` tools verdict was seen in, on the classification and on the
# record, so the planner can ask a model for calls in the format it writes. NULL in rows
# written before: their format was never read.
_V4 = """
ALTER TABLE verdicts ADD COLUMN protocol_family VARCHAR;
ALTER TABLE capabilities ADD COLUMN protocol_family VARCHAR;
"""

# v5: what each attempt sent, as it left the machine (masked for a provider outside it), so a
# report can show an item's request as the provider saw it. NULL in rows written before, and
# for skipped and cached attempts.
_V5 = """
ALTER TABLE attempts ADD COLUMN request JSON;
"""

# v6: each attempt's place in its route, across passes down the chain (a second pass starts
# again at position 0). NULL in rows written before: order those by start_ms, position.
_V6 = """
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS seq INTEGER;
"""

# Each attempt's id, from its run, item, repeat, configuration and try (its place among the
# attempts of that output): a batch of rows that arrives twice (a worker's batch replayed after
# it died) is recognised by the writer and logged once.
_V7 = """
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS attempt_id VARCHAR;
"""

# v8: every setting of a run (`RunConfig.to_json()`), written when it starts, so the run can be
# made again from its row. One JSON document rather than a column per setting: a new setting
# needs no migration, and the row reads back through `RunConfig.from_row` alone. NULL for runs
# logged before: their `settings` hold what was kept then.
_V8 = """
ALTER TABLE runs ADD COLUMN IF NOT EXISTS config JSON;
"""

# v9: the batches of a `--batch` run, journaled as soon as the vendor gave each its id (before
# it is polled), with the custom ids of its requests: a resumed run polls them instead of
# submitting, and paying for, the same requests again. An attempt answered by a batch names it.
_V9 = """
CREATE TABLE IF NOT EXISTS batches (
    run_id VARCHAR, batch_id VARCHAR, config VARCHAR, provider VARCHAR, model VARCHAR,
    round INTEGER, requests JSON, status VARCHAR, message VARCHAR, submitted_ms BIGINT,
    updated_ms BIGINT,
    PRIMARY KEY (run_id, batch_id)
);
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS batch_id VARCHAR;
"""

# v10: a run never loses an item to the provider's refusals. An output the provider kept from
# being answered (held until --max-wait, a day's quota spent) says why (`unanswered`:
# rate_limit, daily_quota, provider_error or max_wait) and when a candidate was expected free
# (`retry_at_ms`: for a daily quota, when to resume); its passed and score stay NULL. NULL in
# rows written before. `pacing`: each provider:model's adaptive concurrency and the limits the
# router learnt (`PacingEvent`), the run's pacing history.
_V10 = """
ALTER TABLE outputs ADD COLUMN IF NOT EXISTS unanswered VARCHAR;
ALTER TABLE outputs ADD COLUMN IF NOT EXISTS retry_at_ms BIGINT;
CREATE TABLE IF NOT EXISTS pacing (
    run_id VARCHAR, item_id VARCHAR, key VARCHAR, why VARCHAR, concurrency INTEGER,
    in_flight INTEGER, requests_limit DOUBLE, requests_left DOUBLE, tokens_limit DOUBLE,
    tokens_left DOUBLE, reset_at_ms BIGINT, at_ms BIGINT);
"""

MIGRATIONS: list[tuple[int, str]] = [
    (1, _V1),
    (2, _V2),
    (3, _V3),
    (4, _V4),
    (5, _V5),
    (6, _V6),
    (7, _V7),
    (8, _V8),
    (9, _V9),
    (10, _V10),
]


def _sql(kind: str) -> dict[str, str]:
    """A field's metadata: its column's DuckDB type."""
    return {"sql": kind}


@dataclass(kw_only=True, slots=True)
class OutputRow:
    """One graded output: a row of the `outputs` table, its fields being the columns in table
    order, each with its SQL type. JSON columns (`tool_calls`, `grade`) take JSON text or a
    Python value; a later output of the same (run_id, item_id, repeat, config) replaces it."""

    run_id: str = field(metadata=_sql("VARCHAR"))
    item_id: str = field(metadata=_sql("VARCHAR"))
    repeat: int = field(metadata=_sql("INTEGER"))
    config: str = field(metadata=_sql("VARCHAR"))
    # The provider:model@lane that answered last.
    key: str | None = field(default=None, metadata=_sql("VARCHAR"))
    raw: str | None = field(default=None, metadata=_sql("VARCHAR"))
    cleaned: str | None = field(default=None, metadata=_sql("VARCHAR"))
    tool_calls: Any = field(default=None, metadata=_sql("JSON"))
    protocol: str | None = field(default=None, metadata=_sql("VARCHAR"))
    passed: bool | None = field(default=None, metadata=_sql("BOOLEAN"))
    score: float | None = field(default=None, metadata=_sql("DOUBLE"))
    grade: Any = field(default=None, metadata=_sql("JSON"))
    latency_ms: float | None = field(default=None, metadata=_sql("DOUBLE"))
    tokens_in: int | None = field(default=None, metadata=_sql("INTEGER"))
    tokens_out: int | None = field(default=None, metadata=_sql("INTEGER"))
    cached: bool | None = field(default=None, metadata=_sql("BOOLEAN"))
    error_code: str | None = field(default=None, metadata=_sql("VARCHAR"))
    error_message: str | None = field(default=None, metadata=_sql("VARCHAR"))
    at_ms: int | None = field(default=None, metadata=_sql("BIGINT"))
    # Why the provider kept the item from being answered (rate_limit, daily_quota,
    # provider_error, max_wait), None for an answer or a failure of the caller's side.
    unanswered: str | None = field(default=None, metadata=_sql("VARCHAR"))
    # Epoch ms a candidate was expected free when the item was given up: a daily quota's reset.
    retry_at_ms: int | None = field(default=None, metadata=_sql("BIGINT"))


@dataclass(frozen=True, slots=True)
class OutputGrade:
    """A new grade for one logged output (`Store.set_grades`)."""

    item_id: str
    repeat: int
    config: str
    passed: bool | None
    score: float | None
    grade: Any = None  # JSON text or a Python value (the `grade` column)


# Column name → DuckDB type, per table, in table order (the latest version).
COLUMNS: dict[str, dict[str, str]] = {
    "runs": dict.fromkeys(("run_id", "name", "dataset", "dataset_sha"), "VARCHAR")
    | {"started_at": "TIMESTAMP", "finished_at": "TIMESTAMP", "status": "VARCHAR"}
    | {"configs": "JSON", "settings": "JSON", "version": "VARCHAR", "config": "JSON"},
    "items": {
        "run_id": "VARCHAR",
        "item_id": "VARCHAR",
        "category": "VARCHAR",
        "tags": "JSON",
        "prompt": "VARCHAR",
        "expect": "JSON",
    },
    "attempts": {"run_id": "VARCHAR", "item_id": "VARCHAR", "repeat": "INTEGER"}
    | dict.fromkeys(("config", "route_id", "key", "provider", "model", "lane"), "VARCHAR")
    | {"position": "INTEGER", "outcome": "VARCHAR", "status": "INTEGER"}
    | dict.fromkeys(("error_kind", "error_code", "error_message"), "VARCHAR")
    | {"tokens": "INTEGER", "latency_ms": "DOUBLE", "start_ms": "BIGINT", "cached": "BOOLEAN"}
    | {"reason": "VARCHAR", "request": "JSON", "seq": "INTEGER", "attempt_id": "VARCHAR"}
    | {"batch_id": "VARCHAR"},
    "routes": {"run_id": "VARCHAR", "item_id": "VARCHAR", "repeat": "INTEGER"}
    | {"config": "VARCHAR", "route_id": "VARCHAR", "candidates": "JSON", "chosen": "VARCHAR"}
    | {"partial": "BOOLEAN", "fallback_depth": "INTEGER", "skipped": "JSON"}
    | {"error_code": "VARCHAR", "at_ms": "BIGINT"},
    "verdicts": {"run_id": "VARCHAR", "item_id": "VARCHAR", "repeat": "INTEGER"}
    | dict.fromkeys(("config", "provider", "model", "scope", "capability", "verdict"), "VARCHAR")
    | {"recorded": "BOOLEAN", "evidence": "VARCHAR", "via": "VARCHAR", "at_ms": "BIGINT"}
    | {"protocol_family": "VARCHAR"},
    "capabilities": dict.fromkeys(
        ("provider", "model", "scope", "capability", "verdict", "observed_at", "via"), "VARCHAR"
    )
    | dict.fromkeys(("evidence", "protocol_family"), "VARCHAR"),
    "tool_steps": {"run_id": "VARCHAR", "item_id": "VARCHAR", "repeat": "INTEGER"}
    | dict.fromkeys(("config", "step_id", "tool", "params"), "VARCHAR")
    | {"ok": "BOOLEAN", "at_ms": "BIGINT"},
    "outputs": {f.name: f.metadata["sql"] for f in fields(OutputRow)},
    "actions": dict(_actions.COLUMN_TYPES),
    "events": {
        "run_id": "VARCHAR",
        "item_id": "VARCHAR",
        "type": "VARCHAR",
        "at_ms": "BIGINT",
        "data": "JSON",
    },
    "quota": dict.fromkeys(("run_id", "item_id", "key", "provider", "model"), "VARCHAR")
    | {"scope": "VARCHAR", "window": "VARCHAR", "limit": "DOUBLE", "remaining": "DOUBLE"}
    | {"reset_at_ms": "BIGINT", "source": "VARCHAR", "observed_at_ms": "BIGINT"},
    "pacing": dict.fromkeys(("run_id", "item_id", "key", "why"), "VARCHAR")
    | {"concurrency": "INTEGER", "in_flight": "INTEGER"}
    | dict.fromkeys(("requests_limit", "requests_left", "tokens_limit", "tokens_left"), "DOUBLE")
    | {"reset_at_ms": "BIGINT", "at_ms": "BIGINT"},
    "response_cache": {"cache_key": "VARCHAR", "provider": "VARCHAR", "model": "VARCHAR"}
    | {"reply": "JSON", "created_at_ms": "BIGINT", "expires_at_ms": "BIGINT"},
    "replies": dict.fromkeys(("run_id", "item_id"), "VARCHAR")
    | {"repeat": "INTEGER", "config": "VARCHAR", "turn": "INTEGER", "key": "VARCHAR"}
    | {"reply": "JSON", "at_ms": "BIGINT"},
    "journal_state": {"store_id": "VARCHAR", "applied_seq": "BIGINT"},
    "batches": dict.fromkeys(("run_id", "batch_id", "config", "provider", "model"), "VARCHAR")
    | {"round": "INTEGER", "requests": "JSON", "status": "VARCHAR", "message": "VARCHAR"}
    | {"submitted_ms": "BIGINT", "updated_ms": "BIGINT"},
    "leaks": dict.fromkeys(("run_id", "item_id", "kind", "value_sha"), "VARCHAR")
    | {"value_len": "INTEGER", "request_seq": "INTEGER", "model": "VARCHAR", "path": "VARCHAR"}
    | {"at_ms": "BIGINT"},
}

# Primary keys: the writer upserts these tables (last write of a key wins).
KEYS: dict[str, tuple[str, ...]] = {
    "runs": ("run_id",),
    "items": ("run_id", "item_id"),
    "capabilities": ("provider", "model", "scope", "capability"),
    "outputs": ("run_id", "item_id", "repeat", "config"),
    "actions": _actions.PRIMARY_KEY,
    "response_cache": ("cache_key",),
    "replies": ("run_id", "item_id", "repeat", "config", "turn"),
    "batches": ("run_id", "batch_id"),
}


def latest_version(migrations: list[tuple[int, str]] | None = None) -> int:
    return max(v for v, _ in (MIGRATIONS if migrations is None else migrations))


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The file's schema version; 0 for a file without a `schema_version` table."""
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'schema_version' "
        "AND schema_name = 'main' AND database_name = current_database()"
    ).fetchall()[0][0]
    if not found:
        return 0
    row = con.execute("SELECT max(version) FROM schema_version").fetchall()[0][0]
    return int(row or 0)


def check_not_too_new(version: int, path: object) -> None:
    known = latest_version()
    if version > known:
        raise ConfigError(
            f"{path} has schema version {version}, newer than this workbench knows "
            f"({known}): upgrade workbench to read it",
            code="STORE_TOO_NEW",
            details={"path": str(path), "version": version, "known": known},
        )
