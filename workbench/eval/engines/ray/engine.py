"""`RayEngine`: a run's jobs spread over Ray actors, every row still logged by one `Store`.

One process is enough for most API evals; not for 100,000 items over many keys, local model
servers on several nodes, or slow graders. The engine shards the jobs over `workers` actors
(`workbench.eval.engines.ray.worker.ShardWorker`), each running the async runner with its own
concurrency. What must stay exact across them lives in one Redis: every router reserves its
quota there (the same Lua script as one process), and capability records are read and written
there. Rows come back to the driver as Arrow record batches; the driver's store journals them
before they are batched into DuckDB, so a driver crash is resumable (`--resume`, by either
engine).

A worker that dies (killed, its node lost) is noticed by its next `take`: its unfinished jobs
go to the live worker with the least left to do, with the answers the driver already holds for
them (replayed, never asked again) and their attempt counts (so a new attempt never reuses an
id). Redis dying mid-run is the routers' business: each worker's quotas fall back to memory,
per worker, until Redis answers again; the worker says so and the summary names the window.

Bad input is refused before any request: an unreachable address (`RAY_UNREACHABLE`), a Ray or
Python version that differs from the cluster's (`RAY_VERSION_MISMATCH`), a remote cluster with
no Redis named (`RAY_NEEDS_REDIS`), a Redis a worker cannot reach (`RAY_REDIS_UNREACHABLE`).

The response cache (`--cache`) lives in the DuckDB file, which only the driver opens: each
worker answers from the entries the file held for the run's models when the run began (sent
once, through Ray's object store) and from the replies it caches itself, which come back with
its other rows and are written to the file, so the next run, on either engine, answers from
them. A worker does not see another's new entries during the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.config.providers_file import ProvidersConfig
from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.engines.ray.collect import Collector, WorkerTally
from workbench.eval.engines.ray.worker import CacheSeed, ShardWorker, awaited
from workbench.eval.run.jobs import Job, JobSettings
from workbench.eval.run.options import RunConfig
from workbench.eval.store.database import Store
from workbench.eval.store.schema import OutputRow
from workbench.routing import Router

log = logging.getLogger("workbench.eval.engines.ray")  # the driver's and workers' one logger


def _import_ray() -> Any:
    try:
        import pyarrow  # noqa: F401
        import ray
    except ImportError as exc:
        raise ConfigError(
            f"the ray engine needs the `ray` extra: pip install 'workbench[ray]' ({exc.name} "
            "is missing)",
            code="RAY_UNAVAILABLE",
        ) from None
    return ray


READY_S = 60.0  # a worker not ready by then has no CPU free, or a node that cannot start it
CLOSE_S = 5.0


@dataclass
class RayEngine:
    """Run the jobs on `workers` Ray actors. `address`: None starts a local Ray with at least
    `workers` CPUs (and stops it after); "auto" or host:port (or ray://host:port) joins a
    running cluster; a Ray this process already started (`ray.init()` in a notebook) is used
    as it is. `redis_url`: the Redis every worker shares; None takes the providers file's
    `redis_url`, or, on a local cluster, starts a `redis-server` (and says so). `say` hears
    the lines a person should read (the Redis started, a worker lost, a quota on memory)."""

    workers: int = 2
    address: str | None = None
    redis_url: str | None = None
    say: Callable[[str], Any] = field(default=lambda line: log.warning("%s", line))
    _ray: Any = field(default=None, init=False, repr=False)
    _started_ray: bool = field(default=False, init=False, repr=False)
    _redis: Any = field(default=None, init=False, repr=False)
    _shared_url: str | None = field(default=None, init=False, repr=False)
    _pool: list[WorkerTally] = field(default_factory=list, init=False, repr=False)
    _startup_s: float = field(default=0.0, init=False, repr=False)
    _config: RunConfig = field(default_factory=RunConfig, init=False, repr=False)
    _cache: CacheSeed | None = field(default=None, init=False, repr=False)

    def describe(self) -> dict[str, Any]:
        return {"name": "ray", "workers": self.workers, "address": self.address or "local"}

    @property
    def startup_s(self) -> float:
        """Seconds `prepare` took: Ray started or joined, Redis found, the workers ready."""
        return self._startup_s

    # ---------------------------------------------------------------- before the run
    async def prepare(
        self, entries: Sequence[Router | ProvidersConfig], config: RunConfig
    ) -> list[str]:
        """Everything that can refuse the run, before it is started: Ray reachable and of
        this version, CPUs for the workers, one Redis every worker reaches. Returns the
        configurations' names."""
        if self.workers < 1:
            raise ConfigError("--workers must be at least 1", code="RAY_INVALID")
        configs = [e for e in entries if isinstance(e, ProvidersConfig)]
        if len(configs) != len(entries):
            raise ConfigError(
                "the ray engine builds its routers in the workers from providers configs; "
                "a Router object cannot be sent to them",
                code="RAY_INVALID",
            )
        self._config = config
        names = [c.name for c in configs]
        if len(set(names)) != len(names):
            raise ConfigError(f"two configurations share a name: {names}", code="RUN_INVALID")
        if self.address is not None and not self._named_redis(configs):
            raise ConfigError(
                "a Ray cluster needs a Redis every worker can reach for its quotas: set "
                "redis_url in the providers file's [router]",
                code="RAY_NEEDS_REDIS",
            )
        ray = _import_ray()
        started = time.perf_counter()
        # First, and in this thread: a redis-server started here dies with this process (see
        # RedisServer), and is forked before Ray's threads exist.
        self._shared_url = self._redis_for(configs)
        await asyncio.to_thread(self._connect, ray)
        await self._cpus_free(ray)
        # Every worker reaches its Redis before the run exists: a refusal leaves no run behind.
        await asyncio.gather(*(self._spawn(i, configs) for i in range(self.workers)))
        self._startup_s = time.perf_counter() - started
        return names

    async def _cpus_free(self, ray: Any, wait_s: float = 10.0) -> None:
        """A CPU per worker, or RAY_INVALID (Ray would queue the workers forever). The CPUs of
        actors just stopped (a previous run's) come back within a moment: waited for."""
        deadline = time.monotonic() + wait_s
        while (free := float(ray.available_resources().get("CPU", 0))) < self.workers:
            if time.monotonic() > deadline:
                raise ConfigError(
                    f"the Ray cluster has {free:g} CPU(s) free for {self.workers} worker(s) "
                    "(each takes one): lower --workers",
                    code="RAY_INVALID",
                )
            await asyncio.sleep(0.2)

    def _named_redis(self, configs: list[ProvidersConfig]) -> str | None:
        return self.redis_url or next(
            (
                str(c.router_options["redis_url"])
                for c in configs
                if c.router_options.get("redis_url")
            ),
            None,
        )

    def _connect(self, ray: Any) -> None:
        self._ray = ray
        self._started_ray = False
        if self.address is not None:
            _probe(self.address)
        if ray.is_initialized():  # a notebook's own ray.init(): used as it is, left running
            return
        quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
        self._started_ray = True  # before: close() shuts down a Ray cut short while starting
        try:
            if self.address is None:
                ray.init(
                    num_cpus=max(self.workers, os.cpu_count() or 1),
                    object_store_memory=200 * 1024 * 1024,
                    **quiet,
                )
            else:
                ray.init(address=self.address, **quiet)
        except ConfigError:
            raise
        except Exception as exc:
            raise _init_error(self.address, exc) from None

    def _redis_for(self, configs: list[ProvidersConfig]) -> str:
        named = self._named_redis(configs)
        if named is not None:
            return named
        from workbench._redis_server import RedisServer, redis_server_binary

        if redis_server_binary() is None:
            raise ConfigError(
                "the ray engine shares quotas through Redis: install redis-server, or set "
                "redis_url in the providers file's [router]",
                code="RAY_NEEDS_REDIS",
            )
        self._redis = RedisServer()  # set first: close() stops it even if start() is cut short
        try:
            self._redis.start()
        except RuntimeError as exc:
            raise ConfigError(
                f"could not start redis-server for the workers: {exc}", code="RAY_NEEDS_REDIS"
            ) from None
        self.say(
            f"ray: started redis-server on {self._redis.host}:{self._redis.port} for the "
            "workers' quotas and capability records (stopped after the run)"
        )
        url: str = self._redis.url
        return url

    async def _spawn(
        self, index: int, entries: list[ProvidersConfig], *, first: bool = True
    ) -> WorkerTally:
        actor = self._ray.remote(ShardWorker).options(num_cpus=1, max_concurrency=8)
        handle = actor.remote(index, entries, self._config, self._shared_url)
        worker = WorkerTally(index, handle)
        self._pool.append(worker)  # closed with the others, even if it refuses to start
        try:
            worker.info = await asyncio.wait_for(awaited(handle.ready.remote(first)), READY_S)
        except TimeoutError:
            raise WorkbenchError(
                f"ray worker {index} did not start in {READY_S:g} s", code="RAY_WORKER_FAILED"
            ) from None
        except Exception as exc:
            raise _remote_error(exc, f"ray worker {index} could not start") from None
        return worker

    # ---------------------------------------------------------------- the run
    async def run(
        self,
        jobs: list[Job],
        entries: Sequence[Router | ProvidersConfig],
        store: Store,
        settings: JobSettings,
        finished: Callable[[OutputRow], Any],
    ) -> list[dict[str, Any]]:
        """Make every job's output on the workers; log every row they send through `store`;
        return each worker's summary (what the driver counted, and its own `stats()`)."""
        configs = [e for e in entries if isinstance(e, ProvidersConfig)]
        await self._seed(store)
        if self._config.cache_ttl_s:
            self._cache = self._cache_seed(store, configs, self._config.cache_ttl_s)
        collector = Collector(store, settings.run_id, jobs, finished, self.say)
        workers = list(self._pool)
        for n, job in enumerate(jobs):  # round robin: every worker gets the same mix
            workers[n % len(workers)].jobs.append(job)
        pumps: set[asyncio.Future[WorkerTally | None]] = set()
        try:
            for worker in workers:
                if await self._assign(worker, list(worker.jobs), settings):
                    pumps.add(asyncio.ensure_future(self._pump(worker, collector)))
                else:
                    pumps.add(_ready(worker))  # lost before it started: handled below
            while pumps:
                done, pumps = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    lost = task.result()  # a worker's failure ends the run here
                    if lost is not None:
                        spawned = await self._reassign(lost, collector, configs, settings)
                        pumps.update(
                            asyncio.ensure_future(self._pump(w, collector)) for w in spawned
                        )
        finally:
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            summaries = await self._keep(store)
        return summaries

    async def _assign(self, worker: WorkerTally, jobs: list[Job], settings: JobSettings) -> bool:
        """Queue `jobs` on `worker`; False (and the worker marked lost) if it is gone."""
        try:
            await awaited(worker.handle.assign.remote(jobs, settings, self._cache))
        except self._ray.exceptions.RayActorError as exc:
            self._lose(worker, exc)
            return False
        return True

    def _lose(self, worker: WorkerTally, exc: BaseException) -> None:
        if not worker.alive:
            return
        worker.alive = False
        self.say(f"ray: worker {worker.index} was lost ({type(exc).__name__})")
        # An actor only unreachable for a while would go on making jobs nobody collects.
        with contextlib.suppress(Exception):
            self._ray.kill(worker.handle, no_restart=True)

    async def _seed(self, store: Store) -> None:
        """What earlier runs observed (the DuckDB file's capability records) into the shared
        Redis, as the local engine's routers read it from the file: the next run plans from
        what the last one saw, whichever engine made it."""
        from workbench.capability.store_redis import RedisCapabilityStore

        records = store.capability_records()
        if not records or self._shared_url is None:
            return
        shared = RedisCapabilityStore(self._shared_url)
        try:
            await shared.replay(records)
        except Exception as exc:  # the workers reached it a moment ago: they will observe anew
            self.say(f"ray: the capability records were not copied to Redis ({type(exc).__name__})")
        finally:
            with contextlib.suppress(Exception):
                await shared.close()

    def _cache_seed(self, store: Store, configs: list[ProvidersConfig], ttl_s: float) -> CacheSeed:
        """The file's live entries for the run's models, put in Ray's object store once (each
        worker reads them into its memory: said when that is much)."""
        live = store.cache_live(
            (p.id, m.id) for c in configs for p in c.providers for m in p.models
        )
        size = sum(len(key) + len(reply) for key, reply, _ in live)
        if size > 50 * 1024 * 1024:
            self.say(
                f"ray: {len(live):,} cached replies ({size / 2**20:,.0f} MB) go to every "
                "worker's memory"
            )
        return CacheSeed(ttl_s, self._ray.put(live))

    async def _pump(self, worker: WorkerTally, collector: Collector) -> WorkerTally | None:
        """Take the worker's batches until every job of the run has its output, then what
        came after it; a worker lost on the way is returned (its jobs go elsewhere)."""
        exceptions = self._ray.exceptions
        while True:
            draining = collector.complete
            try:
                shipment = await awaited(
                    worker.handle.take.remote(worker.acked, 0.0 if draining else 0.5)
                )
            except exceptions.RayActorError as exc:  # died, or unreachable: replaced
                self._lose(worker, exc)
                return worker
            except exceptions.RayError as exc:  # a failure inside the worker: said in one line
                raise _remote_error(exc, f"ray worker {worker.index} failed") from None
            for seq, tables, other in shipment.batches:
                collector.apply(worker, tables, other)
                worker.acked = seq
            worker.making = set(shipment.making)
            if shipment.failure is not None:
                raise WorkbenchError(
                    f"ray worker {worker.index} failed: {shipment.failure}",
                    code="RAY_WORKER_FAILED",
                )
            if draining and not shipment.batches:
                return None

    async def _reassign(
        self,
        lost: WorkerTally,
        collector: Collector,
        configs: list[ProvidersConfig],
        settings: JobSettings,
    ) -> list[WorkerTally]:
        """The lost worker's unfinished jobs, with what the driver holds of them, to the live
        worker with the least left (a worker found dead on the way is lost too, and the next
        is tried); to a new worker when none is left. Returns the new workers (each needs a
        pump; a live worker's pump is already running)."""
        rest = []
        for job in lost.jobs:
            if job.key in collector.done:
                continue
            if job.key in lost.making:  # being made when the worker was lost
                collector.losses[job.key] += 1
            if collector.losses[job.key] >= 2:  # it may be what kills its workers
                collector.give_up(job, lost.index)
            else:
                rest.append(collector.resumed(job))
        lost.jobs = []
        spawned: list[WorkerTally] = []
        while rest:
            alive = [w for w in self._pool if w.alive and w.info]
            if alive:
                target = min(alive, key=lambda w: sum(j.key not in collector.done for j in w.jobs))
            elif len(self._pool) >= 2 * self.workers:
                raise WorkbenchError(
                    f"{len(self._pool)} Ray workers were lost or could not start; the run "
                    "stops (resume it when the cluster is sound)",
                    code="RAY_WORKER_FAILED",
                )
            else:
                target = await self._spawn(len(self._pool), configs, first=False)
                spawned.append(target)
            if await self._assign(target, rest, settings):
                target.jobs.extend(rest)
                self.say(
                    f"ray: worker {lost.index}'s {len(rest)} unfinished job(s) go to "
                    f"worker {target.index}"
                )
                break
        return [w for w in spawned if w.alive]

    async def _keep(self, store: Store) -> list[dict[str, Any]]:
        """At the end, however the run ended: the capability records into the DuckDB file (the
        Redis the engine started goes with it; read once, from Redis, or from the workers when
        Redis is down), and every worker's summary, the lost ones' too."""
        from workbench.capability.store_redis import RedisCapabilityStore

        live = [w for w in self._pool if w.alive and w.info]
        records = None
        if self._shared_url is not None:
            shared = RedisCapabilityStore(self._shared_url)
            with contextlib.suppress(Exception):
                records = await asyncio.wait_for(shared.all(), CLOSE_S)
            with contextlib.suppress(Exception):
                await shared.close()
        # A worker that ran on memory may hold records Redis lost (one without persistence).
        ask = live if records is None else [w for w in live if w.windows]
        answers = await asyncio.gather(
            *(self._call(w, "stats") for w in live), *(self._call(w, "records") for w in ask)
        )
        stats = dict(zip((w.index for w in live), answers[: len(live)], strict=True))
        for found in [records, *answers[len(live) :]]:
            for record in found or ():
                store.put_capability(record)  # the stronger or newer record wins
        return [w.summary() | (stats.get(w.index) or {}) for w in self._pool]

    async def _call(self, worker: WorkerTally, method: str) -> Any:
        """One call to a worker at the end, bounded; a worker that does not answer is lost."""
        try:
            return await asyncio.wait_for(awaited(getattr(worker.handle, method).remote()), CLOSE_S)
        except Exception as exc:
            self._lose(worker, exc)
            return None

    async def close(self) -> None:
        """Stop the workers (together, each bounded), and what the engine itself started
        (Ray, redis-server)."""
        pool, self._pool = self._pool, []
        self._cache = None  # the entries' object is freed with its last reference
        await asyncio.gather(*(self._call(w, "close") for w in pool if w.alive and w.info))
        for w in pool:
            with contextlib.suppress(Exception):
                self._ray.kill(w.handle, no_restart=True)
        if self._started_ray and self._ray is not None:  # safe when Ray is not (or half) up
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._ray.shutdown)
        self._started_ray = False
        if self._redis is not None:
            self._redis.cleanup()
            self._redis = None


