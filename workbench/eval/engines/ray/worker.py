"""One Ray worker of a run: an actor that makes its shard's outputs with the async runner and
keeps every row it builds in an outbox until the driver has taken it.

The worker never touches the DuckDB file: the driver's `Store` is its only writer. Rows are
built here by the same builders the store uses (`JobSink`, `event_row`), so a row means the
same thing whichever engine made it, and travel as Arrow record batches, one per table.

The outbox is pulled, not pushed: `take(after)` drops every batch up to `after` (the driver
has journaled them) and returns the next. A batch the driver did not acknowledge is sent again,
and the ids in it (attempt ids derived from run, item, repeat, config and try; outputs and
replies by their keys) let the driver log it once.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from workbench.capability.decide import CapabilityRecord
from workbench.config.providers_file import ProvidersConfig
from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.run.jobs import Configuration, Job, JobSettings, build_configs, run_jobs
from workbench.eval.run.options import RunConfig
from workbench.eval.store.rows import JobSink, _dumps, _row, cache_row
from workbench.eval.store.schema import COLUMNS, OutputRow
from workbench.events import QuotaBackendEvent, now_ms
from workbench.tools.demo import demo_executors
from workbench.tools.pending import Action, MemoryActionStore, PendingActions, to_row

log = logging.getLogger("workbench.eval.engines.ray")  # the driver's and workers' one logger

# DuckDB column type → Arrow type: the batch a worker sends has the table's own schema.
_ARROW = {
    "VARCHAR": "string",
    "JSON": "string",
    "INTEGER": "int32",
    "BIGINT": "int64",
    "DOUBLE": "float64",
    "BOOLEAN": "bool_",
}


def to_batch(table: str, rows: Sequence[tuple[Any, ...]]) -> Any:
    """Rows of `table` as one `pyarrow.RecordBatch` with the table's columns and types."""
    import pyarrow as pa

    columns = COLUMNS[table]
    arrays = [
        pa.array([row[i] for row in rows], type=getattr(pa, _ARROW[kind])())
        for i, kind in enumerate(columns.values())
    ]
    return pa.RecordBatch.from_arrays(arrays, names=list(columns))


def from_batch(batch: Any) -> list[tuple[Any, ...]]:
    """A record batch back as the table's row tuples, in the declared column order."""
    return list(zip(*(column.to_pylist() for column in batch.columns), strict=True))


@dataclass(slots=True)
class Shipment:
    """What one `take` returns: sealed batches in order, each (seq, {table: RecordBatch},
    rows that are not flat (action proposals and moves)); whether the worker has failed."""

    batches: list[tuple[int, dict[str, Any], list[tuple[str, Any]]]] = field(default_factory=list)
    failure: str | None = None
    making: list[tuple[str, int, str]] = field(default_factory=list)  # jobs begun, not yet made


