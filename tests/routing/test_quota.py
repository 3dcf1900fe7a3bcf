"""The in-memory quota store: fixed calendar minutes, UTC days, reservations that reconcile."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from workbench.events import QuotaBackendEvent
from workbench.routing.quota import (
    Limits,
    MemoryQuota,
    QuotaStore,
    Refusal,
    Reservation,
    check,
    utc_day,
)


def ms(text: str) -> int:
    """Epoch ms of an ISO UTC timestamp."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


class Clock:
    def __init__(self, start: str) -> None:
        self.now = ms(start)

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1000)


@pytest.fixture
def clock() -> Clock:
    return Clock("2026-03-10T12:00:15")


@pytest.fixture
def quota(clock: Clock) -> MemoryQuota:
    return MemoryQuota(clock_ms=clock)


def test_memory_quota_is_a_quota_store(quota: MemoryQuota) -> None:
    store: QuotaStore = quota
    assert store.backend == "memory"


async def test_rpm_refuses_at_the_cap_until_the_calendar_minute_ends(
    quota: MemoryQuota, clock: Clock
) -> None:
    limits = Limits(rpm=3)
    taken = [await quota.reserve("p:m", limits, 10) for _ in range(3)]
    assert all(isinstance(t, Reservation) for t in taken)
    refused = await quota.reserve("p:m", limits, 10)
    assert isinstance(refused, Refusal)
    assert (refused.limit, refused.used, refused.cap) == ("rpm", 3, 3)
    assert refused.retry_after_s == pytest.approx(45.0)  # 12:00:15 → 12:01:00
    assert 0 < refused.retry_after_s <= 60
    clock.advance(44.9)
    assert isinstance(await quota.reserve("p:m", limits, 10), Refusal)
    clock.advance(0.1)  # 12:01:00: a new calendar minute
    assert isinstance(await quota.reserve("p:m", limits, 10), Reservation)
    assert await quota.usage("p:m") == {"rpm": 1, "rpd": 4, "tpd": 40, "tpm": 10}


async def test_keys_and_lanes_count_apart(quota: MemoryQuota) -> None:
    limits = Limits(rpm=1)
    assert isinstance(await quota.reserve("p:m", limits, 1), Reservation)
    assert isinstance(await quota.reserve("p:m@background", limits, 1), Reservation)
    assert isinstance(await quota.reserve("p:m", limits, 1), Refusal)


async def test_rpd_refuses_until_utc_midnight(quota: MemoryQuota, clock: Clock) -> None:
    limits = Limits(rpm=100, rpd=2)
    for _ in range(2):
        assert isinstance(await quota.reserve("p:m", limits, 0), Reservation)
        clock.advance(61)
    refused = await quota.reserve("p:m", limits, 0)
    assert isinstance(refused, Refusal)
    assert (refused.limit, refused.used, refused.cap) == ("rpd", 2, 2)
    midnight = ms("2026-03-11T00:00:00")
    assert refused.retry_after_s == pytest.approx((midnight - clock.now) / 1000)


async def test_tpd_reserve_then_reconcile_frees_the_difference(quota: MemoryQuota) -> None:
    limits = Limits(tpd=100)
    first = await quota.reserve("p:m", limits, 100)
    assert isinstance(first, Reservation) and first.tokens == 100
    refused = await quota.reserve("p:m", limits, 1)
    assert isinstance(refused, Refusal)
    assert (refused.limit, refused.used, refused.cap) == ("tpd", 100, 100)
    await quota.reconcile(first, 30)
    assert (await quota.usage("p:m"))["tpd"] == 30
    assert isinstance(await quota.reserve("p:m", limits, 70), Reservation)
    assert isinstance(await quota.reserve("p:m", limits, 1), Refusal)


async def test_tpd_refuses_a_reservation_that_would_cross_the_cap(quota: MemoryQuota) -> None:
    limits = Limits(tpd=100)
    assert isinstance(await quota.reserve("p:m", limits, 60), Reservation)
    refused = await quota.reserve("p:m", limits, 41)
    assert isinstance(refused, Refusal) and refused.limit == "tpd" and refused.used == 60
    assert isinstance(await quota.reserve("p:m", limits, 40), Reservation)


