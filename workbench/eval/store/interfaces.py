"""The async interfaces the library expects (a capability store, a response cache, an action
store), over the workbench `Store`: each call is a Store method, so the Store stays the file's
only writer and these hold no SQL of their own."""

from __future__ import annotations

import builtins
import contextlib
from typing import TYPE_CHECKING, Any

from workbench.capability.decide import CapabilityRecord
from workbench.events import now_ms
from workbench.tools.pending import Clock
from workbench.tools.pending_duckdb import RowActionStore

if TYPE_CHECKING:
    from workbench.eval.store.database import Store


class DuckDBCapabilityStore:
    """`CapabilityStore` over the Store's capability records (`Store.capability`,
    `Store.put_capability`, `Store.capability_records`).

    The Store mirrors every record in memory (the file has one writer), so `get` never
    queries, and `put` decides with `should_replace` in memory and buffers the row for the
    next flush (one upsert per key, in the flush's transaction). The runner classifies every
    tool-bearing attempt: a transaction and two queries per attempt blocked the event loop
    for ~8 ms each (benchmarks/runner_throughput.py)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def get(
        self, provider: str, model: str, scope: str, capability: str
    ) -> CapabilityRecord | None:
        return self._store.capability(provider, model, scope, capability)

    async def put(self, record: CapabilityRecord) -> bool:
        return self._store.put_capability(record)

    async def all(self) -> list[CapabilityRecord]:
        return self._store.capability_records()


class DuckDBResponseCache:
    """Replies keyed by a cache key, each with a TTL, in the Store (`Store.cache_get`,
    `Store.cache_put`). Only successes are put."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, cache_key: str, now_ms: int | None = None) -> dict[str, Any] | None:
        """The reply, or None when missing or expired (`expires_at_ms <= now`)."""
        return self._store.cache_get(cache_key, now_ms)

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
        self._store.cache_put(cache_key, provider, model, reply, ttl_s, now_ms)


class StoreActionStore(RowActionStore):
    """The async `ActionStore` (for `PendingActions`) over the Store's `actions` table: every
    statement runs in a Store method (`action_row`, `action_rows`, `insert_action`,
    `move_action`). The claim is the Store's one guarded `UPDATE … WHERE status = 'pending'
    RETURNING`: two simultaneous approvals, from two tasks or two threads, execute once."""

    def __init__(self, store: Store, *, clock_ms: Clock | None = None) -> None:
        self._store = store
        self._clock = clock_ms or now_ms

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        return self._store.held()  # a read and the move that follows it, between threads

    def _fetch(self, action_id: str) -> dict[str, Any] | None:
        return self._store.action_row(action_id)

    def _insert_row(self, row: dict[str, Any]) -> dict[str, Any]:
        return self._store.insert_action(row)

    def _select(self, status: str | None, run_id: str | None) -> builtins.list[dict[str, Any]]:
        return self._store.action_rows(status, run_id)

    def _move(self, new: dict[str, Any], expected: str) -> dict[str, Any] | None:
        return self._store.move_action(new, expected)
