"""The router sharing quotas through a real redis-server, across real OS processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import time

import pytest

from workbench.events import AttemptEvent, QuotaBackendEvent
from workbench.providers import ModelSpec, openai_compatible_provider
from workbench.routing import FailoverQuota, Router
from workbench.sim import SimServer
from workbench.types import ChatRequest

FLEET = {
    "seed": 5,
    "persona": [
        {"id": "rpm-target", "latency_ms": 1, "latency_jitter_ms": 0},
        {"id": "tpd-target", "latency_ms": 1, "latency_jitter_ms": 0},
    ],
}
PROCESSES = 8
CONCURRENT = 50
RPM = 37
TPD = 3000
ESTIMATE = 150


def _worker(openai_url: str, redis_url: str, model: dict, estimate: int) -> tuple[int, int, int]:
    """One OS process: 50 concurrent routes through its own Router sharing `redis_url`."""

    async def main() -> tuple[int, int, int]:
        provider = openai_compatible_provider("sim", openai_url, "k", [ModelSpec.of(model)])
        router = Router([provider], redis_url=redis_url)
        results = await asyncio.gather(
            *(
                router.route(
                    ChatRequest.of(f"question {i}", max_tokens=20),
                    ctx={"estimated_tokens": estimate},
                )
                for i in range(CONCURRENT)
            ),
            return_exceptions=True,
        )
        await router.close()
        ok = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, BaseException)]
        assert all(getattr(e, "code", None) == "AI_UNAVAILABLE" for e in refused), refused[:1]
        assert all(r.attempts[-1].outcome == "ok" for r in ok)
        used = sum(r.value.usage.total_tokens or 0 for r in ok)
        return len(ok), len(refused), used

    return asyncio.run(main())


def _away_from_a_minute_boundary() -> None:
    # RPM windows are calendar minutes of Redis's clock: start well inside one.
    if time.time() % 60 > 45:
        time.sleep(61 - time.time() % 60)


@pytest.fixture(scope="module")
def quota_sim():
    with SimServer(FLEET) as sim:
        yield sim


def _run_processes(sim, redis_url, model, estimate):
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        return pool.starmap(_worker, [(sim.openai_url, redis_url, model, estimate)] * PROCESSES)


def test_a_eight_processes_never_exceed_a_models_rpm(quota_sim, redis_url):
    quota_sim.reset()
    _away_from_a_minute_boundary()
    results = _run_processes(quota_sim, redis_url, {"id": "rpm-target", "rpm": RPM}, 10)
    ok = sum(r[0] for r in results)
    sent = [r for r in quota_sim.requests() if r["persona"] == "rpm-target"]
    assert ok == RPM and len(sent) == RPM  # exact: the vendor saw no more than the quota
    assert sum(r[1] for r in results) == PROCESSES * CONCURRENT - RPM


def test_a_eight_processes_never_exceed_a_models_tpd(quota_sim, redis_url):
    quota_sim.reset()
    results = _run_processes(quota_sim, redis_url, {"id": "tpd-target", "tpd": TPD}, ESTIMATE)
    ok = sum(r[0] for r in results)
    used = sum(r[2] for r in results)
    sent = [r for r in quota_sim.requests() if r["persona"] == "tpd-target"]
    assert len(sent) == ok >= TPD // ESTIMATE  # reserved by estimate, every slot was usable
    assert used <= TPD  # the real usage, reconciled, never passes the day's tokens


async def test_b_redis_killed_mid_run_routing_goes_on_in_memory_and_comes_back(
    quota_sim, redis_server, redis_url
):
    quota_sim.reset()
    events: list[object] = []
    provider = openai_compatible_provider(
        "sim", quota_sim.openai_url, "k", [{"id": "rpm-target", "rpm": 10_000}]
    )
    quota = FailoverQuota(redis_url, sinks=[events.append], retry_every_s=0.2)
    router = Router([provider], quota=quota, sinks=[events.append])
    backends: list[str] = []

    async def route_some(n: int) -> None:
        for _ in range(n):
            await router.route(ChatRequest.of("hi"))  # never raises, whatever Redis does
            backends.append((await router.stats())["backend"])

    await route_some(5)
    assert backends[-1] == "redis" and (await router.usage("sim:rpm-target"))["rpm"] == 5
    redis_server.kill()
    await route_some(5)
    assert backends[-1] == "memory"
    stats = await router.stats()
    assert stats["backend"] == "memory" and stats["quota"]["degraded_reason"]
    redis_server.restart()
    await asyncio.sleep(0.3)
    await route_some(5)
    assert backends[-1] == "redis"
    assert (await router.usage("sim:rpm-target"))["rpm"] >= 1  # counting in Redis again
    changes = [(e.backend, e.state) for e in events if isinstance(e, QuotaBackendEvent)]
    assert changes == [("memory", "degraded"), ("redis", "restored")]
    assert sum(isinstance(e, AttemptEvent) and e.outcome == "ok" for e in events) == 15
    await router.close()


async def test_b_redis_unreachable_at_start_routes_on_memory(quota_sim):
    from redis_server import free_port

    provider = openai_compatible_provider(
        "sim", quota_sim.openai_url, "k", [{"id": "rpm-target", "rpm": 2}]
    )
    router = Router([provider], redis_url=f"redis://127.0.0.1:{free_port()}/0")
    await router.route(ChatRequest.of("hi"))
    await router.route(ChatRequest.of("hi"))
    assert (await router.stats())["backend"] == "memory"
    with pytest.raises(Exception) as info:  # the in-memory quota still holds the line
        await router.route(ChatRequest.of("hi"))
    assert getattr(info.value, "code", "") == "AI_UNAVAILABLE"
    await router.close()
