"""Server-sent events to an app, over a REAL uvicorn server."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer
from starlette.applications import Starlette
from starlette.routing import Route

from workbench.errors import RoutingError
from workbench.serve import SSE_HEADERS, EventStream, event_stream, sse_event


# -- a real server on loopback -----------------------------------------------------------------
@pytest.fixture
def serve() -> Iterator[Callable[[Any], str]]:
    """`serve(app)` runs `app` under uvicorn in a thread on a free port; returns its URL."""
    running: list[LoopbackServer] = []

    def start(app: Any) -> str:
        served = LoopbackServer(app).start()
        running.append(served)
        return served.url

    yield start
    for served in running:
        served.stop()


def app_for(make: Callable[[], EventStream]) -> Starlette:
    async def endpoint(request: Any) -> EventStream:
        return make()

    return Starlette(routes=[Route("/events", endpoint)])


def blocks(text: str) -> list[tuple[str | None, Any]]:
    """(event type, decoded data) for each block of an SSE body."""
    out = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        kind, data = None, None
        for line in block.split("\n"):
            if line.startswith("event: "):
                kind = line[len("event: ") :]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
        out.append((kind, data))
    return out


async def wait_for(event: threading.Event, limit_s: float = 5.0) -> bool:
    return await asyncio.to_thread(event.wait, limit_s)


# -- the wire format -----------------------------------------------------------------------------
def test_sse_event_is_one_block_with_compact_json_and_no_event_line_for_none():
    assert sse_event("step", {"id": "s1", "tool": "read"}) == (
        b'event: step\ndata: {"id":"s1","tool":"read"}\n\n'
    )
    assert sse_event(None, [1, 2]) == b"data: [1,2]\n\n"
    text = sse_event("delta", {"t": "é\nline two"}).decode()
    assert text == 'event: delta\ndata: {"t":"é\\nline two"}\n\n'  # the newline stays escaped


def test_an_event_type_with_a_line_break_is_refused():
    with pytest.raises(ValueError):
        sse_event("step\ndata: forged", {})


# -- over uvicorn ------------------------------------------------------------------------------
async def test_events_stream_in_order_with_the_sse_headers(serve):
    async def job(stream: EventStream) -> None:
        assert await stream.emit("step", {"id": "s1"})
        assert await stream.emit("delta", {"text": "Bonjour"})
        assert await stream.emit("done", {"ok": True})

    url = serve(app_for(lambda: event_stream(job)))
    async with httpx.AsyncClient() as client:
        response = await client.get(url + "/events")
    assert response.status_code == 200
    for name, value in SSE_HEADERS.items():
        if name == "Connection":
            continue  # hop-by-hop: checked below on the raw header list
        assert response.headers[name] == value
    assert response.headers["x-accel-buffering"] == "no"
    assert response.headers.get("connection") == "keep-alive"
    assert blocks(response.text) == [
        ("step", {"id": "s1"}),
        ("delta", {"text": "Bonjour"}),
        ("done", {"ok": True}),
    ]


async def test_extra_headers_are_added_and_may_override(serve):
    async def job(stream: EventStream) -> None:
        await stream.emit("x", 1)

    url = serve(
        app_for(lambda: event_stream(job, headers={"X-Route": "r1", "Cache-Control": "no-store"}))
    )
    async with httpx.AsyncClient() as client:
        response = await client.get(url + "/events")
    assert response.headers["x-route"] == "r1"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-accel-buffering"] == "no"


async def test_events_arrive_while_the_job_still_runs(serve):
    """Not buffered until the end: the first event is readable before the job finishes."""
    release = threading.Event()

    async def job(stream: EventStream) -> None:
        await stream.emit("first", 1)
        await asyncio.to_thread(release.wait, 5)
        await stream.emit("second", 2)

    url = serve(app_for(lambda: event_stream(job)))
    async with httpx.AsyncClient() as client:
        async with client.stream("GET", url + "/events") as response:
            chunks = response.aiter_text()
            first = await asyncio.wait_for(chunks.__anext__(), 5)
            assert blocks(first) == [("first", 1)]
            release.set()
            rest = "".join([c async for c in chunks])
    assert blocks(rest) == [("second", 2)]


async def test_a_client_that_leaves_sets_cancelled_and_the_job_sees_it(serve):
    observed = threading.Event()
    after: list[bool] = []
    streams: list[EventStream] = []

    async def job(stream: EventStream) -> None:
        streams.append(stream)
        await stream.emit("step", {"n": 1})
        try:
            await asyncio.wait_for(stream.cancelled.wait(), 5)
        except TimeoutError:
            return
        after.append(await stream.emit("step", {"n": 2}))  # nobody is listening
        observed.set()

    url = serve(app_for(lambda: event_stream(job)))
    async with httpx.AsyncClient() as client:
        async with client.stream("GET", url + "/events") as response:
            first = await asyncio.wait_for(response.aiter_text().__anext__(), 5)
            assert blocks(first) == [("step", {"n": 1})]
        # leaving the block closes the half-read response: the connection drops
    started = time.monotonic()
    assert await wait_for(observed, 5), "the job never saw the client leave"
    assert time.monotonic() - started < 2
    assert streams[0].cancelled.is_set()
    assert after == [False]


async def test_a_normal_close_does_not_set_cancelled(serve):
    streams: list[EventStream] = []
    finished = threading.Event()

    async def job(stream: EventStream) -> None:
        streams.append(stream)
        await stream.emit("done", {})
        finished.set()

    url = serve(app_for(lambda: event_stream(job)))
    async with httpx.AsyncClient() as client:
        response = await client.get(url + "/events")
    assert blocks(response.text) == [("done", {})]
    assert await wait_for(finished)
    await asyncio.sleep(0.2)  # give a (wrong) disconnect listener every chance to fire
    assert streams[0].closed
    assert not streams[0].cancelled.is_set()


async def test_emit_after_close_returns_false_and_writes_nothing(serve):
    late: list[bool] = []
    done = threading.Event()

    async def job(stream: EventStream) -> None:
        await stream.emit("answer", {"text": "blue"})

        async def too_late() -> None:
            await asyncio.sleep(0.05)
            late.append(await stream.emit("ghost", {"boo": True}))
            done.set()

        asyncio.get_running_loop().create_task(too_late())  # outlives the job on purpose

    url = serve(app_for(lambda: event_stream(job)))
    async with httpx.AsyncClient() as client:
        response = await client.get(url + "/events")
    assert await wait_for(done)
    assert late == [False]
    assert blocks(response.text) == [("answer", {"text": "blue"})]
    assert "ghost" not in response.text


async def test_a_failing_job_ends_with_a_code_never_a_message_or_traceback(serve):
    async def job(stream: EventStream) -> None:
        await stream.emit("step", 1)
        raise ValueError("secret sk-abcdefghijklmnop in /srv/app.py line 3")

    url = serve(app_for(lambda: event_stream(job)))
    async with httpx.AsyncClient() as client:
        response = await client.get(url + "/events")
    assert response.status_code == 200
    assert blocks(response.text) == [("step", 1), ("error", {"code": "INTERNAL"})]
    assert "sk-" not in response.text and "Traceback" not in response.text
    assert "ValueError" not in response.text


async def test_a_workbench_error_ends_with_its_code(serve):
    async def job(stream: EventStream) -> None:
        raise RoutingError("no model could answer: 3 candidate(s)", code="AI_UNAVAILABLE")

    url = serve(app_for(lambda: event_stream(job)))
    async with httpx.AsyncClient() as client:
        response = await client.get(url + "/events")
    assert blocks(response.text) == [("error", {"code": "AI_UNAVAILABLE"})]
    assert "candidate" not in response.text


async def test_on_error_chooses_the_final_event(serve):
    seen: list[BaseException] = []

    def on_error(exc: BaseException) -> tuple[str, Any]:
        seen.append(exc)
        return "failed", {"code": "MINE", "retry": True}

    async def job(stream: EventStream) -> None:
        raise KeyError("x")

    url = serve(app_for(lambda: event_stream(job, on_error=on_error)))
    async with httpx.AsyncClient() as client:
        response = await client.get(url + "/events")
    assert blocks(response.text) == [("failed", {"code": "MINE", "retry": True})]
    assert len(seen) == 1 and isinstance(seen[0], KeyError)


async def test_a_broken_on_error_still_ends_with_a_code(serve):
    def on_error(exc: BaseException) -> tuple[str, Any]:
        raise RuntimeError("oops")

    async def job(stream: EventStream) -> None:
        raise RoutingError("gone", code="AI_CANCELLED")

    url = serve(app_for(lambda: event_stream(job, on_error=on_error)))
    async with httpx.AsyncClient() as client:
        response = await client.get(url + "/events")
    assert blocks(response.text) == [("error", {"code": "AI_CANCELLED"})]


async def test_a_job_that_fails_after_the_client_left_writes_nothing_more(serve):
    calls: list[BaseException] = []
    done = threading.Event()

    def on_error(exc: BaseException) -> tuple[str, Any]:
        calls.append(exc)
        return "error", {"code": "X"}

    async def job(stream: EventStream) -> None:
        try:
            await stream.emit("step", 1)
            await asyncio.wait_for(stream.cancelled.wait(), 5)
            raise RoutingError("cancelled", code="AI_CANCELLED")
        finally:
            done.set()

    url = serve(app_for(lambda: event_stream(job, on_error=on_error)))
    async with httpx.AsyncClient() as client:
        async with client.stream("GET", url + "/events") as response:
            await asyncio.wait_for(response.aiter_text().__anext__(), 5)
    assert await wait_for(done)
    await asyncio.sleep(0.1)
    assert calls == []  # nobody to tell: on_error is not even asked


# -- raw ASGI, no server: the exact messages sent ------------------------------------------------
async def test_raw_asgi_messages_and_no_write_after_close():
    sent: list[dict[str, Any]] = []
    never = asyncio.Event()
    holder: list[EventStream] = []

    async def receive() -> dict[str, Any]:
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def job(stream: EventStream) -> None:
        holder.append(stream)
        await stream.emit("a", {"x": 1})

    stream = event_stream(job)
    assert await stream.emit("early", 1) is False  # not serving yet: nowhere to write
    await stream({"type": "http", "method": "GET", "path": "/", "headers": []}, receive, send)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert (b"x-accel-buffering", b"no") in sent[0]["headers"]
    assert (b"content-type", b"text/event-stream") in sent[0]["headers"]
    bodies = [(m["body"], m["more_body"]) for m in sent[1:]]
    assert bodies == [(b'event: a\ndata: {"x":1}\n\n', True), (b"", False)]
    count = len(sent)
    assert await holder[0].emit("after", {"y": 2}) is False
    assert len(sent) == count
    assert stream.closed and not stream.cancelled.is_set()


async def test_a_write_that_fails_counts_as_the_client_leaving():
    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    calls = 0

    async def send(message: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1
        if message["type"] == "http.response.body":
            raise OSError("broken pipe")

    results: list[bool] = []

    async def job(stream: EventStream) -> None:
        results.append(await stream.emit("a", 1))
        results.append(stream.cancelled.is_set())
        results.append(await stream.emit("b", 2))

    stream = event_stream(job)
    await stream({"type": "http", "method": "GET", "path": "/", "headers": []}, receive, send)
    assert results == [False, True, False]
    assert calls == 2  # the start, the one failed write: nothing after
