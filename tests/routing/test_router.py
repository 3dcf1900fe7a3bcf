"""The router over real simulators: fallback, cooldowns, breakers, cancellation, lanes."""

from __future__ import annotations

import asyncio
import re

import pytest

from workbench.errors import ConfigError, NoVisionLinkError, RoutingError
from workbench.events import AttemptEvent, RouteEvent
from workbench.providers import ModelSpec, ScriptedProvider, openai_compatible_provider
from workbench.providers.testing import Fail
from workbench.routing import CircuitBreaker, Router
from workbench.sim import SimServer
from workbench.types import CallContext, ChatRequest, user

FLEET = {
    "seed": 11,
    "persona": [
        {"id": "ok", "tool_style": "native", "latency_ms": 0, "latency_jitter_ms": 0},
        {"id": "ok2", "tool_style": "native", "latency_ms": 0, "latency_jitter_ms": 0},
        {"id": "storm", "failures": [{"kind": "429", "rate": 1.0}], "retry_after_s": 5},
        {"id": "down", "failures": [{"kind": "503", "rate": 1.0}]},
        {"id": "slow", "latency_ms": 3000, "latency_jitter_ms": 0},
        {
            "id": "daily-named",
            "failures": [{"kind": "429", "rate": 1.0}],
            "rate_limit_style": "groq",
        },
        {"id": "huge", "failures": [{"kind": "context_length", "rate": 1.0}]},
        {"id": "empty", "failures": [{"kind": "empty", "rate": 1.0}]},
    ],
}


class Clock:
    """An injectable epoch-ms clock the test moves by hand."""

    def __init__(self, start_ms: int = 1_800_000_000_000) -> None:
        self.now = start_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1000)


class Monotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def sims():
    with SimServer(FLEET) as a, SimServer(FLEET) as b:
        yield a, b


@pytest.fixture
def sim_a(sims):
    sims[0].reset()
    return sims[0]


@pytest.fixture
def sim_b(sims):
    sims[1].reset()
    return sims[1]


def prov(pid, sim, *models, **kw):
    return openai_compatible_provider(
        pid, sim.openai_url, "k", [ModelSpec.of(m) for m in models], **kw
    )


def hits(sim, persona=None):
    return [r for r in sim.requests() if persona is None or r["persona"] == persona]


async def asked(sim, persona: str, n: int = 1) -> None:
    """Until the simulator has received `n` requests for `persona`: a cancel that must land
    while a request is in flight waits for it, not for a guessed number of milliseconds."""
    for _ in range(3000):  # 30 s at most
        if len(hits(sim, persona)) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the simulator never got {n} request(s) for {persona}")


async def test_fallback_order_is_the_callers(sim_a, sim_b):
    router = Router([prov("b", sim_b, "ok"), prov("a", sim_a, "ok")])
    result = await router.route(ChatRequest.of("hi"))
    assert result.key == "b:ok" and len(hits(sim_b)) == 1 and not hits(sim_a)
    await router.close()


async def test_c_429_storm_moves_traffic_within_the_request_and_cools_for_retry_after(sim_a, sim_b):
    clock = Clock()
    events: list[object] = []
    router = Router(
        [prov("a", sim_a, "storm"), prov("b", sim_b, "ok")],
        clock=clock,
        cooldown_jitter_s=0.5,
        sinks=[events.append],
    )
    first = await router.route(ChatRequest.of("hi"))
    assert first.key == "b:ok"
    assert [a.outcome for a in first.attempts] == ["error", "ok"]
    assert first.attempts[0].status == 429
    until = (await router.stats())["keys"]["a:storm"]["cooling_until_ms"]
    assert 5000 <= until - clock.now <= 5500  # Retry-After 5 s, plus at most the jitter
    for _ in range(5):  # while cooling, the storm is not asked again
        again = await router.route(ChatRequest.of("hi"))
        assert again.key == "b:ok" and again.attempts[0].outcome == "skipped_cooling"
    assert len(hits(sim_a, "storm")) == 1
    clock.advance(6)
    await router.route(ChatRequest.of("hi"))
    assert len(hits(sim_a, "storm")) == 2  # cooled exactly as long as it asked
    attempts = [e for e in events if isinstance(e, AttemptEvent)]
    routes = [e for e in events if isinstance(e, RouteEvent)]
    assert len(routes) == 7 and all(r.chosen == "b:ok" for r in routes)
    assert len(attempts) == 14 and {a.outcome for a in attempts} == {
        "error",
        "ok",
        "skipped_cooling",
    }
    await router.close()


