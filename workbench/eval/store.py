"""The workbench's DuckDB store: one file holding every run, attempt, route, verdict, output and
capability record (SPEC 10.4).

Writes are buffered per table and written by `flush()` in ONE transaction, each table with one
DuckDB appender (`con.appender(table)`, new in DuckDB 2.0: in benchmarks/duckdb_logging.py
~1.2x the rows/s of registering a pandas DataFrame and `INSERT … SELECT`, ~3x `unnest` of list
parameters, ~175x `executemany`, and it needs neither pandas nor Arrow). A buffer is flushed
when it holds `flush_rows` rows, when `flush_s` has passed since the last flush (checked at
the next write), and at `done()`, `finish_run()` and `close()`. Nothing flushes at
interpreter exit on its own: the runner closes the store in a `finally`.

DuckDB lets one process write a file. Opening a file another process writes raises
`ConfigError(STORE_LOCKED)` naming the holder; `read_only=True` opens the file read-only, or,
when the writer's lock refuses even readers, a copy of it (`store.snapshot` is then True).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from workbench.capability.decide import CapabilityRecord, should_replace
from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.schema import (
    COLUMNS,
    KEYS,
    check_not_too_new,
    current_version,
    latest_version,
    migrate,
)
from workbench.events import (
    ActionEvent,
    AttemptEvent,
    QuotaEvent,
    RouteEvent,
    ToolStepEvent,
    VerdictEvent,
    now_ms,
)

log = logging.getLogger("workbench.eval.store")

RUN_STATUSES = ("running", "finished", "interrupted", "failed")
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")
# Action states in which `by` is the one who decided (SPEC 5.3: approve → executing).
_DECISIONS = ("approved", "executing", "rejected")


def _dumps(value: Any) -> str | None:
    """Compact JSON (SPEC 1.1); None stays NULL."""
    if value is None:
        return None
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _json_text(value: Any) -> str | None:
    """A JSON column's text: a str that already is JSON text is kept as it is (callers often
    pass `json.dumps(...)`), any other str is stored as a JSON string, anything else dumped."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return _dumps(value)
        return value
    return _dumps(value)


def _split_key(key: str) -> tuple[str, str]:
    """`provider:model@lane` → (provider, model)."""
    provider, _, model = key.partition(":")
    return provider, model.split("@", 1)[0]


def _coerce(value: Any, kind: str, column: str) -> Any:
    """A dict row's value as its column's type, so that a bad value fails here, at the caller,
    and never in a later flush that carries everybody else's rows."""
    if value is None:
        return None
    try:
        if kind == "JSON":
            return _json_text(value)
        if kind == "VARCHAR":
            if isinstance(value, str):
                return value
            return _dumps(value) if isinstance(value, dict | list | tuple) else str(value)
        if kind in ("INTEGER", "BIGINT"):
            if isinstance(value, float) and not math.isfinite(value):
                return None
            return int(value)
        if kind == "DOUBLE":
            return float(value)
        if kind == "BOOLEAN":
            return bool(value)
        if kind == "TIMESTAMP" and isinstance(value, str):
            return datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column {column!r} ({kind}) cannot hold {value!r}: {exc}") from exc
    return value


def _row(table: str, data: Mapping[str, Any]) -> tuple[Any, ...]:
    columns = COLUMNS[table]
    unknown = set(data) - set(columns)
    if unknown:
        raise ValueError(f"{table} has no column(s) {sorted(unknown)}; columns: {list(columns)}")
    return tuple(_coerce(data.get(name), kind, name) for name, kind in columns.items())


# ------------------------------------------------------------------ events → rows
Tags = tuple[Any, Any, int, str]  # run_id, item_id, repeat, config


