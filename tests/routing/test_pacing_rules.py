"""The pacer's rules, the same in memory and in Redis (one Lua script per step), and the
adaptive concurrency in front of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from workbench.providers.meter import QuotaReading
from workbench.routing.concurrency import AdaptiveConcurrency
from workbench.routing.pacing import FailoverPace, MemoryPace, Paced, Ticket

NOW = 1_800_000_000_000


def reading(
    scope: str,
    window: str,
    remaining: float,
    *,
    limit: float | None = None,
    reset: int | None = None,
    source: str = "x-ratelimit-remaining-requests",
) -> QuotaReading:
    return QuotaReading("p", "m", scope, window, limit, remaining, reset, source, NOW)  # type: ignore[arg-type]


class RedisOnly:
    """A RedisPace with the memory store's signature (the verdict without the state)."""

    def __init__(self, url: str) -> None:
        from workbench.routing.pacing_redis import RedisPace

        self.redis = RedisPace(url)

    async def admit(self, key: str, now_ms: int, tokens: int) -> Ticket | Paced:
        verdict, _ = await self.redis.admit(key, now_ms, tokens)
        return verdict

    async def learn(self, key: str, readings: list[QuotaReading], ticket: Ticket | None) -> Any:
        return await self.redis.learn(key, readings, ticket)

    async def give_back(self, ticket: Ticket, used: int | None = None) -> Any:
        return await self.redis.give_back(ticket, used)

    async def finished(self, key: str) -> None:
        await self.redis.finished(key)

    async def state(self, key: str) -> dict[str, float]:
        return await self.redis.state(key)

    async def close(self) -> None:
        await self.redis.close()


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield MemoryPace()
        return
    url = request.getfixturevalue("redis_url")
    redis = RedisOnly(url)
    yield redis
    await redis.close()


async def test_requests_sent_after_a_reading_count_against_it(store: Any) -> None:
    first = await store.admit("k", NOW, 10)
    for _ in range(2):
        assert isinstance(await store.admit("k", NOW, 10), Ticket)
    # The first reply says 2 were left after it: the two sent since have taken them.
    await store.learn("k", [reading("requests", "minute", 2, limit=5, reset=NOW + 1000)], first)
    paced = await store.admit("k", NOW + 10, 10)
    assert isinstance(paced, Paced)
    assert (paced.window, paced.left, paced.reset_at_ms) == ("requests:minute", 0, NOW + 1000)
    assert "requests per minute" in paced.reason and not paced.daily


async def test_at_the_reset_the_window_is_full_again(store: Any) -> None:
    t = await store.admit("k", NOW, 1)
    await store.learn("k", [reading("requests", "minute", 0, limit=3, reset=NOW + 1000)], t)
    assert isinstance(await store.admit("k", NOW + 999, 1), Paced)
    granted = [await store.admit("k", NOW + 1000, 1) for _ in range(3)]
    assert all(isinstance(g, Ticket) for g in granted)
    assert (await store.state("k"))["requests:minute:left"] == 3
    # A fourth: the window is spent, but no reset is known for it and no length was learnt,
    # so it is not held on a guess: the provider will say.
    assert isinstance(await store.admit("k", NOW + 1000, 1), Ticket)


async def test_a_window_first_named_by_a_refusal_learns_its_length(store: Any) -> None:
    first = await store.admit("k", NOW, 1)
    refused = await store.admit("k", NOW + 100, 1)
    assert isinstance(first, Ticket) and isinstance(refused, Ticket)
    body = reading("requests", "minute", 0, limit=2, reset=NOW + 1500, source="429 body")
    await store.learn("k", [body], refused)
    # Its wait is until the first request leaves the window (1.5 s after it: the window's
    # length); the window is whole once the last one has, at 1.6 s.
    paced = await store.admit("k", NOW + 1500, 1)
    assert isinstance(paced, Paced) and paced.reset_at_ms == NOW + 1600
    assert isinstance(await store.admit("k", NOW + 1600, 1), Ticket)
    assert isinstance(await store.admit("k", NOW + 1650, 1), Ticket)
    # The next window, spent, with no reset stated: it rests its length after its last request.
    paced = await store.admit("k", NOW + 1700, 1)
    assert isinstance(paced, Paced) and paced.reset_at_ms == NOW + 1650 + 1500


