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
its attempt, route and output are still logged, cancelled (`AI_CANCELLED`). So does the
gateway's shutdown past its grace (see in_flight.py): a JSON client then gets a 503 in
OpenAI's shape with code `AI_CANCELLED`, a stream an error event of that shape.
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
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench.errors import ConfigError, ProviderError, RoutingError, WorkbenchError
from workbench.eval.gateway import openai_wire as wire
from workbench.eval.gateway.in_flight import STOPPING, InFlight
from workbench.eval.gateway.keys import ClientKeys
from workbench.eval.gateway.logged_router import CHAIN, LoggedRouter, Stop
from workbench.providers.openai_compat import OpenAICompatibleProvider
from workbench.routing import RouteResult
from workbench.serve.sse import EventStream

__all__ = ["MAX_BODY_BYTES", "create_app"]

log = logging.getLogger("workbench.eval.gateway")

# A chat request with a few pictures fits; a body past it is refused before it is read whole.
MAX_BODY_BYTES = 8 * 1024 * 1024
# When the model list says its models were made: a fixed date, as the simulator's list has.
_CREATED = 1_767_225_600


def create_app(
    logged: LoggedRouter,
    keys: ClientKeys,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    in_flight: InFlight | None = None,
) -> Starlette:
    """The gateway's ASGI app over `logged` (which the caller closes), for clients holding
    one of `keys`. `in_flight` (also `app.state.in_flight`) tracks its requests and stops
    them: the server drains it before it closes `logged`."""
    in_flight = in_flight or InFlight()
    gateway = _Gateway(logged, keys, max_body_bytes, in_flight)
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", gateway.chat, methods=["POST"]),
            Route("/v1/models", gateway.models, methods=["GET"]),
        ],
        middleware=[Middleware(_Tracked, in_flight=in_flight)],
    )
    app.state.in_flight = in_flight
    return app


class _Tracked:
    """Starlette's middleware shape around `InFlight.wrap`."""

    def __init__(self, app: ASGIApp, in_flight: InFlight) -> None:
        self.tracked = in_flight.wrap(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.tracked(scope, receive, send)


class _Gateway:
    def __init__(
        self, logged: LoggedRouter, keys: ClientKeys, max_body_bytes: int, in_flight: InFlight
    ) -> None:
        self.logged = logged
        self.keys = keys
        self.max_body_bytes = max_body_bytes
        self.in_flight = in_flight

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
            self._check_passed(call)
        except WorkbenchError as exc:
            return error_response(exc)
        item_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if call.stream:
            return await self._stream(call, item_id)
        try:
            result = await self.logged.route(
                call.request, item_id=item_id, model=call.model, stop=self._stop
            )
        except WorkbenchError as exc:
            return error_response(exc)
        except Exception:  # a bug of ours: logged here, one line to the client
            log.exception("the gateway failed on %s", item_id)
            return JSONResponse(_INTERNAL, status_code=500)
        body = wire.completion(result.value, id=item_id, model=_answered_by(result))
        return JSONResponse(body)

    def _check_passed(self, call: wire.ChatCall) -> None:
        """The model asked for exists, and every provider its route may reach takes the fields
        sent as written (`stop`, `response_format`: OpenAI's shape, which a Gemini body does
        not take): else the field is refused, never sent where it would fail or be lost."""
        pinned = self.logged.check_model(call.model) or self.logged.model
        if not call.request.extra:
            return
        provider = None if pinned is None else pinned.partition(":")[0]
        others = [
            p.id
            for p in self.logged.config.router.providers
            if provider in (None, p.id) and not isinstance(p, OpenAICompatibleProvider)
        ]
        if others:
            field = sorted(call.request.extra)[0]
            raise wire.invalid(
                field,
                f"sent as written to OpenAI-compatible providers only, and the route may reach "
                f"{', '.join(others)}: pin a model of another provider, or leave it out",
            )

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
        items = self.logged.stream(call.request, item_id=item_id, model=call.model, stop=self._stop)
        try:
            first = await _next(items, self.in_flight.stop)
        except BaseException as exc:
            await items.aclose()  # type: ignore[attr-defined]
            if isinstance(exc, WorkbenchError):
                return error_response(exc)
            if not isinstance(exc, Exception):
                raise
            log.exception("the gateway failed on %s", item_id)
            return JSONResponse(_INTERNAL, status_code=500)
        if first is None:  # the gateway stopped before the first token
            await items.aclose()  # type: ignore[attr-defined]
            return error_response(_stopping())

        async def job(stream: EventStream) -> None:
            async with contextlib.aclosing(items):  # type: ignore[type-var]
                await _events(stream, first, items, call, item_id, self.in_flight.stop)

        return EventStream(job)

    @property
    def _stop(self) -> Stop:
        return (self.in_flight.stop, STOPPING)


async def _next(
    items: AsyncIterator[str | RouteResult], *signals: asyncio.Event
) -> str | RouteResult | None:
    """The route's next item, or None once it ended or one of `signals` fired first (the
    client left, the gateway is stopping): then the route's pending step is cancelled, which
    logs its attempt `cancelled`, without waiting for a model that may be silent a minute."""
    step = asyncio.ensure_future(anext(items, None))
    waits = [asyncio.ensure_future(s.wait()) for s in signals]
    try:
        await asyncio.wait({step, *waits}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
        if not step.done():
            step.cancel()
            await asyncio.wait({step})
    if step.cancelled():
        return None
    return step.result()


async def _events(
    stream: EventStream,
    first: str | RouteResult,
    items: AsyncIterator[str | RouteResult],
    call: wire.ChatCall,
    id: str,
    stop: asyncio.Event,
) -> None:
    """The route's items as chat.completion.chunk events: text deltas, then the calls, the
    finish reason, the usage if asked, `[DONE]`. The chunks name the chain asked for until the
    route's result says who answered; the calls, finish and usage chunks name that model. A
    failure after the first token (the stream broke: never retried elsewhere, the client has
    the text) is an `error` event, as OpenAI sends one; so is the gateway's shutdown."""
    created = int(time.time())
    kw: dict[str, Any] = {"id": id, "model": call.model, "created": created}
    await stream.emit(None, wire.chunk({"role": "assistant", "content": ""}, **kw))
    item: str | RouteResult | None = first
    try:
        while item is not None:
            if isinstance(item, RouteResult):
                reply = item.value
                kw["model"] = _answered_by(item)
                for calls in wire.tool_call_chunks(reply, **kw):
                    await stream.emit(None, calls)
                await stream.emit(None, wire.chunk({}, finish=wire.finish_reason(reply), **kw))
                if call.include_usage:
                    await stream.emit(None, wire.usage_chunk(reply, **kw))
                break
            if item and not await stream.emit(None, wire.chunk({"content": item}, **kw)):
                return  # the client left: closing `items` logs the route cancelled
            item = await _next(items, stream.cancelled, stop)
            if item is None and (stop.is_set() or stream.cancelled.is_set()):
                await stream.emit(None, _error_parts(_stopping())[1])
                return
    except WorkbenchError as exc:
        await stream.emit(None, _error_parts(exc)[1])
        return
    except Exception:
        log.exception("the gateway failed on %s", id)
        await stream.emit(None, _INTERNAL)
        return
    await stream.emit_text("[DONE]")


def _stopping() -> WorkbenchError:
    return RoutingError(STOPPING, code="AI_CANCELLED", status=499)


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
    elif exc.code.startswith("STORE_"):  # the gateway's own file failed: not the client's fault
        status, kind = 503, "server_error"
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
