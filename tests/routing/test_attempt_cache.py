"""The cache step keys on the request as planned for the model, so a reply cached under one
plan is never served to another (the simulator's request log says what reached a model)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workbench.capability import CapabilityObserver, MemoryCapabilityStore
from workbench.errors import RoutingError
from workbench.eval.diagnostics.probe import TOOL_PROMPT, WEATHER_TOOL
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.providers.protocols import TEXT_TOOL_PROTOCOL_HINT, family_example
from workbench.providers.testing import Fail, Hang, ScriptedProvider
from workbench.routing import Router
from workbench.routing.attempt import family_hint, plan_request
from workbench.sim import SimServer
from workbench.types import CallContext, ChatRequest


class DictCache:
    """The smallest `ResponseCache`: what the step asks of any cache, nothing more.

    Kept as the tests' own: it proves the cache protocol's least, and the library ships no
    in-memory cache (the run's cache is the DuckDB store's, which the library never imports)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}

    def get(self, cache_key: str, now_ms: int) -> dict[str, Any] | None:
        return self.entries.get(cache_key)

    def put(
        self, cache_key: str, provider: str, model: str, reply: dict[str, Any], ttl_s: float | None
    ) -> None:
        self.entries[cache_key] = reply


@pytest.fixture(scope="module")
def sim():
    with SimServer() as server:
        yield server


def router_for(sim: SimServer, persona: str) -> tuple[Router, DictCache]:
    cache = DictCache()
    provider = openai_compatible_provider("sim", sim.openai_url, "k", [persona])
    router = Router(
        [provider],
        observer=CapabilityObserver(MemoryCapabilityStore()),
        cache=cache,
        cache_ttl_s=None,
    )
    return router, cache


def sent(sim: SimServer, persona: str) -> int:
    return sum(1 for r in sim.requests() if r["persona"] == persona)


TOOLS = ChatRequest.of(TOOL_PROMPT, tools=[WEATHER_TOOL], max_tokens=200)
PLAIN = ChatRequest.of("Reply with exactly: pong", max_tokens=20)


async def test_a_reply_cached_under_native_planning_is_not_served_once_the_model_is_planned_text(
    sim,
):
    sim.reset()
    router, _ = router_for(sim, "qwen-prose")
    plan = CallContext(tools_mode="plan")
    first = await router.route(TOOLS, ctx=plan)  # unknown model: tools sent natively (the probe)
    assert first.value.protocol == "text" and not first.value.cached
    # It answered in prose, so it is now planned for the text protocol: another question.
    second = await router.route(TOOLS, ctx=plan)
    assert not second.value.cached and sent(sim, "qwen-prose") == 2
    third = await router.route(TOOLS, ctx=plan)  # the same plan again: answered from the cache
    assert third.value.cached and sent(sim, "qwen-prose") == 2
    assert third.value.tool_calls == second.value.tool_calls
    await router.close()


async def test_a_reply_cached_under_text_planning_is_not_served_to_a_native_request(sim):
    sim.reset()
    router, cache = router_for(sim, "sim-native")
    text = await router.route(TOOLS, ctx=CallContext(tools_mode="text"))
    native = await router.route(TOOLS, ctx=CallContext(tools_mode="native"))
    assert not text.value.cached and not native.value.cached
    assert sent(sim, "sim-native") == 2 and len(cache.entries) == 2
    assert native.value.protocol == "native"
    again = await router.route(TOOLS, ctx=CallContext(tools_mode="native"))
    assert again.value.cached and sent(sim, "sim-native") == 2
    await router.close()


async def test_plain_requests_hit_the_cache_whatever_the_tools_mode(sim):
    sim.reset()
    router, _ = router_for(sim, "sim-native")
    replies = [
        (await router.route(PLAIN, ctx=CallContext(tools_mode=mode))).value
        for mode in ("native", "text", "plan")
    ]
    assert [r.cached for r in replies] == [False, True, True]
    assert sent(sim, "sim-native") == 1
    await router.close()


async def test_repeats_and_masking_are_part_of_the_key(sim):
    sim.reset()
    router, cache = router_for(sim, "sim-native")
    await router.route(PLAIN, ctx=CallContext(repeat=0))
    await router.route(PLAIN, ctx=CallContext(repeat=1))
    assert sent(sim, "sim-native") == 2 and len(cache.entries) == 2
    await router.close()


async def test_a_cache_hit_releases_its_quota_and_is_not_observed(sim):
    sim.reset()
    events: list[Any] = []
    cache = DictCache()
    provider = openai_compatible_provider(
        "sim", sim.openai_url, "k", [{"id": "sim-native", "rpm": 5}]
    )
    router = Router([provider], observer=CapabilityObserver(sinks=[events.append]), cache=cache)
    await router.route(TOOLS)
    for _ in range(3):
        assert (await router.route(TOOLS)).value.cached
    used = await router.usage("sim:sim-native")
    assert used["rpm"] == 1, used  # only the real call spent a request
    assert len(events) == 1  # only the real call taught anything
    await router.close()