class Outbox:
    """The worker's `RunLog`: rows wait here, per table, until the driver takes them."""

    def __init__(self) -> None:
        self.broken: WorkbenchError | None = None  # an outbox cannot fill a disk
        self._rows: dict[str, list[tuple[Any, ...]]] = {}
        self._other: list[tuple[str, Any]] = []
        self._sealed: list[tuple[int, dict[str, Any], list[tuple[str, Any]]]] = []
        self._seq = 0
        self._arrived = asyncio.Event()
        self.counts: dict[str, int] = {}
        self.made: set[tuple[str, int, str]] = set()  # outputs put since the last take

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
        return JobSink(self.put, (run_id, item_id, repeat, config), tries, steps)

    def put(self, table: str, row: Any) -> None:
        if table == "actions":  # a move: (tags, record), folded by the driver's store
            self._other.append(("actions", row))
        else:
            self._rows.setdefault(table, []).append(row)
        self.counts[table] = self.counts.get(table, 0) + 1
        self._arrived.set()

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
        self.put("replies", (run_id, item_id, repeat, config, turn, key, _dumps(reply), now_ms()))

    def add_output(self, row: OutputRow) -> None:
        self.put("outputs", _row("outputs", {c: getattr(row, c) for c in COLUMNS["outputs"]}))
        self.made.add((row.item_id, row.repeat, row.config))

    def propose(self, row: dict[str, Any]) -> None:
        self._other.append(("proposal", row))
        self._arrived.set()

    def _seal(self) -> None:
        if not self._rows and not self._other:
            return
        tables: dict[str, Any] = {}
        for table, rows in self._rows.items():
            try:
                tables[table] = to_batch(table, rows)
            except Exception as exc:  # a value Arrow will not type: sent as it is, not lost
                log.warning("%s rows sent unbatched (%s)", table, exc)
                self._other.extend((table, r) for r in rows)
        self._seq += 1
        self._sealed.append((self._seq, tables, self._other))
        self._rows, self._other = {}, []

    async def take(self, after: int, wait_s: float, gather_s: float) -> list[Any]:
        """Drop the batches up to `after`; return the unacknowledged ones, waiting up to
        `wait_s` for rows when there are none, then `gather_s` more so a batch holds many."""
        self._sealed = [b for b in self._sealed if b[0] > after]
        if not self._sealed:
            if not self._rows and not self._other:
                self._arrived.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._arrived.wait(), wait_s)
            if self._rows or self._other:
                await asyncio.sleep(gather_s)
            self._seal()
        return list(self._sealed)


class _ShippedActions(MemoryActionStore):
    """Proposals are kept here (the tool loop reads them back) and sent to the driver, whose
    store holds every run's actions for a person to approve."""

    def __init__(self, outbox: Outbox) -> None:
        super().__init__()
        self._outbox = outbox

    async def insert(self, action: Action) -> Action:
        stored = await super().insert(action)
        if stored.id == action.id:
            self._outbox.propose(to_row(stored))
        return stored


_CACHE_REPLY = list(COLUMNS["response_cache"]).index("reply")
_CACHE_EXPIRES = list(COLUMNS["response_cache"]).index("expires_at_ms")


@dataclass(frozen=True, slots=True)
class CacheSeed:
    """The response cache a run answers from: its TTL and the driver's live entries, as one
    Ray object (`entries` is an ObjectRef inside this record, so Ray does not resolve it
    on every `assign`: a worker reads it once)."""

    ttl_s: float
    entries: Any  # ObjectRef of list[(cache key, reply JSON text, expires_at_ms | None)]


class _ShippedCache:
    """The response cache in a worker: the entries the driver's file held when the run
    began, and every reply this worker caches (sent to the driver, which writes it to the
    file, as the local engine does). A worker does not see another's new entries until the
    next run: a request repeated within one run (two items asking the same, two configs
    leading with the same model) that lands on another worker is asked again, where the
    local engine would have answered it from the cache."""

    def __init__(self, entries: Sequence[tuple[str, str, int | None]], outbox: Outbox) -> None:
        self._entries = {key: (reply, expires) for key, reply, expires in entries}
        self._outbox = outbox

    def get(self, cache_key: str, now_ms: int) -> dict[str, Any] | None:
        entry = self._entries.get(cache_key)
        if entry is None or (entry[1] is not None and entry[1] <= now_ms):
            return None
        parsed: dict[str, Any] = json.loads(entry[0])  # a fresh dict per hit, as DuckDB's
        return parsed

    def put(
        self, cache_key: str, provider: str, model: str, reply: dict[str, Any], ttl_s: float | None
    ) -> None:
        row = cache_row(cache_key, provider, model, reply, ttl_s, now_ms())
        self._entries[cache_key] = (row[_CACHE_REPLY], row[_CACHE_EXPIRES])
        self._outbox.put("response_cache", row)


