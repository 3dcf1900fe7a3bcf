"""Every streamed attempt settles what it holds (a breaker permit, a quota reservation) exactly
once, whichever way the stream ends: finished, broken after text, ended without its reply,
cancelled, or left by its reader."""

from __future__ import annotations

import asyncio

import pytest

from workbench.errors import ProviderError, RoutingError, StreamInterrupted
from workbench.routing import CircuitBreaker, Router
from workbench.types import ChatRequest, Reply


class Scripted:
    """A user's own streaming provider: yields `pieces`, then does what `end` says."""

    def __init__(self, pid: str, pieces: list[str], end: str = "reply") -> None:
        self.id, self.models = pid, [{"id": "m", "rpm": 100, "tpd": 100_000}]
        self.pieces, self.end, self.calls = pieces, end, 0
        self.started = asyncio.Event()

    async def call(self, request, ctx=None, model=None):
        return Reply("".join(self.pieces), provider=self.id, model="m")

    async def stream(self, request, ctx=None, model=None):
        self.calls += 1
        self.started.set()
        for piece in self.pieces:
            yield piece
            await asyncio.sleep(0)
        if self.end == "raise":
            raise RuntimeError("bug in a custom provider")
        if self.end == "outage":
            raise ProviderError("503", kind="outage", status_code=503, provider=self.id, model="m")
        if self.end == "hang":
            await asyncio.sleep(3600)
        if self.end == "reply":
            yield Reply("".join(self.pieces), provider=self.id, model="m")
        # "nothing": the stream simply ends without its Reply


def half_open_router(*providers: Scripted) -> Router:
    """Breakers that open after one outage and half-open at once: a lost probe slot would
    refuse the provider for good, so it shows."""
    return Router(list(providers), breakers=lambda key: CircuitBreaker(failure_threshold=1,
                                                                       recovery_s=0))  # fmt: skip


async def used(router: Router, key: str) -> int:
    return (await router.usage(key))["rpm"]


async def test_a_reader_that_stops_early_settles_the_half_open_probe():
    a = Scripted("a", [], end="outage")
    router = half_open_router(a)
    with pytest.raises(RoutingError):  # one outage opens the breaker; it half-opens at once
        [i async for i in router.stream(ChatRequest.of("hi"))]
    a.pieces, a.end = ["one ", "two ", "three"], "reply"
    stream = router.stream(ChatRequest.of("hi"))  # this attempt holds the one probe slot
    assert await anext(stream) == "one "
    await stream.aclose()  # the reader left after the first delta
    assert await used(router, "a:m") == 2  # it saw text: the request was spent
    # The probe slot came back: a lost one would refuse this provider for good.
    items = [i async for i in router.stream(ChatRequest.of("hi"))]
    assert items[-1].key == "a:m"
    await router.close()


async def test_a_custom_providers_error_after_text_is_an_interruption_with_the_partial_text():
    a, b = Scripted("a", ["Hello ", "wor"], end="raise"), Scripted("b", ["never"])
    router = half_open_router(a, b)
    shown: list[str] = []
    with pytest.raises(StreamInterrupted) as info:
        async for item in router.stream(ChatRequest.of("hi")):
            shown.append(item)
    assert info.value.partial == "Hello wor" == "".join(shown)
    assert "RuntimeError" in str(info.value) and b.calls == 0
    await router.close()


async def test_a_stream_that_ends_without_its_reply():
    # After text: an interruption (the reader saw it). Before any text: the walk moves on.
    talking, b = Scripted("a", ["Hel"], end="nothing"), Scripted("b", ["fine"])
    router = half_open_router(talking, b)
    with pytest.raises(StreamInterrupted) as info:
        [i async for i in router.stream(ChatRequest.of("hi"))]
    assert info.value.partial == "Hel" and b.calls == 0
    silent = Scripted("s", [], end="nothing")
    router2 = half_open_router(silent, Scripted("b", ["fine"]))
    items = [i async for i in router2.stream(ChatRequest.of("hi"))]
    assert items[-1].key == "b:m" and items[-1].attempts[0].error.kind == "empty"
    for r in (router, router2):
        await r.close()


async def test_a_cancelled_stream_before_its_first_token_gives_its_quota_back():
    a = Scripted("a", [], end="hang")
    router = half_open_router(a)

    async def read():
        return [i async for i in router.stream(ChatRequest.of("hi"))]

    task = asyncio.create_task(read())
    await a.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await used(router, "a:m") == 0  # nothing was shown: the reservation went back
    await router.close()


async def test_a_finished_stream_is_settled_once_and_logged_once():
    events: list[object] = []
    a = Scripted("a", ["ok"])
    router = Router([a], sinks=[events.append])
    items = [i async for i in router.stream(ChatRequest.of("hi"))]
    assert items[-1].key == "a:m" and await used(router, "a:m") == 1
    outcomes = [e.outcome for e in events if type(e).__name__ == "AttemptEvent"]
    assert outcomes == ["ok"]
    await router.close()