async def test_a_cache_hit_takes_no_concurrency_slot_and_no_pacing_ticket() -> None:
    """A hit sends nothing: it neither waits for a slot held by a slow request nor counts as
    a request the provider's window saw (the pacer would pace later real requests early)."""
    scripted = ScriptedProvider("p", ["m"], ["the answer", Hang(5.0, then="late")])
    async with Router(
        [scripted], adaptive_concurrency=1, cache=DictCache(), cache_ttl_s=None
    ) as router:
        await router.route(ChatRequest.of("q"))
        busy = asyncio.create_task(router.route(ChatRequest.of("slow")))
        await asyncio.wait_for(scripted.called(2), 5)  # the slow request holds the one slot
        paced = await router.state.pacer.store.state("p:m")
        for _ in range(3):  # a deadline, not a timing: waiting for the slot would miss it
            hit = await router.route(ChatRequest.of("q"), ctx=CallContext(deadline_s=1.0))
            assert hit.value.cached and hit.value.text == "the answer"
            assert [a.outcome for a in hit.attempts] == ["ok"]
        assert await router.state.pacer.store.state("p:m") == paced  # 2 sent, 2 counted
        assert paced["seq"] == 2
        busy.cancel()
        with pytest.raises(asyncio.CancelledError):
            await busy
    assert len(scripted.received) == 2


async def test_a_question_answered_while_it_waited_for_a_slot_is_served_from_the_cache() -> None:
    scripted = ScriptedProvider("p", ["m"], [Hang(0.2, then="the answer")])  # one call only
    async with Router(
        [scripted], adaptive_concurrency=1, cache=DictCache(), cache_ttl_s=None
    ) as router:
        first, second = await asyncio.gather(
            router.route(ChatRequest.of("q")), router.route(ChatRequest.of("q"))
        )
        assert router.state.pacer.concurrency is not None
        assert router.state.pacer.concurrency.in_flight("p:m") == 0  # its slot came back
    assert (first.value.cached, second.value.cached) == (False, True)
    assert second.value.text == "the answer" and len(scripted.received) == 1


@pytest.mark.parametrize("verb", ["route", "stream"])
async def test_a_model_resting_after_a_429_still_answers_from_the_cache(verb: str) -> None:
    scripted = ScriptedProvider("p", ["m"], ["the answer", Fail(429, retry_after_s=60)])
    async with Router([scripted], cache=DictCache(), cache_ttl_s=None) as router:
        await router.route(ChatRequest.of("q"))
        with pytest.raises(RoutingError):
            await router.route(ChatRequest.of("other"))
        assert router.state.cooldowns.is_cooling("p:m")
        if verb == "route":
            text = (await router.route(ChatRequest.of("q"))).value.text
        else:
            parts = [x async for x in router.stream(ChatRequest.of("q"))]
            text = "".join(x for x in parts if isinstance(x, str))
    assert text == "the answer" and len(scripted.received) == 2


def test_planning_is_a_pure_function_of_the_verdict_and_the_mode():
    request = ChatRequest.of("hi", tools=[WEATHER_TOOL])
    assert plan_request(request, "unobserved", "native") is request
    assert plan_request(request, "native", "plan") is request
    assert plan_request(request, "unobserved", "plan") is request  # the first call is the probe
    for planned in (plan_request(request, "text", "plan"), plan_request(request, "native", "text")):
        assert planned.send_tools is False and planned.tools == request.tools
        assert "get_weather" in (planned.system or "")
    refused = plan_request(request, "none", "plan")
    assert refused.send_tools is False and "get_weather" not in (refused.system or "")
    assert plan_request(PLAIN, "text", "text") is PLAIN  # nothing to plan without tools


MISTRAL_EXAMPLE = '[TOOL_CALLS]tool_name[ARGS]{"argument":"value"}'


def test_a_text_plan_asks_for_the_family_the_model_was_seen_writing():
    request = ChatRequest.of("hi", tools=[WEATHER_TOOL])
    assert family_example("mistral", "tool_name", {"argument": "value"}) == MISTRAL_EXAMPLE
    for planned in (
        plan_request(request, "text", "plan", protocol_family="mistral"),
        plan_request(request, "unobserved", "text", protocol_family="mistral"),
    ):
        system = planned.system or ""
        assert planned.send_tools is False and MISTRAL_EXAMPLE in system
        assert "TOOL: tool_name" not in system and "get_weather" in system
    # A plan that sends the tools natively writes no hint, whatever format was seen.
    assert plan_request(request, "native", "plan", protocol_family="mistral") is request
    assert plan_request(request, "unobserved", "plan", protocol_family="mistral") is request


