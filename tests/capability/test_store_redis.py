"""The Redis capability store and its failover, against a real redis-server (no fakes)."""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

import pytest
from redis_server import count_pings, free_port

from workbench.capability import (
    CapabilityStore,
    FailoverCapabilityStore,
    RedisCapabilityStore,
    make_record,
    should_replace,
)
from workbench.capability.decide import CapabilityRecord
from workbench.errors import ConfigError

T0 = 1_767_225_600_000


def rec(
    verdict: str = "native",
    via: str = "live",
    at: int = T0,
    model: str = "m",
    capability: str = "tools",
    family: str | None = None,
) -> CapabilityRecord:
    return make_record("p", model, "s", capability, verdict, via, None, at, family)


async def read_back(url: str, model: str = "m") -> CapabilityRecord | None:
    """What Redis itself holds, through a store of its own (another process, in effect)."""
    other = RedisCapabilityStore(url)
    try:
        return await other.get("p", model, "s", "tools")
    finally:
        await other.close()


@pytest.fixture
async def store(redis_url: str):  # type: ignore[no-untyped-def]
    redis_store = RedisCapabilityStore(redis_url)
    yield redis_store
    await redis_store.close()


class Clock:
    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds * 1000


# --- RedisCapabilityStore --------------------------------------------------------------------
async def test_put_get_and_all_round_trip_through_redis(store: RedisCapabilityStore) -> None:
    assert isinstance(store, CapabilityStore)
    assert await store.get("p", "m", "s", "tools") is None
    texty = rec("text", model="a:b/c", family="mistral")
    for record in (rec(), rec(model="m", capability="vision"), texty):
        assert await store.put(record) is True
    assert await store.get("p", "m", "s", "tools") == rec()
    assert await store.get("p", "a:b/c", "s", "tools") == texty
    assert await store.get("p", "m", "other-scope", "tools") is None
    got = await store.all()
    assert sorted(got, key=lambda r: r.key) == sorted(
        [rec(), rec(capability="vision"), texty], key=lambda r: r.key
    )
    assert [r.protocol_family for r in got if r.model == "a:b/c"] == ["mistral"]


async def test_put_applies_should_replace(store: RedisCapabilityStore) -> None:
    assert await store.put(rec("native", "live", T0))
    assert not await store.put(rec("none", "probe", T0 + 1))  # weaker provenance loses
    assert (await store.get("p", "m", "s", "tools")).verdict == "native"  # type: ignore[union-attr]
    assert await store.put(rec("none", "live", T0 + 1))  # same provenance, newer wins
    assert (await store.get("p", "m", "s", "tools")).verdict == "none"  # type: ignore[union-attr]
    assert not await store.put(rec("text", "live", T0))  # same provenance, older loses
    assert await store.put(rec("native", "probe", T0 + 9)) is False
    assert await store.all() == [rec("none", "live", T0 + 1)]


async def test_records_are_shared_by_stores_on_separate_clients(redis_url: str) -> None:
    one, two = RedisCapabilityStore(redis_url), RedisCapabilityStore(redis_url)
    try:
        assert await one.put(rec("native", "probe", T0))
        assert await two.get("p", "m", "s", "tools") == rec("native", "probe", T0)
        assert not await two.put(rec("none", "declared", T0 + 5))  # the rule holds across them
        assert await two.put(rec("none", "live", T0 + 5))
        assert await one.all() == [rec("none", "live", T0 + 5)]
    finally:
        await one.close()
        await two.close()


async def test_racing_puts_from_two_clients_keep_the_record_should_replace_prefers(
    redis_url: str,
) -> None:
    """A read-decide-write without the transaction lets a weaker record, read before the
    stronger one landed, overwrite it: here the last writer would win, not the best record."""
    one, two = RedisCapabilityStore(redis_url), RedisCapabilityStore(redis_url)
    offsets = list(range(90))
    random.Random(7).shuffle(offsets)
    vias = ("declared", "probe", "live")
    records = [rec("native", vias[i % 3], T0 + offsets[i]) for i in range(90)]
    best = records[0]
    for candidate in records[1:]:
        if should_replace(best, candidate):
            best = candidate
    assert best.via == "live"
    try:
        stores = (one, two)
        results = await asyncio.gather(*(stores[i % 2].put(r) for i, r in enumerate(records)))
        assert await one.get("p", "m", "s", "tools") == best
        assert await two.all() == [best]
        assert results[records.index(best)] is True
    finally:
        await one.close()
        await two.close()


