"""Streams (OpenAI-compatible and Gemini SSE), a stream cut in the middle, and the same request
asked again, through a Router holding a cassette: replayed as they were recorded."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from workbench.cassettes import Cassette
from workbench.errors import WorkbenchError
from workbench.providers import gemini_provider, openai_compatible_provider
from workbench.routing import Router
from workbench.sim import SimServer
from workbench.sim.streaming import CUT_AFTER_CHUNKS
from workbench.types import CallContext, ChatRequest, Reply

KEY = "sk-stream-test-key-0123456789abcdef"
NOWHERE = "http://127.0.0.1:9"
FLEET = {
    "seed": 5,
    "persona": [
        {"id": "native", "tool_style": "native", "latency_ms": 0},
        {"id": "gem", "tool_style": "native", "latency_ms": 0, "rate_limit_style": "gemini"},
        {
            "id": "cut",
            "tool_style": "none",
            "latency_ms": 0,
            "failures": [{"kind": "stream_cut", "at": [1]}],
        },
    ],
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASKS = [
    ChatRequest.of("Tell me a short story about a lighthouse."),
    ChatRequest.of("What is the weather in Paris? Use a tool if you have one.", tools=[WEATHER]),
]


def _router(base: str, model: str) -> Router:
    if model == "gem":
        provider: Any = gemini_provider(KEY, url=base, models=["gem"])
    else:
        provider = openai_compatible_provider("p", f"{base}/v1", KEY, [model])
    return Router([provider])


async def _stream(
    router: Router, request: ChatRequest, ctx: CallContext | None = None
) -> tuple[list[str], Any]:
    deltas: list[str] = []
    try:
        async for item in router.stream(request, ctx=ctx):
            if isinstance(item, str):
                deltas.append(item)
            else:
                reply: Reply = item.value
                return deltas, (reply.text, [(c.name, c.arguments) for c in reply.tool_calls])
    except WorkbenchError as exc:
        return deltas, exc.code
    raise AssertionError("a stream without its result")


async def _play(base: str, model: str, folder: Path, mode: str) -> list[Any]:
    router = _router(base, model)
    with Cassette(folder, mode) as cassette:  # type: ignore[arg-type]
        router.use_cassette(cassette)
        out = [await _stream(router, request) for request in ASKS]
    await router.close()
    return out


async def test_streams_replay_as_recorded_for_both_wire_formats(tmp_path):
    for model in ("native", "gem"):
        folder = tmp_path / model
        async with SimServer(FLEET) as sim:
            recorded = await _play(sim.base_url, model, folder, "record")
        assert all(isinstance(result, tuple) for _, result in recorded), recorded
        assert recorded[1][1][1], "the tool request was answered with a call"
        assert await _play(NOWHERE, model, folder, "replay") == recorded
        exchanges = Cassette(folder).exchanges
        assert all(e.stream for e in exchanges)
        for exchange in exchanges:
            assert exchange.chunks and all(c.data.endswith("\n\n") for c in exchange.chunks)
            assert all(isinstance(c.ms, int) and c.ms >= 0 for c in exchange.chunks)
        assert KEY.encode() not in (folder / "cassette.jsonl").read_bytes()


async def test_a_stream_cut_in_the_middle_replays_cut(tmp_path):
    async with SimServer(FLEET) as sim:
        recorded = await _play(sim.base_url, "cut", tmp_path, "record")
    # The simulator cuts after CUT_AFTER_CHUNKS text chunks: the reader saw them, then the
    # stream broke (an interruption, never a fallback).
    deltas, code = recorded[0]
    assert code == "AI_STREAM_INTERRUPTED", recorded
    assert len(deltas) == CUT_AFTER_CHUNKS
    cut = next(e for e in Cassette(tmp_path).exchanges if "lighthouse" in json.dumps(e.body))
    assert cut.error == "network"  # kept with the events before the break
    assert cut.chunks is not None
    said = [json.loads(c.data.removeprefix("data: "))["choices"][0]["delta"] for c in cut.chunks]
    assert [d["content"] for d in said if d.get("content")] == deltas
    assert await _play(NOWHERE, "cut", tmp_path, "replay") == recorded


async def test_the_nth_ask_gets_the_nth_answer_and_an_extra_one_the_last(tmp_path):
    fleet = {
        "seed": 1,
        "persona": [
            {
                "id": "busy",
                "tool_style": "native",
                "latency_ms": 0,
                "failures": [{"kind": "429", "at": [1]}],
            }
        ],
    }
    request = ChatRequest.of("Reply with exactly: pong")

    async def ask_three(base: str, mode: str) -> list[Any]:
        provider = openai_compatible_provider("p", f"{base}/v1", KEY, ["busy"])
        out: list[Any] = []
        with Cassette(tmp_path, mode) as cassette:  # type: ignore[arg-type]
            provider.use_cassette(cassette)
            for _ in range(3 if mode == "replay" else 2):
                try:
                    out.append((await provider.call(request)).text)
                except WorkbenchError as exc:
                    out.append(exc.code)
        await provider.aclose()
        return out

    async with SimServer(fleet) as sim:
        recorded = await ask_three(sim.base_url, "record")
    assert recorded[0] == "PROVIDER_RATE_LIMIT" and recorded[1] != recorded[0]
    replayed = await ask_three(NOWHERE, "replay")
    assert replayed == [*recorded, recorded[-1]]  # a 3rd ask: the last recorded answer again
    assert [e.occurrence for e in Cassette(tmp_path).exchanges] == [1, 2]


async def test_two_recordings_of_the_same_requests_are_the_same_file_but_for_timings(tmp_path):
    texts = []
    for n in range(2):
        async with SimServer(FLEET) as sim:
            for model in ("native", "gem"):
                router = _router(sim.base_url, model)
                with Cassette(tmp_path / f"{n}-{model}", "record") as cassette:
                    router.use_cassette(cassette)
                    for request in ASKS:
                        await router.route(request)
                        await _stream(router, request)
                await router.close()
        texts.append(
            "".join(
                (tmp_path / f"{n}-{m}" / "cassette.jsonl").read_text(encoding="utf-8")
                for m in ("native", "gem")
            )
        )

    # What differs between two recordings is what the server said differently: the time a
    # chunk arrived, and the simulator's `created` clock. The order and formatting are stable.
    def timeless(text: str) -> str:
        text = re.sub(r'"ms": \d+', '"ms": 0', text)
        return re.sub(r'\\?"created\\?": ?\d+', '"created": 0', text)

    assert timeless(texts[0]) == timeless(texts[1])
    assert len(texts[0].splitlines()) == 2 * (1 + 2 * len(ASKS))
    assert all(json.loads(line) for line in texts[0].splitlines())


async def test_a_hang_our_deadline_ended_replays_as_a_timeout_at_once(tmp_path):
    fleet = {
        "seed": 1,
        "persona": [
            {
                "id": "hangs",
                "tool_style": "native",
                "latency_ms": 0,
                "hang_s": 5,
                "failures": [{"kind": "hang", "at": [1]}],
            },
            {"id": "native", "tool_style": "native", "latency_ms": 0},
        ],
    }

    async def route(base: str, mode: str) -> list[tuple[str, str, int | None]]:
        router = Router(
            [
                openai_compatible_provider("h", f"{base}/v1", KEY, ["hangs"]),
                openai_compatible_provider("n", f"{base}/v1", KEY, ["native"]),
            ],
            attempt_timeout_s=0.3,
        )
        with Cassette(tmp_path, mode) as cassette:  # type: ignore[arg-type]
            router.use_cassette(cassette)
            result = await router.route(ChatRequest.of("Reply with exactly: pong"))
        await router.close()
        return [(a.key, a.outcome, a.error.code if a.error else None) for a in result.attempts]

    async with SimServer(fleet) as sim:
        recorded = await route(sim.base_url, "record")
    assert recorded == [("h:hangs", "error", "PROVIDER_TIMEOUT"), ("n:native", "ok", None)]
    assert await route(NOWHERE, "replay") == recorded
    assert [e.error for e in Cassette(tmp_path).exchanges] == ["timeout", None]


async def test_a_replay_asks_the_model_the_way_the_recording_had_planned_its_tools(tmp_path):
    # Recorded after a first answer taught the router that the model calls tools in prose
    # (Hermes' <tool_call>): the question went out in prose, asking for that format. A router
    # that never saw the first answer plans the question with the tools sent, which the
    # cassette does not hold: it asks the recorded way instead of skipping the model.
    fleet = {"seed": 2, "persona": [{"id": "prose", "tool_style": "hermes", "latency_ms": 0}]}
    planned = CallContext(tools_mode="plan")  # each model asked as it was seen to answer
    warm_up = ChatRequest.of("What is the weather in Oslo? Use a tool.", tools=[WEATHER])
    question = ASKS[1]

    async def play(base: str, mode: str, asks: list[ChatRequest]) -> list[Any]:
        router = _router(base, "prose")
        out: list[Any] = []
        with Cassette(tmp_path, mode) as cassette:  # type: ignore[arg-type]
            router.use_cassette(cassette)
            for request in asks:
                result = await router.route(request, ctx=planned)
                out.append((result.value.tool_calls, result.attempts[-1].outcome))
                out.append((await _stream(router, request, planned))[1])
        await router.close()
        return out

    async with SimServer(fleet) as sim:
        recorded = await play(sim.base_url, "record", [warm_up, question])
    assert recorded[2][0] and recorded[2][0][0].name == "get_weather"
    sent = [json.dumps(e.body) for e in Cassette(tmp_path).exchanges]
    assert sum("<tool_call>" in body and "Paris" in body for body in sent) == 2
    assert not any('"tools"' in body and "Paris" in body for body in sent)

    replayed = await play(NOWHERE, "replay", [question])
    assert replayed == recorded[2:]
