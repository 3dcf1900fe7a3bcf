"""Circuit breakers: transitions on a fake clock, one probe under real concurrency, the pool."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import ConfigError, ProviderError
from workbench.routing.breaker import (
    BreakerOpen,
    BreakerPool,
    CircuitBreaker,
    is_provider_outage,
)


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def outage() -> ProviderError:
    return ProviderError("boom", kind="outage", status_code=503)


def rate_limited() -> ProviderError:
    return ProviderError("slow down", kind="rate_limit", status_code=429)


def fail(b: CircuitBreaker, err: BaseException | None = None) -> None:
    permit = b.allow()
    assert permit is not None
    permit.failure(err or outage())


def succeed(b: CircuitBreaker) -> None:
    permit = b.allow()
    assert permit is not None
    permit.success()


# --- is_provider_outage ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("err", "expected"),
    [
        (ProviderError("x", kind="outage", status_code=500), True),
        (ProviderError("x", kind="outage", status_code=502), True),
        (ProviderError("x", kind="outage", status_code=503), True),
        (ProviderError("x", kind="timeout", status_code=408), True),
        (ProviderError("x", kind="timeout", status_code=0), True),
        (ProviderError("x", kind="network", status_code=0), True),
        (ProviderError("x", kind="empty", status_code=200), True),
        (ProviderError("x", kind="outage", status_code=200), True),  # malformed 200
        (ProviderError("x", kind="rate_limit", status_code=429), False),
        (ProviderError("x", kind="bad_request", status_code=400), False),
        (ProviderError("x", kind="auth", status_code=401), False),
        (ProviderError("x", kind="auth", status_code=403), False),
        (ProviderError("x", kind="bad_request", status_code=404), False),
        (ProviderError("x", kind="bad_request", status_code=422), False),
        (TimeoutError(), True),
        (ConnectionResetError(), True),
        (httpx.ConnectError("refused"), True),
        (httpx.ReadTimeout("slow"), True),
        (asyncio.CancelledError(), False),
        (ValueError("our own bug"), False),
        (None, False),
    ],
)
def test_is_provider_outage_table(err: BaseException | None, expected: bool) -> None:
    assert is_provider_outage(err) is expected


# --- transitions ----------------------------------------------------------------------------
def test_opens_after_threshold_consecutive_outages_and_refuses() -> None:
    b = CircuitBreaker(failure_threshold=3, recovery_s=30, clock=FakeClock())
    fail(b)
    fail(b)
    assert b.state == "closed"
    fail(b)
    assert b.state == "open"
    assert b.allow() is None


def test_success_resets_the_run_of_outages() -> None:
    b = CircuitBreaker(failure_threshold=3, clock=FakeClock())
    fail(b)
    fail(b)
    succeed(b)
    fail(b)
    fail(b)
    assert b.state == "closed"
    assert b.snapshot()["consecutive_failures"] == 2


def test_non_outage_errors_are_neutral_neither_counting_nor_resetting() -> None:
    b = CircuitBreaker(failure_threshold=3, clock=FakeClock())
    fail(b)
    fail(b)
    for err in (rate_limited(), ProviderError("x", kind="bad_request", status_code=400)):
        fail(b, err)
    assert b.state == "closed"
    assert b.snapshot()["consecutive_failures"] == 2
    fail(b)
    assert b.state == "open"


def test_half_open_after_recovery_and_probe_success_closes() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failure_threshold=1, recovery_s=30, clock=clock)
    fail(b)
    clock.t += 29.9
    assert b.state == "open"
    assert b.allow() is None
    clock.t += 0.1
    assert b.state == "half_open"
    probe = b.allow()
    assert probe is not None and probe.probe
    assert b.allow() is None  # the one probe is in flight
    probe.success()
    assert b.state == "closed"
    assert b.snapshot() == {
        "state": "closed",
        "consecutive_failures": 0,
        "opened_at": None,
        "next_probe_in_s": None,
        "probe_in_flight": False,
    }
    assert b.allow() is not None


def test_probe_failure_reopens_and_restarts_the_recovery_timer() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failure_threshold=1, recovery_s=30, clock=clock)
    fail(b)
    clock.t += 100
    probe = b.allow()
    assert probe is not None
    probe.failure(TimeoutError())
    assert b.state == "open"
    snap = b.snapshot()
    assert snap["opened_at"] == clock.t
    assert snap["next_probe_in_s"] == 30
    clock.t += 29
    assert b.allow() is None
    clock.t += 1
    assert b.allow() is not None


@pytest.mark.parametrize("settle", ["cancel", "rate_limit"])
def test_neutral_probe_frees_the_slot_without_closing(settle: str) -> None:
    clock = FakeClock()
    b = CircuitBreaker(failure_threshold=1, recovery_s=5, clock=clock)
    fail(b)
    clock.t += 5
    probe = b.allow()
    assert probe is not None
    if settle == "cancel":
        probe.cancel()
    else:
        probe.failure(rate_limited())
    assert b.state == "half_open"
    assert b.snapshot()["probe_in_flight"] is False
    again = b.allow()
    assert again is not None and again.probe


def test_permit_is_settled_exactly_once() -> None:
    b = CircuitBreaker(clock=FakeClock())
    permit = b.allow()
    assert permit is not None
    permit.success()
    with pytest.raises(RuntimeError):
        permit.failure(outage())
    with pytest.raises(RuntimeError):
        permit.cancel()


def test_a_late_success_from_before_the_trip_does_not_close_the_breaker() -> None:
    b = CircuitBreaker(failure_threshold=1, clock=FakeClock())
    slow = b.allow()
    assert slow is not None
    fail(b)
    assert b.state == "open"
    slow.success()
    assert b.state == "open"


def test_snapshot_while_open_counts_down() -> None:
    clock = FakeClock(50.0)
    b = CircuitBreaker(failure_threshold=2, recovery_s=10, clock=clock)
    fail(b)
    fail(b)
    clock.t += 4
    snap = b.snapshot()
    assert snap["state"] == "open"
    assert snap["consecutive_failures"] == 2
    assert snap["opened_at"] == 50.0
    assert snap["next_probe_in_s"] == pytest.approx(6.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"failure_threshold": 0},
        {"failure_threshold": 1.5},
        {"recovery_s": -1},
        {"recovery_s": float("nan")},
    ],
)
def test_invalid_configuration_is_refused(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        CircuitBreaker(**kwargs)


# --- exactly one probe under real concurrency ------------------------------------------------
async def test_exactly_one_probe_among_fifty_concurrent_tasks() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failure_threshold=1, recovery_s=1, clock=clock)
    fail(b)
    clock.t += 1
    release = asyncio.Event()
    start = asyncio.Event()
    granted: list[int] = []

    async def caller(i: int) -> None:
        await start.wait()
        permit = b.allow()
        if permit is None:
            return
        granted.append(i)
        await release.wait()  # the probe is in flight while the others ask
        permit.success()

    tasks = [asyncio.create_task(caller(i)) for i in range(50)]
    await asyncio.sleep(0)
    start.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(granted) == 1
    assert b.snapshot()["probe_in_flight"] is True
    release.set()
    await asyncio.gather(*tasks)
    assert len(granted) == 1
    assert b.state == "closed"


def test_exactly_one_probe_among_fifty_threads() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failure_threshold=1, recovery_s=1, clock=clock)
    fail(b)
    clock.t += 1
    barrier = threading.Barrier(50)
    permits = []
    lock = threading.Lock()

    def caller() -> None:
        barrier.wait()
        permit = b.allow()
        if permit is not None:
            with lock:
                permits.append(permit)

    threads = [threading.Thread(target=caller) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(permits) == 1


# --- guard and the permit as a context manager -----------------------------------------------
async def test_guard_raises_breaker_open_when_refused() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failure_threshold=1, recovery_s=10, clock=clock)
    with pytest.raises(ProviderError):
        async with b.guard("p:m"):
            raise outage()
    assert b.state == "open"
    with pytest.raises(BreakerOpen) as info:
        async with b.guard("p:m"):
            pytest.fail("the block must not run")
    assert info.value.code == "AI_BREAKER_OPEN"
    assert info.value.status == 503
    assert info.value.key == "p:m"
    assert info.value.retry_after_s == 10


async def test_guard_settles_success_and_cancellation() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failure_threshold=1, recovery_s=1, clock=clock)
    fail(b)
    clock.t += 1
    with pytest.raises(asyncio.CancelledError):
        async with b.guard():
            raise asyncio.CancelledError
    assert b.state == "half_open"
    assert b.snapshot()["probe_in_flight"] is False
    async with b.guard():
        pass
    assert b.state == "closed"


async def test_permit_async_with_counts_an_exception_as_failure() -> None:
    b = CircuitBreaker(failure_threshold=1, clock=FakeClock())
    permit = b.allow()
    assert permit is not None
    with pytest.raises(TimeoutError):
        async with permit:
            raise TimeoutError
    assert b.state == "open"


# --- the pool --------------------------------------------------------------------------------
def test_pool_creates_one_breaker_per_key_lazily() -> None:
    made: list[str] = []

    def factory(key: str) -> CircuitBreaker:
        made.append(key)
        return CircuitBreaker(failure_threshold=1, clock=FakeClock())

    pool = BreakerPool(factory)
    assert pool.keys() == []
    a = pool.get("a:m")
    assert pool.get("a:m") is a
    b = pool.get("b:m")
    assert made == ["a:m", "b:m"]
    fail(a)
    assert b.state == "closed"  # one provider's outage stops only that provider
    assert pool.keys() == ["a:m", "b:m"]
    assert pool.snapshot()["a:m"]["state"] == "open"
    assert pool.snapshot()["b:m"]["state"] == "closed"


def test_pool_refuses_a_breaker_shared_between_keys() -> None:
    shared = CircuitBreaker()
    pool = BreakerPool(lambda key: shared)
    assert pool.get("a:m") is shared
    assert pool.get("a:m") is shared  # the same key again is fine
    with pytest.raises(ConfigError) as info:
        pool.get("b:m")
    assert info.value.code == "BREAKER_SHARED"
    assert pool.keys() == ["a:m"]


# --- property: in the closed state only a run of outages opens it ------------------------------
@given(
    threshold=st.integers(min_value=1, max_value=6),
    outcomes=st.lists(st.sampled_from(["outage", "success", "neutral", "cancel"]), max_size=40),
)
def test_opens_exactly_when_a_run_of_outages_reaches_the_threshold(
    threshold: int, outcomes: list[str]
) -> None:
    b = CircuitBreaker(failure_threshold=threshold, recovery_s=60, clock=FakeClock())
    run = 0
    for outcome in outcomes:
        permit = b.allow()
        if run >= threshold:
            assert permit is None
            assert b.state == "open"
            return
        assert permit is not None
        if outcome == "outage":
            permit.failure(outage())
            run += 1
        elif outcome == "success":
            permit.success()
            run = 0
        elif outcome == "neutral":
            permit.failure(rate_limited())
        else:
            permit.cancel()
        assert b.state == ("open" if run >= threshold else "closed")