@pytest.mark.parametrize("family", [None, "", "tool_lines", "no-such-family"])
def test_without_a_family_we_can_write_the_text_plan_asks_for_the_generic_lines(family):
    request = ChatRequest.of("hi", tools=[WEATHER_TOOL])
    assert family_hint(family) == TEXT_TOOL_PROTOCOL_HINT
    for planned in (
        plan_request(request, "text", "plan", protocol_family=family),
        plan_request(request, "native", "text", protocol_family=family),
    ):
        assert TEXT_TOOL_PROTOCOL_HINT in (planned.system or "")
        assert "[TOOL_CALLS]" not in (planned.system or "")


def test_a_family_hint_shows_one_call_in_that_format_and_says_to_stop():
    hint = family_hint("hermes")
    example = family_example("hermes", "tool_name", {"argument": "value"})
    assert example is not None and example in hint
    assert hint.startswith(
        "If you need a tool, call it in this exact format (one block per call), then stop:\n"
    )
    assert "TOOL:" not in hint


async def _hold(quota):
    from workbench.routing.attempt import Hold
    from workbench.routing.breaker import CircuitBreaker
    from workbench.routing.quota import Limits

    permit = CircuitBreaker().allow()
    reservation = await quota.reserve("p:m", Limits(rpm=10, tpd=1000), 100)
    return Hold(permit, reservation, quota, 0)


async def test_an_attempts_hold_is_settled_exactly_once():
    from workbench.errors import ProviderError
    from workbench.routing.quota import MemoryQuota
    from workbench.types import Reply, Usage

    quota = MemoryQuota()
    hold = await _hold(quota)
    await hold.succeeded(Reply("hi", usage=Usage(3, 4)))
    assert (await quota.usage("p:m"))["tpd"] == 7  # real usage replaced the estimate
    with pytest.raises(RuntimeError):
        await hold.failed(ProviderError("x", kind="outage"))
    abandoned = await _hold(quota)
    await abandoned.abandoned()  # a cancelled call gives its request and tokens back
    assert (await quota.usage("p:m"))["rpm"] == 1
    with pytest.raises(RuntimeError):
        abandoned.interrupted()
    refused = await _hold(quota)
    await refused.failed(ProviderError("429", kind="rate_limit", status_code=429))
    used = await quota.usage("p:m")
    assert used["rpm"] == 2 and used["tpd"] == 7  # a refused request counts; its tokens go back


async def test_a_server_named_by_its_origin_is_answered_from_the_cache_on_a_new_port(sim):
    """A server this process starts gets a free port every run: named by a `cache_origin`, the
    next run's router (same cache, the server on another port) asks it nothing; by its URL,
    the port decides."""
    cache = DictCache()
    with SimServer() as other:
        sim.reset()
        for url, origin, asked in (
            (sim.openai_url, "workbench-sim:fleet", 1),  # the first run: asked
            (other.openai_url, "workbench-sim:fleet", 0),  # a new port, the same origin
            (other.openai_url, None, 1),  # no origin: the URL is the key, a new question
        ):
            provider = openai_compatible_provider(
                "sim", url, "k", ["sim-native"], cache_origin=origin
            )
            router = Router([provider], cache=cache, cache_ttl_s=None)
            before = sent(sim, "sim-native") + sent(other, "sim-native")
            reply = (await router.route(PLAIN)).value
            await router.close()
            assert sent(sim, "sim-native") + sent(other, "sim-native") - before == asked
            assert reply.cached is (asked == 0)


class OwnProvider:
    """A user's complete provider, written without `cache_origin` (it is optional).

    Kept as the tests' own, not a `ScriptedProvider`: it is the Provider protocol under test
    (a class of the user's, accepted as it is, that crosses the wire through an adapter)."""

    external = True

    def __init__(self, inner) -> None:
        self.id, self._inner = "mine", inner

    @property
    def models(self):
        return self._inner.models

    def available(self, ctx):
        return True

    def lane(self, ctx=None):
        return None

    def key(self, ctx):
        return "k"

    def base_url(self, ctx):
        return self._inner.base_url(ctx)

    async def call(self, request, ctx=None, model=None):
        return await self._inner.call(request, ctx, model)

    def stream(self, request, ctx=None, model=None):
        return self._inner.stream(request, ctx, model)

    async def aclose(self):
        await self._inner.aclose()


async def test_a_complete_provider_without_a_cache_origin_is_used_as_it_is(sim):
    from workbench.providers.interface import as_provider

    sim.reset()
    mine = OwnProvider(openai_compatible_provider("sim", sim.openai_url, "k", ["sim-native"]))
    assert as_provider(mine) is mine  # not wrapped: the protocol does not ask for it
    router = Router([mine], cache=DictCache(), cache_ttl_s=None)
    replies = [(await router.route(PLAIN)).value for _ in range(2)]
    await router.close()
    assert [r.cached for r in replies] == [False, True] and sent(sim, "sim-native") == 1