async def test_a_longer_cooldown_is_never_shortened(sim_a, sim_b):
    clock = Clock()
    router = Router(
        [prov("a", sim_a, "storm"), prov("b", sim_b, "ok")], clock=clock, cooldown_jitter_s=0
    )
    router.cooldowns.cool("a:storm", 600, reason="long")
    router.cooldowns.cool("a:storm", 5, reason="short")
    assert router.cooldowns.until("a:storm") == clock.now + 600_000
    await router.close()


async def test_d_an_outage_opens_only_that_providers_breaker_and_half_open_lets_one_probe(
    sim_a, sim_b
):
    mono = Monotonic()
    router = Router(
        [prov("a", sim_a, "down"), prov("b", sim_b, "ok")],
        breakers=lambda key: CircuitBreaker(failure_threshold=2, recovery_s=10, clock=mono),
        degrade_after=100,
    )
    for _ in range(4):
        assert (await router.route(ChatRequest.of("hi"))).key == "b:ok"
    assert len(hits(sim_a, "down")) == 2  # opened after two outages: later routes skip it
    keys = (await router.stats())["keys"]
    assert keys["a:down"]["circuit"] == "open" and keys["b:ok"]["circuit"] == "closed"
    mono.now += 11  # half-open: exactly one probe in flight, whatever the concurrency
    results = await asyncio.gather(*(router.route(ChatRequest.of("hi")) for _ in range(20)))
    assert len(hits(sim_a, "down")) == 3
    assert sum(r.attempts[0].outcome == "skipped_breaker" for r in results) == 19
    assert all(r.key == "b:ok" for r in results)
    await router.close()


async def test_e_cancellation_mid_walk_asks_no_further_model_and_cools_nothing(sim_a, sim_b):
    router = Router([prov("a", sim_a, "slow"), prov("b", sim_b, "ok")])
    signal = asyncio.Event()
    ctx = CallContext(signal=signal, cancel_reason="user closed the tab")
    task = asyncio.ensure_future(router.route(ChatRequest.of("hi"), ctx=ctx))
    await asked(sim_a, "slow")
    signal.set()
    with pytest.raises(RoutingError) as info:
        await task
    assert info.value.code == "AI_CANCELLED" and "closed the tab" in str(info.value)
    assert not hits(sim_b)
    assert router.cooldowns.snapshot() == {} or not any(
        v.get("until_ms") for v in router.cooldowns.snapshot().values()
    )
    assert (await router.stats())["keys"]["a:slow"]["circuit"] == "closed"
    await router.close()


async def test_e_a_cancelled_task_stops_the_walk_too(sim_a, sim_b):
    router = Router([prov("a", sim_a, "slow"), prov("b", sim_b, "ok")])
    task = asyncio.ensure_future(router.route(ChatRequest.of("hi")))
    await asked(sim_a, "slow")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.05)
    assert not hits(sim_b)
    assert (await router.usage("a:slow"))["rpm"] == 0  # the reservation was given back
    await router.close()


