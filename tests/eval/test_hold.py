"""`ItemHold`: the wait and the give-up of an item the provider refused, on a clock of its own
(no real sleep). The runner over the real simulator is test_holding.py."""

from __future__ import annotations

import itertools
import random

import pytest

from workbench.errors import RoutingError
from workbench.eval.run.holding import ItemHold, Unanswered, floor_s, spread_ms
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


def _hold(clock: Clock, **kw: float) -> ItemHold:
    settings = {"max_wait_s": 60.0, "max_tries": 10} | kw
    return ItemHold(
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


async def test_a_refusal_that_says_free_now_is_asked_again_after_a_growing_floor():
    # A 5xx sets no cooldown and a Retry-After already past says "now": without a floor the
    # item's tries went out within milliseconds.
    clock = Clock()
    route, asked = _route(clock, [_in(0.0, "provider_error")] * 4 + [_in(-5.0)])
    assert await _hold(clock, max_wait_s=600.0).ask(route) == "answer"
    gaps = [(b - a) / 1000 for a, b in itertools.pairwise(asked)]
    for gap, floor in zip(gaps, [1.0, 2.0, 4.0, 8.0, 16.0], strict=True):
        assert floor <= gap <= floor * 1.1 + 0.005


async def test_a_stated_wait_overrides_the_floor():
    clock = Clock()
    asked: list[float] = []

    async def route() -> str:  # three 5xx, then a 429 saying "in 0.1 s", then an answer
        asked.append(clock.ms)
        if len(asked) <= 3:
            raise RoutingError("nobody", retry=RetryHint("provider_error", int(clock.ms)))
        if len(asked) == 4:
            raise RoutingError("nobody", retry=RetryHint("rate_limit", int(clock.ms + 100)))
        return "answer"

    assert await _hold(clock, max_wait_s=600.0).ask(route) == "answer"
    # 1 s, 2 s, 4 s of floor, then the provider's own 0.1 s (not the next floor, 8 s).
    assert asked[3] - asked[0] >= 7000 and 100 <= asked[4] - asked[3] < 200


def test_the_floor_doubles_from_a_second_up_to_thirty():
    assert [floor_s(n) for n in (1, 2, 3, 5, 6, 20)] == [1.0, 2.0, 4.0, 16.0, 30.0, 30.0]


async def test_max_wait_counts_the_time_spent_inside_the_routes_not_only_the_sleeps():
    # Each route takes 20 s before it is refused (a slot's wait, a slow 503); the hold's own
    # sleeps are 2 s. By the third refusal the item has been held 60 s: past a 45 s --max-wait.
    clock = Clock()
    calls: list[float] = []

    async def route() -> str:
        calls.append(clock.ms)
        clock.ms += 20_000
        raise RoutingError("nobody", retry=RetryHint("rate_limit", int(clock.ms + 2000)))

    with pytest.raises(Unanswered) as held:
        await _hold(clock, max_wait_s=45.0).ask(route)
    assert held.value.reason == "max_wait"
    assert sum(clock.slept) < 45 and len(calls) == 3


async def test_the_time_held_adds_up_over_an_items_turns_and_excludes_answered_routes():
    clock = Clock()
    hold = _hold(clock, max_wait_s=60.0)
    for _ in range(2):
        route, _asked = _route(clock, [_in(0.0 + (clock.ms - NOW) / 1000 + 20.0)])
        assert await hold.ask(route) == "answer"
    assert 40.0 <= hold.held_s <= 42.1
    clock.ms += 3_600_000  # an hour answering, unheld, is not counted
    route, _asked = _route(clock, [RetryHint("rate_limit", int(clock.ms + 30_000))])
    with pytest.raises(Unanswered) as held:  # 42 s + 30 s would pass 60 s
        await hold.ask(route)
    assert held.value.reason == "max_wait"