def _attempt(e: AttemptEvent, t: Tags) -> tuple[Any, ...]:
    provider, model = (e.provider, e.model) if e.provider or e.model else _split_key(e.key)
    return (
        *t, e.route_id or None, e.key, provider, model, e.lane, e.position, e.outcome,
        e.status, e.error_kind, e.error_code, e.error_message, e.tokens, e.latency_ms,
        e.start_ms, e.cached, e.reason or None,
    )  # fmt: skip


def _route(e: RouteEvent, t: Tags) -> tuple[Any, ...]:
    return (
        *t, e.route_id or None, _dumps(list(e.candidates)), e.chosen, e.partial,
        e.fallback_depth, _dumps(dict(e.skipped)), e.error_code, e.at_ms,
    )  # fmt: skip


def _verdict(e: VerdictEvent, t: Tags) -> tuple[Any, ...]:
    return (
        *t, e.provider, e.model, e.scope, e.capability, e.verdict, e.recorded, e.evidence,
        e.via, e.at_ms,
    )  # fmt: skip


def _tool_step(e: ToolStepEvent, t: Tags) -> tuple[Any, ...]:
    params = e.params if isinstance(e.params, str) or e.params is None else _dumps(e.params)
    return (*t, e.step_id, e.tool, params, e.ok, e.at_ms)


def _quota(e: QuotaEvent, t: Tags) -> tuple[Any, ...]:
    return (
        t[0], t[1], e.key, e.provider, e.model, e.scope, e.window, e.limit, e.remaining,
        e.reset_at_ms, e.source, e.observed_at_ms,
    )  # fmt: skip


def _other(e: object, t: Tags) -> tuple[Any, ...]:
    if is_dataclass(e) and not isinstance(e, type):
        data: Any = asdict(e)
    elif isinstance(e, Mapping):
        data = dict(e)
    else:
        data = {"repr": repr(e)}
    at = data.get("at_ms") if isinstance(data, dict) else None
    return (t[0], t[1], type(e).__name__, at if isinstance(at, int) else now_ms(), _dumps(data))


_HANDLERS: dict[type, tuple[str, Callable[[Any, Tags], tuple[Any, ...]]]] = {
    AttemptEvent: ("attempts", _attempt),
    RouteEvent: ("routes", _route),
    VerdictEvent: ("verdicts", _verdict),
    ToolStepEvent: ("tool_steps", _tool_step),
    QuotaEvent: ("quota", _quota),
}


