"""Redis while it answers, memory when it does not: the outage rules every failover store follows.

    redis --(an outage error on a Redis call)--> memory
    memory --(PING answers within ping_timeout_s, and the store's write-back succeeds)--> redis

- A call that meets an outage is served again by memory: the caller never sees the outage.
- One warning (and whatever the store announces) per transition, not per call: `transitions`
  counts them, `degraded_reason` says why the store is on memory, `last_error` is the latest
  failure of any kind.
- On memory, at most one call every `retry_every_s` first PINGs Redis, and only one at a time:
  a dead server costs one bounded PING per interval, not one per call.
- Every transition bumps a generation: a Redis call that started before a transition and fails
  after it belongs to the old state and changes nothing (a slow failure must not degrade a store
  that has just been restored).

The stores differ in what they give back on restore (a quota lifts Redis's counters to what
memory counted; capability records are replayed) and what they announce (the quota emits
`QuotaBackendEvent`s): `_write_back`, `_degraded` and `_restored` are theirs to override.

Nothing here imports `redis` at module load: `workbench.routing.quota` builds on this class
and loads Redis only when a Redis store is built.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

if TYPE_CHECKING:
    from workbench._redis import RedisStore

R = TypeVar("R", bound="RedisStore")
M = TypeVar("M")
T = TypeVar("T")


def describe(exc: BaseException) -> str:
    """An error as one line for logs and `stats()`: its type, and its message when it has one."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class FailoverStore(Generic[R, M]):
    """The outage state of a store over a Redis store `R` that falls back to a memory store `M`.

    A subclass serves each call through `_serve` and sets `_log`, `_label` (how its log lines
    name it) and `_memory_note` (what being on memory costs, for the degraded line).
    `clock_ms` paces the PING retries only.
    """

    _log: ClassVar[logging.Logger]
    _label: ClassVar[str]
    _memory_note: ClassVar[str]

    def __init__(
        self,
        redis: R,
        memory: M,
        *,
        clock_ms: Callable[[], float],
        retry_every_ms: float,
        ping_timeout_s: float,
    ) -> None:
        from workbench._redis import OUTAGE_ERRORS

        self._redis = redis
        self._memory = memory
        self._pacing_ms = clock_ms
        self._retry_every_ms = retry_every_ms
        self._ping_timeout_s = ping_timeout_s
        self._outages: tuple[type[BaseException], ...] = OUTAGE_ERRORS
        self.backend: str = "redis"
        self.degraded_reason: str | None = None
        self.last_error: str | None = None
        self.transitions = 0
        self._generation = 0
        self._next_probe_ms = 0.0
        self._probing = False

    @property
    def memory(self) -> M:
        return self._memory

    @property
    def redis(self) -> R:
        return self._redis

    def stats(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "degraded_reason": self.degraded_reason,
            "last_error": self.last_error,
            "transitions": self.transitions,
        }

    async def close(self) -> None:
        try:
            await self._redis.close()
        except Exception as exc:  # closing a dead connection is not worth an error
            self._log.debug(
                "closing the redis client of the %s failed: %s", self._label, describe(exc)
            )

    async def _serve(
        self,
        on_redis: Callable[[], Awaitable[T]],
        on_memory: Callable[[], Awaitable[T]],
        *,
        probe: bool = True,
    ) -> T:
        """`on_redis()` while Redis answers, else `on_memory()`; an outage during `on_redis`
        degrades the store and the same call is answered by memory. `probe=False`: on memory,
        answer without looking whether Redis is back (the quota's `usage` read never did)."""
        if probe and self.backend == "memory":
            await self._maybe_restore()
        if self.backend == "redis":
            generation = self._generation
            try:
                return await on_redis()
            except self._outages as exc:
                await self._degrade(exc, generation)
        return await on_memory()

    async def _write_back(self) -> str:
        """What memory gives back to Redis once it answers PING, before the switch; raising an
        outage error keeps the store on memory. Returns a note for the restore log line."""
        return ""

    async def _degraded(self, reason: str) -> None:
        """Called once per switch to memory, after it."""

    async def _restored(self, was: str | None) -> None:
        """Called once per switch back to Redis, after it; `was` is the outage's reason."""

    async def _degrade(self, exc: BaseException, generation: int) -> None:
        reason = describe(exc)
        self.last_error = reason
        if self.backend != "redis" or generation != self._generation:
            return  # already degraded, or a failure from before the last transition
        self.backend = "memory"
        self.degraded_reason = reason
        self.transitions += 1
        self._generation += 1
        self._next_probe_ms = self._pacing_ms() + self._retry_every_ms
        self._log.warning("%s degraded to memory (%s): %s", self._label, self._memory_note, reason)
        await self._redis.disconnect()  # pooled sockets of a dead server are useless
        await self._degraded(reason)

    async def _maybe_restore(self) -> None:
        if self._probing or self._pacing_ms() < self._next_probe_ms:
            return
        self._probing = True
        generation = self._generation
        try:
            await self._redis.ping(timeout_s=self._ping_timeout_s)
            note = await self._write_back()
        except self._outages as exc:  # down still, or it answered PING but not the write-back
            self.last_error = describe(exc)
            return
        finally:
            self._probing = False
            self._next_probe_ms = self._pacing_ms() + self._retry_every_ms
        if self.backend != "memory" or generation != self._generation:
            return
        # No await from the end of the write-back to the switch: nothing lands in memory unseen.
        was = self.degraded_reason
        self.backend = "redis"
        self.degraded_reason = None
        self.transitions += 1
        self._generation += 1
        self._log.warning("%s restored to redis (was down: %s)%s", self._label, was, note)
        await self._restored(was)
