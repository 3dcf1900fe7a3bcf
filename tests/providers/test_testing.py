"""The test doubles shipped with the library: a script answers in order, one step per call,
and what a step says is what the caller (a router, a stream's reader) meets."""

from __future__ import annotations

import asyncio

import pytest

from workbench.errors import ProviderError, StreamInterrupted
from workbench.providers import FunctionProvider, Provider, ScriptedProvider, as_provider
from workbench.providers.testing import Fail, Hang, Stream
from workbench.routing import Router
from workbench.types import CallContext, ChatRequest, Reply, ToolCall, Usage

HI = ChatRequest.of("hi")


async def read(provider, request=HI, model=None) -> list[str | Reply]:
    return [piece async for piece in provider.stream(request, None, model)]


def test_both_are_whole_providers_taken_as_they_are():
    for provider in (ScriptedProvider("s", ["m1", "m2"]), FunctionProvider(lambda r, c: "x")):
        assert isinstance(provider, Provider)
        assert as_provider(provider) is provider  # not wrapped: the router sees this object
    scripted = ScriptedProvider("s", ["m1", {"id": "m2", "rpm": 3}], external=False, lane="bg")
    assert [m.id for m in scripted.models] == ["m1", "m2"] and scripted.models[1].rpm == 3
    assert not scripted.external and scripted.lane() == "bg"
    assert scripted.key(CallContext()) is None and scripted.base_url(CallContext()) == ""


async def test_the_script_answers_in_order_and_the_requests_are_kept():
    usage = Usage(prompt_tokens=3, completion_tokens=1)
    call = ToolCall("c1", "lookup", {"id": "X"}, '{"id": "X"}')
    p = ScriptedProvider("s", ["m1", "m2"], ["one", Reply("two", tool_calls=[call], usage=usage)])
    first = await p.call(HI)
    second = await p.call(ChatRequest.of("again"), CallContext(purpose="t"), "m2")
    assert (first.text, first.provider, first.model) == ("one", "s", "m1")
    assert (second.text, second.tool_calls, second.usage) == ("two", [call], usage)
    assert (second.provider, second.model) == ("s", "m2")  # named as the adapters name theirs
    assert p.asked == ["m1", "m2"] and p.requests[1].messages[-1]["content"] == "again"
    assert p.received[1].ctx.purpose == "t" and not p.received[1].stream
    assert p.left == 0


async def test_a_call_past_the_script_says_so():
    p = ScriptedProvider("s", ["m"], ["only"])
    await p.call(HI)
    p.add("more")  # e.g. between two phases of a test
    assert (await p.call(HI)).text == "more"
    with pytest.raises(AssertionError, match=r"called 3 time\(s\); its script has 2 step"):
        await p.call(HI)


async def test_a_fail_is_the_provider_error_an_adapter_raises():
    script = [
        Fail(429, retry_after_s=2.5, body="slow down"),
        Fail(503),
        Fail(kind="timeout"),
        Fail(),
    ]
    p = ScriptedProvider("groq", ["m1"], script)
    with pytest.raises(ProviderError) as limited:
        await p.call(HI)
    error = limited.value
    assert (error.kind, error.status_code, error.retry_after_s) == ("rate_limit", 429, 2.5)
    assert error.code == "PROVIDER_RATE_LIMIT" and error.key == "groq:m1"
    assert error.body == "slow down"
    kinds = []
    for _ in range(3):
        with pytest.raises(ProviderError) as caught:
            await p.call(HI)
        kinds.append(caught.value.kind)
    assert kinds == ["outage", "timeout", "network"]


async def test_an_exception_in_the_script_is_raised_as_it_is():
    p = ScriptedProvider("s", ["m"], [KeyError("bug in a custom provider")])
    with pytest.raises(KeyError, match="bug in a custom provider"):
        await p.call(HI)


async def test_a_hang_waits_until_cancelled_and_a_timed_hang_then_does_its_step():
    p = ScriptedProvider("s", ["m"], [Hang(), Hang(0.01, then="late"), Hang(0)])
    pending = asyncio.ensure_future(p.call(HI))
    await p.called(1)  # the call is in flight: only a cancellation ends it
    await asyncio.sleep(0)
    assert not pending.done()
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert (await p.call(HI)).text == "late"
    with pytest.raises(ProviderError) as caught:  # a hang without a next step times out
        await p.call(HI)
    assert caught.value.kind == "timeout"