def _ready(worker: WorkerTally) -> asyncio.Future[WorkerTally | None]:
    done: asyncio.Future[WorkerTally | None] = asyncio.get_running_loop().create_future()
    done.set_result(worker)
    return done


def _probe(address: str) -> None:
    """A TCP connection to the cluster's address, so that a wrong one fails in a second,
    not after Ray's own minute of retries."""
    if address == "auto":
        return
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        host, port = target, "10001" if address.startswith("ray://") else "6379"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=2):
            return
    except OSError as exc:
        raise ConfigError(
            f"no Ray cluster answers at {address} ({type(exc).__name__}: {exc.strerror or exc})",
            code="RAY_UNREACHABLE",
        ) from None


def _init_error(address: str | None, exc: BaseException) -> ConfigError:
    text = str(exc)
    if "Version mismatch" in text:
        found = re.findall(r"Ray: (\S+)\s+Python: (\S+)", text)
        said = (
            f"the cluster runs Ray {found[0][0]} on Python {found[0][1]}, this process Ray "
            f"{found[1][0]} on Python {found[1][1]}"
            if len(found) == 2
            else text.splitlines()[0]
        )
        return ConfigError(
            f"Ray version mismatch: {said}; install the cluster's versions",
            code="RAY_VERSION_MISMATCH",
        )
    where = address or "a local Ray"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return ConfigError(f"cannot start or join {where}: {first[:300]}", code="RAY_UNREACHABLE")


def _remote_error(exc: BaseException, what: str) -> BaseException:
    """A worker's failure as the error it raised (Ray wraps it), never a remote traceback:
    our own coded error as it is, anything else as its type and first line."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, WorkbenchError):
        return cause
    if isinstance(cause, BaseException):
        said = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0] if str(cause).strip() else ''}"
    else:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        said = lines[-1] if lines else type(exc).__name__
    return WorkbenchError(f"{what}: {said[:300]}", code="RAY_WORKER_FAILED")


__all__ = ["RayEngine"]