async def test_e_a_route_its_caller_stops_logs_its_attempt_and_route_as_cancelled(sim_a, sim_b):
    """A gateway's client that hangs up: the attempt still cost a request, so it is logged."""
    heard: list[object] = []
    router = Router([prov("a", sim_a, "slow"), prov("b", sim_b, "ok")], sinks=[heard.append])
    task = asyncio.ensure_future(router.route(ChatRequest.of("hi")))
    await asked(sim_a, "slow")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    signal = asyncio.Event()
    task = asyncio.ensure_future(router.route(ChatRequest.of("hi"), ctx=CallContext(signal=signal)))
    await asked(sim_a, "slow", 2)  # the second route's request is in flight
    signal.set()
    with pytest.raises(RoutingError):
        await task
    stream = router.stream(ChatRequest.of("hi"), candidates=[{"provider": "b", "model": "ok"}])
    await anext(stream)
    await stream.aclose()  # the reader left mid-answer
    attempts = [(e.key, e.outcome) for e in heard if isinstance(e, AttemptEvent)]
    routes = [e.error_code for e in heard if isinstance(e, RouteEvent)]
    assert attempts == [("a:slow", "cancelled"), ("a:slow", "cancelled"), ("b:ok", "cancelled")]
    assert routes == ["AI_CANCELLED"] * 3
    whole = [
        i
        async for i in router.stream(
            ChatRequest.of("hi"), candidates=[{"provider": "b", "model": "ok"}]
        )
    ]
    assert (
        whole[-1].key == "b:ok"
        and [e.error_code for e in heard if isinstance(e, RouteEvent)][-1] is None
    )
    await router.close()


async def test_f_saturating_a_background_lane_never_blocks_the_default_lane(sim_a):
    def lane(ctx):
        return "bg" if ctx.purpose == "background" else None

    router = Router([prov("a", sim_a, {"id": "ok", "rpm": 5}, lane=lane)])
    background = await asyncio.gather(
        *(
            router.route(ChatRequest.of("summarise"), ctx={"purpose": "background"})
            for _ in range(12)
        ),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, Exception) for r in background) == 5
    assert all(
        isinstance(r, RoutingError) and r.code == "AI_UNAVAILABLE"
        for r in background
        if isinstance(r, Exception)
    )
    for _ in range(5):
        result = await router.route(ChatRequest.of("hello"), ctx={"purpose": "chat"})
        assert result.key == "a:ok"
    assert (await router.usage("a:ok@bg"))["rpm"] == 5
    assert (await router.usage("a:ok"))["rpm"] == 5
    await router.close()


async def test_a_model_past_its_tpm_is_skipped_for_the_next_one(sim_a):
    router = Router([prov("a", sim_a, {"id": "ok", "tpm": 1}, "ok2")])
    result = await router.route(ChatRequest.of("hello"))
    assert result.key == "a:ok2"
    first = result.attempts[0]
    assert (first.key, first.outcome) == ("a:ok", "skipped_quota")
    # One request's estimate is more than the whole minute's budget: no wait would help.
    assert re.fullmatch(r"\d+ estimated tokens exceed tpm 1 alone", first.reason)
    assert not hits(sim_a, "ok")
    stats = (await router.stats())["keys"]["a:ok"]
    assert stats["limits"]["tpm"] == 1 and stats["used"]["tpm"] == 0
    assert (await router.usage("a:ok2"))["tpm"] > 0  # reconciled to the reply's own usage
    await router.close()


def refusing(pid: str, *bodies: str, status: int = 429) -> ScriptedProvider:
    """A provider of models m1 and m2 whose calls, in order, answer `status` with these vendor
    bodies (the seam is the provider)."""
    return ScriptedProvider(pid, ["m1", "m2"], [Fail(status, body=body) for body in bodies])


SIZE = "Request too large for model `m1` in organization `org`: please reduce your message size and try again."
DAILY = "Rate limit reached for model `{m}` on tokens per day (TPD): Limit 100000, Used 99990, Requested 900."
DAILY_ANON = "You exceeded your current quota: requests per day (RPD). Please upgrade."


async def test_a_size_refusal_stops_the_walk(sim_b):
    big = refusing("g", SIZE)
    router = Router([big, prov("b", sim_b, "ok")])
    with pytest.raises(RoutingError) as info:
        await router.route(ChatRequest.of("a very long question"))
    assert big.asked == ["m1"] and not hits(sim_b)  # every model would refuse it
    assert "too large" in str(info.value)
    assert router.cooldowns.until("g:m1") is None  # a size refusal cools nothing
    await router.close()


async def test_a_daily_refusal_naming_its_model_exhausts_only_that_model(sim_b):
    clock = Clock()
    groq = refusing("groq", DAILY.format(m="m1"), DAILY.format(m="m2"))
    router = Router([groq, prov("b", sim_b, "ok")], clock=clock)
    await router.route(ChatRequest.of("hi"))
    assert groq.asked == ["m1", "m2"]  # m1's refusal named m1: m2 was still worth asking
    assert router.cooldowns.until("groq:m1") is not None
    await router.close()