async def test_tokens_are_paced_by_the_request_estimate(store: Any) -> None:
    t = await store.admit("k", NOW, 100)
    await store.learn("k", [reading("tokens", "minute", 250, limit=1000, reset=NOW + 5000)], t)
    assert isinstance(await store.admit("k", NOW, 200), Ticket)
    paced = await store.admit("k", NOW, 100)  # 50 left
    assert isinstance(paced, Paced) and paced.window == "tokens:minute" and paced.left == 50
    assert isinstance(await store.admit("k", NOW, 50), Ticket)
    # A request larger than the whole window is not the pacer's to hold for ever.
    assert isinstance(await store.admit("k", NOW, 5000), Ticket)


async def test_an_older_reading_never_overwrites_a_newer_one(store: Any) -> None:
    old = await store.admit("k", NOW, 1)
    new = await store.admit("k", NOW, 1)
    await store.learn("k", [reading("requests", "day", 0, limit=9, reset=NOW + 9000)], new)
    await store.learn("k", [reading("requests", "day", 5, limit=9, reset=NOW + 9000)], old)
    paced = await store.admit("k", NOW, 1)
    assert isinstance(paced, Paced) and paced.daily and "per day" in paced.reason


async def test_requests_the_provider_refused_are_given_back_to_the_day(store: Any) -> None:
    """Groq: its headers count the day, its minute refuses. A refused request was counted by
    no window of the provider's, so the day keeps it; the refusal's own day reading (the same
    count) is then no bolder than what is known."""
    day = NOW + 3_600_000
    first, *refused = [await store.admit("k", NOW, 1) for _ in range(3)]
    await store.learn("k", [reading("requests", "day", 5, limit=6, reset=day)], first)
    for ticket in refused:  # both refused by the minute
        await store.give_back(ticket)
    await store.learn("k", [reading("requests", "day", 5, limit=6, reset=day)], refused[-1])
    later = NOW + 5000  # the minute long past: only the day paces
    granted = [await store.admit("k", later, 1) for _ in range(5)]
    assert all(isinstance(g, Ticket) for g in granted)
    paced = await store.admit("k", later, 1)
    assert isinstance(paced, Paced) and paced.daily and paced.left == 0


async def test_a_reading_after_a_refused_request_already_holds_the_providers_count(
    store: Any,
) -> None:
    refused = await store.admit("k", NOW, 1)
    answered = await store.admit("k", NOW, 1)
    # The answer, though numbered after it, was counted first: 4 left, the refused one never in.
    await store.learn("k", [reading("requests", "day", 4, limit=6, reset=NOW + 9000)], answered)
    await store.give_back(refused)
    assert [isinstance(await store.admit("k", NOW, 1), Ticket) for _ in range(5)] == [
        True,
        True,
        True,
        True,
        False,
    ]


async def test_a_request_given_back_stays_given_back_whichever_reply_reads_next(
    store: Any,
) -> None:
    """A refusal comes back before a slower answer sent ahead of it: the answer's reading,
    taken before the refused requests, never counts them."""
    t1, t2, t3, t4 = [await store.admit("k", NOW, 1) for _ in range(4)]
    await store.learn("k", [reading("requests", "day", 8, limit=9, reset=NOW + 9000)], t1)
    for refused in (t3, t4):
        await store.give_back(refused)
    await store.learn("k", [reading("requests", "day", 7, limit=9, reset=NOW + 9000)], t2)
    granted = [await store.admit("k", NOW, 1) for _ in range(8)]
    assert [isinstance(g, Ticket) for g in granted] == [True] * 7 + [False]


