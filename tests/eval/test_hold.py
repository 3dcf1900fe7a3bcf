"""`Hold`: the wait and the give-up of an item the provider refused, on a clock of its own
(no real sleep). The runner over the real simulator is test_holding.py."""

from __future__ import annotations

import random

import pytest

from workbench.errors import RoutingError
from workbench.eval.run.holding import Hold, Unanswered, spread_ms
from workbench.routing.retry_hint import RetryHint

NOW = 1_800_000_000_000.0


class Clock:
    """Epoch ms that move only when the hold sleeps; every sleep is kept."""

    def __init__(self) -> None:
        self.ms = NOW
        self.slept: list[float] = []

    def now(self) -> float:
        return self.ms

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.ms += seconds * 1000


def _hold(clock: Clock, **kw: float) -> Hold:
    settings = {"max_wait_s": 60.0, "max_tries": 10} | kw
    return Hold(
        float(settings["max_wait_s"]),
        int(settings["max_tries"]),
        clock_ms=clock.now,
        sleep=clock.sleep,
        rng=random.Random(7),
    )


def _route(clock: Clock, refusals: list[RetryHint | None]):
    """A route refused with each hint in turn (None: the caller's failure), then answered."""
    asked: list[float] = []

    async def route() -> str:
        asked.append(clock.ms)
        if len(asked) <= len(refusals):
            raise RoutingError("nobody", retry=refusals[len(asked) - 1])
        return "answer"

    return route, asked


def _in(seconds: float, reason: str = "rate_limit") -> RetryHint:
    return RetryHint(reason, int(NOW + seconds * 1000))  # type: ignore[arg-type]


async def test_the_item_is_asked_again_once_the_provider_said_it_is_free_and_not_before():
    clock = Clock()
    route, asked = _route(clock, [_in(2.0), RetryHint("provider_error", int(NOW + 5000))])
    assert await _hold(clock).ask(route) == "answer"
    assert len(asked) == 3
    assert asked[1] >= NOW + 2000 and asked[2] >= NOW + 5000
    # The spread is small: 5 ms and a tenth of the wait at most.
    assert asked[1] - (NOW + 2000) <= 5 + 2000 / 10


async def test_a_route_failed_for_the_callers_reasons_is_raised_as_it_is():
    clock = Clock()
    route, asked = _route(clock, [None])
    with pytest.raises(RoutingError):
        await _hold(clock).ask(route)
    assert len(asked) == 1 and clock.slept == []


async def test_a_daily_quota_is_given_up_at_once_with_its_reset():
    clock = Clock()
    route, _ = _route(clock, [_in(36_000, "daily_quota")])
    with pytest.raises(Unanswered) as held:
        await _hold(clock).ask(route)
    assert (held.value.reason, held.value.code) == ("daily_quota", "AI_UNAVAILABLE")
    assert held.value.retry_at_ms == int(NOW + 36_000_000) and clock.slept == []


async def test_a_daily_quota_that_resets_within_max_wait_is_waited_for():
    clock = Clock()
    route, asked = _route(clock, [_in(30.0, "daily_quota")])
    assert await _hold(clock, max_wait_s=60.0).ask(route) == "answer"
    assert len(asked) == 2 and asked[1] >= NOW + 30_000


async def test_a_wait_past_max_wait_gives_the_item_up_before_sleeping():
    clock = Clock()
    route, asked = _route(clock, [_in(20.0), _in(50.0)])  # 20 s, then 30 s more: past 45 s
    with pytest.raises(Unanswered) as held:
        await _hold(clock, max_wait_s=45.0).ask(route)
    assert (held.value.reason, held.value.code) == ("max_wait", "RUN_MAX_WAIT")
    assert len(asked) == 2 and len(clock.slept) == 1 and sum(clock.slept) < 45


async def test_max_tries_refusals_give_the_item_up_with_the_providers_reason():
    clock = Clock()
    route, asked = _route(clock, [_in(0.0, "provider_error")] * 5)
    with pytest.raises(Unanswered) as held:
        await _hold(clock, max_tries=3).ask(route)
    assert (held.value.reason, held.value.tries, len(asked)) == ("provider_error", 3, 3)


def test_the_spread_is_a_tenth_of_the_wait_at_most_a_second():
    rng = random.Random(1)
    assert all(0 <= spread_ms(100, rng) <= 15 for _ in range(200))
    assert all(0 <= spread_ms(60_000, rng) <= 1000 for _ in range(200))
    assert max(spread_ms(60_000, rng) for _ in range(200)) > 500  # spread, not a fixed delay
