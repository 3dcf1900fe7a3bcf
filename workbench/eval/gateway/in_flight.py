"""`InFlight`: the gateway's requests in flight, and the one signal that stops them.

The gateway owns its shutdown rather than leaving it to uvicorn, because uvicorn's end of a
grace period cancels request tasks without awaiting them (each prints a traceback, its client
gets a plain-text 500) and its forced exit (a second Ctrl-C) awaits nothing at all, so the
store could be closed under routes still writing their rows. Here:

1. `stop` is one `asyncio.Event`, handed to every route as `ctx.signal`: once set, a route
   ends at once with `AI_CANCELLED` (its attempt logged `cancelled`), which a JSON client gets
   as a 503 in OpenAI's error shape and a stream as an error event.
2. Every request's task is tracked (`wrap`), so that `drain` can set `stop`, await them all,
   and cancel only those that did not end (a route waiting on something the signal cannot
   reach); a request cancelled after `stop` answers 503 instead of raising into uvicorn.
3. Only after `drain` does the server close the router and the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.eval.gateway.openai_wire import error_body

__all__ = ["InFlight"]

log = logging.getLogger("workbench.eval.gateway")

# What a route stopped by the shutdown tells its client (and its output row).
STOPPING = "the gateway is shutting down"


class InFlight:
    """The requests in flight (their tasks) and `stop`, the signal every route is given."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.tasks: set[asyncio.Task[object]] = set()

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """`app`, with each HTTP request's task tracked while it runs."""

        async def tracked(scope: Scope, receive: Receive, send: Send) -> None:
            task = asyncio.current_task()
            if scope["type"] != "http" or task is None:
                await app(scope, receive, send)
                return
            started = False

            async def sending(message: Message) -> None:
                nonlocal started
                started = started or message["type"] == "http.response.start"
                await send(message)

            self.tasks.add(task)
            try:
                await app(scope, receive, sending)
            except asyncio.CancelledError:
                if not self.stop.is_set():
                    raise  # not ours: the server's own business
                # Cancelled by `drain` (or uvicorn's backstop) after the routes were told to
                # stop: its route has logged itself cancelled; the client gets an answer,
                # not a traceback in the server's log.
                task.uncancel()
                if not started:
                    await _unavailable(send)
            finally:
                self.tasks.discard(task)

        return tracked

    async def drain(self, settle_s: float = 5.0) -> None:
        """Stop every route, then await the requests in flight; those that have not ended
        within `settle_s` are cancelled (again, for a write blocked on a client that stopped
        reading) until they end. Nothing is left running when it returns."""
        self.stop.set()
        for _ in range(3):
            pending = {t for t in self.tasks if not t.done()}
            if not pending:
                return
            _, pending = await asyncio.wait(pending, timeout=settle_s)
            for task in pending:
                task.cancel()
        if any(not t.done() for t in self.tasks):
            log.warning("%d request(s) did not end when cancelled", len(self.tasks))


async def _unavailable(send: Send) -> None:
    body = error_body(f"AI_CANCELLED: {STOPPING}", "server_error", "AI_CANCELLED")
    data = json.dumps(body).encode()
    with contextlib.suppress(Exception, asyncio.CancelledError):
        async with asyncio.timeout(1):
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(data)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": data, "more_body": False})
