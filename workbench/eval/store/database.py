"""The workbench's DuckDB store: one file holding every run, attempt, route, verdict, output,
capability record, cached reply and pending action.

`Store` is the only writer of the file. Everything that lands in it goes through a typed method
of the Store: events (`write`, `sink`), `add_items`, `add_output` (an `OutputRow`),
`set_grades`, `put_capability` (and `store.capabilities`, the async capability store over it),
`cache_put` (and `store.cache`), the pending actions (`insert_action`, `move_action`, and
`store.actions`, the async action store over them), `add_leaks`. Opening the file (locks,
snapshots, migrations, the replay of a killed writer's journal) is `opening.py`'s. Nothing
else is handed the connection to write with. Rows are built from the one declaration of each
table's columns (`workbench.eval.store.schema.COLUMNS`), never from a column order restated by hand.

Writes are buffered per table and written by `flush()` in ONE transaction, each table with one
DuckDB appender (`con.appender(table)`, new in DuckDB 2.0: in benchmarks/duckdb_logging.py
~1.2x the rows/s of registering a pandas DataFrame and `INSERT … SELECT`, ~3x `unnest` of list
parameters, ~175x `executemany`, and it needs neither pandas nor Arrow). A buffer is flushed
when it holds `flush_rows` rows, when `flush_s` has passed since the last flush (checked at
the next write), and at `done()`, `finish_run()` and `close()`. Nothing flushes at
interpreter exit on its own: the runner closes the store in a `finally`. The moves of pending
actions are not buffered: each is one guarded statement, so that two approvals execute once.

DuckDB lets one process write a file. Opening a file another process writes raises
`ConfigError(STORE_LOCKED)` naming the holder; `read_only=True` opens the file read-only, or,
when the writer's lock refuses even readers, a copy of it (`store.snapshot` is then True).
"""

from __future__ import annotations

import builtins
import json
import logging
import secrets
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from workbench.capability.decide import CapabilityRecord, should_replace
from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.store import journal as journals
from workbench.eval.store import opening as _files
from workbench.eval.store import reads
from workbench.eval.store.interfaces import (
    DuckDBCapabilityStore,
    DuckDBResponseCache,
    StoreActionStore,
)
from workbench.eval.store.journal import Durability, Journal
from workbench.eval.store.opening import Recovered, migrate
from workbench.eval.store.reads import OutputTally, RunRecord
from workbench.eval.store.rows import (
    JobSink,
    Tags,
    _capability,
    _coerce,
    _dumps,
    _ordered,
    _row,
    cache_row,
    event_row,
)
from workbench.eval.store.schema import (
    COLUMNS,
    KEYS,
    OutputGrade,
    OutputRow,
    current_version,
)
from workbench.events import (
    now_ms,
)
from workbench.tools.pending import duplicate_id
from workbench.tools.pending_duckdb import (
    as_row,
    fetch_statement,
    insert_statement,
    live_twin_statement,
    move_statement,
    select_statement,
)

__all__ = [
    "DuckDBCapabilityStore",
    "DuckDBResponseCache",
    "OutputGrade",
    "OutputRow",
    "OutputTally",
    "RunRecord",
    "Store",
    "StoreActionStore",
    "migrate",
]

log = logging.getLogger("workbench.eval.store.database")

RUN_STATUSES = ("running", "finished", "interrupted", "failed")
OutputKey = tuple[str, int, str]  # item_id, repeat, config: one output
# Action states in which `by` is the one who decided (approval moves pending → executing).
_DECISIONS = ("approved", "executing", "rejected")


def _names(table: str) -> str:
    """Every column of `table`, quoted, in the declared order."""
    return ", ".join(f'"{c}"' for c in COLUMNS[table])


def _insert_sql(table: str, *, replace: bool = False) -> str:
    """`INSERT [OR REPLACE] INTO table (every column) VALUES (?, …)`, from the declaration."""
    marks = ", ".join("?" * len(COLUMNS[table]))
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    return f"{verb} INTO {table} ({_names(table)}) VALUES ({marks})"


def _select_sql(table: str) -> str:
    """`SELECT every column FROM table`, in the declared order."""
    return f"SELECT {_names(table)} FROM {table}"


