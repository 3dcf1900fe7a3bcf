"""`workbench local serve --tools`: the real SmolLM2 answers tool requests with native OpenAI
tool calls (llama.cpp's chatml-function-calling), read by the same adapter; the plain server
answers the same request in words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from workbench.local.provider_config import local_config
from workbench.local.server import MODEL_ID, free_port, local_model_available
from workbench.types import ChatRequest, Reply

if not local_model_available():
    if os.environ.get("CI"):
        pytest.fail("CI must install the `local` extra: the real-model test cannot be skipped")
    pytest.skip("the `local` extra is not installed", allow_module_level=True)

pytestmark = pytest.mark.local_model

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def weather_request(**extra: object) -> ChatRequest:
    """What a run sends: the tools, no tool_choice (unless `extra` names one)."""
    return ChatRequest.of(
        "What is the weather in Paris?",
        tools=[WEATHER],
        max_tokens=64,
        temperature=0,
        extra=dict(extra),
    )


def provider_for(lm, tools: bool):
    [provider] = local_config(lm.base_url, lm.model_id, tools=tools).providers
    return provider


def assert_native_weather_call(reply: Reply) -> None:
    assert reply.finish_reason == "tool_calls", reply
    [call] = reply.tool_calls
    assert (call.source, call.name, call.invalid) == ("native", "get_weather", False)
    assert call.id.startswith("call_")
    assert isinstance(call.arguments.get("city"), str) and "Paris" in call.arguments["city"]
    assert json.loads(call.raw_arguments) == call.arguments


async def test_tools_server_answers_a_tool_request_with_a_native_call(local_tools_model):
    provider = provider_for(local_tools_model, tools=True)
    reply = await provider.call(weather_request())
    await provider.aclose()
    assert_native_weather_call(reply)
    assert reply.text == ""
    wire = reply.raw["choices"][0]["message"]
    assert isinstance(wire["tool_calls"][0]["function"]["arguments"], str)  # JSON, as OpenAI
    assert "function_call" not in wire  # the legacy field, whose name kept a trailing ":"


async def test_plain_server_answers_the_same_request_without_a_native_call(local_model):
    provider = provider_for(local_model, tools=False)
    reply = await provider.call(weather_request())
    await provider.aclose()
    assert reply.text
    assert not [c for c in reply.tool_calls if c.source == "native"]
    assert reply.finish_reason != "tool_calls"


@pytest.mark.parametrize("tool_choice", [None, NAMED], ids=["auto", "named"])
async def test_tools_server_streams_the_native_call(local_tools_model, tool_choice):
    provider = provider_for(local_tools_model, tools=True)
    extra = {"tool_choice": tool_choice} if tool_choice else {}
    items = [x async for x in provider.stream(weather_request(**extra))]
    await provider.aclose()
    assert isinstance(items[-1], Reply)
    assert_native_weather_call(items[-1])
    assert not [x for x in items if isinstance(x, str)]  # a call, no words


async def test_tools_server_answers_in_words_when_the_model_chooses_words(local_tools_model):
    # This system prompt makes "auto" pick `message:`; llama.cpp's handler alone returns "".
    provider = provider_for(local_tools_model, tools=True)
    request = ChatRequest.of(
        "Say hello.",
        system="Reply with a message.",
        tools=[WEATHER],
        max_tokens=32,
        temperature=0,
    )
    reply = await provider.call(request)
    items = [x async for x in provider.stream(request)]
    await provider.aclose()
    assert reply.text.strip() and not reply.text.startswith("functions.")
    assert not reply.tool_calls
    assert isinstance(items[-1], Reply) and items[-1].text == reply.text
    assert "".join(x for x in items if isinstance(x, str)).strip() == reply.text


async def test_tools_server_answers_and_streams_a_request_without_tools(local_tools_model):
    provider = provider_for(local_tools_model, tools=True)
    request = ChatRequest.of("Name one colour.", max_tokens=24, temperature=0)
    reply = await provider.call(request)
    items = [x async for x in provider.stream(request)]
    await provider.aclose()
    assert reply.text and not reply.tool_calls
    assert isinstance(items[-1], Reply) and items[-1].text == reply.text


def test_local_serve_with_tools_flag_answers_with_native_calls():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "local", "serve", "--tools", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{base}/models", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.2)
        body = {
            "model": MODEL_ID,
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
            "tools": [WEATHER],
            "temperature": 0,
            "max_tokens": 64,
        }
        answer = httpx.post(f"{base}/chat/completions", json=body, timeout=120).json()
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert answer["choices"][0]["finish_reason"] == "tool_calls"
    [call] = answer["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert "with native tool calls" in out
