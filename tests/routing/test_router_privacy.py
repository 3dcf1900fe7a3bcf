"""What leaves the machine is masked as it leaves; what comes back is unmasked."""

from __future__ import annotations

import json

import pytest

from workbench.providers import openai_compatible_provider
from workbench.routing import Router
from workbench.sim import SimServer
from workbench.text.masker import ReversibleMasker
from workbench.types import ChatRequest, Reply

FLEET = {"seed": 9, "persona": [{"id": "echo", "latency_ms": 0, "tokens_per_s": 400}]}
PROMPT = "Grace Hopper wrote to ana.lopez@example.com about the compiler. What did Grace write?"


@pytest.fixture(scope="module")
def echo_sim():
    with SimServer(FLEET) as sim:
        yield sim


def masker():
    return ReversibleMasker(
        names=["Grace Hopper", "Grace"], patterns=[("EMAIL", r"[\w.+-]+@[\w-]+\.[\w.]+")]
    )


def bodies(sim):
    return json.dumps([r["body"] for r in sim.requests()], ensure_ascii=False)


async def test_an_external_provider_never_sees_the_names_and_the_reply_comes_back_whole(echo_sim):
    echo_sim.reset()
    router = Router([openai_compatible_provider("cloud", echo_sim.openai_url, "k", ["echo"])])
    result = await router.route(ChatRequest.of(PROMPT, system="Be brief, Grace."), masker=masker())
    await router.close()
    sent = bodies(echo_sim)
    assert "Grace" not in sent and "ana.lopez@example.com" not in sent and "Hopper" not in sent
    assert "#PERSON_0001" in sent  # the simulator echoes what it got: the token
    assert "Grace" in result.value.text and "#PERSON" not in result.value.text


async def test_a_local_provider_gets_clear_text(echo_sim):
    echo_sim.reset()
    local = openai_compatible_provider("local", echo_sim.openai_url, None, ["echo"], external=False)
    router = Router([local])
    await router.route(ChatRequest.of(PROMPT), masker=masker())
    await router.close()
    assert "Grace Hopper" in bodies(echo_sim)  # nothing left the machine: nothing to mask


async def test_a_streamed_reply_is_unmasked_even_when_a_token_splits_across_chunks(echo_sim):
    echo_sim.reset()
    router = Router([openai_compatible_provider("cloud", echo_sim.openai_url, "k", ["echo"])])
    items = [x async for x in router.stream(ChatRequest.of(PROMPT), masker=masker())]
    await router.close()
    deltas = [x for x in items if isinstance(x, str)]
    final = items[-1].value
    assert isinstance(final, Reply)
    assert len(deltas) > 5  # streamed in many small chunks: tokens do split across them
    shown = "".join(deltas)
    assert "#PERSON" not in shown and "PERSON_" not in shown
    assert shown.strip() == final.text and "Grace" in shown
    assert "Grace" not in bodies(echo_sim)


async def test_tool_call_arguments_come_back_unmasked(echo_sim):
    echo_sim.reset()
    tool = {
        "type": "function",
        "function": {
            "name": "lookup_person",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    }
    router = Router([openai_compatible_provider("cloud", echo_sim.openai_url, "k", ["echo"])])
    m = masker()
    result = await router.route(ChatRequest.of("Look up Grace please.", tools=[tool]), masker=m)
    await router.close()
    [call] = result.value.tool_calls
    assert "#PERSON" not in json.dumps(call.arguments) and "PERSON_" not in call.raw_arguments
    assert "Grace" not in bodies(echo_sim)
