"""The official openai SDK talks to the simulator unchanged."""

from __future__ import annotations

import json

import openai
import pytest
from openai import AsyncOpenAI
from simhelp import PROBE, WEATHER_TOOL

pytestmark = pytest.mark.sdk


def client(sim, base: str | None = None) -> AsyncOpenAI:  # type: ignore[no-untyped-def]
    return AsyncOpenAI(base_url=base or sim.openai_url, api_key="sim-key", max_retries=0)


async def test_plain_completion_follows_instruction_and_reports_usage(sim) -> None:
    r = await client(sim).chat.completions.create(
        model="sim-native",
        messages=[{"role": "user", "content": "Reply with exactly: pong"}],
    )
    assert r.choices[0].message.content == "pong"
    assert r.choices[0].finish_reason == "stop"
    assert r.usage is not None and r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.model == "sim-native"


async def test_answer_echoes_facts_deterministically(sim) -> None:
    c = client(sim)
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    a = await c.chat.completions.create(model="sim-native", messages=msgs)
    b = await c.chat.completions.create(model="sim-native", messages=msgs)
    assert "Paris" in (a.choices[0].message.content or "")
    assert a.choices[0].message.content == b.choices[0].message.content


async def test_stream_text_ends_with_finish_and_usage(sim) -> None:
    stream = await client(sim).chat.completions.create(
        model="sim-native",
        messages=[{"role": "user", "content": "What is 6 * 7?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    async for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert "42" in text
    assert finish == "stop"
    assert usage is not None and usage.total_tokens > 0


async def test_native_tool_call(sim) -> None:
    r = await client(sim).chat.completions.create(
        model="sim-native", messages=[{"role": "user", "content": PROBE}], tools=[WEATHER_TOOL]
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls and len(calls) == 1
    assert calls[0].function.name == "get_weather"
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}
    assert calls[0].id.startswith("call_")


async def test_tool_round_trip_quotes_the_result(sim) -> None:
    c = client(sim)
    first = await c.chat.completions.create(
        model="sim-native", messages=[{"role": "user", "content": PROBE}], tools=[WEATHER_TOOL]
    )
    call = first.choices[0].message.tool_calls[0]
    second = await c.chat.completions.create(
        model="sim-native",
        tools=[WEATHER_TOOL],
        messages=[
            {"role": "user", "content": PROBE},
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 21}'},
        ],
    )
    assert second.choices[0].message.content == 'According to get_weather: {"temp_c": 21}.'
    assert not second.choices[0].message.tool_calls


async def test_stream_parallel_tool_calls_with_index(sim) -> None:
    stream = await client(sim).chat.completions.create(
        model="sim-native",
        messages=[{"role": "user", "content": "What is the weather in Paris and Berlin?"}],
        tools=[WEATHER_TOOL],
        stream=True,
    )
    calls: dict[int, dict[str, str]] = {}
    finish = None
    async for chunk in stream:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "args": ""})
                slot["id"] += tc.id or ""
                slot["name"] += (tc.function.name or "") if tc.function else ""
                slot["args"] += (tc.function.arguments or "") if tc.function else ""
    assert finish == "tool_calls"
    assert [json.loads(calls[i]["args"])["city"] for i in sorted(calls)] == ["Paris", "Berlin"]
    assert all(c["name"] == "get_weather" and c["id"] for c in calls.values())
    assert calls[0]["id"] != calls[1]["id"]


async def test_models_list_and_unknown_model(sim) -> None:
    c = client(sim)
    ids = [m.id async for m in c.models.list()]
    assert "sim-native" in ids and "gemini-flash" in ids
    with pytest.raises(openai.NotFoundError) as info:
        await c.chat.completions.create(
            model="no-such-model", messages=[{"role": "user", "content": "hi"}]
        )
    assert info.value.status_code == 404


async def test_gemini_openai_surface_accepts_prefixed_ids(sim) -> None:
    c = client(sim, sim.gemini_openai_url)
    r = await c.chat.completions.create(
        model="models/sim-native", messages=[{"role": "user", "content": "Reply with exactly: ok"}]
    )
    assert r.choices[0].message.content == "ok"
    ids = [m.id async for m in c.models.list()]
    assert "models/gemini-flash" in ids


async def test_sdk_reads_gemini_unindexed_stream_calls(sim) -> None:
    stream = await client(sim, sim.gemini_openai_url).chat.completions.create(
        model="models/gemini-flash",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER_TOOL],
        stream=True,
    )
    calls = [tc async for chunk in stream for c in chunk.choices for tc in c.delta.tool_calls or []]
    assert len(calls) == 1
    assert calls[0].function.arguments == '{"city":"Paris"}' and calls[0].id
    assert getattr(calls[0], "index", None) is None
