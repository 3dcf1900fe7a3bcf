"""Pacing learnt from the provider: every item answered, a bounded handful of 429s, against
real simulator processes over HTTP whose limits are in no providers file.

Each case drives N requests at concurrency C through a Router with adaptive concurrency, each
held and asked again at its `RoutingError.retry` as a runner would, against a persona of one
vendor style with one limit (1 s minute windows, an hour's day). The bounds, and why:

- OpenAI, rpm/tpm: 0. Its headers state the minute's requests and tokens on every answer, and
  the first C requests fit in a window.
- Groq, OpenRouter, Gemini, rpm: at most C. Groq's request headers count the day,
  OpenRouter's the day's pool and Gemini says nothing on success: the minute's limit is learnt
  from the first 429's body, and the requests sent before that reply came back (at most C in
  flight) are refused with it. Afterwards the learnt window paces every request.
- tpm: at most C, as above for the vendors whose headers do not count the minute's tokens
  (OpenRouter, Gemini); Groq's do, but the provider counts tokens its own way (the estimate
  before the call is a guess), so the same bound holds.
- rpd: Groq and OpenRouter 0 (their headers count the day); Gemini and OpenAI at most C (the
  day's limit is only in a refusal: the requests in flight when it ran out). The rest are
  refused with RetryHint("daily_quota", the reset).
- A minute that refuses before the day is spent (rpm < rpd): the day answers exactly its
  limit, since no request the provider refused (or the cache answered) is counted against it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pace_drive import STYLES, drive, fleet_toml, persona, provider, refusals

from workbench.errors import ConfigError
from workbench.events import PacingEvent
from workbench.routing.retry_hint import RetryHint
from workbench.routing.router import Router
from workbench.sim.process import SimProcess
from workbench.types import ChatRequest

C = 4
DAY_RPM, DAY_RPD, DAY_N, DAY_C = 3, 6, 12, 5  # the minute refuses before the day is spent
SLOW = {"latency_ms": 150.0, "latency_jitter_ms": 75.0}
# limit → (its value, requests asked)
CASES = {"rpm": (5, 10), "tpm": (80, 12), "rpd": (5, 9)}
BOUND = {
    ("openai", "rpm"): 0,
    ("openai", "tpm"): 0,
    ("groq", "rpd"): 0,
    ("openrouter", "rpd"): 0,
}


@pytest.fixture(scope="module")
def free_tiers() -> Iterator[SimProcess]:
    personas = [persona(s, limit, value) for s in STYLES for limit, (value, _) in CASES.items()]
    personas.append(persona("openai", "rpm", 5, id="openai-wait"))
    personas.append(persona("gemini", "rpm", 5, id="gemini-halve"))
    personas.append(persona("groq", "rpd", 3, id="groq-cached"))
    personas += [
        # Replies slow and uneven: they come back in another order than they were sent, and
        # after the minute's refusals of requests sent after them.
        persona(s, "rpm", DAY_RPM, rpd=DAY_RPD, id=f"{s}-day", **SLOW)
        for s in STYLES
    ]
    with SimProcess(fleet_toml=fleet_toml(*personas)) as sim:
        yield sim


@pytest.mark.parametrize("limit", list(CASES))
@pytest.mark.parametrize("style", STYLES)
async def test_every_request_is_answered_with_few_429s(
    free_tiers: SimProcess, style: str, limit: str
) -> None:
    value, n = CASES[limit]
    model = f"{style}-{limit}"
    events: list[object] = []
    router = Router(
        [provider(style, free_tiers.base_url, model)],
        adaptive_concurrency=C,
        cooldown_jitter_s=0,
        sinks=[events.append],
    )
    try:
        out = await drive(router, n, C)
        stats = (await router.stats())["keys"][f"{style}:{model}"]["pacing"]
    finally:
        await router.close()
    answered = [x for x in out if isinstance(x, str)]
    refused = refusals(free_tiers.requests(), model)
    assert refused <= BOUND.get((style, limit), C), (refused, stats)
    if limit != "rpd":
        assert len(answered) == n
        return
    assert len(answered) == value
    now = time.time() * 1000
    held = [x for x in out if not isinstance(x, str)]
    assert len(held) == n - value
    for hint in held:  # the day's reset: within the persona's hour-long day, never now
        assert isinstance(hint, RetryHint) and hint.reason == "daily_quota"
        assert now < hint.at_ms <= now + 3600_000 + 1000
    learnt = stats["learnt"]["requests:day"]
    assert learnt["limit"] == value and learnt["left"] == 0
    assert any(isinstance(e, PacingEvent) and e.why == "learnt" for e in events)


@pytest.mark.parametrize("style", STYLES)
async def test_requests_the_minute_refused_leave_the_day_whole(
    free_tiers: SimProcess, style: str
) -> None:
    """The provider counts no request it refused: each one the minute refused is given back to
    the day, which answers every request it allows, not fewer (no item given up as daily_quota
    while the provider would still answer it)."""
    model = f"{style}-day"
    router = Router(
        [provider(style, free_tiers.base_url, model)],
        adaptive_concurrency=DAY_C,
        cooldown_jitter_s=0,
    )
    try:
        out = await drive(router, DAY_N, DAY_C)
        stats = (await router.stats())["keys"][f"{style}:{model}"]["pacing"]
    finally:
        await router.close()
    log = [r for r in free_tiers.requests() if r.get("persona") == model]
    answered = [x for x in out if isinstance(x, str)]
    assert len(answered) == DAY_RPD, stats
    assert sum(1 for r in log if r.get("status") == 200) == DAY_RPD
    held = [x for x in out if not isinstance(x, str)]
    assert len(held) == DAY_N - DAY_RPD
    assert all(isinstance(h, RetryHint) and h.reason == "daily_quota" for h in held)


class DictCache:
    """The smallest response cache (the run's is the DuckDB store's)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}

    def get(self, cache_key: str, now_ms: int) -> dict[str, Any] | None:
        return self.entries.get(cache_key)

    def put(self, cache_key: str, provider: str, model: str, reply: Any, ttl_s: Any) -> None:
        self.entries[cache_key] = reply