async def test_a_daily_refusal_not_naming_a_model_exhausts_the_provider_until_reset(sim_b):
    clock = Clock(1_800_000_000_000)  # 2027-01-15T08:00:00Z
    anon = refusing("or", DAILY_ANON)
    router = Router([anon, prov("b", sim_b, "ok")], clock=clock, cooldown_jitter_s=0)
    await router.route(ChatRequest.of("hi"))
    await router.route(ChatRequest.of("hi"))
    assert anon.asked == ["m1"]  # the whole key is spent: m2 never asked, then or nothing
    until = router.cooldowns.until("or")
    assert until is not None and until % 86_400_000 == 0  # the next UTC midnight
    await router.close()


async def test_accepts_and_partial(sim_a, sim_b):
    router = Router([prov("a", sim_a, "ok", "ok2"), prov("b", sim_b, "ok")])
    result = await router.route(ChatRequest.of("hi"), accepts=lambda r: r.model == "ok2")
    assert result.key == "a:ok2" and result.attempts[0].outcome == "rejected"
    nobody = await router.route(ChatRequest.of("hi"), partial=lambda r: True)
    assert nobody.partial is True and nobody.key == "a:ok"
    assert [a.outcome for a in nobody.attempts] == ["partial", "partial", "partial"]
    await router.close()


async def test_candidates_select_and_their_errors(sim_a, sim_b):
    router = Router([prov("a", sim_a, "ok", "ok2"), prov("b", sim_b, "ok")])
    result = await router.route(
        ChatRequest.of("hi"), candidates=[{"provider": "b", "model": "ok", "extra": {"seed": 3}}]
    )
    assert result.key == "b:ok" and hits(sim_b)[-1]["body"]["seed"] == 3
    with pytest.raises(RoutingError) as no_match:
        await router.route(ChatRequest.of("hi"), select=lambda model, provider: model.id == "gpt-9")
    assert no_match.value.code == "AI_NO_MATCH"
    gone = Router([prov("a", sim_a, "ok")])
    gone.providers[0].available = lambda ctx: False
    with pytest.raises(RoutingError) as none:
        await gone.route(ChatRequest.of("hi"))
    assert none.value.code == "AI_NO_PROVIDER"
    await router.close()


async def test_all_failing_is_ai_unavailable_with_every_attempt(sim_a, sim_b):
    router = Router([prov("a", sim_a, "down", "empty"), prov("b", sim_b, "storm")])
    with pytest.raises(RoutingError) as info:
        await router.route(ChatRequest.of("hi"))
    err = info.value
    assert err.code == "AI_UNAVAILABLE" and err.status == 503
    assert [(a.key, a.status) for a in err.attempts] == [
        ("a:down", 503),
        ("a:empty", 200),
        ("b:storm", 429),
    ]
    assert [e.kind for e in err.errors] == ["outage", "empty", "rate_limit"]
    await router.close()


async def test_when_all_cooling_try_and_wait(sim_a):
    clock = Clock()
    router = Router([prov("a", sim_a, "ok")], clock=clock, when_all_cooling="try")
    router.cooldowns.cool("a:ok", 60)
    assert (await router.route(ChatRequest.of("hi"))).key == "a:ok"  # a cooldown is a guess
    failing = Router([prov("a", sim_a, "ok")], clock=clock)
    failing.cooldowns.cool("a:ok", 60)
    with pytest.raises(RoutingError):
        await failing.route(ChatRequest.of("hi"))
    waiting = Router([prov("a", sim_a, "ok")], when_all_cooling="wait", cooldown_jitter_s=0)
    waiting.cooldowns.cool("a:ok", 0.3)
    result = await waiting.route(ChatRequest.of("hi"), ctx={"deadline_s": 5})
    assert result.key == "a:ok"
    waiting.cooldowns.cool("a:ok", 60)
    with pytest.raises(RoutingError):  # the caller's deadline bounds the wait
        await waiting.route(ChatRequest.of("hi"), ctx={"deadline_s": 0.5})
    for r in (router, failing, waiting):
        await r.close()


