"""Pending actions in DuckDB: an `actions` table in a file the caller owns, persistent.

The table's shape is declared once, in `workbench.tools.pending` (`COLUMN_TYPES`,
`PRIMARY_KEY`): on a connection without the table, this store creates it from that
declaration (`ACTIONS_DDL`); a file that has it is used as it is, except a workbench store,
which is refused for writing (`ACTION_INVALID`): its one writer is its `Store`.

Atomicity: every transition is ONE guarded statement, e.g. the claim is
``UPDATE actions SET status='executing', ... WHERE action_id=? AND status='pending'
RETURNING *`` (no row back = somebody else moved it first), and a proposal with a dedupe key
is ``INSERT ... SELECT ... WHERE NOT EXISTS (a live action with that name and key)``. The
statements are built here once (`select_statement`, `insert_statement`, `move_statement`, ...)
for every store that keeps actions in DuckDB, and `RowActionStore` is the cycle written once
over a store's four primitives (fetch, insert, select, guarded move).

DuckDB calls are synchronous and fast, so they run inline on the event loop; one connection
serialises its statements, and a `threading.Lock` (pass the one that already guards a shared
connection as `lock`) keeps two threads sharing the connection from interleaving. A DuckDB
file has one writing process: for several processes or hosts use the Redis store.

The workbench's own DuckDB file has one writer, its eval `Store`: there, use the Store's
`store.actions` (the same statements, run by the Store), never this class on the Store's
connection; and do not feed this class's `ActionEvent`s to the Store writing the SAME file:
the writer folds those events into the same rows and each move would be recorded twice.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import threading
from collections.abc import Mapping
from typing import Any, Literal

import duckdb

from workbench.errors import ConfigError
from workbench.events import now_ms
from workbench.tools.pending import (
    COLUMN_TYPES,
    COLUMNS,
    DEDUPE_LIVE,
    JSON_COLUMNS,
    MUTABLE,
    PRIMARY_KEY,
    Action,
    Clock,
    claimed_row,
    duplicate_id,
    finished_row,
    from_row,
    newest_first,
    not_executing,
    rejected_row,
    to_row,
)

Statement = tuple[str, list[Any]]


def _column(name: str) -> str:
    key = " PRIMARY KEY" if PRIMARY_KEY == (name,) else ""
    return f"{name} {COLUMN_TYPES[name]}{key}"


_KEY = "" if len(PRIMARY_KEY) == 1 else f", PRIMARY KEY ({', '.join(PRIMARY_KEY)})"
# The table, from its one declaration (`workbench.tools.pending.COLUMN_TYPES`).
ACTIONS_DDL = f"CREATE TABLE IF NOT EXISTS actions ({', '.join(map(_column, COLUMNS))}{_KEY})"

_COLS = ", ".join(COLUMNS)
_VALUES = ", ".join("?::JSON" if c in JSON_COLUMNS else "?" for c in COLUMNS)
_INSERT = f"INSERT INTO actions ({_COLS}) SELECT {_VALUES}"
_LIVE = ", ".join(f"'{s}'" for s in DEDUPE_LIVE)
_NO_LIVE_TWIN = (
    "WHERE NOT EXISTS (SELECT 1 FROM actions WHERE action = ? AND dedupe_key = ? "
    f"AND status IN ({_LIVE}))"
)
_SELECT = f"SELECT {_COLS} FROM actions"
_SET = ", ".join(f"{c} = ?::JSON" if c in JSON_COLUMNS else f"{c} = ?" for c in MUTABLE)
_UPDATE = f"UPDATE actions SET {_SET} WHERE action_id = ? AND status = ? RETURNING {_COLS}"


# --------------------------------------------------------------------------- statements
def fetch_statement(action_id: str) -> Statement:
    """The action's row (or no row)."""
    return f"{_SELECT} WHERE action_id = ?", [action_id]


