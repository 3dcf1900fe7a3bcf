"""The official google-genai SDK talks to the simulator's native Gemini surface unchanged."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types

pytestmark = pytest.mark.sdk


def client(sim) -> genai.Client:  # type: ignore[no-untyped-def]
    return genai.Client(api_key="sim-key", http_options=types.HttpOptions(base_url=sim.gemini_url))


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return "sunny"


NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)


async def test_generate_content_with_thought_parts(sim) -> None:
    c = client(sim)  # keep a reference: a collected Client closes its HTTP client
    r = await c.aio.models.generate_content(
        model="gemini-flash", contents="What is 2 + 3? Answer with one word."
    )
    assert r.text == "5"
    parts = r.candidates[0].content.parts
    assert parts[0].thought is True and parts[0].text
    assert r.candidates[0].finish_reason == types.FinishReason.STOP
    assert r.usage_metadata.prompt_token_count > 0
    assert r.usage_metadata.thoughts_token_count > 0


def test_sync_generate_content(sim) -> None:
    c = client(sim)
    r = c.models.generate_content(
        model="models/sim-native", contents="Reply with exactly: hello gemini"
    )
    assert r.text == "hello gemini"


async def test_generate_content_stream(sim) -> None:
    texts, thoughts = [], []
    c = client(sim)
    async for chunk in await c.aio.models.generate_content_stream(
        model="gemini-flash", contents="What is the capital of Italy?"
    ):
        for part in (
            (chunk.candidates[0].content.parts or []) if chunk.candidates[0].content else []
        ):
            (thoughts if part.thought else texts).append(part.text or "")
    assert len(texts) > 3 and len(thoughts) > 1
    assert "Rome" in "".join(texts)


async def test_function_call_and_response(sim) -> None:
    c = client(sim)
    config = types.GenerateContentConfig(tools=[get_weather], automatic_function_calling=NO_AFC)
    r = await c.aio.models.generate_content(
        model="sim-native", contents="What is the weather in Lisbon?", config=config
    )
    assert r.function_calls and r.function_calls[0].name == "get_weather"
    assert r.function_calls[0].args == {"city": "Lisbon"}
    follow = await c.aio.models.generate_content(
        model="sim-native",
        config=config,
        contents=[
            types.Content(role="user", parts=[types.Part(text="What is the weather in Lisbon?")]),
            r.candidates[0].content,
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(
                        name="get_weather", response={"result": "sunny"}
                    )
                ],
            ),
        ],
    )
    assert follow.text == 'According to get_weather: {"result":"sunny"}.'


async def test_gemini_flash_returns_empty_after_tool_result(sim) -> None:
    config = types.GenerateContentConfig(tools=[get_weather], automatic_function_calling=NO_AFC)
    c = client(sim)
    r = await c.aio.models.generate_content(
        model="gemini-flash",
        config=config,
        contents=[
            types.Content(role="user", parts=[types.Part(text="Weather in Oslo?")]),
            types.Content(
                role="model",
                parts=[types.Part.from_function_call(name="get_weather", args={"city": "Oslo"})],
            ),
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(
                        name="get_weather", response={"result": "snow"}
                    )
                ],
            ),
        ],
    )
    assert not r.text and not r.function_calls


async def test_gemma_refuses_system_instruction(sim) -> None:
    c = client(sim)
    with pytest.raises(errors.ClientError) as info:
        await c.aio.models.generate_content(
            model="gemma-sys",
            contents="hi",
            config=types.GenerateContentConfig(system_instruction="Be terse."),
        )
    assert info.value.code == 400
    assert "Developer instruction is not enabled for models/gemma-sys" in str(info.value)
    ok = await c.aio.models.generate_content(model="gemma-sys", contents="Reply with exactly: y")
    assert ok.text == "y"


async def test_unknown_model_is_404_not_found(sim) -> None:
    c = client(sim)
    with pytest.raises(errors.ClientError) as info:
        await c.aio.models.generate_content(model="nope", contents="hi")
    assert info.value.code == 404
    assert info.value.status == "NOT_FOUND"


def test_sync_stream_function_call(sim) -> None:
    c = client(sim)
    config = types.GenerateContentConfig(tools=[get_weather], automatic_function_calling=NO_AFC)
    calls = [
        fc
        for chunk in c.models.generate_content_stream(
            model="sim-native", contents="Weather in Paris and Madrid?", config=config
        )
        for fc in chunk.function_calls or []
    ]
    assert [fc.args["city"] for fc in calls] == ["Paris", "Madrid"]