async def test_a_provider_that_raises_something_unexpected_is_an_attempt_error(sim_b):
    broken = ScriptedProvider("broken", ["x"], [KeyError("bug in a custom provider")])
    router = Router([broken, prov("b", sim_b, "ok")])
    result = await router.route(ChatRequest.of("hi"))
    assert result.key == "b:ok" and result.attempts[0].outcome == "error"
    assert isinstance(result.attempts[0].error, KeyError)
    await router.close()


async def test_an_image_never_goes_to_a_declared_blind_model(sim_a, sim_b):
    router = Router([prov("a", sim_a, {"id": "ok", "vision": False}), prov("b", sim_b, "ok")])
    result = await router.route(ChatRequest(messages=[user("what is it?", b"\x89PNG fake")]))
    assert result.key == "b:ok" and not hits(sim_a)
    blind = Router([prov("a", sim_a, {"id": "ok", "vision": False})])
    with pytest.raises(NoVisionLinkError):
        await blind.route(ChatRequest(messages=[user("what is it?", b"\x89PNG fake")]))
    await router.close()


@pytest.mark.parametrize(
    "bad",
    [
        lambda s: [prov("a", s, "ok"), prov("a", s, "ok2")],
        lambda s: [prov("a", s, "ok", "ok")],
        lambda s: [prov("a", s, {"id": "ok", "rpm": -1})],
        lambda s: [prov("a", s, {"id": "ok", "colour": "blue"})],
    ],
)
def test_bad_configuration_is_refused_at_construction(sim_a, bad):
    with pytest.raises(ConfigError) as info:
        Router(bad(sim_a))
    assert info.value.code == "PROVIDERS_INVALID"


async def test_streaming_route_falls_back_before_the_first_token(sim_a, sim_b):
    router = Router([prov("a", sim_a, "down"), prov("b", sim_b, "ok")])
    items = [x async for x in router.stream(ChatRequest.of("Tell me a story."))]
    final = items[-1]
    assert final.key == "b:ok" and "".join(items[:-1]).strip() == final.value.text
    assert await router.ask("hi") and [x async for x in await router.ask("hi", stream=True)]
    await router.close()


METER_FLEET = {
    "seed": 2,
    "persona": [
        {"id": "groq-tiny", "rate_limit_style": "groq", "rpd": 2, "rpm": 100},
        {"id": "cut", "failures": [{"kind": "stream_cut", "rate": 1.0}]},
        {"id": "late", "ttft_ms": 1500, "latency_ms": 0},
        {"id": "slow", "latency_ms": 1500},
        {"id": "fine", "latency_ms": 0},
    ],
}


@pytest.fixture(scope="module")
def meter_sim():
    with SimServer(METER_FLEET) as sim:
        yield sim


async def test_vendor_quota_headers_rest_a_spent_model_before_a_429(meter_sim):
    meter_sim.reset()
    router = Router([prov("groq", meter_sim, "groq-tiny"), prov("b", meter_sim, "fine")])
    assert (await router.route(ChatRequest.of("hi"))).key == "groq:groq-tiny"
    assert (await router.route(ChatRequest.of("hi"))).key == "groq:groq-tiny"  # remaining 0 now
    third = await router.route(ChatRequest.of("hi"))
    assert third.key == "b:fine" and third.attempts[0].outcome == "skipped_cooling"
    assert "x-ratelimit-remaining-requests" in third.attempts[0].reason
    assert len(hits(meter_sim, "groq-tiny")) == 2  # no request was spent to hear the 429
    await router.close()


async def test_a_stream_broken_after_its_first_token_is_not_retried(meter_sim):
    meter_sim.reset()
    router = Router([prov("a", meter_sim, "cut"), prov("b", meter_sim, "fine")])
    shown: list[str] = []
    from workbench.errors import StreamInterrupted

    with pytest.raises(StreamInterrupted) as info:
        async for item in router.stream(
            ChatRequest.of("Tell me a long story about a dragon.", max_tokens=300)
        ):
            shown.append(item)
    assert shown and info.value.partial == "".join(shown)
    assert not hits(meter_sim, "fine")  # the reader saw the first answer: nobody rewrites it
    await router.close()