async def test_the_attempt_timeout_cuts_a_hang_and_the_walk_moves_on():
    slow = ScriptedProvider("slow", ["m"], [Hang()])
    fine = ScriptedProvider("fine", ["m"], ["here"])
    router = Router([slow, fine], attempt_timeout_s=0.05)
    result = await router.route(HI)
    assert result.key == "fine:m" and slow.asked == ["m"]
    first = result.attempts[0]
    assert (first.key, first.outcome, first.error.kind) == ("slow:m", "error", "timeout")
    await router.close()


async def test_a_stream_yields_its_pieces_then_how_it_ends():
    broken = ProviderError("503", kind="outage", status_code=503)
    script = [
        Stream(["po", "ng"]),
        Stream(["a"], then=Reply("A!")),
        Stream(["x"], then=None),
        Stream(["y"], then=broken),
        "whole",
        Fail(500),
    ]
    p = ScriptedProvider("s", ["m"], script)
    *pieces, end = await read(p)
    assert pieces == ["po", "ng"] and isinstance(end, Reply) and end.text == "pong"
    assert [x if isinstance(x, str) else x.text for x in await read(p)] == ["a", "A!"]
    assert await read(p) == ["x"]  # ended without its reply
    got: list[str | Reply] = []
    with pytest.raises(ProviderError):
        async for piece in p.stream(HI):
            got.append(piece)
    assert got == ["y"]  # the text came before the break
    *pieces, end = await read(p)  # a plain answer streams as one piece
    assert pieces == ["whole"] and isinstance(end, Reply) and end.provider == "s"
    with pytest.raises(ProviderError):
        await read(p)
    assert [r.stream for r in p.received] == [True] * 6


async def test_a_stream_step_asked_without_streaming_answers_whole():
    p = ScriptedProvider("s", ["m"], [Stream(["a", "b"]), Stream(["c"], then=Fail(503))])
    assert (await p.call(HI)).text == "ab"
    with pytest.raises(ProviderError):
        await p.call(HI)


async def test_the_router_walks_a_script_like_any_provider():
    groq = ScriptedProvider("groq", ["m1", "m2"], [Fail(429, retry_after_s=2), "pong"])
    router = Router([groq])
    result = await router.route(HI)
    assert result.key == "groq:m2" and result.value.text == "pong"
    assert [a.outcome for a in result.attempts] == ["error", "ok"]
    assert groq.asked == ["m1", "m2"]
    await router.close()


async def test_a_broken_stream_after_text_is_interrupted_not_retried():
    a = ScriptedProvider("a", ["m"], [Stream(["half "], then=Fail(503))])
    b = ScriptedProvider("b", ["m"], ["never asked"])
    router = Router([a, b])
    with pytest.raises(StreamInterrupted):
        [piece async for piece in router.stream(HI)]
    assert b.received == []
    await router.close()


async def test_a_function_answers_every_call_sync_or_async():
    def echo(request: ChatRequest, ctx: CallContext) -> str:
        return "you said: " + request.messages[-1]["content"]

    async def tagged(request: ChatRequest, ctx: CallContext) -> Reply:
        await asyncio.sleep(0)
        return Reply(f"for {ctx.purpose}", model="own")

    sync = FunctionProvider(echo, id="echo")
    assert (await sync.call(ChatRequest.of("ping"))).text == "you said: ping"
    assert (await sync.call(HI)).provider == "echo" and sync.asked == ["m", "m"]
    reply = await FunctionProvider(tagged).call(HI, CallContext(purpose="tests"))
    assert (reply.text, reply.model, reply.provider) == ("for tests", "own", "function")
    *pieces, end = await read(sync)
    assert pieces == ["you said: hi"] and isinstance(end, Reply)


async def test_a_function_that_raises_fails_the_call_and_a_wrong_answer_is_refused():
    def limited(request, ctx):
        raise Fail(429, retry_after_s=1).error("f", "m")

    with pytest.raises(ProviderError) as caught:
        await FunctionProvider(limited, id="f").call(HI)
    assert caught.value.kind == "rate_limit"
    with pytest.raises(TypeError, match="returned int, not a Reply or str"):
        await FunctionProvider(lambda r, c: 42).call(HI)  # type: ignore[arg-type, return-value]


async def test_called_waits_for_the_calls_not_for_time():
    p = FunctionProvider(lambda r, c: "ok")
    waiter = asyncio.ensure_future(p.called(2))
    await p.call(HI)
    await asyncio.sleep(0)
    assert not waiter.done()
    await p.call(HI)
    await asyncio.wait_for(waiter, 5)
    await p.called(1)  # already true: returns at once