def _handler(event: object) -> tuple[str, Callable[[Any, Tags], tuple[Any, ...]]]:
    found = _HANDLERS.get(type(event))
    if found is None:
        for cls, value in _HANDLERS.items():
            if isinstance(event, cls):
                return value
        return ("events", _other)
    return found


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
        self.capabilities = DuckDBCapabilityStore(self)
        self.cache = DuckDBResponseCache(self)

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
    ) -> Store:
        """Open (creating and migrating) a store. `read_only=True` never writes the file and
        falls back to a snapshot copy when a writer holds it; `snapshot=True` always reads a
        copy (so that this reader never blocks a writer in another process)."""
        path = Path(path)
        opts = {"flush_rows": flush_rows, "flush_s": flush_s}
        if not (read_only or snapshot):
            try:
                con = duckdb.connect(str(path))
            except duckdb.IOException as exc:
                if "lock" in str(exc).lower():
                    raise _locked(path, exc) from exc
                raise _unreadable(path, exc) from exc
            except duckdb.ConnectionException as exc:  # this process reads it read-only
                raise _unreadable(path, exc) from exc
            try:
                migrate(con, path)
            except BaseException:
                con.close()
                raise
            return cls(con, path, read_only=False, **opts)
        if not path.exists():
            raise ConfigError(f"{path} does not exist", code="STORE_NOT_FOUND")
        if not snapshot:
            con: duckdb.DuckDBPyConnection | None = None
            try:
                con = duckdb.connect(str(path), read_only=True)
            except duckdb.ConnectionException:
                # This process already writes the file: share its database, never write.
                con = duckdb.connect(str(path))
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise _unreadable(path, exc) from exc
            if con is not None:
                version = current_version(con)
                if version == latest_version():
                    return cls(con, path, read_only=True, **opts)
                con.close()
                check_not_too_new(version, path)
                # older: upgrade a copy, never the file we were asked only to read
        return cls._open_snapshot(path, opts)

    @classmethod
    def _open_snapshot(cls, path: Path, opts: dict[str, Any]) -> Store:
        temp_dir = tempfile.mkdtemp(prefix="workbench-snapshot-")
        copy = Path(temp_dir) / path.name
        last: Exception | None = None
        for _ in range(3):  # a checkpoint during the copy can tear it: copy again
            try:
                wal = path.with_name(path.name + ".wal")
                if wal.exists():
                    shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
                shutil.copyfile(path, copy)
                con = duckdb.connect(str(copy))
                try:
                    migrate(con, path)
                except BaseException:
                    con.close()
                    raise
                return cls(con, path, read_only=True, snapshot=True, temp_dir=temp_dir, **opts)
            except ConfigError:
                shutil.rmtree(temp_dir, ignore_errors=True)
                raise
            except (duckdb.Error, OSError) as exc:
                last = exc
                for leftover in Path(temp_dir).iterdir():
                    leftover.unlink()
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise _unreadable(path, last or RuntimeError("copy failed"))

    # -------------------------------------------------------------- runs and items
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
    ) -> str:
        """Record a new run (status `running`) and return its id, e.g. `20261130-150102-ab12`
        (UTC time then 4 random hex digits: sorts by start time)."""
        from workbench import __version__

        self._writable()
        with self._lock:
            while True:
                stamp = datetime.now(UTC)
                run_id = f"{stamp:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
                taken = self.con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id])
                if not taken.fetchall():
                    break
            self.con.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, NULL, 'running', ?, ?, ?)",
                [
                    run_id, name, dataset, dataset_sha, stamp.replace(tzinfo=None),
                    _dumps(list(configs)), _dumps(settings), __version__,
                ],
            )  # fmt: skip
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
        for key in ("configs", "settings"):
            run[key] = json.loads(run[key]) if run[key] is not None else None
        return run

    def _set_status(self, run_id: str, status: str, finished: bool) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"run status {status!r}; expected one of {RUN_STATUSES}")
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

    # -------------------------------------------------------------- the event sink
    def sink(
        self, run_id: str, item_id: str | None = None, repeat: int = 0, config: str = ""
    ) -> Callable[[object], None]:
        """A sink for `workbench.events.emit`: every event it takes is tagged with these."""
        return functools.partial(
            self.write, run_id=run_id, item_id=item_id, repeat=repeat, config=config
        )

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
        if self.read_only or self._closed:
            self._writable()
        tags = (self._run_id if run_id is None else run_id, item_id, repeat, config)
        if isinstance(event, ActionEvent):
            table, row = "actions", (tags, event)
        else:
            table, build = _handler(event)
            row = build(event, tags)
        self._buffer(table, row)

    def add_output(self, row: dict[str, Any]) -> None:
        """Buffer one graded output (columns as the `outputs` table; JSON columns take Python
        values). A second output for the same (run, item, repeat, config) replaces the first."""
        self._writable()
        self._buffer("outputs", _row("outputs", row))

    def add_leaks(self, rows: list[dict[str, Any]]) -> None:
        """The masking audit's findings (columns as the `leaks` table), written at once."""
        self._writable()
        for row in rows:
            self._buffer("leaks", _row("leaks", row))
        self.flush()

    def _buffer(self, table: str, row: Any) -> None:
        with self._lock:
            buf = self._buffers[table]
            buf.append(row)
            if len(buf) >= self.flush_rows or time.monotonic() - self._last_flush >= self.flush_s:
                self.flush()

    def pending(self) -> dict[str, int]:
        """Rows buffered and not yet written, per table."""
        with self._lock:
            return {t: len(rows) for t, rows in self._buffers.items() if rows}

    def done(self, run_id: str) -> set[tuple[str, int, str]]:
        """(item_id, repeat, config) of every output the run has: what `--resume` skips."""
        self.flush()
        with self._lock:
            rows = self.con.execute(
                "SELECT item_id, repeat, config FROM outputs WHERE run_id = ?", [run_id]
            ).fetchall()
        return {(i, r, c) for i, r, c in rows}

    # -------------------------------------------------------------- flushing
    def flush(self) -> None:
        """Write every buffer in one transaction, one appender statement per table."""
        with self._lock:
            self._last_flush = time.monotonic()
            if self._closed or not any(self._buffers.values()):
                return
            batches = {t: rows for t, rows in self._buffers.items() if rows}
            self._buffers = {t: [] for t in COLUMNS}
            try:
                self.con.execute("BEGIN TRANSACTION")
                for table, rows in batches.items():
                    self._append(table, self._merge_actions(rows) if table == "actions" else rows)
                self.con.execute("COMMIT")
            except Exception as exc:
                try:
                    self.con.execute("ROLLBACK")
                except duckdb.Error:
                    pass
                lost = {t: len(r) for t, r in batches.items()}
                log.error("store flush failed, %s row(s) lost: %s", lost, exc)
                raise WorkbenchError(
                    f"{self.path}: writing {sum(lost.values())} buffered row(s) failed: {exc}",
                    code="STORE_WRITE_FAILED",
                    details={"rows": lost},
                ) from exc

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

    def _merge_actions(self, events: list[tuple[Tags, ActionEvent]]) -> list[tuple[Any, ...]]:
        """Fold action events, in order, into their current rows (inside the flush's
        transaction): status, who proposed and who decided, and the history of every move."""
        names = list(COLUMNS["actions"])
        ids = list(dict.fromkeys(e.action_id for _, e in events))
        cur = self.con.execute(
            "SELECT * FROM actions WHERE action_id IN (SELECT unnest(?::VARCHAR[]))", [ids]
        )
        rows = {r[0]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}
        for tags, e in events:
            row = rows.get(e.action_id)
            payload = getattr(e, "payload", None)
            amended = getattr(e, "amended", None) or getattr(e, "amend", None)
            if row is None:
                row = dict.fromkeys(names)
                row.update(
                    action_id=e.action_id, run_id=tags[0], action=e.action, proposed_by=e.by,
                    payload=_dumps(payload), dedupe_key=getattr(e, "dedupe_key", None),
                    history="[]", created_at_ms=e.at_ms,
                )  # fmt: skip
                rows[e.action_id] = row
            elif payload is not None:
                row["payload"] = _dumps(payload)
            if e.status in _DECISIONS:
                row["decided_by"] = e.by
            if amended is not None:
                row["amended"] = _dumps(amended)
            row["status"] = e.status
            row["updated_at_ms"] = e.at_ms
            history = json.loads(row["history"] or "[]")
            history.append({"status": e.status, "by": e.by, "at_ms": e.at_ms})
            row["history"] = _dumps(history)
        return [tuple(r[n] for n in names) for r in rows.values()]

    # -------------------------------------------------------------- closing
    def close(self) -> None:
        """Flush, close the connection, delete a snapshot copy. Idempotent."""
        if self._closed:
            return
        try:
            if not self.read_only:
                self.flush()
        finally:
            with self._lock:
                self._closed = True
                self.con.close()
            if self._temp_dir:
                shutil.rmtree(self._temp_dir, ignore_errors=True)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _locked(path: Path, exc: Exception) -> ConfigError:
    m = _LOCK_HOLDER.search(str(exc))
    program, pid = (m["program"], int(m["pid"])) if m else ("another process", None)
    holder = f"{program} (PID {pid})" if pid is not None else program
    return ConfigError(
        f"{path} is locked: {holder} has it open for writing (DuckDB allows one writer). "
        "Wait for it to finish, or read a snapshot with read_only=True (CLI: --read-only)",
        code="STORE_LOCKED",
        details={"path": str(path), "program": program, "pid": pid},
    )


