"""Pending actions in DuckDB: the workbench's own `actions` table, persistent.

The store reads and writes exactly the `actions` table of the workbench file (the columns of
`workbench/eval/schema.py`); on a connection without it, it creates it with the same DDL.

Atomicity: every transition is ONE guarded statement, e.g. the claim is
``UPDATE actions SET status='executing', ... WHERE action_id=? AND status='pending'
RETURNING *`` (no row back = somebody else moved it first), and a proposal with a dedupe key
is ``INSERT ... SELECT ... WHERE NOT EXISTS (a live action with that name and key)``.
DuckDB calls are synchronous and fast, so they run inline on the event loop; one connection
serialises its statements, and a `threading.Lock` (pass the one that already guards a shared
connection as `lock`) keeps two threads sharing the connection from interleaving. A DuckDB
file has one writing process: for several processes or hosts use the Redis store.

Do not also feed this file's `ActionEvent`s to the eval `Store` writer of the SAME file: the
writer folds those events into the same rows and each move would be recorded twice.
"""

from __future__ import annotations

import builtins
import os
import threading
from typing import Any, Literal

import duckdb

from workbench.events import now_ms
from workbench.tools.pending import (
    COLUMNS,
    DEDUPE_LIVE,
    MUTABLE,
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

# Mirrors the `actions` table of workbench/eval/schema.py (_V1); the library never imports
# eval/, so the DDL is copied here. Keep the two identical.
ACTIONS_DDL = """
CREATE TABLE IF NOT EXISTS actions (
    action_id VARCHAR PRIMARY KEY, run_id VARCHAR, action VARCHAR, payload JSON,
    status VARCHAR, proposed_by VARCHAR, decided_by VARCHAR, amended JSON,
    dedupe_key VARCHAR, history JSON, created_at_ms BIGINT, updated_at_ms BIGINT)
"""

_COLS = ", ".join(COLUMNS)
_VALUES = ", ".join("?::JSON" if c in ("payload", "amended", "history") else "?" for c in COLUMNS)
_INSERT = f"INSERT INTO actions ({_COLS}) SELECT {_VALUES}"
_LIVE = ", ".join(f"'{s}'" for s in DEDUPE_LIVE)
_INSERT_DEDUPED = (
    f"{_INSERT} WHERE NOT EXISTS (SELECT 1 FROM actions WHERE action = ? AND dedupe_key = ? "
    f"AND status IN ({_LIVE})) RETURNING action_id"
)
_SELECT = f"SELECT {_COLS} FROM actions"
_SET = ", ".join(f"{c} = ?::JSON" if c in ("payload", "amended", "history") else f"{c} = ?"
                 for c in MUTABLE)  # fmt: skip
_UPDATE = f"UPDATE actions SET {_SET} WHERE action_id = ? AND status = ? RETURNING {_COLS}"


class DuckDBActionStore:
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
            found = self.con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'actions' "
                "AND schema_name = 'main' AND database_name = current_database()"
            ).fetchone()
            if not (found and found[0]):  # a read-only file that has the table stays readable
                self.con.execute(ACTIONS_DDL)

    def _at(self, at_ms: int | None) -> int:
        return int(self._clock() if at_ms is None else at_ms)

    def _row(self, values: tuple[Any, ...] | None) -> dict[str, Any] | None:
        return None if values is None else dict(zip(COLUMNS, values, strict=True))

    def _fetch(self, action_id: str) -> dict[str, Any] | None:
        """Under the lock."""
        cur = self.con.execute(f"{_SELECT} WHERE action_id = ?", [action_id])
        return self._row(cur.fetchone())

    def _move(self, new: dict[str, Any], expected: str) -> dict[str, Any] | None:
        """Under the lock: write `new`'s mutable columns if the row is still `expected`."""
        args = [new[c] for c in MUTABLE] + [new["action_id"], expected]
        return self._row(self.con.execute(_UPDATE, args).fetchone())

    async def insert(self, action: Action) -> Action:
        row = to_row(action)
        values = [row[c] for c in COLUMNS]
        with self._lock:
            if self._fetch(action.id) is not None:
                raise duplicate_id(action.id)
            if action.dedupe_key is None:
                self.con.execute(_INSERT, values)
                return from_row(row)
            inserted = self.con.execute(
                _INSERT_DEDUPED, [*values, action.action, action.dedupe_key]
            ).fetchall()
            if inserted:
                return from_row(row)
            cur = self.con.execute(
                f"{_SELECT} WHERE action = ? AND dedupe_key = ? AND status IN ({_LIVE}) "
                "ORDER BY created_at_ms, action_id LIMIT 1",
                [action.action, action.dedupe_key],
            )
            existing = self._row(cur.fetchone())
        if existing is None:  # cannot happen on one connection; another writer raced us
            raise RuntimeError("dedupe insert found a live action that then vanished")
        return from_row(existing)

    async def get(self, action_id: str) -> Action | None:
        with self._lock:
            row = self._fetch(action_id)
        return None if row is None else from_row(row)

    async def list(
        self, status: str | None = None, run_id: str | None = None
    ) -> builtins.list[Action]:
        where, args = [], []
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if run_id is not None:
            where.append("run_id = ?")
            args.append(run_id)
        sql = _SELECT + (f" WHERE {' AND '.join(where)}" if where else "")
        with self._lock:
            rows = self.con.execute(sql, args).fetchall()
        return newest_first(from_row(dict(zip(COLUMNS, r, strict=True))) for r in rows)

    async def claim(
        self,
        action_id: str,
        by: str,
        amend: dict[str, Any] | None,
        *,
        at_ms: int | None = None,
    ) -> Action | None:
        with self._lock:
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
        with self._lock:
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
        with self._lock:
            row = self._fetch(action_id)
            if row is None or row["status"] != "pending":
                return None
            moved = self._move(rejected_row(row, by, note, self._at(at_ms)), "pending")
        return None if moved is None else from_row(moved)

    def close(self) -> None:
        """Close the connection if the store opened it. Idempotent."""
        if self._owns:
            with self._lock:
                self.con.close()
            self._owns = False
