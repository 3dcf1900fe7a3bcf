"""What a recording keeps of a request nobody saw answered: a call cancelled by its caller
(a Ctrl-C, a cancelled task) and a stream its reader left early are not recorded — replayed,
they would be a timeout or a truncated answer the provider never gave — while a call our own
attempt deadline cut is recorded as the timeout it was."""

from __future__ import annotations

import asyncio

import pytest

from workbench.cassettes import Cassette
from workbench.errors import CassetteError, RoutingError
from workbench.providers import openai_compatible_provider
from workbench.routing import Router
from workbench.sim import SimServer
from workbench.types import ChatRequest

KEY = "sk-cancel-test-key-0123456789abcdef"
FLEET = {
    "seed": 5,
    "persona": [
        {"id": "slow", "tool_style": "none", "latency_ms": 3000},
        {"id": "slow-stream", "tool_style": "none", "latency_ms": 0},
    ],
}


def _router(base: str, model: str, **settings: object) -> Router:
    return Router([openai_compatible_provider("p", f"{base}/v1", KEY, [model])], **settings)


async def _sent(sim: SimServer) -> None:
    for _ in range(500):  # until the request reached the simulator: it is in flight
        if sim.requests():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the request never reached the simulator")


async def test_a_call_its_caller_cancelled_is_not_recorded_but_our_timeout_is(tmp_path):
    async with SimServer(FLEET) as sim:
        with Cassette(tmp_path / "cancel", "record") as cassette:
            router = _router(sim.base_url, "slow")
            router.use_cassette(cassette)
            task = asyncio.ensure_future(router.route(ChatRequest.of("hello")))
            await _sent(sim)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert Cassette(tmp_path / "cancel").exchanges == []
        with Cassette(tmp_path / "timeout", "record") as cassette:
            router = _router(sim.base_url, "slow", attempt_timeout_s=0.3)
            router.use_cassette(cassette)
            with pytest.raises(RoutingError):
                await router.route(ChatRequest.of("hello"))
        assert [e.error for e in Cassette(tmp_path / "timeout").exchanges] == ["timeout"]


async def test_a_stream_its_reader_left_is_not_recorded_and_does_not_replay(tmp_path):
    request = ChatRequest.of("Tell me a long story about a lighthouse keeper and the sea.")
    async with SimServer(FLEET) as sim:
        with Cassette(tmp_path, "record") as cassette:
            router = _router(sim.base_url, "slow-stream")
            router.use_cassette(cassette)
            stream = router.stream(request)
            async for item in stream:
                assert isinstance(item, str)  # one delta read, then the reader leaves
                break
            await stream.aclose()  # type: ignore[attr-defined]
    assert Cassette(tmp_path).exchanges == []
    with Cassette(tmp_path) as cassette:
        router = _router("http://127.0.0.1:9", "slow-stream")
        router.use_cassette(cassette)
        with pytest.raises(CassetteError) as caught:
            async for _ in router.stream(request):
                pass
    assert caught.value.code == "REPLAY_MISS"