def _unreadable(path: Path, exc: Exception) -> ConfigError:
    return ConfigError(
        f"{path} cannot be opened as a workbench store: {exc}",
        code="STORE_UNREADABLE",
        details={"path": str(path)},
    )


# ------------------------------------------------------------------ capability store, cache
class DuckDBCapabilityStore:
    """`CapabilityStore` on the `capabilities` table, with every record mirrored in memory.

    A store file has one writer (DuckDB's lock says so), so the mirror is exact: `get` never
    queries, and `put` decides with `should_replace` in memory and buffers the row for the
    next flush (one upsert per key, in the flush's transaction). The runner classifies every
    tool-bearing attempt: a transaction and two queries per attempt blocked the event loop
    for ~8 ms each (benchmarks/runner_throughput.py)."""

    _COLS = "provider, model, scope, capability, verdict, observed_at, via, evidence"

    def __init__(self, store: Store) -> None:
        self._store = store
        self._mirror: dict[tuple[str, str, str, str], CapabilityRecord] | None = None

    def _records(self) -> dict[tuple[str, str, str, str], CapabilityRecord]:
        if self._mirror is None:
            with self._store._lock:
                rows = self._store.con.execute(f"SELECT {self._COLS} FROM capabilities").fetchall()
            names = self._COLS.split(", ")
            records = [CapabilityRecord.from_dict(dict(zip(names, r, strict=True))) for r in rows]
            self._mirror = {r.key: r for r in records}
        return self._mirror

    async def get(
        self, provider: str, model: str, scope: str, capability: str
    ) -> CapabilityRecord | None:
        return self._records().get((provider, model, scope, capability))

    async def put(self, record: CapabilityRecord) -> bool:
        self._store._writable()
        records = self._records()
        if not should_replace(records.get(record.key), record):
            return False
        records[record.key] = record
        self._store._buffer(
            "capabilities",
            (record.provider, record.model, record.scope, record.capability, record.verdict,
             record.observed_at, record.via, record.evidence),
        )  # fmt: skip
        return True

    async def all(self) -> list[CapabilityRecord]:
        return sorted(self._records().values(), key=lambda r: r.key)


