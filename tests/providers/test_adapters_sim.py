"""Both adapters against every persona of the default fleet, over real loopback HTTP."""

from __future__ import annotations

import json

import httpx
import pytest

from workbench.capability import CapabilityObserver
from workbench.errors import ConfigError, ProviderError, RoutingError, StreamInterrupted
from workbench.eval.diagnostics.probe import TOOL_PROMPT, WEATHER_TOOL
from workbench.events import VerdictEvent
from workbench.providers.gemini import gemini_provider
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.routing import Router
from workbench.sim import SimServer, load_fleet
from workbench.sim.fleet_providers import sim_providers
from workbench.types import CallContext, ChatRequest, Reply, user

DEFAULT_FLEET = load_fleet(None)
PERSONAS = sorted(DEFAULT_FLEET.personas)


@pytest.fixture(scope="module")
def fleet_sim():
    with SimServer() as sim:
        yield sim


@pytest.fixture
def sim(fleet_sim):
    fleet_sim.reset()  # failure schedules restart at ordinal 1 for every test
    return fleet_sim


def provider_for(sim, persona, **kw):
    for provider in sim_providers(sim, **kw):
        if any(m.id == persona for m in provider.models):
            return provider
    raise AssertionError(persona)


def tool_request(prompt=TOOL_PROMPT, **kw):
    return ChatRequest(messages=[user(prompt)], tools=[WEATHER_TOOL], max_tokens=200, **kw)


async def observed_call(provider, request, model, events):
    """One attempt through a router, whose observer classifies it (adapters classify nothing)."""
    router = Router([provider], observer=CapabilityObserver(sinks=[events.append]))
    try:
        result = await router.route(request, candidates=[{"provider": provider, "model": model}])
    except RoutingError as exc:
        raise exc.errors[0] from None
    return result.value


@pytest.mark.parametrize("persona", PERSONAS)
async def test_every_persona_earns_its_documented_tool_verdict(sim, persona):
    events: list[VerdictEvent] = []
    provider = provider_for(sim, persona)
    try:
        reply = await observed_call(provider, tool_request(), persona, events)
    except ProviderError as exc:
        assert persona == "sim-rejects-tools", exc
        assert exc.status_code == 400
    else:
        assert isinstance(reply, Reply)
        assert "<think>" not in reply.text and "</think>" not in reply.text
        assert "TOOL:" not in reply.text and "<tool_call" not in reply.text
        if reply.tool_calls:
            assert reply.tool_calls[0].name == "get_weather"
            assert reply.tool_calls[0].arguments == {"city": "Paris"} or reply.tool_calls[0].invalid
    finally:
        await provider.aclose()
    assert [e.verdict for e in events] == [DEFAULT_FLEET.personas[persona].expect["tools"]]
    assert all(e.scope != "sim-key" and "sim-key" not in repr(e) for e in events)


@pytest.mark.parametrize("persona", PERSONAS)
async def test_streamed_text_equals_the_final_reply_and_shows_no_reasoning(sim, persona):
    # lone-think loses its opening tag: only a held-back stream can hide what came before.
    provider = provider_for(sim, persona, lone_think_window=400 if persona == "lone-think" else 0)
    request = ChatRequest.of("Tell me about the Eiffel tower in two sentences.", max_tokens=120)
    deltas: list[str] = []
    final: Reply | None = None
    async for item in provider.stream(request, model=persona):
        if isinstance(item, Reply):
            final = item
        else:
            deltas.append(item)
    await provider.aclose()
    assert final is not None and final.text
    assert "".join(deltas).strip() == final.text
    for shown in (*deltas, final.text):
        assert "<think>" not in shown and "</think>" not in shown


async def test_reasoning_never_reaches_text(sim):
    for persona in ("think-leak", "lone-think", "gemini-flash"):
        provider = provider_for(sim, persona)
        reply = await provider.call(ChatRequest.of("Say something short."), model=persona)
        raw = json.dumps(reply.raw) if reply.raw is not None else ""
        await provider.aclose()
        assert "think" not in reply.text.lower(), persona
        # The vendor did send reasoning: we dropped it, not the simulator.
        assert ("think" in raw.lower()) or ('"thought": true' in raw), persona


