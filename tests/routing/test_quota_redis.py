"""The Redis quota store and the failover store, against a real redis-server (no fakes)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
import traceback
from datetime import date, timedelta
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from redis_server import RedisServer, count_pings, free_port
from test_quota import Clock, ms

from workbench.events import QuotaBackendEvent
from workbench.routing.quota import FailoverQuota, Limits, Refusal, Reservation, utc_day
from workbench.routing.quota_redis import LUA_CLOCK, RedisQuota


def wall_ms() -> int:
    return int(time.time() * 1000)


async def not_near_minute_end(margin_s: float = 2.0) -> None:
    """Tests on Redis's real clock must not straddle a calendar minute: wait for a fresh one."""
    left = 60 - (time.time() % 60)
    if left < margin_s:
        await asyncio.sleep(left + 0.05)


@pytest.fixture
async def store(redis_url: str):  # type: ignore[no-untyped-def]
    quota = RedisQuota(redis_url)
    yield quota
    await quota.close()


# --- RedisQuota ------------------------------------------------------------------------------
async def test_rpm_refuses_at_the_cap_until_the_minute_ends(store: RedisQuota) -> None:
    await not_near_minute_end()
    limits = Limits(rpm=3)
    for _ in range(3):
        assert isinstance(await store.reserve("p:m", limits, 10), Reservation)
    refused = await store.reserve("p:m", limits, 10)
    expected_wait = 60 - (time.time() % 60)
    assert isinstance(refused, Refusal)
    assert (refused.key, refused.limit, refused.used, refused.cap) == ("p:m", "rpm", 3, 3)
    assert 0 < refused.retry_after_s <= 60
    assert refused.retry_after_s == pytest.approx(expected_wait, abs=1.0)
    assert await store.usage("p:m") == {"rpm": 3, "rpd": 3, "tpd": 30, "tpm": 30}
    assert isinstance(await store.reserve("p:m@bg", limits, 10), Reservation)  # a lane is apart