class DuckDBResponseCache:
    """Replies keyed by a cache key (SPEC 10.3), each with a TTL. Only successes are put."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, cache_key: str, now_ms: int | None = None) -> dict[str, Any] | None:
        """The reply, or None when missing or expired (`expires_at_ms <= now`)."""
        now = _now() if now_ms is None else now_ms
        with self._store._lock:
            rows = self._store.con.execute(
                "SELECT reply FROM response_cache WHERE cache_key = ? "
                "AND (expires_at_ms IS NULL OR expires_at_ms > ?)",
                [cache_key, now],
            ).fetchall()
        return json.loads(rows[0][0]) if rows else None

    def put(
        self,
        cache_key: str,
        provider: str,
        model: str,
        reply: dict[str, Any],
        ttl_s: float | None,
        now_ms: int | None = None,
    ) -> None:
        """Store a successful reply for `ttl_s` seconds (None: until replaced)."""
        if isinstance(reply, BaseException):
            raise TypeError("errors are never cached")
        self._store._writable()
        now = _now() if now_ms is None else now_ms
        expires = None if ttl_s is None else now + int(ttl_s * 1000)
        with self._store._lock:
            self._store.con.execute(
                "INSERT OR REPLACE INTO response_cache VALUES (?, ?, ?, ?, ?, ?)",
                [cache_key, provider, model, _dumps(reply), now, expires],
            )


def _now() -> int:
    return now_ms()
