"""How a stream ends, over real HTTP: a finish reason is remembered only when a frame carries
one, so a stream that ends after whole frames is a finished answer; only a read error, or a
frame cut in the middle, is an interruption.

A tiny ASGI app under uvicorn writes exactly the bytes each case needs, one chunk per write
with a pause between them, so the client reads them as separate reads."""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.requests import Request
from starlette.responses import StreamingResponse

from tests.loopback import LoopbackServer
from workbench.errors import ProviderError, StreamInterrupted
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.types import ChatRequest, Reply

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def frame(delta: dict, finish: str | None = None) -> bytes:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


TEXT_NO_FINISH = [frame({"content": "Hello "}), frame({"content": "world"}), b"data: [DONE]\n\n"]
HALVES = frame({"content": "split across reads"})
EURO = frame({"content": "price: 5 €"})
EURO_CUT = EURO.index("€".encode()) + 1  # inside the three bytes of €
GLUED_ARGS = [
    frame(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    ),
    frame({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Paris"}'}}]}),
    frame({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Lyon"}'}}]}),
]
CASES: dict[str, list[bytes]] = {
    "done_without_finish": TEXT_NO_FINISH,
    "closed_after_whole_frames": TEXT_NO_FINISH[:2],
    "frame_split_across_reads": [HALVES[:17], HALVES[17:]],
    "utf8_split_across_reads": [EURO[:EURO_CUT], EURO[EURO_CUT:]],
    "glued_arguments": GLUED_ARGS,
    "cut_inside_a_frame": [frame({"content": "Hello "}), b'data: {"choices": [{"delta": {"con'],
    "cut_before_any_text": [b'data: {"choices": [{"delta": {"con'],
}


async def sse(request: Request) -> StreamingResponse:
    body = await request.json()
    chunks = CASES[body["model"]]

    async def gen():
        for chunk in chunks:
            yield chunk
            await asyncio.sleep(0.02)  # separate writes, separate reads

    return StreamingResponse(gen(), media_type="text/event-stream")


async def app(scope, receive, send):
    if scope["type"] == "http":
        response = await sse(Request(scope, receive))
        await response(scope, receive, send)


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(app) as srv:
        yield srv


async def streamed(server, case: str, request: ChatRequest | None = None):
    provider = openai_compatible_provider("p", f"{server.url}/v1", "k", [case])
    deltas: list[str] = []
    final: Reply | None = None
    try:
        async for item in provider.stream(request or ChatRequest.of("hi")):
            if isinstance(item, Reply):
                final = item
            else:
                deltas.append(item)
    finally:
        await provider.aclose()
    return deltas, final


@pytest.mark.parametrize("case", ["done_without_finish", "closed_after_whole_frames"])
async def test_a_stream_without_a_finish_reason_ends_normally(server, case):
    deltas, final = await streamed(server, case)
    assert "".join(deltas) == "Hello world"
    assert final is not None and final.text == "Hello world"
    assert final.finish_reason is None and final.cut is False


async def test_a_frame_split_across_two_reads_is_one_frame(server):
    deltas, final = await streamed(server, "frame_split_across_reads")
    assert "".join(deltas) == "split across reads" == final.text


async def test_a_utf8_character_split_across_reads_survives(server):
    deltas, final = await streamed(server, "utf8_split_across_reads")
    assert "".join(deltas) == "price: 5 €" == final.text
    assert "\ufffd" not in final.text


async def test_glued_argument_objects_become_two_calls_without_a_finish_frame(server):
    request = ChatRequest.of("Weather in Paris and Lyon?", tools=[WEATHER])
    _, final = await streamed(server, "glued_arguments", request)
    assert [(c.name, c.arguments) for c in final.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Lyon"}),
    ]
    assert final.protocol == "native" and not any(c.invalid for c in final.tool_calls)


async def test_a_frame_cut_in_the_middle_still_interrupts_the_stream(server):
    shown: list[str] = []
    provider = openai_compatible_provider("p", f"{server.url}/v1", "k", ["cut_inside_a_frame"])
    with pytest.raises(StreamInterrupted) as info:
        async for item in provider.stream(ChatRequest.of("hi")):
            if isinstance(item, str):
                shown.append(item)
    await provider.aclose()
    assert shown == ["Hello "] and info.value.partial == "Hello "
    assert info.value.code == "AI_STREAM_INTERRUPTED"


async def test_a_frame_cut_before_any_text_is_a_provider_error_the_router_can_move_past(server):
    provider = openai_compatible_provider("p", f"{server.url}/v1", "k", ["cut_before_any_text"])
    with pytest.raises(ProviderError) as info:
        async for _ in provider.stream(ChatRequest.of("hi")):
            pass
    await provider.aclose()
    assert not isinstance(info.value, StreamInterrupted)
    assert info.value.kind == "network" and "inside a frame" in str(info.value)