class ShardWorker:
    """A Ray actor (the engine wraps it with `ray.remote`): builds its own routers from the
    providers configs, with quotas and capability records in the shared Redis, and makes the
    jobs it is given, the run's `concurrency` at a time, from one queue (jobs handed over from a
    lost worker join the same queue: never more than `concurrency` in flight)."""

    def __init__(
        self, index: int, entries: list[ProvidersConfig], config: RunConfig, redis_url: str
    ) -> None:
        # The actor owns its process, as `workbench run` owns its own: it collects garbage for
        # a long run, and what Ray and we imported (many objects) is frozen out of its walks.
        gc.freeze()
        gc.set_threshold(10_000, 10, 10)
        self.index = index
        self._entries = entries
        self._concurrency = config.concurrency
        self._redis_url = redis_url
        self.outbox = Outbox()
        self._configs: list[Configuration] = []
        self._capabilities: Any = None
        self._queue: deque[Job] = deque()
        self._queued = asyncio.Event()
        self._pool: asyncio.Task[None] | None = None
        self._run_id: str | None = None
        self._failure: str | None = None
        self._closing = False
        self._making: set[tuple[str, int, str]] = set()
        self._started = time.monotonic()

    async def ready(self, reach_redis: bool = True) -> dict[str, Any]:
        """Reach every Redis the routers will use (RAY_REDIS_UNREACHABLE if one does not
        answer from this node), then build the routers. Nothing is sent to a model here. A
        worker replacing a lost one mid-run does not ask: Redis may be down by then, which
        the routers' quotas survive (on memory, saying so)."""
        from redis.asyncio import Redis

        from workbench.capability.store_redis import FailoverCapabilityStore

        urls = {self._redis_url} | {
            str(e.router_options["redis_url"])
            for e in self._entries
            if e.router_options.get("redis_url")
        }
        for url in sorted(urls) if reach_redis else ():
            try:
                client = Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
                try:
                    await client.ping()
                finally:
                    with contextlib.suppress(Exception):
                        await client.aclose()
            except Exception as exc:
                raise ConfigError(
                    f"a Ray worker on {socket.gethostname()} cannot reach Redis at "
                    f"{redacted(url)} ({type(exc).__name__}): quotas cannot be shared",
                    code="RAY_REDIS_UNREACHABLE",
                ) from None
        self._capabilities = FailoverCapabilityStore(self._redis_url)
        self._configs = [
            build_configs(
                [e],
                self._capabilities,
                None,
                None,
                self._concurrency,
                router_options={
                    "redis_url": e.router_options.get("redis_url") or self._redis_url,
                    "sinks": (self._backend_sink(e.name),),
                },
            )[0]
            for e in self._entries
        ]
        return {"worker": self.index, "node": socket.gethostname(), "pid": os.getpid()}

    def _backend_sink(self, config: str) -> Callable[[object], None]:
        """A router's quota moved to memory (Redis failed) or back: told to the driver, which
        says so and keeps the window in which this worker's quotas were its own."""

        def sink(event: object) -> None:
            if not isinstance(event, QuotaBackendEvent):
                return
            self.outbox.put(
                "events",
                _row(
                    "events",
                    {
                        "run_id": self._run_id,
                        "type": "QuotaBackendEvent",
                        "at_ms": event.at_ms,
                        "data": {
                            "backend": event.backend,
                            "state": event.state,
                            "reason": event.reason,
                            "worker": self.index,
                            "config": config,
                        },
                    },
                ),
            )

        return sink

    async def assign(
        self, jobs: list[Job], settings: JobSettings, cache: CacheSeed | None = None
    ) -> int:
        """Queue `jobs` (returns at once: the driver watches the outbox). The first call
        starts the worker's loop, answering from `cache` when the run caches."""
        self._queue.extend(jobs)
        self._queued.set()
        if self._pool is None:  # set before any await: one loop, however calls overlap
            self._run_id = settings.run_id
            actions = PendingActions(
                _ShippedActions(self.outbox), demo_executors(), run_id=settings.run_id
            )
            self._pool = asyncio.ensure_future(self._run(settings, actions, cache))
        return len(jobs)

    async def _next(self) -> Job | None:
        while not self._queue:  # idle until more jobs come (a lost worker's) or close()
            self._queued.clear()
            await self._queued.wait()
        job = self._queue.popleft()
        self._making.add(job.key)
        return job

    async def _run(
        self, settings: JobSettings, actions: PendingActions, cache: CacheSeed | None
    ) -> None:
        try:
            if cache is not None:
                await self._use_cache(cache)
            await run_jobs(self._next, self._configs, self.outbox, settings, _ignore, actions)
        except asyncio.CancelledError:
            if not self._closing:  # not close(): something inside cancelled the loop
                self._failure = "CancelledError: the worker's jobs were cancelled"
            raise
        except BaseException as exc:  # the driver fails the run with it, in one line
            self._failure = f"{type(exc).__name__}: {exc}"
            log.exception("worker %s failed", self.index)

    async def _use_cache(self, cache: CacheSeed, wait_s: float = 60.0) -> None:
        """The run's cache entries from Ray's object store, on every router. Not read in time,
        or not at all: the worker fails, in one line the driver says."""
        try:
            entries = await asyncio.wait_for(awaited(cache.entries), wait_s)
        except Exception as exc:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            said = lines[-1][:300] if lines else f"not read in {wait_s:g} s"
            raise WorkbenchError(
                f"could not read the run's cache entries ({type(exc).__name__}: {said})",
                code="RAY_WORKER_FAILED",
            ) from None
        shipped = _ShippedCache(entries, self.outbox)
        for config in self._configs:
            config.router.with_cache(shipped, cache.ttl_s)

    async def take(self, after: int, wait_s: float = 0.5, gather_s: float = 0.02) -> Shipment:
        batches = await self.outbox.take(after, wait_s, gather_s)
        self._making -= self.outbox.made
        self.outbox.made.clear()
        return Shipment(batches, self._failure, sorted(self._making))

    async def records(self) -> list[CapabilityRecord]:
        """Every capability record this worker can see (Redis's, or its own while Redis was
        down): the driver keeps them in the DuckDB file."""
        return list(await self._capabilities.all()) if self._capabilities else []

    async def stats(self) -> dict[str, Any]:
        """What only the worker knows (the driver counts outputs and attempts itself, so a
        lost worker's share is still in the summary)."""
        quotas: list[dict[str, Any]] = [
            getattr(c.router.quota, "stats", dict)() for c in self._configs
        ]
        return {
            "rows_sent": dict(self.outbox.counts),
            "quota_backends": [q.get("backend", "memory") for q in quotas],
            "quota_transitions": sum(int(q.get("transitions", 0)) for q in quotas),
            "capabilities": self._capabilities.stats() if self._capabilities else {},
            "seconds": time.monotonic() - self._started,
        }

    async def close(self) -> None:
        self._closing = True
        if self._pool is not None:
            self._pool.cancel()
            await asyncio.gather(self._pool, return_exceptions=True)
        for config in self._configs:
            with contextlib.suppress(Exception):
                await config.router.close()
        if self._capabilities is not None:
            with contextlib.suppress(Exception):
                await self._capabilities.close()


def _ignore(row: OutputRow) -> None:
    """A worker's outputs are counted by the driver, from the rows it ships."""


async def awaited(ref: Any) -> Any:
    """An ObjectRef awaited as a coroutine (what `asyncio.wait_for` takes)."""
    return await ref


def redacted(url: str) -> str:
    """A Redis URL without its credentials: the user info (`redis://:secret@host`) and any
    `password`/`username` in the query (`?password=secret`, which redis-py reads too)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = f"***@{host}" if "@" in parts.netloc else host
    query = urlencode(
        [
            (k, "***" if k.lower() in ("password", "username") else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    said = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return said.replace(":", "://", 1) if "://" in url and "://" not in said else said
