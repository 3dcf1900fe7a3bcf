"""The gateway: an OpenAI-compatible server whose every request goes through a `LoggedRouter`.

    POST /v1/chat/completions   JSON or SSE, tools both ways (prose calls come back as tool_calls)
    GET  /v1/models             workbench/chain (the whole chain) and every provider:model

Each request is checked in this order, cheapest first and the caller's key before its body:
its gateway key (401), its body's size (413, read no further than the limit), its JSON and
fields (400), its model (404); then routed. Every refusal and failure has OpenAI's error
shape, `{"error": {"message", "type", "param", "code"}}`, which the OpenAI SDKs read into
their exceptions; `message` starts with the workbench code. A provider's failure is 429 when
the route failed for rate limits or quotas (with `Retry-After` when a model is expected free),
502 when a model broke its answer, 503 when no model could answer. A provider's key never
appears in a response: the providers file's keys stay in this process's environment.

A client that hangs up on a stream cancels its route at once (no further model is asked);
its attempt, route and output are still logged, cancelled (`AI_CANCELLED`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from workbench.errors import ConfigError, ProviderError, RoutingError, WorkbenchError
from workbench.eval.gateway import openai_wire as wire
from workbench.eval.gateway.keys import ClientKeys
from workbench.eval.gateway.logged_router import CHAIN, LoggedRouter
from workbench.routing import RouteResult

__all__ = ["MAX_BODY_BYTES", "create_app"]

log = logging.getLogger("workbench.eval.gateway")

# A chat request with a few pictures fits; a body past it is refused before it is read whole.
MAX_BODY_BYTES = 8 * 1024 * 1024
# When the model list says its models were made: a fixed date, as the simulator's list has.
_CREATED = 1_767_225_600


def create_app(
    logged: LoggedRouter, keys: ClientKeys, *, max_body_bytes: int = MAX_BODY_BYTES
) -> Starlette:
    """The gateway's ASGI app over `logged` (which the caller closes), for clients holding
    one of `keys`."""
    gateway = _Gateway(logged, keys, max_body_bytes)
    return Starlette(
        routes=[
            Route("/v1/chat/completions", gateway.chat, methods=["POST"]),
            Route("/v1/models", gateway.models, methods=["GET"]),
        ]
    )


class _Gateway:
    def __init__(self, logged: LoggedRouter, keys: ClientKeys, max_body_bytes: int) -> None:
        self.logged = logged
        self.keys = keys
        self.max_body_bytes = max_body_bytes

    def _refused(self, request: Request) -> Response | None:
        if self.keys.allows_header(request.headers.get("authorization")):
            return None
        said = "a key it does not hold" if request.headers.get("authorization") else "no key"
        return error_response(
            WorkbenchError(
                f"the gateway was sent {said}: send Authorization: Bearer <gateway key>",
                code="GATEWAY_UNAUTHORIZED",
                status=401,
            )
        )

    async def models(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        listed = [(CHAIN, "workbench")] + [(f"{p}:{m}", p) for p, m in self.logged.models()]
        data = [
            {"id": name, "object": "model", "created": _CREATED, "owned_by": owner}
            for name, owner in listed
        ]
        return JSONResponse({"object": "list", "data": data})

    async def chat(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            call = wire.read_chat(_json(await self._body(request)))
            self.logged.check_model(call.model)
        except WorkbenchError as exc:
            return error_response(exc)
        item_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if call.stream:
            return await self._stream(call, item_id)
        try:
            result = await self.logged.route(call.request, item_id=item_id, model=call.model)
        except WorkbenchError as exc:
            return error_response(exc)
        except Exception:  # a bug of ours: logged here, one line to the client
            log.exception("the gateway failed on %s", item_id)
            return JSONResponse(_INTERNAL, status_code=500)
        body = wire.completion(result.value, id=item_id, model=_answered_by(result))
        return JSONResponse(body)

    async def _body(self, request: Request) -> bytes:
        """The body, read no further than the limit (a declared length past it is refused
        before a byte is read)."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise self._too_large()
        parts, size = [], 0
        async for part in request.stream():
            size += len(part)
            if size > self.max_body_bytes:
                raise self._too_large()
            parts.append(part)
        return b"".join(parts)

    def _too_large(self) -> WorkbenchError:
        return WorkbenchError(
            f"the request body is larger than the gateway's {self.max_body_bytes} bytes",
            code="GATEWAY_BODY_TOO_LARGE",
            status=413,
        )

    async def _stream(self, call: wire.ChatCall, item_id: str) -> Response:
        """The route's first item is awaited before the response starts: a route that fails
        before its first token is an HTTP error with its status, like a JSON request's."""
        items = self.logged.stream(call.request, item_id=item_id, model=call.model)
        try:
            first = await anext(items)
        except WorkbenchError as exc:
            return error_response(exc)
        except Exception:
            log.exception("the gateway failed on %s", item_id)
            return JSONResponse(_INTERNAL, status_code=500)
        return EventStream(_events(first, items, call, item_id))


