"""The open-model family personas: their raw wire markup, and the library reading it back.

The wire tests pin the markup byte for byte without the library, so a reader change cannot
quietly move the simulator too; the library tests go over real loopback HTTP, through the
OpenAI-compatible provider and a router's observer, as a deployment would.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from simhelp import PROBE, WEATHER_TOOL, chat_body

from workbench.capability import CapabilityObserver
from workbench.events import VerdictEvent
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.routing import Router
from workbench.sim import SimServer, load_fleet
from workbench.sim.answers import render_text_calls
from workbench.sim.conversation import OutCall
from workbench.sim.fleet import FAMILY_TOOL_STYLES
from workbench.types import ChatRequest, Reply, user

FLEET = load_fleet(None)
FAMILY_PERSONAS = sorted(pid for pid, p in FLEET.personas.items() if "family" in p.expect)
LEAD = "I will look that up with a tool.\n\n"
PARALLEL = "Weather in Paris and Berlin?"
# Anything a family's frame is built from: none of it may reach `Reply.text`.
MARKUP = re.compile(r"[<>{}\[\]｜▁]|TOOL_CALLS|functions\.|to=|\bARGS\b")

WIRE: dict[str, str] = {
    "mistral-prose": '[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"}',
    "llama3-json": '{"name": "get_weather", "parameters": {"city":"Paris"}}',
    "qwen3-coder-xml": LEAD
    + "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "</function>\n</tool_call>",
    "deepseek-v31": LEAD + "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
    '{"city":"Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    "glm-prose": LEAD
    + "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "</tool_call>",
    "kimi-k2": LEAD + "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{"city":"Paris"}<|tool_call_end|>'
    "<|tool_calls_section_end|>",
    "gpt-oss-harmony": "<|channel|>analysis<|message|>The user asks: What is the weather in "
    "Paris? Use a tool if you have one. I should call get_weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city":"Paris"}<|call|>',
}


def test_every_family_style_has_one_default_persona_that_expects_its_family() -> None:
    by_style = {p.tool_style: p for p in FLEET.personas.values() if "family" in p.expect}
    assert sorted(by_style) == sorted(FAMILY_TOOL_STYLES)
    assert len(FAMILY_PERSONAS) == len(FAMILY_TOOL_STYLES) == len(WIRE)
    for style, p in by_style.items():
        assert p.expect == {"tools": "text", "family": style, "vision": "none"}, p.id
        assert p.vision is False and p.reasoning == "none", p.id


def test_the_older_prose_styles_ignore_the_reasoning_argument() -> None:
    calls = [OutCall("c0", "f", {"a": 1}, '{"a":1}'), OutCall("c1", "f", {"a": 2}, '{"a":2}')]
    for style in ("text", "hermes", "xml", "pythonic"):
        assert render_text_calls(style, calls, reasoning="why") == render_text_calls(style, calls)


def test_xml_families_write_strings_bare_and_other_values_as_json() -> None:
    args: dict[str, Any] = {"city": "Paris", "days": 3, "units": ["c"], "exact": True}
    call = [OutCall("c0", "forecast", args, "")]
    qwen = render_text_calls("qwen3_xml", call)
    assert "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n" in qwen
    assert '<parameter=units>\n["c"]\n</parameter>\n<parameter=exact>\ntrue\n' in qwen
    glm = render_text_calls("glm", call)
    assert glm.endswith(
        "<tool_call>forecast\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n<arg_key>units</arg_key>\n"
        '<arg_value>["c"]</arg_value>\n<arg_key>exact</arg_key>\n<arg_value>true</arg_value>\n'
        "</tool_call>"
    )


@pytest.mark.parametrize("pid", sorted(WIRE))
async def test_wire_markup_is_the_family_own(http: httpx.AsyncClient, pid: str) -> None:
    r = await http.post("/v1/chat/completions", json=chat_body(pid, PROBE, tools=[WEATHER_TOOL]))
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "stop" and "tool_calls" not in choice["message"]
    assert choice["message"]["content"] == WIRE[pid]


async def test_parallel_calls_repeat_the_marker_or_count_the_index(
    http: httpx.AsyncClient,
) -> None:
    async def content(pid: str) -> str:
        body = chat_body(pid, PARALLEL, tools=[WEATHER_TOOL])
        r = await http.post("/v1/chat/completions", json=body)
        return str(r.json()["choices"][0]["message"]["content"])

    assert await content("mistral-prose") == (
        '[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"}'
        '[TOOL_CALLS]get_weather[ARGS]{"city":"Berlin"}'
    )
    assert await content("llama3-json") == (
        '{"name": "get_weather", "parameters": {"city":"Paris"}}; '
        '{"name": "get_weather", "parameters": {"city":"Berlin"}}'
    )
    kimi = await content("kimi-k2")
    assert "functions.get_weather:0<|tool_call_argument_begin|>" in kimi
    assert "functions.get_weather:1<|tool_call_argument_begin|>" in kimi
    assert kimi.count("<|tool_calls_section_begin|>") == 1
    deepseek = await content("deepseek-v31")
    assert (
        deepseek.count("<｜tool▁call▁begin｜>") == 2
        and deepseek.count("<｜tool▁calls▁begin｜>") == 1
    )
    harmony = await content("gpt-oss-harmony")
    assert harmony.count("<|channel|>analysis") == 1 and harmony.count("<|call|>") == 2


def _provider(sim: SimServer, pid: str) -> Any:
    return openai_compatible_provider("sim", sim.openai_url, "sim-key", [pid])


def _assert_read(reply: Reply, pid: str, cities: list[str]) -> None:
    family = FLEET.personas[pid].expect["family"]
    assert reply.protocol == "text", pid
    assert [c.name for c in reply.tool_calls] == ["get_weather"] * len(cities), pid
    assert [c.arguments for c in reply.tool_calls] == [{"city": c} for c in cities], pid
    assert all(c.source == "text" and not c.invalid for c in reply.tool_calls), pid
    assert reply.tool_calls[0].family == family, (pid, reply.tool_calls[0].family)
    assert {c.family for c in reply.tool_calls} == {family}, pid
    assert MARKUP.search(reply.text) is None, (pid, reply.text)
    assert "analysis" not in reply.text and "should call" not in reply.text, pid


@pytest.mark.parametrize("pid", FAMILY_PERSONAS)
async def test_the_library_reads_the_call_in_the_expected_family(sim: SimServer, pid: str) -> None:
    events: list[VerdictEvent] = []
    provider = _provider(sim, pid)
    router = Router([provider], observer=CapabilityObserver(sinks=[events.append]))
    request = ChatRequest(messages=[user(PROBE)], tools=[WEATHER_TOOL], max_tokens=200)
    try:
        result = await router.route(request, candidates=[{"provider": provider, "model": pid}])
    finally:
        await provider.aclose()
    reply = result.value
    assert isinstance(reply, Reply)
    _assert_read(reply, pid, ["Paris"])
    expect = FLEET.personas[pid].expect
    assert [e.verdict for e in events] == [expect["tools"]], pid
    assert [e.protocol_family for e in events] == [expect["family"]], pid


@pytest.mark.parametrize("pid", FAMILY_PERSONAS)
async def test_parallel_calls_are_read_whole_and_streamed_without_markup(
    sim: SimServer, pid: str
) -> None:
    provider = _provider(sim, pid)
    request = ChatRequest(messages=[user(PARALLEL)], tools=[WEATHER_TOOL], max_tokens=200)
    try:
        whole = await provider.call(request, model=pid)
        items = [x async for x in provider.stream(request, model=pid)]
    finally:
        await provider.aclose()
    _assert_read(whole, pid, ["Paris", "Berlin"])
    final, deltas = items[-1], items[:-1]
    assert isinstance(final, Reply)
    _assert_read(final, pid, ["Paris", "Berlin"])
    shown = "".join(str(d) for d in deltas)
    assert shown.strip() == final.text == whole.text, pid
    assert MARKUP.search(shown) is None, (pid, shown)


@pytest.mark.parametrize("style", ["mistral", "llama3_json", "deepseek", "kimi", "harmony"])
async def test_a_seeded_broken_argument_reaches_the_reader_broken(style: str) -> None:
    fleet = {"persona": [{"id": "p", "tool_style": style, "malformed_args_rate": 1.0}]}
    async with SimServer(fleet) as sim:
        provider = _provider(sim, "p")
        request = ChatRequest(messages=[user(PROBE)], tools=[WEATHER_TOOL])
        try:
            reply = await provider.call(request, model="p")
        finally:
            await provider.aclose()
    (call,) = reply.tool_calls
    assert call.name == "get_weather" and call.family == style
    assert call.invalid and call.raw_arguments.startswith('{"city":"Par')