def select_statement(status: str | None = None, run_id: str | None = None) -> Statement:
    """The rows with this status and run id (either may be None: any)."""
    where, args = [], []
    if status is not None:
        where.append("status = ?")
        args.append(status)
    if run_id is not None:
        where.append("run_id = ?")
        args.append(run_id)
    return _SELECT + (f" WHERE {' AND '.join(where)}" if where else ""), args


def insert_statement(row: Mapping[str, Any]) -> Statement:
    """Insert `row` (an `actions` row, JSON columns as text) returning its id; with a dedupe
    key, only if no live action has the same name and key (no row back: one has)."""
    values = [row[c] for c in COLUMNS]
    if row["dedupe_key"] is None:
        return f"{_INSERT} RETURNING action_id", values
    sql = f"{_INSERT} {_NO_LIVE_TWIN} RETURNING action_id"
    return sql, [*values, row["action"], row["dedupe_key"]]


def live_twin_statement(row: Mapping[str, Any]) -> Statement:
    """The live action with `row`'s name and dedupe key (what a refused insert returns)."""
    sql = (
        f"{_SELECT} WHERE action = ? AND dedupe_key = ? AND status IN ({_LIVE}) "
        "ORDER BY created_at_ms, action_id LIMIT 1"
    )
    return sql, [row["action"], row["dedupe_key"]]


def move_statement(new: Mapping[str, Any], expected: str) -> Statement:
    """Write `new`'s mutable columns if the row's status is still `expected`, returning the row
    (no row back: somebody else moved it first). The one guarded statement of a transition."""
    return _UPDATE, [new[c] for c in MUTABLE] + [new["action_id"], expected]


def as_row(values: tuple[Any, ...] | None) -> dict[str, Any] | None:
    """A fetched tuple (columns in table order) as an `actions` row."""
    return None if values is None else dict(zip(COLUMNS, values, strict=True))