async def test_what_was_given_back_is_folded_in_once_nothing_is_in_flight(store: Any) -> None:
    t1, t2 = await store.admit("k", NOW, 1), await store.admit("k", NOW, 1)
    await store.learn("k", [reading("requests", "day", 8, limit=9, reset=NOW + 9000)], t1)
    await store.give_back(t2)
    await store.finished("k")
    assert any(f.startswith("back:") for f in await store.state("k"))  # t1 still in flight
    await store.finished("k")
    state = await store.state("k")
    assert not any(f.startswith("back:") for f in state)
    assert state["requests:day:left"] - (state["seq"] - state["requests:day:at"]) == 8


async def test_past_the_most_given_back_the_oldest_are_folded_in_and_nothing_is_lost(
    store: Any,
) -> None:
    from workbench.routing.pacing import MOST_BACK

    tickets = [await store.admit("k", NOW, 1) for _ in range(MOST_BACK + 8)]
    await store.learn("k", [reading("requests", "day", 100, reset=NOW + 9000)], tickets[0])
    for t in tickets[1 : MOST_BACK + 4]:
        await store.give_back(t)
    await store.finished("k")  # many still in flight
    state = await store.state("k")
    assert sum(f.startswith("back:") for f in state) == MOST_BACK
    left = 100 - (len(tickets) - 1) + (MOST_BACK + 3)
    granted = [await store.admit("k", NOW, 1) for _ in range(left + 1)]
    assert [isinstance(g, Ticket) for g in granted] == [True] * left + [False]


@pytest.mark.parametrize("first", ["later", "earlier"])
async def test_two_replies_of_one_day_that_reached_the_provider_in_the_other_order(
    store: Any, first: str
) -> None:
    """The second request reached the provider first (8 left), the first after it (7 left):
    the reading that says fewer left counted both, whichever reply comes back first; no
    request is counted twice."""
    t1, t2 = await store.admit("k", NOW, 1), await store.admit("k", NOW, 1)
    said = {
        "later": (reading("requests", "day", 8, limit=9, reset=NOW + 9000), t2),
        "earlier": (reading("requests", "day", 7, limit=9, reset=NOW + 9000), t1),
    }
    for which in (first, "earlier" if first == "later" else "later"):
        r, ticket = said[which]
        await store.learn("k", [r], ticket)
    granted = [await store.admit("k", NOW, 1) for _ in range(8)]
    assert [isinstance(g, Ticket) for g in granted] == [True] * 7 + [False]


async def test_a_refused_request_gives_its_estimated_tokens_back(store: Any) -> None:
    t = await store.admit("k", NOW, 100)
    await store.learn("k", [reading("tokens", "minute", 250, limit=1000, reset=NOW + 5000)], t)
    refused = await store.admit("k", NOW, 200)
    assert isinstance(refused, Ticket) and refused.tokens == 200
    await store.give_back(refused)
    assert isinstance(await store.admit("k", NOW, 250), Ticket)
    assert isinstance(await store.admit("k", NOW, 1), Paced)


async def test_an_answer_that_cost_less_than_its_estimate_gives_the_rest_back(store: Any) -> None:
    """Requests sent before the first answer carry the whole `max_tokens` each; once answers
    say what they cost, a token window is paced by that, not by the estimates in flight."""
    t1 = await store.admit("k", NOW, 100)
    t2, t3 = await store.admit("k", NOW, 100), await store.admit("k", NOW, 100)
    await store.learn("k", [reading("tokens", "minute", 250, limit=1000, reset=NOW + 5000)], t1)
    assert isinstance(await store.admit("k", NOW, 100), Paced)  # 250 - 200 in flight: 50 left
    for answered in (t2, t3):
        await store.give_back(answered, 10)  # each cost 10 of its 100
    assert [isinstance(await store.admit("k", NOW, 100), Ticket) for _ in range(3)] == [
        True,
        True,
        False,
    ]  # 250 - 20: two more of 100, not a third


