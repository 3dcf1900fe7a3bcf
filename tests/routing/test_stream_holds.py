"""Every streamed attempt settles what it holds (a breaker permit, a quota reservation) exactly
once, whichever way the stream ends: finished, broken after text, ended without its reply,
cancelled, or left by its reader."""

from __future__ import annotations

import asyncio

import pytest

from workbench.errors import RoutingError, StreamInterrupted
from workbench.providers import ScriptedProvider, as_provider
from workbench.providers.interface import unwrap
from workbench.providers.testing import Fail, Hang, Step, Stream
from workbench.routing import CircuitBreaker, Router
from workbench.types import ChatRequest, Reply


def scripted(pid: str, *script: Step) -> ScriptedProvider:
    """A streaming provider of one model with quotas (so what a stream holds can be counted)."""
    return ScriptedProvider(pid, [{"id": "m", "rpm": 100, "tpd": 100_000}], script)


def half_open_router(*providers: ScriptedProvider) -> Router:
    """Breakers that open after one outage and half-open at once: a lost probe slot would
    refuse the provider for good, so it shows."""
    return Router(
        list(providers), breakers=lambda key: CircuitBreaker(failure_threshold=1, recovery_s=0)
    )


async def used(router: Router, key: str) -> int:
    return (await router.usage(key))["rpm"]


async def test_a_reader_that_stops_early_settles_the_half_open_probe():
    whole = Stream(["one ", "two ", "three"])
    a = scripted("a", Stream([], then=Fail(503)), whole, whole)
    router = half_open_router(a)
    with pytest.raises(RoutingError):  # one outage opens the breaker; it half-opens at once
        [i async for i in router.stream(ChatRequest.of("hi"))]
    stream = router.stream(ChatRequest.of("hi"))  # this attempt holds the one probe slot
    assert await anext(stream) == "one "
    await stream.aclose()  # the reader left after the first delta
    assert await used(router, "a:m") == 2  # it saw text: the request was spent
    # The probe slot came back: a lost one would refuse this provider for good.
    items = [i async for i in router.stream(ChatRequest.of("hi"))]
    assert items[-1].key == "a:m"
    await router.close()


async def test_a_custom_providers_error_after_text_is_an_interruption_with_the_partial_text():
    a = scripted("a", Stream(["Hello ", "wor"], then=RuntimeError("bug in a custom provider")))
    b = scripted("b", "never")
    router = half_open_router(a, b)
    shown: list[str] = []
    with pytest.raises(StreamInterrupted) as info:
        async for item in router.stream(ChatRequest.of("hi")):
            shown.append(item)
    assert info.value.partial == "Hello wor" == "".join(shown)
    assert "RuntimeError" in str(info.value) and b.received == []
    await router.close()


async def test_a_stream_that_ends_without_its_reply():
    # After text: an interruption (the reader saw it). Before any text: the walk moves on.
    talking, b = scripted("a", Stream(["Hel"], then=None)), scripted("b", "fine")
    router = half_open_router(talking, b)
    with pytest.raises(StreamInterrupted) as info:
        [i async for i in router.stream(ChatRequest.of("hi"))]
    assert info.value.partial == "Hel" and b.received == []
    silent = scripted("s", Stream([], then=None))
    router2 = half_open_router(silent, scripted("b", "fine"))
    items = [i async for i in router2.stream(ChatRequest.of("hi"))]
    assert items[-1].key == "b:m" and items[-1].attempts[0].error.kind == "empty"
    for r in (router, router2):
        await r.close()


async def test_a_cancelled_stream_before_its_first_token_gives_its_quota_back():
    a = scripted("a", Stream([], then=Hang()))
    router = half_open_router(a)

    async def read():
        return [i async for i in router.stream(ChatRequest.of("hi"))]

    task = asyncio.create_task(read())
    await a.called()  # the stream has begun: cancelled before its first token
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await used(router, "a:m") == 0  # nothing was shown: the reservation went back
    await router.close()


async def test_a_finished_stream_is_settled_once_and_logged_once():
    events: list[object] = []
    a = scripted("a", Stream(["ok"]))
    router = Router([a], sinks=[events.append])
    items = [i async for i in router.stream(ChatRequest.of("hi"))]
    assert items[-1].key == "a:m" and await used(router, "a:m") == 1
    outcomes = [e.outcome for e in events if type(e).__name__ == "AttemptEvent"]
    assert outcomes == ["ok"]
    await router.close()


class OwnStreaming:
    """A user's own provider: `id`, `models`, `call()` and `stream()`, nothing else. Kept as the
    tests' own, not a `ScriptedProvider` (a whole Provider, taken as it is): it is the protocol
    under test, the least a provider may be, wrapped once by `as_provider`."""

    def __init__(self) -> None:
        self.id, self.models = "own", [{"id": "m", "rpm": 100}]

    async def call(self, request, ctx=None, model=None):
        return Reply("whole", provider=self.id, model="m")

    async def stream(self, request, ctx=None, model=None):
        yield "str"
        yield "eamed"
        yield Reply("streamed", provider=self.id, model="m")


async def test_a_users_own_streaming_provider_is_wrapped_once_and_streams():
    own = OwnStreaming()
    wrapped = as_provider(own)
    assert wrapped is not own and unwrap(wrapped) is own  # the protocol's defaults filled in
    router = Router([own])
    items = [i async for i in router.stream(ChatRequest.of("hi"))]
    assert items[:-1] == ["str", "eamed"] and items[-1].key == "own:m"
    assert items[-1].value.text == "streamed" and await used(router, "own:m") == 1
    await router.close()
