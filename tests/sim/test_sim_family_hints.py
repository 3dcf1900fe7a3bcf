"""A tool list written in the prompt with one family's example call: the simulator answers
in that family, whichever style the persona has, and the older hints keep their styles.

A router asks a model it saw writing family F for calls in F (`family_hint`); a simulator
that only knew the Hermes example would answer such a prompt with no call, or in the wrong
family, and the router's loop could not be exercised against it.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from simhelp import PROBE, WEATHER_TOOL

from workbench.providers.openai_compat import openai_compatible_provider
from workbench.providers.protocols import (
    TEXT_TOOL_PROTOCOL_HINT,
    family_example,
    read_text_tool_calls,
)
from workbench.routing.attempt import family_hint, plan_request
from workbench.sim import SimServer, load_fleet
from workbench.sim.fleet import FAMILY_TOOL_STYLES
from workbench.types import ChatRequest, user

FLEET = load_fleet(None)
OWN_PERSONA = {p.tool_style: pid for pid, p in FLEET.personas.items() if "family" in p.expect}
LISTING = "Tools:\n- get_weather(city: string): current weather for a city"
NAMES = ["get_weather"]


async def _content(http: httpx.AsyncClient, model: str, system: str, prompt: str = PROBE) -> str:
    body = {
        "model": model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
    }
    r = await http.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    message = r.json()["choices"][0]["message"]
    assert "tool_calls" not in message, message
    return str(message["content"])


def _read_one(content: str) -> Any:
    calls, _ = read_text_tool_calls(content, NAMES)
    assert len(calls) == 1, content
    (call,) = calls
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}, content
    assert not call.invalid, content
    return call


def test_every_family_style_has_its_own_persona() -> None:
    assert sorted(OWN_PERSONA) == sorted(FAMILY_TOOL_STYLES)


@pytest.mark.parametrize("family", FAMILY_TOOL_STYLES)
@pytest.mark.parametrize("whose", ["own", "text", "native", "hermes"])
async def test_a_family_hint_gets_a_call_in_that_family(
    http: httpx.AsyncClient, family: str, whose: str
) -> None:
    model = {
        "own": OWN_PERSONA[family],
        "text": "qwen-prose",
        "native": "sim-native",
        "hermes": "hermes-prose",
    }[whose]
    content = await _content(http, model, f"{family_hint(family)}\n\n{LISTING}")
    assert _read_one(content).family == family, (model, content)


@pytest.mark.parametrize("family", FAMILY_TOOL_STYLES)
async def test_the_markup_is_matched_not_the_wording(http: httpx.AsyncClient, family: str) -> None:
    example = family_example(family, "tool_name", {"argument": "value"})
    assert example is not None
    system = f"{LISTING}\n\nCalls look like this:\n{example}"
    content = await _content(http, "qwen-prose", system)
    assert _read_one(content).family == family, content


@pytest.mark.parametrize("family", FAMILY_TOOL_STYLES)
async def test_the_router_planned_prompt_is_answered_and_read_in_the_family(
    sim: SimServer, family: str
) -> None:
    """The whole loop: the request as the router plans it for a model seen writing `family`,
    sent with no `tools` field, and the provider reading the reply."""
    request = ChatRequest(messages=[user(PROBE)], tools=[WEATHER_TOOL], max_tokens=200)
    planned = plan_request(request, "text", "plan", protocol_family=family)
    assert planned.send_tools is False and planned.system and family_hint(family) in planned.system
    pid = OWN_PERSONA[family]
    provider = openai_compatible_provider("sim", sim.openai_url, "sim-key", [pid])
    try:
        reply = await provider.call(planned, model=pid)
    finally:
        await provider.aclose()
    (call,) = reply.tool_calls
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert call.source == "text" and call.family == family


HERMES_WIRE = '<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>'
XML_WIRE = '<tool_call name="get_weather">{"city":"Paris"}</tool_call>'
TEXT_WIRE = 'TOOL: get_weather\nARGS: {"city":"Paris"}'
OLD_HINTS: list[tuple[str, str, str]] = [
    (
        "xml",
        'To call a tool write:\n<tool_call name="tool_name">{"argument": "value"}</tool_call>',
        XML_WIRE,
    ),
    ("hermes", family_hint("hermes"), HERMES_WIRE),
    (
        "hermes",
        "For each call return\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
        HERMES_WIRE,
    ),
    ("text", TEXT_TOOL_PROTOCOL_HINT, TEXT_WIRE),
    ("text", family_hint("tool_lines"), TEXT_WIRE),
    (
        "pythonic",
        "Put the calls in the format [func_name1(params_name1=params_value1), func_name2(...)]",
        '[get_weather(city="Paris")]',
    ),
]


@pytest.mark.parametrize(("style", "hint", "wire"), OLD_HINTS)
@pytest.mark.parametrize("model", ["qwen-prose", "qwen3-coder-xml", "glm-prose", "mistral-prose"])
async def test_the_older_hints_keep_their_styles(
    http: httpx.AsyncClient, style: str, hint: str, wire: str, model: str
) -> None:
    """The Qwen3-Coder and GLM personas included: their blocks open with `<tool_call>` too,
    and a Hermes hint must still get Hermes from them."""
    content = await _content(http, model, f"{hint}\n\n{LISTING}")
    assert content.endswith(wire), (style, model, content)


async def test_function_docs_beside_a_python_hint_stay_python(http: httpx.AsyncClient) -> None:
    """Docs given as JSON objects with a name and parameters look like a Llama 3 call; the
    benchmark's own Python-list hint beside them still decides."""
    docs = (
        '[{"name": "get_weather", "parameters": {"type": "dict", "properties": '
        '{"city": {"type": "string"}}, "required": ["city"]}}]'
    )
    system = (
        "Put the calls in the format [func_name1(params_name1=params_value1)]\n"
        f"Here is a list of functions in JSON format:\n{docs}"
    )
    content = await _content(http, "llama3-json", system)
    assert content == '[get_weather(city="Paris")]'
    assert _read_one(content).family == "pythonic"


async def test_a_persona_without_tools_ignores_a_family_hint(http: httpx.AsyncClient) -> None:
    content = await _content(http, "sim-plain", f"{family_hint('mistral')}\n\n{LISTING}")
    assert read_text_tool_calls(content, NAMES)[0] == []