async def test_an_unreadable_stored_value_counts_as_absent(store: RedisCapabilityStore) -> None:
    where = store.key(rec().key)
    await store.client.set(where, "not json")
    await store.client.sadd(store.index_key, "p\x1fm\x1fs\x1fvision")  # indexed, never written
    assert await store.get("p", "m", "s", "tools") is None
    assert await store.all() == []
    assert await store.put(rec("native", "declared", T0))  # even the weakest replaces it
    assert await store.get("p", "m", "s", "tools") == rec("native", "declared", T0)


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("http://user:hunter2@localhost:6379/0", {}),
        ("redis://user:hunter2@localhost:6379/0", {"prefix": ""}),
        ("redis://user:hunter2@localhost:6379/0", {"socket_timeout_s": 0}),
        ("redis://user:hunter2@localhost:6379/0", {"max_attempts": 0}),
        (42, {}),
    ],
)
def test_bad_settings_are_one_coded_line_without_the_password(url: Any, options: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        RedisCapabilityStore(url, **options)
    assert caught.value.code == "CAPABILITY_STORE_INVALID"
    assert "hunter2" not in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("retry", [-1, float("nan"), "2"])
def test_the_failover_refuses_a_bad_retry_interval(retry: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        FailoverCapabilityStore("redis://127.0.0.1:6379/0", retry_every_s=retry)
    assert caught.value.code == "CAPABILITY_STORE_INVALID"


# --- FailoverCapabilityStore -----------------------------------------------------------------
async def test_failover_writes_to_redis_while_it_answers(redis_url: str) -> None:
    failover = FailoverCapabilityStore(redis_url)
    try:
        assert isinstance(failover, CapabilityStore)
        assert await failover.put(rec("native", "probe", T0))
        assert not await failover.put(rec("none", "declared", T0 + 1))
        assert await read_back(redis_url) == rec("native", "probe", T0)
        assert await failover.all() == [rec("native", "probe", T0)]
        assert failover.stats() == {
            "backend": "redis",
            "degraded_reason": None,
            "transitions": 0,
            "last_error": None,
        }
    finally:
        await failover.close()


async def test_failover_survives_a_killed_server_and_writes_back_when_it_returns(
    redis_server: Any, redis_url: str
) -> None:
    failover = FailoverCapabilityStore(redis_url, retry_every_s=0)
    seen_elsewhere = rec("text", "live", T0, model="other", family="hermes")
    try:
        assert await failover.put(rec("native", "live", T0))
        writer = RedisCapabilityStore(redis_url)
        await writer.put(seen_elsewhere)  # another process's record, read once by this one
        await writer.close()
        assert await failover.get("p", "other", "s", "tools") == seen_elsewhere

        redis_server.kill()
        # What was seen on Redis still answers, and new records are kept.
        assert await failover.get("p", "m", "s", "tools") == rec("native", "live", T0)
        assert await failover.get("p", "other", "s", "tools") == seen_elsewhere
        assert failover.backend == "memory"
        assert await failover.put(rec("none", "live", T0 + 10))
        assert not await failover.put(rec("text", "probe", T0 + 20))  # the rule holds in memory
        assert await failover.put(rec("native", "probe", T0, model="new"))
        assert (await failover.get("p", "m", "s", "tools")) == rec("none", "live", T0 + 10)
        stats = failover.stats()
        assert stats["backend"] == "memory" and stats["transitions"] == 1
        assert "Connection" in stats["degraded_reason"] and stats["last_error"]

        redis_server.restart()  # same port, empty
        assert len(await failover.all()) == 3  # the first call back restores, then reads Redis
        assert failover.stats()["backend"] == "redis"
        assert failover.stats()["transitions"] == 2 and failover.degraded_reason is None
        assert await read_back(redis_url) == rec("none", "live", T0 + 10)
        assert await read_back(redis_url, "new") == rec("native", "probe", T0, model="new")
        assert await read_back(redis_url, "other") == seen_elsewhere
    finally:
        await failover.close()


async def test_records_written_back_still_lose_to_a_stronger_one_in_redis(
    redis_server: Any, redis_url: str
) -> None:
    failover = FailoverCapabilityStore(redis_url, retry_every_s=0)
    try:
        assert await failover.put(rec("native", "declared", T0))
        redis_server.kill()
        assert await failover.put(rec("native", "probe", T0 + 1))  # kept in memory
        redis_server.restart()
        writer = RedisCapabilityStore(redis_url)
        assert await writer.put(rec("none", "live", T0 + 2))  # landed while we were away
        await writer.close()
        assert await failover.get("p", "m", "s", "tools") == rec("none", "live", T0 + 2)
        assert failover.backend == "redis"
        assert await read_back(redis_url) == rec("none", "live", T0 + 2)
        # and memory now mirrors what Redis holds, should it die again
        assert await failover.memory.get("p", "m", "s", "tools") == rec("none", "live", T0 + 2)
    finally:
        await failover.close()


async def test_a_put_that_lands_during_the_write_back_reaches_redis_too(
    redis_server: Any, redis_url: str
) -> None:
    failover = FailoverCapabilityStore(redis_url, retry_every_s=0)
    real_replay = failover.redis.replay
    late = rec("native", "live", T0, model="late")

    async def replay_with_a_put_in_between(records: Any) -> int:
        if failover.redis.replay is replay_with_a_put_in_between:
            failover.redis.replay = real_replay  # type: ignore[method-assign]
            assert await failover.put(late)  # still on memory: the replay has not finished
            assert failover.backend == "memory"
        return await real_replay(records)

    try:
        redis_server.kill()
        assert await failover.put(rec())
        assert failover.backend == "memory"
        redis_server.restart()
        failover.redis.replay = replay_with_a_put_in_between  # type: ignore[method-assign]
        assert await failover.get("p", "m", "s", "tools") == rec()
        assert failover.backend == "redis"
        assert await read_back(redis_url) == rec()
        assert await read_back(redis_url, "late") == late
    finally:
        await failover.close()


async def test_failover_unreachable_at_start_serves_from_memory(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failover = FailoverCapabilityStore(f"redis://127.0.0.1:{free_port()}/0", retry_every_s=60)
    try:
        with caplog.at_level(logging.WARNING, logger="workbench.capability.store"):
            assert await failover.get("p", "m", "s", "tools") is None
            assert await failover.put(rec("native", "probe", T0))
            assert not await failover.put(rec("none", "declared", T0 + 1))
            assert await failover.all() == [rec("native", "probe", T0)]
        assert failover.backend == "memory" and failover.degraded_reason
        assert failover.stats()["transitions"] == 1
        said = [r.getMessage() for r in caplog.records if "degraded" in r.getMessage()]
        assert len(said) == 1  # once per transition, not once per call
    finally:
        await failover.close()


async def test_failover_probes_at_most_every_retry_every_s(
    redis_server: Any, redis_url: str
) -> None:
    clock = Clock()
    failover = FailoverCapabilityStore(redis_url, clock_ms=clock)  # retry_every_s=2
    pings = count_pings(failover)
    try:
        assert await failover.put(rec())
        redis_server.kill()
        await failover.get("p", "m", "s", "tools")
        assert failover.backend == "memory" and len(pings) == 0
        clock.advance(2.0)
        await failover.get("p", "m", "s", "tools")  # probe: still down
        assert len(pings) == 1 and failover.backend == "memory"
        redis_server.restart()
        clock.advance(1.9)
        for _ in range(5):  # Redis is back, but it is not time to look yet
            assert await failover.get("p", "m", "s", "tools") == rec()
        assert len(pings) == 1 and failover.backend == "memory"
        clock.advance(0.1)
        assert await failover.get("p", "m", "s", "tools") == rec()
        assert len(pings) == 2 and failover.backend == "redis"
        assert failover.stats()["transitions"] == 2
    finally:
        await failover.close()