async def test_tpm_refuses_past_the_cap_until_the_calendar_minute_ends(
    quota: MemoryQuota, clock: Clock
) -> None:
    limits = Limits(tpm=100)
    assert isinstance(await quota.reserve("p:m", limits, 60), Reservation)
    refused = await quota.reserve("p:m", limits, 41)
    assert isinstance(refused, Refusal)
    assert (refused.limit, refused.used, refused.cap) == ("tpm", 60, 100)
    assert refused.retry_after_s == pytest.approx(45.0)  # 12:00:15 → 12:01:00
    assert isinstance(await quota.reserve("p:m", limits, 40), Reservation)
    assert isinstance(await quota.reserve("p:m", limits, 1), Refusal)
    clock.advance(44.9)
    assert isinstance(await quota.reserve("p:m", limits, 1), Refusal)
    clock.advance(0.1)  # 12:01:00: a fresh minute, while the day keeps counting
    assert isinstance(await quota.reserve("p:m", limits, 100), Reservation)
    assert await quota.usage("p:m") == {"rpm": 1, "rpd": 3, "tpd": 200, "tpm": 100}


async def test_tpm_reconcile_and_release_correct_the_reservations_own_minute(
    quota: MemoryQuota, clock: Clock
) -> None:
    limits = Limits(tpm=100)
    first = await quota.reserve("p:m", limits, 100)
    assert isinstance(first, Reservation)
    await quota.reconcile(first, 30)  # the answer used 30: 70 are free again this minute
    assert (await quota.usage("p:m"))["tpm"] == 30
    second = await quota.reserve("p:m", limits, 70)
    assert isinstance(second, Reservation)
    assert isinstance(await quota.reserve("p:m", limits, 1), Refusal)
    await quota.release(second)
    assert (await quota.usage("p:m"))["tpm"] == 30
    third = await quota.reserve("p:m", limits, 50)
    assert isinstance(third, Reservation)
    clock.advance(45)  # the next minute
    assert isinstance(await quota.reserve("p:m", limits, 10), Reservation)
    await quota.reconcile(third, 20)  # lands in the old minute (80 - 30), not in this one
    assert (await quota.usage("p:m"))["tpm"] == 10
    assert quota._minutes[("p:m", third.minute_bucket)] == [2, 50]


async def test_reconcile_upwards_and_never_below_zero(quota: MemoryQuota) -> None:
    first = await quota.reserve("p:m", Limits(), 100)
    assert isinstance(first, Reservation)
    await quota.reconcile(first, 250)
    assert (await quota.usage("p:m"))["tpd"] == 250
    await quota.release(first)  # gives back the 100 reserved
    assert (await quota.usage("p:m"))["tpd"] == 150
    await quota.reconcile(first, 0)  # -100
    await quota.reconcile(first, 0)  # -100 again: floors at zero
    assert (await quota.usage("p:m"))["tpd"] == 0


async def test_release_gives_back_requests_and_tokens(quota: MemoryQuota) -> None:
    limits = Limits(rpm=1, rpd=1, tpd=50)
    first = await quota.reserve("p:m", limits, 50)
    assert isinstance(first, Reservation)
    assert isinstance(await quota.reserve("p:m", limits, 0), Refusal)
    await quota.release(first)
    assert await quota.usage("p:m") == {"rpm": 0, "rpd": 0, "tpd": 0, "tpm": 0}
    assert isinstance(await quota.reserve("p:m", limits, 50), Reservation)


async def test_unlimited_still_counts(quota: MemoryQuota) -> None:
    for _ in range(500):
        assert isinstance(await quota.reserve("p:m", Limits(), 3), Reservation)
    assert await quota.usage("p:m") == {"rpm": 500, "rpd": 500, "tpd": 1500, "tpm": 1500}