async def test_gemini_openai_stream_without_index_assembles_parallel_calls(sim):
    provider = openai_compatible_provider("g", sim.gemini_openai_url, "k", ["gemini-flash"])
    request = tool_request("What is the weather in Paris and in London? Use a tool.")
    final = [x async for x in provider.stream(request, model="gemini-flash")][-1]
    await provider.aclose()
    assert isinstance(final, Reply)
    assert sorted(c.arguments["city"] for c in final.tool_calls) == ["London", "Paris"]
    assert len({c.id for c in final.tool_calls}) == len(final.tool_calls)
    assert final.protocol == "native"


async def test_gemma_gets_its_system_prompt_inside_the_first_user_message(sim):
    provider = gemini_provider("k", id="g", url=sim.gemini_url, models=["gemma-sys"])
    reply = await provider.call(
        ChatRequest.of("Hello", system="Answer in French."), model="gemma-sys"
    )
    await provider.aclose()
    assert reply.text
    body = (await sim.requests())[-1]["body"]
    assert "systemInstruction" not in body
    assert body["contents"][0]["parts"][0]["text"].startswith("Answer in French.")


async def test_empty_200_after_a_tool_result_is_an_error_the_router_can_move_past(sim):
    provider = gemini_provider("k", id="g", url=sim.gemini_url, models=["gemini-flash"])
    first = await provider.call(tool_request(), model="gemini-flash")
    call = first.tool_calls[0]
    follow = ChatRequest(
        messages=[
            user(TOOL_PROMPT),
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 18}'},
        ],
        tools=[WEATHER_TOOL],
    )
    with pytest.raises(ProviderError) as info:
        await provider.call(follow, model="gemini-flash")
    await provider.aclose()
    assert info.value.kind == "empty" and info.value.code == "PROVIDER_EMPTY"
    assert info.value.status_code == 200


async def test_key_and_url_are_resolved_on_every_call(sim):
    with SimServer() as other:
        urls = iter([sim.openai_url, other.openai_url])
        keys = iter(["key-one", "key-two"])
        seen: list[str] = []

        async def watch(request: httpx.Request) -> None:
            seen.append(request.headers["authorization"])

        async with httpx.AsyncClient(event_hooks={"request": [watch]}) as client:
            provider = openai_compatible_provider(
                "p", lambda ctx: next(urls), lambda ctx: next(keys), ["sim-native"]
            )
            ctx = CallContext(client=client)
            await provider.call(ChatRequest.of("hi"), ctx)
            await provider.call(ChatRequest.of("hi"), ctx)
        assert seen == ["Bearer key-one", "Bearer key-two"]
        assert len(await sim.requests()) == 1 and len(await other.requests()) == 1


async def test_model_extra_is_merged_over_provider_extra(sim):
    provider = openai_compatible_provider(
        "p",
        sim.openai_url,
        "k",
        [{"id": "sim-native", "extra": {"temperature": 0.1, "seed": 5}}],
        extra={"temperature": 0.9, "top_p": 0.5},
    )
    await provider.call(ChatRequest.of("hi"))
    await provider.aclose()
    body = (await sim.requests())[-1]["body"]
    assert (body["temperature"], body["seed"], body["top_p"]) == (0.1, 5, 0.5)


def test_a_bad_base_url_is_refused_with_a_stable_code():
    with pytest.raises(ConfigError) as info:
        openai_compatible_provider("p", "localhost:8080/v1", "k", ["m"])
    assert info.value.code == "BAD_BASE_URL"


async def test_connection_refused_is_a_network_error_without_the_key():
    provider = openai_compatible_provider("p", "http://127.0.0.1:9/v1", "sk-secretsecret123", ["m"])
    with pytest.raises(ProviderError) as info:
        await provider.call(ChatRequest.of("hi"))
    await provider.aclose()
    assert info.value.kind == "network" and info.value.status_code == 0
    assert "sk-secretsecret123" not in str(info.value)