async def test_a_cached_reply_takes_nothing_from_the_providers_day(free_tiers: SimProcess) -> None:
    model = "groq-cached"
    router = Router(
        [provider("groq", free_tiers.base_url, model)],
        cache=DictCache(),
        cache_ttl_s=None,
        cooldown_jitter_s=0,
    )
    try:
        again = [await router.route(ChatRequest.of("same", max_tokens=8)) for _ in range(5)]
        others = [await router.route(ChatRequest.of(f"o{i}", max_tokens=8)) for i in range(2)]
    finally:
        await router.close()
    assert [r.value.cached for r in again] == [False] + [True] * 4
    assert not any(r.value.cached for r in others)  # the day's 2 left, neither paced
    log = [r for r in free_tiers.requests() if r.get("persona") == model]
    assert [r.get("status") for r in log] == [200, 200, 200]


async def test_a_429_halves_the_concurrency_and_stats_show_it(free_tiers: SimProcess) -> None:
    events: list[object] = []
    router = Router(
        [provider("gemini", free_tiers.base_url, "gemini-halve")],
        adaptive_concurrency=C,
        cooldown_jitter_s=0,
        sinks=[events.append],
    )
    try:
        await drive(router, 10, C)
        stats = (await router.stats())["keys"]["gemini:gemini-halve"]["pacing"]
    finally:
        await router.close()
    cuts = [e for e in events if isinstance(e, PacingEvent) and e.why == "429"]
    # The first refusal halves the ceiling. How many cuts follow depends on when the
    # refusals come back, which is the scheduler's: the rule is proven with a fake clock in
    # test_pacing_rules.py.
    assert cuts and cuts[0].concurrency == C // 2
    assert all(1 <= c.concurrency < C for c in cuts)
    assert 1 <= stats["concurrency"] <= C
    assert stats["learnt"]["requests:minute"]["limit"] == 5


async def test_without_adaptive_concurrency_nothing_waits_for_a_slot(
    free_tiers: SimProcess,
) -> None:
    router = Router([provider("openai", free_tiers.base_url, "openai-rpm")], cooldown_jitter_s=0)
    try:
        answers = await drive(router, 3, 3)
        stats = (await router.stats())["keys"]["openai:openai-rpm"]["pacing"]
    finally:
        await router.close()
    assert len(answers) == 3 and stats["concurrency"] is None
    assert stats["learnt"]["requests:minute"]["limit"] == 5  # learnt all the same


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_adaptive_concurrency_must_be_a_whole_number_of_at_least_one(bad: object) -> None:
    with pytest.raises(ConfigError) as caught:
        Router([], adaptive_concurrency=bad)
    assert caught.value.code == "ROUTER_INVALID"


async def test_when_all_cooling_wait_waits_for_the_providers_reset(free_tiers: SimProcess) -> None:
    """An app without a runner's hold: the route itself sleeps until the reset it was told."""
    model = "openai-wait"
    router = Router(
        [provider("openai", free_tiers.base_url, model)],
        when_all_cooling="wait",
        cooldown_jitter_s=0,
    )
    gate = asyncio.Semaphore(C)

    async def one(i: int) -> str:
        async with gate:
            result = await router.route(ChatRequest.of(f"w{i}", max_tokens=8))
            return result.value.text

    try:
        answers = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(8))), 20)
    finally:
        await router.close()
    assert len(answers) == 8
    assert refusals(free_tiers.requests(), model) == 0