async def test_a_window_without_a_limit_is_forgotten_at_its_reset(store: Any) -> None:
    t = await store.admit("k", NOW, 1)
    await store.learn("k", [reading("requests", "unknown", 0, reset=NOW + 500, source="429")], t)
    assert isinstance(await store.admit("k", NOW + 499, 1), Paced)
    assert isinstance(await store.admit("k", NOW + 500, 1), Ticket)
    assert "requests:unknown:left" not in await store.state("k")


async def test_in_flight_counts_every_request_until_it_finished(store: Any) -> None:
    for _ in range(3):
        await store.admit("k", NOW, 1)
    await store.finished("k")
    state = await store.state("k")
    assert state["inflight"] == 2 and state["seq"] == 3


async def test_failover_goes_on_from_the_shared_state_when_redis_dies(
    redis_server: Any, redis_url: str
) -> None:
    pace = FailoverPace(redis_url, clock_ms=lambda: NOW, retry_every_s=60)
    t = await pace.admit("k", NOW, 1)
    await pace.learn("k", [reading("requests", "minute", 0, limit=3, reset=NOW + 1000)], t)
    redis_server.kill()
    paced = await pace.admit("k", NOW, 1)  # memory holds what Redis had learnt
    assert pace.backend == "memory" and isinstance(paced, Paced)
    assert paced.reset_at_ms == NOW + 1000
    await pace.close()