async def test_first_token_deadline_moves_on_but_never_on_the_last_model(meter_sim):
    meter_sim.reset()
    router = Router(
        [prov("a", meter_sim, "late"), prov("b", meter_sim, "fine")], first_token_timeout_s=0.3
    )
    items = [x async for x in router.stream(ChatRequest.of("hi"))]
    assert items[-1].key == "b:fine" and items[-1].attempts[0].error.kind == "timeout"
    alone = Router([prov("a", meter_sim, "late")], first_token_timeout_s=0.3)
    items = [x async for x in alone.stream(ChatRequest.of("hi"))]
    assert items[-1].key == "a:late"  # the last model gets all the time it needs
    await router.close()
    await alone.close()


async def test_admission_refuses_before_any_request(meter_sim):
    from workbench.routing import AdmissionDenied, PolicyAdmission
    from workbench.routing.policy import AiPolicy, TierPolicy

    meter_sim.reset()
    admission = PolicyAdmission(AiPolicy(tiers={"free": TierPolicy(turns_per_day=2)}))
    router = Router([prov("b", meter_sim, "fine")], admission=admission)
    ctx = {"user": "ana", "tier": "free"}
    await router.route(ChatRequest.of("one"), ctx=ctx)
    await router.route(ChatRequest.of("two"), ctx=ctx)
    with pytest.raises(AdmissionDenied) as info:
        await router.route(ChatRequest.of("three"), ctx=ctx)
    assert info.value.code == "AI_ADMISSION_DENIED" and info.value.wall is not None
    assert len(hits(meter_sim)) == 2
    await router.route(ChatRequest.of("one"), ctx={"user": "bob", "tier": "free"})  # per person
    await router.close()


async def test_complexity_filters_and_intent_prefers(meter_sim):
    meter_sim.reset()
    router = Router(
        [
            prov(
                "a",
                meter_sim,
                {"id": "fine", "complexity": ["easy"]},
                {"id": "late", "complexity": ["hard"]},
            )
        ],
        intent_routing={"storytelling": {"preferred": ["late"]}},
    )
    assert (await router.route(ChatRequest.of("hi"), ctx={"complexity": "hard"})).key == "a:late"
    assert (await router.route(ChatRequest.of("hi"), ctx={"complexity": "easy"})).key == "a:fine"
    assert (
        await router.route(ChatRequest.of("hi"), ctx={"intent": "storytelling"})
    ).key == "a:late"
    assert (await router.route(ChatRequest.of("hi"))).key == "a:fine"
    await router.close()


async def test_a_refused_credential_takes_the_provider_out_and_is_flagged(sim_b):
    bad = refusing("groq", "Invalid API Key", status=401)
    router = Router([bad, prov("b", sim_b, "ok")])
    result = await router.route(ChatRequest.of("hi"))
    assert bad.asked == ["m1"] and result.key == "b:ok"
    assert [a.outcome for a in result.attempts] == ["error", "skipped_provider", "ok"]
    assert (await router.stats())["keys"]["groq:m2"]["key_flagged"] == "HTTP 401"
    await router.close()


async def test_a_404_rests_the_model_for_an_hour(sim_a, sim_b):
    clock = Clock()
    router = Router(
        [prov("a", sim_a, "retired-model"), prov("b", sim_b, "ok")],
        clock=clock,
        cooldown_jitter_s=0,
    )
    await router.route(ChatRequest.of("hi"))
    assert router.cooldowns.until("a:retired-model") == clock.now + 3_600_000
    await router.close()


async def test_the_attempt_deadline_moves_on(sim_a, sim_b):
    router = Router([prov("a", sim_a, "slow"), prov("b", sim_b, "ok")], attempt_timeout_s=0.3)
    result = await router.route(ChatRequest.of("hi"))
    assert result.key == "b:ok" and result.attempts[0].error.kind == "timeout"
    await router.close()