async def _events(
    first: str | RouteResult, items: AsyncIterator[str | RouteResult], call: wire.ChatCall, id: str
) -> AsyncIterator[bytes]:
    """The route's items as chat.completion.chunk events: text deltas, then the calls, the
    finish reason, the usage if asked, `[DONE]`. A failure after the first token (the stream
    broke: never retried elsewhere, the client has the text) is an `error` event, as OpenAI
    sends one."""
    created = int(time.time())
    kw: dict[str, Any] = {"id": id, "model": call.model, "created": created}
    yield _sse(wire.chunk({"role": "assistant", "content": ""}, **kw))
    item: str | RouteResult | None = first
    try:
        while item is not None:
            if isinstance(item, RouteResult):
                reply = item.value
                for calls in wire.tool_call_chunks(reply, **kw):
                    yield _sse(calls)
                yield _sse(wire.chunk({}, finish=wire.finish_reason(reply), **kw))
                if call.include_usage:
                    yield _sse(wire.usage_chunk(reply, **kw))
                break
            if item:
                yield _sse(wire.chunk({"content": item}, **kw))
            item = await anext(items, None)
    except WorkbenchError as exc:
        yield _sse(_error_parts(exc)[1])
        return
    except Exception:
        log.exception("the gateway failed on %s", id)
        yield _sse(_INTERNAL)
        return
    yield b"data: [DONE]\n\n"


def _sse(data: Any) -> bytes:
    return (
        b"data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
    )


class EventStream(Response):
    """Server-sent events whose producer is cancelled the moment its client hangs up: the
    route stops (no further model is asked) and logs its attempt and output as cancelled.
    Starlette's own streaming response notices a hang-up only at its next write, which a slow
    model may not make for a minute; and it leaves the producer to the garbage collector,
    which may close it after the store has."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[bytes]) -> None:
        # No content, no content-length: `Response.__init__` would declare an empty body.
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        self.events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        pump = asyncio.ensure_future(self._pump(send))
        gone = asyncio.ensure_future(_hung_up(receive))
        try:
            await asyncio.wait({pump, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pump, gone):
                task.cancel()
            await asyncio.gather(pump, gone, return_exceptions=True)

    async def _pump(self, send: Send) -> None:
        async with contextlib.aclosing(self.events) as events:  # type: ignore[type-var]
            try:
                async for data in events:
                    await send({"type": "http.response.body", "body": data, "more_body": True})
            except OSError:  # the server's word for a client gone mid-write
                return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _hung_up(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


# ------------------------------------------------------------------ errors
def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(
            "the request body is not JSON", code="GATEWAY_REQUEST_INVALID", status=400
        ) from None


# A bug of ours, in OpenAI's shape: the traceback goes to the gateway's log, never the client.
_INTERNAL = wire.error_body(
    "INTERNAL: the gateway failed; its log says why", "server_error", "INTERNAL"
)


def _answered_by(result: RouteResult) -> str:
    return result.key.split("@", 1)[0]  # provider:model, without the lane


def error_response(exc: WorkbenchError) -> JSONResponse:
    """A refusal or a failure in OpenAI's error shape, with its status."""
    status, body, headers = _error_parts(exc)
    return JSONResponse(body, status_code=status, headers=headers)


def _error_parts(exc: WorkbenchError) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, OpenAI's error body, headers) for one of our errors. `code` is the workbench
    code, except where OpenAI's clients match on their own (a bad key, an unknown model)."""
    headers: dict[str, str] = {}
    code = exc.code
    if exc.code == "GATEWAY_UNAUTHORIZED":
        status, kind, code = 401, "invalid_request_error", "invalid_api_key"
        headers["www-authenticate"] = "Bearer"
    elif exc.code == "GATEWAY_MODEL_UNKNOWN":
        status, kind, code = 404, "invalid_request_error", "model_not_found"
    elif isinstance(exc, ConfigError) or exc.code == "GATEWAY_BODY_TOO_LARGE":
        status, kind = exc.status, "invalid_request_error"
    elif exc.status == 429 or _rate_limited(exc):
        status, kind = 429, "rate_limit_error"
        wait = _retry_after_s(exc)
        if wait is not None:
            headers["retry-after"] = str(wait)
    elif isinstance(exc, ProviderError):
        status, kind = 502, "server_error"
    elif 400 <= exc.status < 500 and exc.status != 499:  # a picture nobody can see, ...
        status, kind = exc.status, "invalid_request_error"
    else:
        status, kind = (exc.status if 500 <= exc.status < 600 else 503), "server_error"
    param = exc.details.get("param") if isinstance(exc.details.get("param"), str) else None
    return status, wire.error_body(str(exc), kind, code, param), headers


def _rate_limited(exc: WorkbenchError) -> bool:
    """A route that failed for the providers' limits (a 429, a spent quota, cooling after
    one), not because a model broke."""
    retry = getattr(exc, "retry", None)
    return isinstance(exc, RoutingError) and getattr(retry, "reason", None) in (
        "rate_limit",
        "daily_quota",
    )


def _retry_after_s(exc: WorkbenchError) -> int | None:
    """When to ask again: a failed route's hint (when a model is expected free), or an
    admission's own `retry_after_s`; None when nobody knows."""
    at_ms = getattr(getattr(exc, "retry", None), "at_ms", None)
    if at_ms is not None:
        return max(1, math.ceil((at_ms - time.time() * 1000) / 1000))
    wait = getattr(exc, "retry_after_s", None)
    return max(1, math.ceil(wait)) if isinstance(wait, int | float) else None
