"""The prose format a model writes its calls in, carried from one attempt to the next: the
observer records it with a `text` verdict, and the next request in prose asks the model for
that format (the simulator's request log says what reached the model)."""

from __future__ import annotations

from typing import Any

import pytest

from workbench.capability import CapabilityObserver, MemoryCapabilityStore, scope_key
from workbench.eval.diagnostics.probe import TOOL_PROMPT, WEATHER_TOOL
from workbench.events import VerdictEvent
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.providers.protocols import TEXT_TOOL_PROTOCOL_HINT
from workbench.routing import Router
from workbench.sim import SimServer
from workbench.types import CallContext, ChatRequest

TOOLS = ChatRequest.of(TOOL_PROMPT, tools=[WEATHER_TOOL], max_tokens=200)
PLAN = CallContext(tools_mode="plan")
TEXT = CallContext(tools_mode="text")
MISTRAL_HINT = '[TOOL_CALLS]tool_name[ARGS]{"argument":"value"}'
HERMES_HINT = '<tool_call>\n{"name":"tool_name","arguments":{"argument":"value"}}\n</tool_call>'
FLEET = {
    "seed": 1,
    "persona": [
        {"id": "mistral-small", "tool_style": "mistral", "latency_ms": 0},
        {"id": "hermes-3", "tool_style": "hermes", "latency_ms": 0},
        {"id": "lines", "tool_style": "text", "latency_ms": 0},
    ],
}


@pytest.fixture(scope="module")
def sim():
    with SimServer(FLEET) as server:
        yield server


def router_for(sim: SimServer, persona: str) -> tuple[Router, MemoryCapabilityStore, list[Any]]:
    store, events = MemoryCapabilityStore(), []
    provider = openai_compatible_provider("sim", sim.openai_url, "k", [persona])
    router = Router([provider], observer=CapabilityObserver(store, sinks=[events.append]))
    return router, store, events


def bodies(sim: SimServer, persona: str) -> list[dict[str, Any]]:
    return [r["body"] for r in sim.requests() if r["persona"] == persona]


def system_of(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


async def test_a_model_seen_writing_mistral_calls_is_asked_for_mistral_calls_next(sim):
    sim.reset()
    router, store, events = router_for(sim, "mistral-small")
    first = await router.route(TOOLS, ctx=PLAN)  # unobserved: tools offered natively
    assert [c.family for c in first.value.tool_calls] == ["mistral"]
    record = await store.get("sim", "mistral-small", scope_key("k"), "tools")
    assert record is not None and (record.verdict, record.protocol_family) == ("text", "mistral")
    assert isinstance(events[-1], VerdictEvent) and events[-1].protocol_family == "mistral"
    await router.route(TOOLS, ctx=TEXT)
    await router.route(TOOLS, ctx=PLAN)  # planned text from its record: the same hint
    sent = bodies(sim, "mistral-small")
    assert "tools" in sent[0] and system_of(sent[0]) == ""
    for body in sent[1:]:
        assert "tools" not in body
        assert MISTRAL_HINT in system_of(body) and "get_weather" in system_of(body)
        assert "TOOL: tool_name" not in system_of(body)
    await router.close()


async def test_a_model_asked_in_its_own_format_answers_in_it_and_keeps_its_record(sim):
    sim.reset()
    router, store, _ = router_for(sim, "hermes-3")
    await router.route(TOOLS, ctx=PLAN)
    second = await router.route(TOOLS, ctx=PLAN)
    assert HERMES_HINT in system_of(bodies(sim, "hermes-3")[1])
    assert [(c.name, c.family) for c in second.value.tool_calls] == [("get_weather", "hermes")]
    # Asked in prose, its prose answer proves nothing new: the record is the first one.
    [record] = await store.all()
    assert (record.verdict, record.protocol_family) == ("text", "hermes")
    await router.close()


async def test_an_unobserved_model_or_one_seen_writing_the_lines_gets_the_generic_hint(sim):
    sim.reset()
    fresh, _, _ = router_for(sim, "hermes-3")
    await fresh.route(TOOLS, ctx=TEXT)  # nothing recorded yet: no format to ask for
    assert TEXT_TOOL_PROTOCOL_HINT in system_of(bodies(sim, "hermes-3")[0])
    await fresh.close()
    router, store, _ = router_for(sim, "lines")
    await router.route(TOOLS, ctx=PLAN)
    [record] = await store.all()
    assert (record.verdict, record.protocol_family) == ("text", "tool_lines")
    await router.route(TOOLS, ctx=TEXT)
    system = system_of(bodies(sim, "lines")[1])
    assert TEXT_TOOL_PROTOCOL_HINT in system and "one block per call" not in system
    await router.close()