async def test_a_degraded_model_is_tried_after_the_healthy_ones(sim_a):
    router = Router([prov("a", sim_a, "empty", "ok")], degrade_after=2)
    for _ in range(2):
        first = await router.route(ChatRequest.of("hi"))
        assert [a.key for a in first.attempts] == ["a:empty", "a:ok"]
    later = await router.route(ChatRequest.of("hi"))
    assert [a.key for a in later.attempts] == ["a:ok"]  # degraded: after the healthy one
    assert (await router.stats())["keys"]["a:empty"]["degraded"] is True
    await router.close()


def test_a_breaker_factory_that_shares_one_breaker_is_refused(sim_a, sim_b):
    shared = CircuitBreaker()
    with pytest.raises(ConfigError) as info:
        Router([prov("a", sim_a, "ok"), prov("b", sim_b, "ok")], breakers=lambda key: shared)
    assert info.value.code == "BREAKER_SHARED"


async def collect(stream):
    return [item async for item in stream]


async def test_stream_applies_when_all_cooling_like_route(sim_a):
    trying = Router([prov("a", sim_a, "ok")], when_all_cooling="try")
    trying.cooldowns.cool("a:ok", 60)
    items = await collect(trying.stream(ChatRequest.of("hi")))
    assert items[-1].key == "a:ok" and "".join(i for i in items if isinstance(i, str))
    waiting = Router([prov("a", sim_a, "ok")], when_all_cooling="wait", cooldown_jitter_s=0)
    waiting.cooldowns.cool("a:ok", 0.3)
    items = await collect(waiting.stream(ChatRequest.of("hi"), ctx={"deadline_s": 5}))
    assert items[-1].key == "a:ok"
    waiting.cooldowns.cool("a:ok", 60)
    with pytest.raises(RoutingError) as info:  # the caller's deadline bounds the wait
        await collect(waiting.stream(ChatRequest.of("hi"), ctx={"deadline_s": 0.5}))
    assert info.value.code == "AI_UNAVAILABLE"
    failing = Router([prov("a", sim_a, "ok")])
    failing.cooldowns.cool("a:ok", 60)
    with pytest.raises(RoutingError):
        await collect(failing.stream(ChatRequest.of("hi")))
    for r in (trying, waiting, failing):
        await r.close()


@pytest.mark.parametrize("verb", ["route", "stream"])
async def test_the_callers_deadline_stops_the_walk_before_the_next_model(meter_sim, verb):
    meter_sim.reset()
    slow = "slow" if verb == "route" else "late"  # a call waits for its body, a stream for a token
    router = Router(
        [prov("a", meter_sim, slow), prov("b", meter_sim, "fine")], attempt_timeout_s=0.3
    )
    request, ctx = ChatRequest.of("hi"), {"deadline_s": 0.2}
    with pytest.raises(RoutingError) as info:
        if verb == "route":
            await router.route(request, ctx=ctx)
        else:
            await collect(router.stream(request, ctx=ctx))
    assert "deadline" in str(info.value)
    assert [a.key for a in info.value.attempts] == [f"a:{slow}"]
    # Its one attempt timed out: the provider's reason, so the route carries a hint.
    assert info.value.retry is not None and info.value.retry.reason == "provider_error"
    assert not hits(meter_sim, "fine")  # the deadline passed during the first attempt
    await router.close()


async def test_an_attempts_logged_request_keeps_a_pictures_size_not_its_bytes(sim_a):
    picture = "data:image/png;base64," + "A" * 5000
    events: list = []
    router = Router([prov("a", sim_a, "ok")], sinks=[events.append])
    request = ChatRequest(
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "which colour?"},
                    {"type": "image_url", "image_url": {"url": picture}},
                ],
            }
        ]
    )
    try:
        await router.route(request)
    except RoutingError:
        pass  # a refusal of the picture is still an attempt that sent it
    (sent,) = [e.request for e in events if isinstance(e, AttemptEvent)]
    parts = sent["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "which colour?"}
    assert parts[1]["image_url"]["url"] == f"data:image/png;base64,… ({len(picture)} bytes)"
    assert sim_a.requests()[-1]["body"]["messages"][0]["content"][1]["image_url"]["url"] == picture
    await router.close()
