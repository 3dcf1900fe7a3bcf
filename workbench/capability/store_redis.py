"""Capability records in Redis, shared by every process and host that routes through it.

Keys (``prefix`` defaults to ``wb:cap:``; the four parts are joined by the unit separator
``\\x1f``, which no provider, model, scope or capability name contains, so no two keys collide):
    {prefix}r:{provider}\\x1f{model}\\x1f{scope}\\x1f{capability}   the record as JSON
    {prefix}index                                                a set of every record's field

One key per record, not one hash for all: every tool-bearing request writes its model's
record, and a transaction watching a shared hash would retry on every other model's write.
`put` reads, decides with `should_replace` in Python and writes under WATCH/MULTI/EXEC, retried
when another process wrote that key in between: the rule stays in one place (decide.py)
instead of a second copy in Lua. The index is written in the same transaction, so `all` sees
every record; all keys of a prefix must live on one node (no Redis Cluster spread).

`RedisCapabilityStore` raises Redis errors to its caller; `FailoverCapabilityStore` is the store
that never does.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions

from workbench._failover import FailoverStore, describe
from workbench._redis import RedisStore
from workbench.capability.decide import CapabilityRecord, should_replace
from workbench.capability.store import MemoryCapabilityStore
from workbench.errors import ConfigError
from workbench.events import now_ms

log = logging.getLogger("workbench.capability.store")

_SEP = "\x1f"
_SCHEMES = ("redis://", "rediss://", "unix://")
_MGET_CHUNK = 500

Key = tuple[str, str, str, str]


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code="CAPABILITY_STORE_INVALID")


def _duration(name: str, value: Any, *, zero_ok: bool = False) -> float:
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is None or not math.isfinite(number) or number < 0 or (number == 0 and not zero_ok):
        bound = "a finite number >= 0" if zero_ok else "a finite number > 0"
        raise _invalid(f"{name} must be {bound}, got {value!r}")
    return float(number)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _field(key: Key) -> str:
    return _SEP.join(key)


def _payload(record: CapabilityRecord) -> str:
    return json.dumps(record.as_dict(), sort_keys=True, separators=(",", ":"))


def _parse(raw: Any, where: str) -> CapabilityRecord | None:
    """A stored record, or None when missing or unreadable: a value someone else wrote there
    is no evidence, so it is treated as absent (and overwritten by the next put)."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        return CapabilityRecord.from_dict(data)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        log.warning("unreadable capability record at %r ignored: %s", where, describe(exc))
        return None


