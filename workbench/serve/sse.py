"""Server-sent events to an app, over raw ASGI.

`event_stream(job)` is a Starlette `Response` (so FastAPI passes it through untouched) and a
plain ASGI app. While it streams, one task listens for `http.disconnect`; the job writes
events with `await stream.emit(type, data)`. Each block is `event: <type>\\ndata: <json>\\n\\n`
with compact JSON, behind headers that keep proxies from buffering (`X-Accel-Buffering: no`).

Three rules the callers rely on:
- `cancelled` is set when the CLIENT leaves (or a write to it fails) — never when the
  server closes the stream normally. Nothing else is cancelled by it: the job reads it, and
  should hand it to the router as `ctx.signal` so no further model is asked for nobody.
- After the stream closed, or once the client left, `emit` returns False and writes nothing;
  it never raises.
- A job that raises ends the stream with one last event, `on_error(exc)` (default
  `("error", {"code": exc.code or "INTERNAL"})`): a code, never a traceback or a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

__all__ = ["SSE_HEADERS", "EventStream", "event_stream", "sse_event"]

log = logging.getLogger(__name__)

SSE_HEADERS: dict[str, str] = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}

Job = Callable[["EventStream"], Awaitable[Any]]
OnError = Callable[[BaseException], tuple[str, Any]]


def _compact(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def sse_event(type: str | None, data: Any) -> bytes:
    """One SSE block: `event: <type>\\ndata: <compact json>\\n\\n` (no event line for None).

    JSON never holds a raw line break, so the data is always one line; a type with a line
    break would forge another field, and is refused."""
    body = f"data: {_compact(data)}\n\n"
    if type is None:
        return body.encode("utf-8")
    if "\n" in type or "\r" in type:
        raise ValueError("an SSE event type cannot contain a line break")
    return f"event: {type}\n{body}".encode()


def _default_on_error(exc: BaseException) -> tuple[str, Any]:
    code = getattr(exc, "code", None)
    return "error", {"code": code if isinstance(code, str) and code else "INTERNAL"}


class EventStream(Response):
    """A streaming SSE response driven by `job(stream)`; see the module docstring."""

    media_type = "text/event-stream"

    def __init__(
        self,
        job: Job,
        *,
        on_error: OnError | None = None,
        headers: dict[str, str] | None = None,
        status_code: int = 200,
    ) -> None:
        # Response.__init__ would render a body and add a charset: set its fields directly.
        self.job = job
        self.on_error = on_error
        self.status_code = status_code
        self.background = None
        merged = {k.lower(): v for k, v in SSE_HEADERS.items()}
        merged.update({k.lower(): v for k, v in (headers or {}).items()})
        self.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in merged.items()]
        self.cancelled = asyncio.Event()
        self.closed = False
        self._send: Send | None = None
        self._started = False
        self._lock: asyncio.Lock | None = None

    # -- writing ---------------------------------------------------------------------------
    async def emit(self, type: str | None, data: Any) -> bool:
        """Write one event (None: a `data:` line alone, as OpenAI's streams send). False
        (nothing written) once closed or once the client left."""
        return await self._block(sse_event(type, data))

    async def emit_text(self, text: str) -> bool:
        """Write `data: <text>` as it is, not as JSON: OpenAI's last line, `[DONE]`."""
        if "\n" in text or "\r" in text:
            raise ValueError("SSE data text cannot contain a line break")
        return await self._block(f"data: {text}\n\n".encode())

    async def _block(self, block: bytes) -> bool:
        if self.closed or self.cancelled.is_set() or self._send is None:
            return False
        assert self._lock is not None
        async with self._lock:
            if self.closed or self.cancelled.is_set():
                return False
            return await self._write(block, more=True)

    async def _write(self, body: bytes, *, more: bool) -> bool:
        assert self._send is not None
        try:
            await self._send({"type": "http.response.body", "body": body, "more_body": more})
        except Exception:  # the client went away under us: that is a disconnect
            self.cancelled.set()
            return False
        return True

    # -- the ASGI side ---------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise RuntimeError("an event stream answers HTTP requests only")
        if self._started:
            raise RuntimeError("an event stream can be served once")
        self._started = True
        self._send = send
        self._lock = asyncio.Lock()
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        listener = asyncio.create_task(self._listen(receive))
        ended = False
        try:
            await self._run_job()
            ended = True
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
            async with self._lock:
                self.closed = True  # from here on, emit is a no-op (and so is a late disconnect)
                # A job cancelled (a server shutting down) writes no more: its client may have
                # stopped reading, and a last write would block the cancelled task.
                if ended and not self.cancelled.is_set():
                    await self._write(b"", more=False)

    async def _listen(self, receive: Receive) -> None:
        while True:
            message: Message = await receive()
            if message["type"] == "http.disconnect":
                if not self.closed:
                    self.cancelled.set()
                return

    async def _run_job(self) -> None:
        try:
            await self.job(self)
        except Exception as exc:
            if self.cancelled.is_set():
                log.info("event stream job ended after the client left: %s", type(exc).__name__)
                return
            log.warning("event stream job failed", exc_info=exc)
            try:
                kind, data = (self.on_error or _default_on_error)(exc)
                await self.emit(kind, data)
            except Exception as inner:  # a broken on_error still ends with a code
                log.warning("event stream on_error failed", exc_info=inner)
                await self.emit(*_default_on_error(exc))


def event_stream(
    job: Job,
    *,
    on_error: OnError | None = None,
    headers: dict[str, str] | None = None,
) -> EventStream:
    """An SSE response that runs `job(stream)` while it streams, then closes."""
    return EventStream(job, on_error=on_error, headers=headers)