async def test_reservation_names_redis_time_buckets_and_keys_expire(store: RedisQuota) -> None:
    before = wall_ms()
    taken = await store.reserve("p:m", Limits(), 7)
    after = wall_ms()
    assert isinstance(taken, Reservation) and taken.backend == "redis" and taken.tokens == 7
    assert taken.minute_bucket in {before // 60_000, after // 60_000}
    assert taken.day in {utc_day(before), utc_day(after)}
    client = store.client
    minute_key = store.minute_key("p:m", taken.minute_bucket)
    assert minute_key == f"wb:quota:{{p:m}}:m:{taken.minute_bucket}"
    req_key, tok_key = store.day_keys("p:m", taken.day)
    assert int(await client.get(minute_key)) == 1
    assert int(await client.get(req_key)) == 1 and int(await client.get(tok_key)) == 7
    assert 0 < await client.ttl(minute_key) <= 120
    for key in (req_key, tok_key):
        assert 2 * 86_400 - 10 < await client.ttl(key) <= 2 * 86_400


async def test_rpd_refuses_until_utc_midnight(store: RedisQuota) -> None:
    limits = Limits(rpd=2)
    for _ in range(2):
        assert isinstance(await store.reserve("p:m", limits, 0), Reservation)
    refused = await store.reserve("p:m", limits, 0)
    assert isinstance(refused, Refusal)
    assert (refused.limit, refused.used, refused.cap) == ("rpd", 2, 2)
    until_midnight = (86_400_000 - wall_ms() % 86_400_000) / 1000
    assert refused.retry_after_s == pytest.approx(until_midnight, abs=1.0)


async def test_tpd_reserve_then_reconcile_frees_the_difference(store: RedisQuota) -> None:
    limits = Limits(tpd=100)
    first = await store.reserve("p:m", limits, 100)
    assert isinstance(first, Reservation)
    refused = await store.reserve("p:m", limits, 1)
    assert isinstance(refused, Refusal)
    assert (refused.limit, refused.used, refused.cap) == ("tpd", 100, 100)
    await store.reconcile(first, 30)
    assert (await store.usage("p:m"))["tpd"] == 30
    assert isinstance(await store.reserve("p:m", limits, 70), Reservation)
    assert isinstance(await store.reserve("p:m", limits, 1), Refusal)


async def test_tpm_counts_tokens_per_minute_and_refuses_until_it_ends(redis_url: str) -> None:
    clock = Clock("2026-03-10T12:00:15")
    store = RedisQuota(redis_url, clock_ms=clock)
    try:
        limits = Limits(tpm=100)
        first = await store.reserve("p:m", limits, 60)
        assert isinstance(first, Reservation)
        refused = await store.reserve("p:m", limits, 41)
        assert isinstance(refused, Refusal)
        assert (refused.key, refused.limit, refused.used, refused.cap) == ("p:m", "tpm", 60, 100)
        assert refused.retry_after_s == pytest.approx(45.0)
        assert isinstance(await store.reserve("p:m", limits, 40), Reservation)
        tokens_key = store.minute_tokens_key("p:m", first.minute_bucket)
        assert tokens_key == f"wb:quota:{{p:m}}:m:{first.minute_bucket}:tok"
        assert int(await store.client.get(tokens_key)) == 100
        assert 0 < await store.client.ttl(tokens_key) <= 120
        clock.advance(45)  # 12:01:00
        assert isinstance(await store.reserve("p:m", limits, 100), Reservation)
        assert await store.usage("p:m") == {"rpm": 1, "rpd": 3, "tpd": 200, "tpm": 100}
    finally:
        await store.close()


async def test_tpm_reconcile_and_release_correct_the_reservations_own_minute(
    redis_url: str,
) -> None:
    clock = Clock("2026-03-10T12:00:15")
    store = RedisQuota(redis_url, clock_ms=clock)
    try:
        limits = Limits(tpm=100)
        first = await store.reserve("p:m", limits, 100)
        assert isinstance(first, Reservation)
        await store.reconcile(first, 30)
        assert (await store.usage("p:m"))["tpm"] == 30
        second = await store.reserve("p:m", limits, 70)
        assert isinstance(second, Reservation)
        assert isinstance(await store.reserve("p:m", limits, 1), Refusal)
        await store.release(second)
        assert (await store.usage("p:m"))["tpm"] == 30
        third = await store.reserve("p:m", limits, 50)
        assert isinstance(third, Reservation)
        clock.advance(45)
        assert isinstance(await store.reserve("p:m", limits, 10), Reservation)
        await store.reconcile(third, 20)  # lands in the old minute (80 - 30)
        assert (await store.usage("p:m"))["tpm"] == 10
        old_minute = store.minute_tokens_key("p:m", third.minute_bucket)
        assert int(await store.client.get(old_minute)) == 50
    finally:
        await store.close()


async def test_tpm_is_one_cap_across_processes(redis_url: str) -> None:
    """Two stores (two processes' clients) share the minute's tokens atomically."""
    stores = [RedisQuota(redis_url) for _ in range(2)]
    try:
        await not_near_minute_end()
        limits = Limits(tpm=1000)
        results = await asyncio.gather(
            *(stores[i % 2].reserve("p:m", limits, 7) for i in range(400))
        )
        assert sum(isinstance(r, Reservation) for r in results) == 1000 // 7
        assert (await stores[0].usage("p:m"))["tpm"] == (1000 // 7) * 7
    finally:
        for store in stores:
            await store.close()


async def test_reconcile_upwards_never_below_zero_and_keeps_the_ttl(store: RedisQuota) -> None:
    first = await store.reserve("p:m", Limits(), 100)
    assert isinstance(first, Reservation)
    await store.reconcile(first, 250)
    assert (await store.usage("p:m"))["tpd"] == 250
    await store.release(first)
    assert (await store.usage("p:m"))["tpd"] == 150
    await store.reconcile(first, 0)
    await store.reconcile(first, 0)
    assert (await store.usage("p:m"))["tpd"] == 0
    _, tok_key = store.day_keys("p:m", first.day)
    assert await store.client.ttl(tok_key) > 86_400


async def test_reconcile_of_an_expired_day_creates_nothing(store: RedisQuota) -> None:
    gone = Reservation("p:m", 10, 1, "2001-01-01", "redis")
    await store.reconcile(gone, 500)
    await store.release(gone)
    assert await store.client.keys("*") == []


async def test_release_gives_back_requests_and_tokens(store: RedisQuota) -> None:
    await not_near_minute_end()
    limits = Limits(rpm=1, rpd=1, tpd=50)
    first = await store.reserve("p:m", limits, 50)
    assert isinstance(first, Reservation)
    assert isinstance(await store.reserve("p:m", limits, 0), Refusal)
    await store.release(first)
    assert await store.usage("p:m") == {"rpm": 0, "rpd": 0, "tpd": 0, "tpm": 0}
    assert isinstance(await store.reserve("p:m", limits, 50), Reservation)


async def test_day_rollover_with_a_test_clock(redis_url: str) -> None:
    clock = Clock("2026-12-31T23:59:30")
    store = RedisQuota(redis_url, clock_ms=clock)
    try:
        limits = Limits(rpd=1, tpd=100)
        late = await store.reserve("p:m", limits, 100)
        assert isinstance(late, Reservation) and late.day == "2026-12-31"
        refused = await store.reserve("p:m", limits, 0)
        assert isinstance(refused, Refusal) and refused.retry_after_s == pytest.approx(30.0)
        clock.advance(30)
        early = await store.reserve("p:m", limits, 100)
        assert isinstance(early, Reservation) and early.day == "2027-01-01"
        assert early.minute_bucket == ms("2027-01-01T00:00:00") // 60_000
        await store.reconcile(late, 10)  # lands in the old day
        assert await store.usage("p:m") == {"rpm": 1, "rpd": 1, "tpd": 100, "tpm": 100}
        assert int(await store.client.get(store.day_keys("p:m", "2026-12-31")[1])) == 10
    finally:
        await store.close()


async def test_lua_utc_day_matches_python_on_leap_years_and_century_rules(
    store: RedisQuota,
) -> None:
    epoch = date(1970, 1, 1)
    spans = [
        (date(1969, 12, 25), 20),
        (date(1999, 12, 25), 450),
        (date(2026, 1, 1), 400),
        (date(2100, 2, 20), 20),
        (date(2400, 2, 20), 20),
    ]
    days = [(start - epoch).days + i for start, count in spans for i in range(count)]
    script = LUA_CLOCK + (
        "local out = {} for i, n in ipairs(ARGV) do out[i] = utc_day(tonumber(n)) end return out"
    )
    got = await store.client.eval(script, 0, *days)
    assert [g.decode() for g in got] == [(epoch + timedelta(days=n)).isoformat() for n in days]


async def test_script_is_reloaded_after_the_server_forgets_it(store: RedisQuota) -> None:
    assert isinstance(await store.reserve("p:m", Limits(), 1), Reservation)
    await store.client.script_flush()
    assert isinstance(await store.reserve("p:m", Limits(), 1), Reservation)
    assert (await store.usage("p:m"))["rpd"] == 2


async def test_close_leaves_a_callers_client_open(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    store = RedisQuota(client, prefix="other:")
    assert isinstance(await store.reserve("p:m", Limits(), 1), Reservation)
    await store.close()
    assert await client.ping() is True
    assert await client.keys("other:*")
    await client.aclose()


async def test_redis_quota_alone_raises_when_nobody_listens() -> None:
    store = RedisQuota(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(redis.exceptions.ConnectionError):
        await store.reserve("p:m", Limits(), 1)
    await store.close()


# --- atomicity across OS processes ---------------------------------------------------------
ATOMIC_KEYS = {  # key -> (limits, tokens per call, expected grants)
    "atomic:rpm": (Limits(rpm=37), 1, 37),
    "atomic:rpd": (Limits(rpd=23), 1, 23),
    "atomic:tpd": (Limits(tpd=290), 10, 29),
}
PROCESSES, CONCURRENCY = 8, 50


def _atomic_worker(url: str, ready: Any, go: Any, out: Any) -> None:
    try:
        out.put(asyncio.run(_atomic_run(url, ready, go)))
    except BaseException:
        ready.put("failed")
        out.put(traceback.format_exc())


async def _atomic_run(url: str, ready: Any, go: Any) -> list[tuple[str, int]]:
    store = RedisQuota(url)  # the production client: short timeouts, a blocking pool
    await store.ping(timeout_s=5)
    ready.put(os.getpid())
    go.wait(30)  # everybody starts together (blocking is fine: nothing else runs here)
    calls = [
        store.reserve(key, limits, tokens)
        for key, (limits, tokens, _) in ATOMIC_KEYS.items()
        for _ in range(CONCURRENCY)
    ]
    results = await asyncio.gather(*calls)
    await store.close()
    return [(r.key, r.minute_bucket) for r in results if isinstance(r, Reservation)]


def test_reservations_are_atomic_across_processes(redis_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(target=_atomic_worker, args=(redis_url, ready, go, out))
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    try:
        assert all(ready.get(timeout=60) != "failed" for _ in procs)
        seconds, _ = redis.Redis.from_url(redis_url).time()
        if 60 - seconds % 60 < 2:  # do not straddle a calendar minute
            time.sleep(60 - seconds % 60 + 0.05)
        go.set()
        results = [out.get(timeout=60) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=10)
    errors = [r for r in results if isinstance(r, str)]
    assert not errors, errors[0]
    granted = [grant for per_process in results for grant in per_process]
    # (Which processes won is up to the scheduler — one may win them all on 2 cores; the
    # property is the exact total, whoever took the grants.)
    for key, (_, tokens, expected) in ATOMIC_KEYS.items():
        assert sum(1 for k, _ in granted if k == key) == expected, key
        usage = asyncio.run(_usage(redis_url, key))
        assert usage["rpd"] == expected and usage["tpd"] == expected * tokens, usage
    assert len({minute for k, minute in granted if k == "atomic:rpm"}) == 1


async def _usage(url: str, key: str) -> dict[str, int]:
    store = RedisQuota(url)
    try:
        return await store.usage(key)
    finally:
        await store.close()


# --- FailoverQuota ---------------------------------------------------------------------------
@pytest.fixture
def own_server():  # type: ignore[no-untyped-def]
    """A redis-server of this test alone, to kill and restart."""
    with RedisServer() as server:
        yield server


def states(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.backend, e.state) for e in events if isinstance(e, QuotaBackendEvent)]


async def test_failover_is_distributed_while_redis_answers(redis_url: str) -> None:
    one, two = FailoverQuota(redis_url), FailoverQuota(redis_url)
    try:
        await not_near_minute_end()
        limits = Limits(rpm=3)
        results = [await q.reserve("p:m", limits, 1) for q in (one, two, one, two, one)]
        assert [type(r).__name__ for r in results] == ["Reservation"] * 3 + ["Refusal"] * 2
        assert all(r.backend == "redis" for r in results if isinstance(r, Reservation))
        assert one.stats() == {
            "backend": "redis",
            "degraded_reason": None,
            "last_error": None,
            "transitions": 0,
        }
    finally:
        await one.close()
        await two.close()


async def test_failover_survives_a_killed_server_and_returns_to_it(
    own_server: RedisServer,
) -> None:
    events: list[Any] = []
    quota = FailoverQuota(own_server.url, sinks=[events.append], retry_every_s=0.3)
    limits = Limits(rpm=1000)
    try:
        first = await quota.reserve("p:m", limits, 5)
        assert isinstance(first, Reservation) and first.backend == "redis"
        own_server.kill()
        taken = await asyncio.gather(*(quota.reserve("p:m", limits, 5) for _ in range(20)))
        assert all(isinstance(t, Reservation) and t.backend == "memory" for t in taken)
        assert quota.backend == "memory"
        assert states(events) == [("memory", "degraded")]
        stats = quota.stats()
        assert stats["backend"] == "memory" and stats["transitions"] == 1
        assert "Connection" in stats["degraded_reason"] and stats["last_error"]
        await quota.reconcile(first, 50)  # its backend is down: dropped, not raised
        await quota.release(first)
        await quota.reconcile(taken[0], 0)  # a memory reservation corrects memory
        # memory went on from the reservation Redis granted before it died (1 request, 5 tokens)
        assert await quota.usage("p:m") == {"rpm": 21, "rpd": 21, "tpd": 100, "tpm": 100}
        assert states(events) == [("memory", "degraded")]

        own_server.restart()  # same port, empty
        await asyncio.sleep(0.35)
        again = await quota.reserve("p:m", limits, 5)
        assert isinstance(again, Reservation) and again.backend == "redis"
        assert quota.backend == "redis"
        assert states(events) == [("memory", "degraded"), ("redis", "restored")]
        assert quota.stats()["transitions"] == 2 and quota.degraded_reason is None
        # The restarted (empty) Redis learnt what was spent while it was away: 21 requests and
        # 100 tokens counted in memory, plus this one — a window is never granted twice.
        assert await quota.usage("p:m") == {"rpm": 22, "rpd": 22, "tpd": 105, "tpm": 105}
        await quota.reconcile(again, 9)
        assert (await quota.usage("p:m"))["tpd"] == 109
    finally:
        await quota.close()


async def test_failover_probes_at_most_every_retry_every_s(own_server: RedisServer) -> None:
    events: list[Any] = []
    clock = Clock("2026-03-10T12:00:00")
    quota = FailoverQuota(own_server.url, sinks=[events.append], clock_ms=clock)
    pings = count_pings(quota)
    try:
        assert (await quota.reserve("p:m", Limits(), 1)).backend == "redis"  # type: ignore[union-attr]
        own_server.kill()
        assert (await quota.reserve("p:m", Limits(), 1)).backend == "memory"  # type: ignore[union-attr]
        clock.advance(2.0)
        await quota.reserve("p:m", Limits(), 1)  # probe: still down
        assert len(pings) == 1 and quota.backend == "memory"
        own_server.restart()
        clock.advance(1.9)
        for _ in range(5):  # Redis is back, but it is not time to look yet
            assert (await quota.reserve("p:m", Limits(), 1)).backend == "memory"  # type: ignore[union-attr]
        assert len(pings) == 1
        clock.advance(0.1)
        assert (await quota.reserve("p:m", Limits(), 1)).backend == "redis"  # type: ignore[union-attr]
        assert len(pings) == 2
        assert states(events) == [("memory", "degraded"), ("redis", "restored")]
        assert [e.at_ms for e in events] == [ms("2026-03-10T12:00:00"), clock.now]
    finally:
        await quota.close()


async def test_failover_unreachable_at_start_serves_from_memory_at_once() -> None:
    events: list[Any] = []
    quota = FailoverQuota(f"redis://127.0.0.1:{free_port()}/0", sinks=[events.append])
    try:
        start = time.perf_counter()
        results = [await quota.reserve("p:m", Limits(rpm=2), 1) for _ in range(3)]
        assert time.perf_counter() - start < 1.0
        assert [type(r).__name__ for r in results] == ["Reservation", "Reservation", "Refusal"]
        assert results[0].backend == "memory"  # type: ignore[union-attr]
        assert quota.backend == "memory" and quota.degraded_reason
        assert states(events) == [("memory", "degraded")]
        assert await quota.usage("p:m") == {"rpm": 2, "rpd": 2, "tpd": 2, "tpm": 2}
        await quota.release(results[0])  # type: ignore[arg-type]
        assert (await quota.usage("p:m"))["rpm"] == 1
    finally:
        await quota.close()


async def test_failover_usage_and_corrections_never_raise_when_redis_dies(
    own_server: RedisServer,
) -> None:
    quota = FailoverQuota(own_server.url, retry_every_s=60)
    try:
        taken = await quota.reserve("p:m", Limits(), 5)
        assert isinstance(taken, Reservation) and taken.backend == "redis"
        own_server.kill()
        await quota.reconcile(taken, 1)  # fails on the wire: logged and dropped
        assert quota.last_error
        # now memory, which mirrored the reservation Redis granted before it died
        assert await quota.usage("p:m") == {"rpm": 1, "rpd": 1, "tpd": 5, "tpm": 5}
        assert quota.backend == "memory"
        await quota.release(taken)
    finally:
        await quota.close()


async def test_failover_mirrors_minute_tokens_and_restores_them(own_server: RedisServer) -> None:
    await not_near_minute_end(5.0)
    quota = FailoverQuota(own_server.url, retry_every_s=0.3)
    limits = Limits(tpm=100)
    try:
        assert isinstance(await quota.reserve("p:m", limits, 60), Reservation)
        own_server.kill()
        refused = await quota.reserve("p:m", limits, 41)  # memory goes on from Redis's 60
        assert isinstance(refused, Refusal) and refused.limit == "tpm" and refused.used == 60
        assert quota.backend == "memory"
        assert isinstance(await quota.reserve("p:m", limits, 30), Reservation)
        own_server.restart()  # empty
        await asyncio.sleep(0.35)
        refused = await quota.reserve("p:m", limits, 11)  # Redis learnt the 90 spent meanwhile
        assert quota.backend == "redis"
        assert isinstance(refused, Refusal) and refused.used == 90
    finally:
        await quota.close()