# -- adaptive concurrency ------------------------------------------------------------------
class FakeClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def until(condition: Callable[[], bool]) -> None:
    """Let the other tasks run until `condition` holds: they do no I/O, so a few turns of the
    loop are enough whatever the machine's speed (never a fixed sleep)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def test_a_429_halves_once_per_round_trip_and_answers_raise_it_back() -> None:
    aimd = AdaptiveConcurrency(8, clock=FakeClock())
    cut = aimd.refused("k", "429")
    assert cut is not None and cut.concurrency == 4
    assert aimd.refused("k", "429") is None  # the same window's burst: counted once
    assert aimd.limit("k") == 4
    changes = [await aimd.answered("k") for _ in range(4)]
    assert [c.concurrency for c in changes if c is not None] == [5]
    for _ in range(100):
        await aimd.answered("k")
    assert aimd.limit("k") == 8  # never above the ceiling


async def test_a_burst_of_refusals_is_one_cut_and_the_next_round_trip_may_cut_again() -> None:
    clock = FakeClock()
    aimd = AdaptiveConcurrency(16, clock=clock)
    cuts = [aimd.refused("k", "429") for _ in range(5)]  # one window's burst, all at once
    assert [c.concurrency for c in cuts if c is not None] == [8]
    clock.now = 0.999
    assert aimd.refused("k", "timeout") is None  # within a second of the cut
    clock.now = 1.0
    cut = aimd.refused("k", "timeout")
    assert cut is not None and (cut.why, cut.concurrency) == ("timeout", 4)
    assert aimd.refused("other", "429") is not None  # each key is cut on its own


async def test_a_slow_round_trip_spaces_the_cuts_by_the_round_trip() -> None:
    clock = FakeClock()
    aimd = AdaptiveConcurrency(16, clock=clock)
    await aimd.acquire("k")
    await aimd.release("k", 3.0)  # a request took 3 s: a cut's effect shows only after that
    assert aimd.refused("k", "429") is not None
    clock.now = 2.0
    assert aimd.refused("k", "429") is None
    clock.now = 3.0
    assert aimd.refused("k", "429") is not None
    assert aimd.limit("k") == 4


async def test_concurrency_is_never_cut_below_one() -> None:
    clock = FakeClock()
    aimd = AdaptiveConcurrency(3, clock=clock)
    limits = []
    for second in range(4):
        clock.now = float(second)
        aimd.refused("k", "429")
        limits.append(aimd.limit("k"))
    assert limits == [1, 1, 1, 1]
    assert aimd.refused("k", "429") is None  # at the floor: no change to report


async def test_a_request_beyond_the_limit_waits_for_a_slot() -> None:
    aimd = AdaptiveConcurrency(1)
    assert await aimd.acquire("k")
    waiting = asyncio.create_task(aimd.acquire("k"))
    await until(lambda: aimd.waiting("k") == 1)
    assert not waiting.done()
    await aimd.release("k", 0.01)
    assert await asyncio.wait_for(waiting, 1)
    assert aimd.in_flight("k") == 1


async def test_the_wait_for_a_slot_honours_the_deadline_and_cancellation() -> None:
    aimd = AdaptiveConcurrency(1)
    await aimd.acquire("k")
    assert await aimd.acquire("k", timeout_s=0.02) is False
    waiting = asyncio.create_task(aimd.acquire("k"))
    await until(lambda: aimd.waiting("k") == 1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert aimd.in_flight("k") == 1 and aimd.waiting("k") == 0  # neither took a slot


# -- a walk waiting for a slot ---------------------------------------------------------------
async def test_a_route_waiting_for_a_slot_stops_at_its_deadline_and_at_its_signal() -> None:
    from workbench.errors import RoutingError
    from workbench.providers.testing import Hang, ScriptedProvider
    from workbench.routing.router import Router
    from workbench.types import CallContext, ChatRequest

    slow = ScriptedProvider("p", ["m"], [Hang(5.0, then="late"), "second", "third"])
    async with Router([slow], adaptive_concurrency=1) as router:
        busy = asyncio.create_task(router.route(ChatRequest.of("first")))
        await asyncio.wait_for(slow.called(1), 5)  # the busy route holds the only slot
        with pytest.raises(RoutingError) as late:
            await router.route(ChatRequest.of("x"), ctx=CallContext(deadline_s=0.1))
        assert late.value.code == "AI_UNAVAILABLE" and "deadline" in str(late.value)
        # The wait was the provider's pacing: the route is held and asked again, not failed.
        assert late.value.retry is not None and late.value.retry.reason == "rate_limit"
        assert [a.outcome for a in late.value.attempts] == ["skipped_paced"]
        signal = asyncio.Event()
        waiting = asyncio.create_task(
            router.route(ChatRequest.of("y"), ctx=CallContext(signal=signal))
        )
        aimd = router.state.pacer.concurrency
        assert aimd is not None
        await until(lambda: aimd.waiting("p:m") == 1)  # it waits for the slot
        signal.set()
        with pytest.raises(RoutingError) as stopped:
            await waiting
        assert stopped.value.code == "AI_CANCELLED"
        busy.cancel()
        with pytest.raises(asyncio.CancelledError):
            await busy
        # Every slot came back: the next route is answered at once.
        result = await asyncio.wait_for(router.route(ChatRequest.of("z")), 1)
        assert result.value.text == "second"
        assert aimd.in_flight("p:m") == 0 and aimd.waiting("p:m") == 0
        assert len(slow.requests) == 2  # the two waiting routes asked nobody


async def test_a_request_too_large_for_every_model_gets_no_hint_even_after_a_rate_limit() -> None:
    from workbench.errors import RoutingError
    from workbench.providers.testing import Fail, ScriptedProvider
    from workbench.routing.router import Router
    from workbench.types import ChatRequest

    too_big = "Request too large for model: reduce your message size"
    both = ScriptedProvider("p", ["a", "b"], [Fail(429, retry_after_s=2), Fail(429, body=too_big)])
    async with Router([both], adaptive_concurrency=2) as router:
        with pytest.raises(RoutingError) as refused:
            await router.route(ChatRequest.of("x"))
    assert refused.value.code == "AI_UNAVAILABLE" and refused.value.retry is None