GLITCHY = {
    "seed": 3,
    "persona": [
        {
            "id": "glitch",
            "tool_style": "native",
            "failures": [
                {"kind": "malformed", "at": [1]},
                {"kind": "truncated", "at": [2]},
                {"kind": "stream_cut", "at": [3]},
                {"kind": "hang", "at": [4]},
                {"kind": "context_length", "at": [5]},
                {"kind": "429", "at": [6]},
            ],
            "hang_s": 5,
            "retry_after_s": 7,
        },
        {"id": "broken-args", "tool_style": "native", "malformed_args_rate": 1.0},
        {"id": "groq-tight", "tool_style": "native", "rate_limit_style": "groq", "rpm": 1},
    ],
}


async def test_bad_provider_behaviour_gets_clear_errors():
    async with SimServer(GLITCHY) as sim:
        provider = openai_compatible_provider("p", sim.openai_url, "k", ["glitch"])
        long = ChatRequest.of("Write a long story about a dragon.", max_tokens=400)
        with pytest.raises(ProviderError) as malformed:
            await provider.call(long)
        assert malformed.value.code == "PROVIDER_MALFORMED"

        cut = await provider.call(long)
        assert cut.cut is True and cut.finish_reason == "length"

        shown: list[str] = []
        with pytest.raises(StreamInterrupted) as broken:
            async for item in provider.stream(long):
                if isinstance(item, str):
                    shown.append(item)
        assert shown and broken.value.partial == "".join(shown)

        with pytest.raises(ProviderError) as hung:
            await provider.call(long, CallContext(timeout_s=0.3))
        assert hung.value.kind == "timeout"

        with pytest.raises(ProviderError) as too_long:
            await provider.call(long)
        assert too_long.value.kind == "bad_request" and too_long.value.status_code == 400

        with pytest.raises(ProviderError) as limited:
            await provider.call(long)
        assert limited.value.kind == "rate_limit" and limited.value.retry_after_s == 7
        await provider.aclose()


async def test_broken_tool_call_json_is_kept_and_marked_invalid():
    async with SimServer(GLITCHY) as sim:
        events: list[VerdictEvent] = []
        provider = openai_compatible_provider("p", sim.openai_url, "k", ["broken-args"])
        reply = await observed_call(provider, tool_request(), "broken-args", events)
        await provider.aclose()
    [call] = reply.tool_calls
    assert call.invalid and call.invalid_reason == "not_json"
    assert call.arguments == {} and call.raw_arguments
    assert [e.verdict for e in events] == ["native"]  # a broken call is still a native call


async def test_groq_rate_limit_reads_retry_and_quota_headers():
    async with SimServer(GLITCHY) as sim:
        provider = openai_compatible_provider("groq", sim.openai_url, "k", ["groq-tight"])
        ok = await provider.call(ChatRequest.of("hi"))
        with pytest.raises(ProviderError) as info:
            await provider.call(ChatRequest.of("hi"))
        await provider.aclose()
    assert ok.quota, "rate-limit headers on a success are read too"
    err = info.value
    assert err.status_code == 429 and err.kind == "rate_limit"
    assert err.retry_after_s is not None and err.retry_after_s > 0
    assert any(r.remaining == 0 for r in err.quota)


async def test_unknown_persona_is_a_404_bad_request(sim):
    provider = openai_compatible_provider("p", sim.openai_url, "k", ["no-such-model"])
    with pytest.raises(ProviderError) as info:
        await provider.call(ChatRequest.of("hi"))
    await provider.aclose()
    assert info.value.status_code == 404 and info.value.kind == "bad_request"
    assert "no-such-model" in str(info.value)


@pytest.mark.parametrize(
    "persona",
    ["sim-native", "qwen-prose", "hermes-prose", "xml-prose", "think-leak", "gemini-flash"],
)
async def test_streamed_tool_calls_match_the_unstreamed_ones(sim, persona):
    provider = provider_for(sim, persona)
    whole = await provider.call(tool_request(), model=persona)
    items = [x async for x in provider.stream(tool_request(), model=persona)]
    await provider.aclose()
    final = items[-1]
    assert isinstance(final, Reply)
    assert [(c.name, c.arguments) for c in final.tool_calls] == [
        (c.name, c.arguments) for c in whole.tool_calls
    ]
    assert final.protocol == whole.protocol != "none"
    shown = "".join(x for x in items if isinstance(x, str))
    assert "TOOL:" not in shown and "<tool_call" not in shown and "ARGS:" not in shown