class RedisCapabilityStore(RedisStore):
    """The `CapabilityStore` over Redis: atomic across processes and hosts.

    `url_or_client`: a `redis://` (or `rediss://`, `unix://`) URL — the store builds and owns a
    client with `socket_timeout_s` timeouts, no retries and a blocking pool (see `_redis`) — or a
    `redis.asyncio.Redis` the caller owns (not closed by `close()`; either `decode_responses`
    works). `max_attempts` bounds the WATCH retries of one put: each lost round means another
    writer stored that key, so running out (logged, `put` returns False) takes a crowd of
    writers on one record. Errors are raised (see `FailoverCapabilityStore`).
    """

    backend = "redis"

    def __init__(
        self,
        url_or_client: str | aioredis.Redis,
        *,
        prefix: str = "wb:cap:",
        socket_timeout_s: float = 2.0,
        max_connections: int = 64,
        pool_timeout_s: float = 1.0,
        max_attempts: int = 64,
    ) -> None:
        if isinstance(url_or_client, str):
            # The URL is never echoed: it may carry a password.
            if not url_or_client.startswith(_SCHEMES):
                raise _invalid("the capability store needs a redis://, rediss:// or unix:// URL")
        elif not isinstance(url_or_client, aioredis.Redis):
            raise _invalid(
                f"the capability store needs a Redis URL or a redis.asyncio.Redis, "
                f"got {type(url_or_client).__name__}"
            )
        if not isinstance(prefix, str) or not prefix:
            raise _invalid("the capability store's prefix must be a non-empty string")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise _invalid(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
        try:
            super().__init__(
                url_or_client,
                socket_timeout_s=_duration("socket_timeout_s", socket_timeout_s),
                max_connections=max_connections,
                pool_timeout_s=_duration("pool_timeout_s", pool_timeout_s),
            )
        except ValueError as exc:  # redis-py's URL parser: its message may quote the URL
            raise _invalid("the capability store's Redis URL cannot be read") from exc
        self.prefix = prefix
        self._max_attempts = max_attempts

    def key(self, key: Key) -> str:
        return f"{self.prefix}r:{_field(key)}"

    @property
    def index_key(self) -> str:
        return f"{self.prefix}index"

    async def get(
        self, provider: str, model: str, scope: str, capability: str
    ) -> CapabilityRecord | None:
        where = self.key((provider, model, scope, capability))
        return _parse(await self._client.get(where), where)

    async def put(self, record: CapabilityRecord) -> bool:
        stored, _ = await self.put_and_read(record)
        return stored

    async def put_and_read(self, record: CapabilityRecord) -> tuple[bool, CapabilityRecord | None]:
        """`put`, and the record the key holds afterwards (`record` itself when it was stored):
        a caller mirroring Redis learns what won without reading it again."""
        where = self.key(record.key)
        payload = _payload(record)
        async with self._client.pipeline(transaction=True) as pipe:
            for _ in range(self._max_attempts):
                try:
                    await pipe.watch(where)
                    raw = await pipe.get(where)
                    current = _parse(raw, where)
                    if not should_replace(current, record):
                        await pipe.reset()
                        return False, current
                    if raw is not None and _text(raw) == payload:
                        await pipe.reset()  # already there, byte for byte: nothing to write
                        return True, record
                    pipe.multi()
                    pipe.set(where, payload)
                    pipe.sadd(self.index_key, _field(record.key))
                    await pipe.execute()
                    return True, record
                except redis.exceptions.WatchError:
                    continue  # another writer got there first: read again, decide again
        log.warning(
            "capability record %r not stored: %d writers in a row got there first",
            where,
            self._max_attempts,
        )
        return False, None

    async def all(self) -> list[CapabilityRecord]:
        fields = sorted(_text(f) for f in await self._client.smembers(self.index_key))
        records: list[CapabilityRecord] = []
        for start in range(0, len(fields), _MGET_CHUNK):
            keys = [f"{self.prefix}r:{f}" for f in fields[start : start + _MGET_CHUNK]]
            for where, raw in zip(keys, await self._client.mget(keys), strict=True):
                found = _parse(raw, where)
                if found is not None:
                    records.append(found)
        return records

    async def replay(self, records: Iterable[CapabilityRecord]) -> int:
        """Offer `records` again (one MGET, then a `put` for each that the stored one does not
        already cover): how a store that kept records while Redis was away gives them back.
        Returns how many were written."""
        wanted = list(records)
        if not wanted:
            return 0
        keys = [self.key(r.key) for r in wanted]
        current: list[Any] = []
        for start in range(0, len(keys), _MGET_CHUNK):
            current += await self._client.mget(keys[start : start + _MGET_CHUNK])
        written = 0
        for record, where, raw in zip(wanted, keys, current, strict=True):
            if raw is not None and _text(raw) == _payload(record):
                continue
            if should_replace(_parse(raw, where), record) and await self.put(record):
                written += 1
        return written


class FailoverCapabilityStore(FailoverStore[RedisCapabilityStore, MemoryCapabilityStore]):
    """Capability records in Redis while it answers, in memory when not; never raises an outage.

    An outage (connection refused or lost, timeout, Redis still loading, any Redis error) is
    served by an internal `MemoryCapabilityStore`: `backend` becomes "memory", `degraded_reason`
    says why, one warning is logged per transition, and `stats()` shows it. There is no event:
    the one backend event (`QuotaBackendEvent`) is about quotas, and its readers count it so.
    At most every `retry_every_s` a call first PINGs Redis (bounded by `ping_timeout_s`); when
    it answers, the records memory holds are replayed into Redis through `put` — capability
    records are facts worth keeping whole (a quota only lifts its counters), and `should_replace` still
    decides against whatever another process wrote meanwhile — and the store switches back.

    Memory mirrors Redis while Redis answers (each record put, and each one read), so a read
    during an outage answers from what this process saw, not from nothing. All of memory is
    replayed, not only the outage's puts: a Redis that restarted empty gets back what this
    process knew. `clock_ms` paces the retries only.
    """

    _log = log
    _label = "capability store"
    _memory_note = "this process only"

    def __init__(
        self,
        redis_url: str | aioredis.Redis,
        *,
        retry_every_s: float = 2.0,
        clock_ms: Callable[[], float] | None = None,
        prefix: str = "wb:cap:",
        socket_timeout_s: float = 2.0,
        ping_timeout_s: float = 0.2,
    ) -> None:
        retry_every_ms = _duration("retry_every_s", retry_every_s, zero_ok=True) * 1000
        ping_timeout_s = _duration("ping_timeout_s", ping_timeout_s)
        super().__init__(
            RedisCapabilityStore(redis_url, prefix=prefix, socket_timeout_s=socket_timeout_s),
            MemoryCapabilityStore(),
            clock_ms=clock_ms or now_ms,
            retry_every_ms=retry_every_ms,
            ping_timeout_s=ping_timeout_s,
        )
        # Records memory accepted while on memory and not yet replayed: a put that lands while
        # a restore is replaying must not be left behind by it.
        self._unsynced: dict[Key, CapabilityRecord] = {}

    async def get(
        self, provider: str, model: str, scope: str, capability: str
    ) -> CapabilityRecord | None:
        async def on_redis() -> CapabilityRecord | None:
            found = await self._redis.get(provider, model, scope, capability)
            if found is not None:
                await self._memory.put(found)
            return found

        return await self._serve(
            on_redis, lambda: self._memory.get(provider, model, scope, capability)
        )

    async def put(self, record: CapabilityRecord) -> bool:
        async def on_redis() -> bool:
            stored, holds = await self._redis.put_and_read(record)
            if holds is not None:
                await self._memory.put(holds)
            return stored

        async def on_memory() -> bool:
            stored = await self._memory.put(record)
            if stored:
                self._unsynced[record.key] = record
            return stored

        return await self._serve(on_redis, on_memory)

    async def all(self) -> list[CapabilityRecord]:
        async def on_redis() -> list[CapabilityRecord]:
            records = await self._redis.all()
            for found in records:
                await self._memory.put(found)
            return records

        return await self._serve(on_redis, self._memory.all)

    async def _write_back(self) -> str:
        self._unsynced.clear()
        replayed = await self._redis.replay(await self._memory.all())
        while self._unsynced:  # puts that landed in memory during the replay
            pending = list(self._unsynced.values())
            self._unsynced.clear()
            replayed += await self._redis.replay(pending)
        return f"; {replayed} record(s) written back"