# --------------------------------------------------------------------------- the cycle
class RowActionStore:
    """The `ActionStore` cycle over one row per action, written once for every store whose
    primitives are: `_fetch(id)`, `_insert_row(row)` (atomic dedupe; returns the stored row,
    or the live one that refused it), `_select(status, run_id)`, and `_move(new, expected)`
    (the guarded write: None when the row is no longer `expected`). `_guard()` serialises a
    read and the move that follows it between threads; the guarded move alone is what keeps
    two approvals from both executing."""

    _clock: Clock

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def _fetch(self, action_id: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _insert_row(self, row: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _select(self, status: str | None, run_id: str | None) -> builtins.list[dict[str, Any]]:
        raise NotImplementedError

    def _move(self, new: dict[str, Any], expected: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _at(self, at_ms: int | None) -> int:
        return int(self._clock() if at_ms is None else at_ms)

    async def insert(self, action: Action) -> Action:
        with self._guard():
            return from_row(self._insert_row(to_row(action)))

    async def get(self, action_id: str) -> Action | None:
        with self._guard():
            row = self._fetch(action_id)
        return None if row is None else from_row(row)

    async def list(
        self, status: str | None = None, run_id: str | None = None
    ) -> builtins.list[Action]:
        with self._guard():
            rows = self._select(status, run_id)
        return newest_first(from_row(r) for r in rows)

    async def claim(
        self,
        action_id: str,
        by: str,
        amend: dict[str, Any] | None,
        *,
        at_ms: int | None = None,
    ) -> Action | None:
        with self._guard():
            row = self._fetch(action_id)
            if row is None or row["status"] != "pending":
                return None
            moved = self._move(claimed_row(row, by, amend, self._at(at_ms)), "pending")
        return None if moved is None else from_row(moved)

    async def finish(
        self,
        action_id: str,
        status: Literal["executed", "failed"],
        result: Any = None,
        error: str | None = None,
        *,
        at_ms: int | None = None,
    ) -> Action:
        with self._guard():
            row = self._fetch(action_id)
            if row is None or row["status"] != "executing":
                raise not_executing(action_id, None if row is None else row["status"])
            new = finished_row(row, status, result, error, self._at(at_ms))
            moved = self._move(new, "executing")
            if moved is None:
                raise not_executing(action_id, None)
        return from_row(moved)

    async def reject(
        self, action_id: str, by: str, note: str | None, *, at_ms: int | None = None
    ) -> Action | None:
        with self._guard():
            row = self._fetch(action_id)
            if row is None or row["status"] != "pending":
                return None
            moved = self._move(rejected_row(row, by, note, self._at(at_ms)), "pending")
        return None if moved is None else from_row(moved)


class DuckDBActionStore(RowActionStore):
    """Actions in a DuckDB `actions` table.

    `con_or_path`: a `duckdb` connection the caller owns (not closed by `close()`), or a
    path the store opens and owns. `lock`: the lock guarding that connection if others use
    it from other threads (default: a lock of the store's own). `clock_ms` stamps moves
    whose caller gave no `at_ms`.
    """

    def __init__(
        self,
        con_or_path: duckdb.DuckDBPyConnection | str | os.PathLike[str],
        *,
        lock: Any | None = None,
        clock_ms: Clock | None = None,
    ) -> None:
        if isinstance(con_or_path, duckdb.DuckDBPyConnection):
            self.con = con_or_path
            self._owns = False
        else:
            self.con = duckdb.connect(os.fspath(con_or_path))
            self._owns = True
        self._lock = lock if lock is not None else threading.Lock()
        self._clock = clock_ms or now_ms
        with self._lock:
            self._refuse_a_workbench_store(con_or_path)
            found = self.con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'actions' "
                "AND schema_name = 'main' AND database_name = current_database()"
            ).fetchone()
            if not (found and found[0]):  # a read-only file that has the table stays readable
                self.con.execute(ACTIONS_DDL)

    def _refuse_a_workbench_store(self, source: object) -> None:
        """A workbench store has one writer, its `Store`: writing its actions from here would
        be a second one (reading it read-only is fine)."""
        mode = self.con.execute("SELECT current_setting('access_mode')").fetchone()
        if mode and mode[0] == "read_only":
            return
        found = self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'schema_version' "
            "AND schema_name = 'main' AND database_name = current_database()"
        ).fetchone()
        if found and found[0]:
            if self._owns:
                self.con.close()
            raise ConfigError(
                f"{source} is a workbench store, whose one writer is its Store: use "
                "Store.open(path).actions for its pending actions",
                code="ACTION_INVALID",
            )

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        return self._lock

    def _one(self, statement: Statement) -> dict[str, Any] | None:
        return as_row(self.con.execute(*statement).fetchone())

    # Each primitive runs under `_guard()` (the base class takes it).
    def _fetch(self, action_id: str) -> dict[str, Any] | None:
        return self._one(fetch_statement(action_id))

    def _insert_row(self, row: dict[str, Any]) -> dict[str, Any]:
        if self._fetch(row["action_id"]) is not None:
            raise duplicate_id(row["action_id"])
        if self.con.execute(*insert_statement(row)).fetchall():
            return row
        existing = self._one(live_twin_statement(row))
        if existing is None:  # cannot happen on one connection; another writer raced us
            raise RuntimeError("dedupe insert found a live action that then vanished")
        return existing

    def _select(self, status: str | None, run_id: str | None) -> builtins.list[dict[str, Any]]:
        rows = self.con.execute(*select_statement(status, run_id)).fetchall()
        return [dict(zip(COLUMNS, r, strict=True)) for r in rows]

    def _move(self, new: dict[str, Any], expected: str) -> dict[str, Any] | None:
        return self._one(move_statement(new, expected))

    def close(self) -> None:
        """Close the connection if the store opened it. Idempotent."""
        if self._owns:
            with self._lock:
                self.con.close()
            self._owns = False