async def test_zero_cap_refuses_and_garbage_tokens_count_as_zero(quota: MemoryQuota) -> None:
    assert isinstance(await quota.reserve("p:m", Limits(rpm=0), 1), Refusal)
    for bad in (-5, float("nan"), float("inf"), "x", None):
        taken = await quota.reserve("q:m", Limits(tpd=0), bad)  # type: ignore[arg-type]
        assert isinstance(taken, Reservation) and taken.tokens == 0
    # a non-finite cap is no cap (never raised)
    assert isinstance(await quota.reserve("r:m", Limits(rpm=float("nan")), 1), Reservation)  # type: ignore[arg-type]


async def test_day_rolls_over_at_utc_midnight_without_a_timer() -> None:
    clock = Clock("2026-03-10T23:59:30")
    quota = MemoryQuota(clock_ms=clock)
    limits = Limits(rpd=1, tpd=100)
    late = await quota.reserve("p:m", limits, 100)
    assert isinstance(late, Reservation) and late.day == "2026-03-10"
    refused = await quota.reserve("p:m", limits, 0)
    assert isinstance(refused, Refusal) and refused.retry_after_s == pytest.approx(30.0)
    clock.advance(30)  # 00:00:00 UTC
    early = await quota.reserve("p:m", limits, 100)
    assert isinstance(early, Reservation) and early.day == "2026-03-11"
    # a late reconcile lands in the reservation's own day, not in the new one
    await quota.reconcile(late, 10)
    assert await quota.usage("p:m") == {"rpm": 1, "rpd": 1, "tpd": 100, "tpm": 100}
    assert quota._days[("p:m", "2026-03-10")] == [1, 10]


async def test_old_buckets_are_pruned_lazily(quota: MemoryQuota, clock: Clock) -> None:
    for i in range(300):
        await quota.reserve(f"p:m{i % 7}", Limits(), 1)
        clock.advance(30)
    assert len(quota._minutes) <= 2 * 7  # this minute and the previous one
    clock.advance(3 * 86_400)
    await quota.reserve("p:m0", Limits(), 1)
    assert set(quota._days) == {("p:m0", utc_day(clock.now))}


async def test_concurrent_reservations_never_exceed_the_cap(quota: MemoryQuota) -> None:
    results = await asyncio.gather(*(quota.reserve("p:m", Limits(rpm=37), 1) for _ in range(400)))
    assert sum(isinstance(r, Reservation) for r in results) == 37


def test_check_names_the_limit_that_frees_last() -> None:
    now = ms("2026-03-10T12:00:15")
    refusal = check("k", Limits(rpm=1, rpd=1, tpd=1), 5, (1, 1, 1, 0), now)
    assert refusal is not None and refusal.limit == "rpd"
    refusal = check("k", Limits(rpm=1, tpd=1), 5, (1, 1, 1, 0), now)
    assert refusal is not None and refusal.limit == "tpd"
    assert check("k", Limits(rpm=2, rpd=2, tpd=6), 5, (1, 1, 1, 0), now) is None
    # tpm frees at the minute's end like rpm, after the day's limits; it is named before rpm
    refusal = check("k", Limits(rpm=1, tpm=5), 5, (1, 0, 0, 1), now)
    assert refusal is not None and refusal.limit == "tpm" and refusal.retry_after_s == 45.0
    refusal = check("k", Limits(tpd=5, tpm=5), 5, (0, 0, 1, 1), now)
    assert refusal is not None and refusal.limit == "tpd"
    assert check("k", Limits(tpm=6), 5, (0, 0, 0, 1), now) is None


def test_utc_day() -> None:
    assert utc_day(ms("2024-02-29T23:59:59.999")) == "2024-02-29"
    assert utc_day(ms("2024-03-01T00:00:00")) == "2024-03-01"


def test_quota_backend_event_shape() -> None:
    event = QuotaBackendEvent(backend="memory", state="degraded", reason="x")
    assert event.at_ms > 0 and event.backend == "memory"
