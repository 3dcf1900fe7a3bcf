"""The gateway's SSE producer closes the route's stream it reads, whatever ends it: a client
that stopped reading (a write blocked) and a server that cancels it must not leave the route
to the garbage collector, which would log its cancelled attempt after the store closed."""

from __future__ import annotations

import asyncio
from typing import Any

from workbench.eval.gateway import openai_wire as wire
from workbench.eval.gateway.app import _Gateway
from workbench.eval.gateway.in_flight import InFlight
from workbench.eval.gateway.keys import ClientKeys
from workbench.types import ChatRequest


class Route:
    """A route's stream that says whether it was closed (its `finally` ran)."""

    def __init__(self) -> None:
        self.closed = False

    async def stream(self, request: ChatRequest, **_: Any):
        try:
            while True:
                yield "word "
        finally:
            self.closed = True


class Blocked:
    """An event stream whose client stopped reading: every write waits forever."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.writing = asyncio.Event()

    async def emit(self, type: str | None, data: Any) -> bool:
        self.writing.set()
        await asyncio.Event().wait()
        return True

    async def emit_text(self, text: str) -> bool:
        return await self.emit(None, text)


def test_a_stream_cancelled_mid_write_closes_its_route():
    route = Route()
    gateway = _Gateway(route, ClientKeys(["k" * 32]), 1 << 20, InFlight())  # type: ignore[arg-type]
    call = wire.read_chat({"messages": [{"role": "user", "content": "hi"}], "stream": True})

    async def go() -> None:
        response = await gateway._stream(call, "chatcmpl-1")
        blocked = Blocked()
        job = asyncio.ensure_future(response.job(blocked))  # type: ignore[attr-defined]
        await blocked.writing.wait()
        job.cancel()
        await asyncio.wait({job})
        assert route.closed  # at once, not when the garbage collector gets to it

    asyncio.run(go())