# ------------------------------------------------------------------ the store
class Store:
    """One workbench DuckDB file. See the module docstring; `Store.open(...)` to make one."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        path: Path,
        *,
        read_only: bool,
        snapshot: bool = False,
        flush_rows: int = 2000,
        flush_s: float = 1.0,
        temp_dir: str | None = None,
    ) -> None:
        self.con = con
        self.path = path
        self.read_only = read_only
        self.snapshot = snapshot
        self.flush_rows = max(1, int(flush_rows))
        self.flush_s = flush_s
        self.schema_version = current_version(con)
        self._temp_dir = temp_dir
        self._lock = threading.RLock()
        self._buffers: dict[str, list[Any]] = {t: [] for t in COLUMNS}
        self._last_flush = time.monotonic()
        self._run_id: str | None = None
        self._closed = False
        # Every capability record, mirrored once read: the file has one writer, this store.
        self._capabilities: dict[tuple[str, str, str, str], CapabilityRecord] | None = None
        self.capabilities = DuckDBCapabilityStore(self)
        self.cache = DuckDBResponseCache(self)
        self.actions = StoreActionStore(self)
        self._journal: Journal | None = None
        # The last failure to write (a full disk, the journal refused): the runner stops on it;
        # a later flush that succeeds clears it.
        self.broken: WorkbenchError | None = None
        # What opening found in a journal a killed writer left: rows per table, torn record.
        self.recovered: Recovered | None = None

    def __repr__(self) -> str:
        mode = "snapshot" if self.snapshot else "read-only" if self.read_only else "writer"
        return f"Store({str(self.path)!r}, {mode})"

    # -------------------------------------------------------------- opening
    @classmethod
    def open(
        cls,
        path: str | Path = "workbench.duckdb",
        *,
        read_only: bool = False,
        flush_rows: int = 2000,
        flush_s: float = 1.0,
        snapshot: bool = False,
        durability: Durability = "fsync",
    ) -> Store:
        """Open (creating and migrating) a store. `read_only=True` never writes the file and
        falls back to a snapshot copy when a writer holds it; `snapshot=True` always reads a
        copy (so that this reader never blocks a writer in another process).

        A journal a killed writer left beside the file is replayed first (see
        `workbench.eval.store.journal`), by every open: a reader opens the file for writing just
        long enough to replay it, or replays it into its snapshot when a writer holds the file.
        `durability` says how this writer journals what it has not yet flushed: `fsync`
        (default), `write` (no fsync: survives a killed process, not a power cut) or `off`."""
        return _files.open_store(
            cls,
            Path(path),
            read_only=read_only,
            snapshot=snapshot,
            durability=durability,
            opts={"flush_rows": flush_rows, "flush_s": flush_s},
        )

    # -------------------------------------------------------------- runs and items
    def held(self) -> threading.RLock:
        """The lock every statement on the connection runs under: a caller that reads and then
        moves (an action's claim) holds it across both, so threads never interleave."""
        return self._lock

    def _writable(self) -> None:
        if self._closed:
            raise ConfigError(f"{self.path}: the store is closed", code="STORE_CLOSED")
        if self.read_only:
            raise ConfigError(
                f"{self.path} was opened read-only" + (" (a snapshot)" if self.snapshot else ""),
                code="STORE_READ_ONLY",
            )

    def start_run(
        self,
        *,
        name: str | None,
        dataset: str,
        dataset_sha: str,
        configs: list[str],
        settings: dict[str, Any],
        config: str | None = None,
    ) -> str:
        """Record a new run (status `running`) and return its id, e.g. `20261130-150102-ab12`
        (UTC time then 4 random hex digits: sorts by start time). `config` is the run's
        `RunConfig` as JSON: everything it takes to make the run again."""
        from workbench import __version__

        self._writable()
        with self._lock:
            while True:
                stamp = datetime.now(UTC)
                run_id = f"{stamp:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
                taken = self.con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id])
                if not taken.fetchall():
                    break
            row = _row(
                "runs",
                {
                    "run_id": run_id,
                    "name": name,
                    "dataset": dataset,
                    "dataset_sha": dataset_sha,
                    "started_at": stamp.replace(tzinfo=None),
                    "finished_at": None,
                    "status": "running",
                    "configs": list(configs),
                    "settings": settings,
                    "version": __version__,
                    "config": config,
                },
            )
            self.con.execute(_insert_sql("runs"), list(row))
            self._run_id = run_id
        return run_id

    def get_run(self, run_id: str) -> dict[str, Any]:
        with self._lock:
            cur = self.con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id])
            rows = cur.fetchall()
            names = [d[0] for d in cur.description or []]
        if not rows:
            raise ConfigError(f"no run {run_id!r} in {self.path}", code="RUN_UNKNOWN")
        run = dict(zip(names, rows[0], strict=True))
        for key in ("configs", "settings", "config"):
            run[key] = json.loads(run[key]) if run[key] is not None else None
        return run

    # -------------------------------------------------------------- reads (see reads.py)
    def run(self, run_id: str) -> RunRecord:
        """The run's row; `RUN_UNKNOWN` for an id the file does not have."""
        with self._lock:
            return reads.run(self.con, self.path, run_id)

    def latest_run(self) -> RunRecord | None:
        """The run started last, or None for a file without runs."""
        with self._lock:
            return reads.latest_run(self.con)

    def leak_count(self, run_id: str) -> int:
        """Sensitive values of the prompt set the masking audit found in outgoing requests."""
        with self._lock:
            return reads.leak_count(self.con, run_id)

    def attempt_outcomes(self, run_id: str) -> Counter[str]:
        """The run's attempts counted per outcome (`ok`, `error`, `skipped_quota`, ...)."""
        with self._lock:
            return reads.attempt_outcomes(self.con, run_id)

    def output_tally(self, run_id: str) -> OutputTally:
        """How the run's outputs add up (see `OutputTally`)."""
        with self._lock:
            return reads.output_tally(self.con, run_id)

    def _set_status(self, run_id: str, status: str, finished: bool) -> None:
        if status not in RUN_STATUSES:
            raise ConfigError(
                f"run status {status!r}; expected one of {RUN_STATUSES}", code="RUN_INVALID"
            )
        self._writable()
        self.get_run(run_id)  # RUN_UNKNOWN
        at = datetime.now(UTC).replace(tzinfo=None) if finished else None
        with self._lock:
            self.con.execute(
                "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                [status, at, run_id],
            )

    def mark_running(self, run_id: str) -> None:
        """A resumed run is running again (finished_at cleared); it becomes the default tag."""
        self._set_status(run_id, "running", finished=False)
        self._run_id = run_id

    def finish_run(self, run_id: str, status: str) -> None:
        """Flush, then mark the run `finished`, `interrupted` or `failed` (or `running`)."""
        self.flush()
        self._set_status(run_id, status, finished=status != "running")

    def add_items(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        """Record the run's items (written now; adding the same item again replaces it)."""
        self._writable()
        batch = [_row("items", {**row, "run_id": run_id}) for row in rows]
        with self._lock:
            self.con.execute("BEGIN TRANSACTION")
            try:
                self._append("items", batch)
                self.con.execute("COMMIT")
            except BaseException:
                self.con.execute("ROLLBACK")
                raise

    def add_item(self, run_id: str, row: Mapping[str, Any]) -> None:
        """Buffer (and journal) one item, written with the next flush (adding it again
        replaces it): for callers whose items come one request at a time (the gateway), where
        a transaction each would cost more than routing the request."""
        self._writable()
        self._buffer("items", _row("items", {**row, "run_id": run_id}))

    # -------------------------------------------------------------- the event sink
    def sink(
        self,
        run_id: str,
        item_id: str | None = None,
        repeat: int = 0,
        config: str = "",
        *,
        tries: int = 0,
        steps: Mapping[tuple[str, bool], int] | None = None,
    ) -> JobSink:
        """A sink for `workbench.events.emit`: every event it takes is tagged with these, and
        each attempt is numbered from `tries` (the attempts that output already logged); the
        first `steps` tool steps were logged before (see `JobSink`)."""
        return JobSink(self._put, (run_id, item_id, repeat, config), tries, steps)

    def write(
        self,
        event: object,
        *,
        run_id: str | None = None,
        item_id: str | None = None,
        repeat: int = 0,
        config: str = "",
    ) -> None:
        """Buffer one event in its table (attempts, routes, verdicts, tool_steps, quota,
        actions; anything else in `events`)."""
        tags = (self._run_id if run_id is None else run_id, item_id, repeat, config)
        self._put(*event_row(event, tags))

    def _put(self, table: str, row: Any) -> None:
        if self.read_only or self._closed:
            self._writable()
        self._buffer(table, row)

    def add_rows(self, table: str, rows: Iterable[tuple[Any, ...]]) -> None:
        """Buffer (and journal) rows another process built with the same builders (a Ray
        worker's events, as the table's tuples in the declared column order)."""
        self._writable()
        for row in rows:
            self._buffer(table, row)

    def add_output(self, row: OutputRow | Mapping[str, Any]) -> None:
        """Buffer one graded output: an `OutputRow` (or a dict of `outputs` columns, missing
        ones NULL; JSON columns take JSON text or Python values). A second output for the same
        (run, item, repeat, config) replaces the first."""
        self._writable()
        if isinstance(row, OutputRow):
            row = {c: getattr(row, c) for c in COLUMNS["outputs"]}
        self._buffer("outputs", _row("outputs", row))

    def outputs_for(self, run_id: str) -> builtins.list[OutputRow]:
        """Every output of the run (flushed first), by item, repeat and config; JSON columns
        (`tool_calls`, `grade`) as JSON text."""
        self.flush()
        with self._lock:
            rows = self.con.execute(
                f"{_select_sql('outputs')} WHERE run_id = ? ORDER BY item_id, repeat, config",
                [run_id],
            ).fetchall()
        names = list(COLUMNS["outputs"])
        return [OutputRow(**dict(zip(names, r, strict=True))) for r in rows]

    def add_reply(
        self,
        run_id: str,
        item_id: str,
        repeat: int,
        config: str,
        turn: int,
        key: str,
        reply: dict[str, Any],
    ) -> None:
        """Buffer (and journal) the answer of one turn of an item, as `reply_to_dict` makes it:
        what a resumed run replays instead of asking the model again."""
        self._writable()
        self._buffer("replies", (run_id, item_id, repeat, config, turn, key, _dumps(reply), _now()))

    def replies(self, run_id: str) -> dict[tuple[str, int, str], builtins.list[tuple[str, Any]]]:
        """Every answer the run received, per (item_id, repeat, config), in turn order: each
        as (provider:model key, the reply's dict)."""
        self.flush()
        with self._lock:
            rows = self.con.execute(
                "SELECT item_id, repeat, config, key, reply FROM replies WHERE run_id = ? "
                "ORDER BY item_id, repeat, config, turn",
                [run_id],
            ).fetchall()
        out: dict[tuple[str, int, str], builtins.list[tuple[str, Any]]] = {}
        for item_id, repeat, config, key, reply in rows:
            out.setdefault((item_id, repeat, config), []).append((key, json.loads(reply)))
        return out

    def journal_batch(self, record: reads.BatchRecord) -> None:
        """Record a `--batch` run's batch, or its new status, and write it at once: a batch is
        journaled the moment its vendor gave it an id, so a process killed while it waits is
        resumed by polling it, never by paying for the same requests again."""
        self._writable()
        values = {f: getattr(record, f) for f in COLUMNS["batches"]}
        values["requests"] = json.dumps(list(record.requests))
        self._buffer("batches", tuple(values[c] for c in COLUMNS["batches"]))
        self.flush()

    def batches(self, run_id: str) -> builtins.list[reads.BatchRecord]:
        """Every batch the run journaled, in the order they were submitted."""
        self.flush()
        with self._lock:
            rows = self.con.execute(reads.SELECT_BATCHES, [run_id]).fetchall()
        return [reads.batch_record(r) for r in rows]

    def set_grades(self, run_id: str, grades: Iterable[OutputGrade]) -> int:
        """Write new grades (`passed`, `score`, `grade`) over the run's logged outputs, in one
        statement; an output the run does not have is left alone. Returns the grades given."""
        self._writable()
        batch = [_grade_values(g) for g in grades]
        if not batch:
            return 0
        self.flush()  # a buffered output written later would undo the new grade
        columns = [list(column) for column in zip(*batch, strict=True)]
        with self._lock:
            self.con.execute(_SET_GRADES, [*columns, run_id])
        return len(batch)

    # -------------------------------------------------------------- capability records
    def _capability_mirror(self) -> dict[tuple[str, str, str, str], CapabilityRecord]:
        with self._lock:
            if self._capabilities is None:
                rows = self.con.execute(_select_sql("capabilities")).fetchall()
                names = list(COLUMNS["capabilities"])
                records = [
                    CapabilityRecord.from_dict(dict(zip(names, r, strict=True))) for r in rows
                ]
                self._capabilities = {r.key: r for r in records}
            return self._capabilities

    def capability(
        self, provider: str, model: str, scope: str, capability: str
    ) -> CapabilityRecord | None:
        """The current record of that key, or None. Read once from the file, then mirrored:
        the file has one writer, this store, so the mirror is exact."""
        return self._capability_mirror().get((provider, model, scope, capability))

    def capability_records(self) -> builtins.list[CapabilityRecord]:
        """Every current record, by key."""
        return sorted(self._capability_mirror().values(), key=lambda r: r.key)

    def put_capability(self, record: CapabilityRecord) -> bool:
        """Keep `record` if `should_replace(current, record)` (stronger provenance, then
        newer), decided in memory; the row is buffered for the next flush (one upsert per key,
        in the flush's transaction). Returns whether it was kept."""
        self._writable()
        with self._lock:
            records = self._capability_mirror()
            if not should_replace(records.get(record.key), record):
                return False
            records[record.key] = record
            self._buffer("capabilities", _capability(record))
        return True

    # -------------------------------------------------------------- response cache
    def cache_get(self, cache_key: str, now_ms: int | None = None) -> dict[str, Any] | None:
        """The cached reply, or None when missing or expired (`expires_at_ms <= now`)."""
        now = _now() if now_ms is None else now_ms
        with self._lock:
            rows = self.con.execute(
                "SELECT reply FROM response_cache WHERE cache_key = ? "
                "AND (expires_at_ms IS NULL OR expires_at_ms > ?)",
                [cache_key, now],
            ).fetchall()
        return json.loads(rows[0][0]) if rows else None

    def cache_live(
        self, models: Iterable[tuple[str, str]], now_ms: int | None = None
    ) -> builtins.list[tuple[str, str, int | None]]:
        """(cache key, reply as JSON text, expires_at_ms) of every entry of these (provider,
        model) pairs still valid now: what a Ray worker answers from, since only this process
        opens the file."""
        now = _now() if now_ms is None else now_ms
        pairs = sorted(set(models))
        if not pairs:
            return []
        self.flush()  # a Ray run's entries come as buffered rows
        with self._lock:
            return self.con.execute(
                "SELECT cache_key, reply::VARCHAR, expires_at_ms FROM response_cache "
                "WHERE provider || chr(0) || model IN (SELECT unnest(?)) "
                "AND (expires_at_ms IS NULL OR expires_at_ms > ?) ORDER BY cache_key",
                [[f"{p}\0{m}" for p, m in pairs], now],
            ).fetchall()

    def cache_put(
        self,
        cache_key: str,
        provider: str,
        model: str,
        reply: dict[str, Any],
        ttl_s: float | None,
        now_ms: int | None = None,
    ) -> None:
        """Cache a successful reply for `ttl_s` seconds (None: until replaced); written now.
        Errors are never cached (`TypeError`)."""
        if isinstance(reply, BaseException):
            raise TypeError("errors are never cached")
        self._writable()
        now = _now() if now_ms is None else now_ms
        row = cache_row(cache_key, provider, model, reply, ttl_s, now)
        with self._lock:
            self.con.execute(_insert_sql("response_cache", replace=True), list(row))

    # -------------------------------------------------------------- pending actions
    # Rows as `workbench.tools.pending.to_row` makes them (JSON columns as text); the statements
    # are the pending-actions library's, each transition ONE guarded statement, written now.
    def action_row(self, action_id: str) -> dict[str, Any] | None:
        """The action's `actions` row, or None."""
        with self._lock:
            return as_row(self.con.execute(*fetch_statement(action_id)).fetchone())

    def action_rows(
        self, status: str | None = None, run_id: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """The `actions` rows with this status and run id (None: any)."""
        with self._lock:
            rows = self.con.execute(*select_statement(status, run_id)).fetchall()
        return [r for r in map(as_row, rows) if r is not None]

    def insert_action(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Insert a proposed action's row and return it; with a dedupe key, atomically: if a
        pending or executing action has the same name and key, nothing is inserted and that
        action's row is returned. `ACTION_DUPLICATE_ID` (409) if the id exists."""
        self._writable()
        with self._lock:
            if self.action_row(row["action_id"]) is not None:
                raise duplicate_id(row["action_id"])
            if self.con.execute(*insert_statement(row)).fetchall():
                return dict(row)
            existing = as_row(self.con.execute(*live_twin_statement(row)).fetchone())
        if existing is None:  # cannot happen: this store is the file's one writer
            raise RuntimeError("dedupe insert found a live action that then vanished")
        return existing

    def move_action(self, row: Mapping[str, Any], expected: str) -> dict[str, Any] | None:
        """Write the action's new row (its mutable columns) if its status is still `expected`,
        in one guarded `UPDATE … WHERE status = ? RETURNING`: the new row, or None when
        somebody else moved it first (so that two approvals execute once)."""
        self._writable()
        with self._lock:
            return as_row(self.con.execute(*move_statement(row, expected)).fetchone())

    # -------------------------------------------------------------- masking audit
    def add_leaks(self, rows: list[dict[str, Any]]) -> None:
        """The masking audit's findings (columns as the `leaks` table), written at once."""
        self._writable()
        for row in rows:
            self._buffer("leaks", _row("leaks", row))
        self.flush()

    def _buffer(self, table: str, row: Any) -> None:
        with self._lock:
            if self._journal is not None:  # on disk before it waits for the batch
                try:
                    self._journal.append(table, row)
                except WorkbenchError as exc:
                    self.broken = exc
                    raise
            buf = self._buffers[table]
            buf.append(row)
            if len(buf) >= self.flush_rows or time.monotonic() - self._last_flush >= self.flush_s:
                self.flush()

    def pending(self) -> dict[str, int]:
        """Rows buffered and not yet written, per table."""
        with self._lock:
            return {t: len(rows) for t, rows in self._buffers.items() if rows}

    def done(self, run_id: str) -> set[tuple[str, int, str]]:
        """(item_id, repeat, config) of every output the run has: what `--resume` skips. An
        output that only says its Ray workers were lost (`RAY_WORKER_LOST`) is not done: a
        resume makes it again, and the new output replaces it."""
        self.flush()
        with self._lock:
            rows = self.con.execute(
                "SELECT item_id, repeat, config FROM outputs WHERE run_id = ? "
                "AND error_code IS DISTINCT FROM 'RAY_WORKER_LOST'",
                [run_id],
            ).fetchall()
        return {(i, r, c) for i, r, c in rows}

    def memory_snapshots(self, run_id: str) -> dict[OutputKey, dict[str, Any]]:
        """Per (item_id, repeat, config): the memory a BFCL memory conversation left (kept in
        its grade), which a resumed run's next conversations and questions start from."""
        self.flush()
        with self._lock:
            rows = self.con.execute(
                "SELECT item_id, repeat, config, json_extract(grade, '$.memory') FROM outputs "
                "WHERE run_id = ? AND json_extract(grade, '$.memory') IS NOT NULL "
                "AND unanswered IS NULL",  # an unanswered one is asked again: it makes its own
                [run_id],
            ).fetchall()
        return {(i, r, c): json.loads(memory) for i, r, c, memory in rows}

    def unanswered(self, run_id: str) -> dict[OutputKey, tuple[str, int | None]]:
        """Per (item_id, repeat, config) of every output the provider kept unanswered: why
        (`rate_limit`, `daily_quota`, `provider_error`, `max_wait`) and when a candidate was
        expected free. What `--resume` asks again (a daily quota only after its reset)."""
        self.flush()
        with self._lock:
            rows = self.con.execute(
                "SELECT item_id, repeat, config, unanswered, retry_at_ms FROM outputs "
                "WHERE run_id = ? AND unanswered IS NOT NULL",
                [run_id],
            ).fetchall()
        return {(i, r, c): (str(why), at) for i, r, c, why, at in rows}

    def logged(
        self, run_id: str
    ) -> tuple[dict[OutputKey, int], dict[OutputKey, dict[tuple[str, bool], int]]]:
        """Per (item_id, repeat, config): the attempts logged, and the tool-step rows logged
        per (step id, finished?). A resumed output numbers its next attempt after them (no two
        attempts share an id) and does not log the steps of its replayed turns twice."""
        self.flush()
        with self._lock:
            tries = self.con.execute(
                "SELECT item_id, repeat, config, count(*) FROM attempts WHERE run_id = ? "
                "GROUP BY ALL",
                [run_id],
            ).fetchall()
            steps = self.con.execute(
                "SELECT item_id, repeat, config, step_id, ok IS NOT NULL, count(*) "
                "FROM tool_steps WHERE run_id = ? GROUP BY ALL",
                [run_id],
            ).fetchall()
        by_job: dict[OutputKey, dict[tuple[str, bool], int]] = {}
        for i, r, c, step, finished, n in steps:
            by_job.setdefault((i, r, c), {})[(step, bool(finished))] = int(n)
        return {(i, r, c): int(n) for i, r, c, n in tries}, by_job

    # -------------------------------------------------------------- flushing
    def flush(self) -> None:
        """Write every buffer in one transaction, one appender statement per table."""
        with self._lock:
            self._last_flush = time.monotonic()
            if self._closed or not any(self._buffers.values()):
                return
            batches = {t: rows for t, rows in self._buffers.items() if rows}
            self._buffers = {t: [] for t in COLUMNS}
            journal = self._journal
            try:
                self._commit(batches, journal.seq if journal is not None else None)
            except Exception as exc:
                # The rows go back to the front of the buffers: a later flush writes them, and
                # the file's applied_seq never passes a journaled row it does not hold.
                for table, rows in batches.items():
                    self._buffers[table][:0] = rows
                counts = {t: len(r) for t, r in batches.items()}
                kept = "kept in the journal" if journal is not None else "still buffered"
                if journals.is_disk_full(exc):
                    self.broken = journals.disk_full(self.path, OSError(str(exc)), "flushing")
                else:
                    log.error("store flush failed, %s row(s) %s: %s", counts, kept, exc)
                    self.broken = WorkbenchError(
                        f"{self.path}: writing {sum(counts.values())} buffered row(s) failed "
                        f"({kept}): {exc}",
                        code="STORE_WRITE_FAILED",
                        details={"rows": counts},
                    )
                raise self.broken from None
            self.broken = None  # written: a disk that had filled has room again
            if journal is not None:
                journal.checkpointed()

    def _commit(self, batches: dict[str, list[Any]], seq: int | None) -> None:
        """Append every batch and move `applied_seq` to `seq`, in ONE transaction. A row DuckDB
        refuses (rows are checked when written; one may still slip through, e.g. text that is
        not valid UTF-8) must not refuse every later batch and then the file's next open: it
        is set aside in `<db>.rejected.jsonl`, logged, and the others are written."""
        try:
            self._commit_once(batches, seq)
        except Exception as exc:
            if journals.is_disk_full(exc):
                raise
            kept, refused = self._sort_out(batches)
            if not refused:
                raise
            self._commit_once(kept, seq)
            self._set_aside(refused)

    def _sort_out(
        self, batches: dict[str, list[Any]]
    ) -> tuple[dict[str, list[Any]], list[tuple[str, Any, str]]]:
        """Each row tried alone (and rolled back): the ones DuckDB takes, and the others."""
        kept: dict[str, list[Any]] = {}
        refused: list[tuple[str, Any, str]] = []
        for table, rows in batches.items():
            units = [rows] if table == "actions" else [[r] for r in rows]  # actions fold as one
            for unit in units:
                try:
                    self.con.execute("BEGIN TRANSACTION")
                    self._append(table, self._merge_actions(unit) if table == "actions" else unit)
                except Exception as exc:
                    refused.extend((table, row, str(exc)) for row in unit)
                else:
                    kept.setdefault(table, []).extend(unit)
                finally:
                    self.con.execute("ROLLBACK")
        return kept, refused

    def _set_aside(self, refused: list[tuple[str, Any, str]]) -> None:
        aside = self.path.with_name(self.path.name + ".rejected.jsonl")
        with aside.open("a", encoding="ascii") as f:
            for table, row, why in refused:
                f.write(json.dumps({"table": table, "row": row, "error": why}, default=str) + "\n")
        tables = sorted({t for t, _, _ in refused})
        log.error(
            "%s: DuckDB refused %d row(s) of %s; they are kept in %s: %s",
            self.path,
            len(refused),
            tables,
            aside,
            refused[0][2],
        )

    def _commit_once(self, batches: dict[str, list[Any]], seq: int | None) -> None:
        try:
            self.con.execute("BEGIN TRANSACTION")
            for table, rows in batches.items():
                self._append(table, self._merge_actions(rows) if table == "actions" else rows)
            if seq is not None:
                self.con.execute("UPDATE journal_state SET applied_seq = ?", [seq])
            self.con.execute("COMMIT")
        except BaseException:
            try:
                self.con.execute("ROLLBACK")
            except duckdb.Error:
                pass
            raise

    def _append(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        key = KEYS.get(table)
        if key:  # upsert; within one batch the LAST row of a key wins (DuckDB keeps the first)
            names = list(COLUMNS[table])
            idx = [names.index(k) for k in key]
            rows = list({tuple(r[i] for i in idx): r for r in rows}.values())
        appender = self.con.appender(
            table, columns=list(COLUMNS[table]), action="upsert" if key else "insert"
        )
        appender.append_rows(rows)
        appender.flush()

    def _merge_actions(self, events: list[tuple[Tags, dict[str, Any]]]) -> list[tuple[Any, ...]]:
        """Fold action moves (`_action_move`), in order, into their current rows (inside the
        flush's transaction): status, who proposed and who decided, and every move's history."""
        names = list(COLUMNS["actions"])
        ids = list(dict.fromkeys(e["action_id"] for _, e in events))
        cur = self.con.execute(
            f"{_select_sql('actions')} WHERE action_id IN (SELECT unnest(?::VARCHAR[]))", [ids]
        )
        rows = {r[0]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}
        for tags, e in events:
            row = rows.get(e["action_id"])
            payload, amended = e["payload"], e["amended"]
            if row is None:
                row = dict.fromkeys(names)
                row.update(
                    action_id=e["action_id"],
                    run_id=tags[0],
                    action=e["action"],
                    proposed_by=e["by"],
                    payload=_dumps(payload),
                    dedupe_key=e["dedupe_key"],
                    history="[]",
                    created_at_ms=e["at_ms"],
                )
                rows[e["action_id"]] = row
            elif payload is not None:
                row["payload"] = _dumps(payload)
            if e["status"] in _DECISIONS:
                row["decided_by"] = e["by"]
            if amended is not None:
                row["amended"] = _dumps(amended)
            row["status"] = e["status"]
            row["updated_at_ms"] = e["at_ms"]
            history = json.loads(row["history"] or "[]")
            history.append({"status": e["status"], "by": e["by"], "at_ms": e["at_ms"]})
            row["history"] = _dumps(history)
        return [_ordered("actions", r) for r in rows.values()]

    # -------------------------------------------------------------- closing
    def close(self) -> None:
        """Flush, close the connection, delete a snapshot copy. Idempotent."""
        if self._closed:
            return
        flushed = False
        try:
            if not self.read_only:
                self.flush()
            flushed = True
        finally:
            with self._lock:
                self._closed = True
                self.con.close()
                if self._journal is not None:  # every record is in the file: no journal left
                    self._journal.close(remove=flushed)
            if self._temp_dir:
                shutil.rmtree(self._temp_dir, ignore_errors=True)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------ regrades
# OutputGrade's fields are `outputs` columns: the output's key (within a run), then the grade.
_GRADE_FIELDS = tuple(f.name for f in fields(OutputGrade))
_GRADE_KEY = ("item_id", "repeat", "config")
_GRADE_VALUES = tuple(c for c in _GRADE_FIELDS if c not in _GRADE_KEY)
# One UPDATE for a whole regrade: the grades as one list parameter per field, unnested side by
# side (types from the `outputs` declaration), joined to the run's outputs on their key.
_SET_GRADES = (
    "UPDATE outputs SET "
    + ", ".join(f'"{c}" = g."{c}"' for c in _GRADE_VALUES)
    + " FROM (SELECT "
    + ", ".join(f'unnest(?::{COLUMNS["outputs"][c]}[]) AS "{c}"' for c in _GRADE_FIELDS)
    + ") AS g WHERE outputs.run_id = ? AND "
    + " AND ".join(f'outputs."{c}" = g."{c}"' for c in _GRADE_KEY)
)


def _grade_values(g: OutputGrade) -> tuple[Any, ...]:
    columns = COLUMNS["outputs"]
    return tuple(_coerce(getattr(g, c), columns[c], c) for c in _GRADE_FIELDS)


def _now() -> int:
    return now_ms()
