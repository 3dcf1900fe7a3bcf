"""`CassetteTransport`: the httpx transport a provider's client sends through when it holds a
cassette.

It is httpx's own seam: the provider builds its request exactly as without a cassette, and
the transport answers it. Replay answers from the cassette and never opens a socket; record
sends through the provider's real client (aiohttp's pool, httpx's, or the caller's own),
passes the response on as it arrives and writes the exchange when the body has been read; a
stream is recorded event by event with the time each arrived. Record-missing replays what is
there and records the rest.

Secrets: no request header is recorded, a key-bearing query parameter is dropped from the
path, and, as a last guard, every credential the request carried (its auth headers' values,
a key in its query) is scrubbed from everything written, should a server echo it back.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import math
import time
from collections.abc import AsyncIterator, Callable
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

import httpx

from workbench.cassettes.format import (
    KEPT_HEADERS,
    KEPT_PREFIXES,
    Chunk,
    Exchange,
    SendFailure,
)
from workbench.cassettes.matching import KEY_PARAMS, recorded_path, request_body
from workbench.providers.http import deadline_passed

if TYPE_CHECKING:
    from workbench.cassettes.cassette import Cassette

REDACTED = "[redacted]"
# Request headers whose values are credentials (and any whose name says so, below).
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization", "x-goog-api-key", "api-key"})
_AUTH_WORDS = ("key", "token", "secret", "auth", "password")


class CassetteTransport(httpx.AsyncBaseTransport):
    """Answers `provider`'s requests from `cassette`, or records them through `send` (the
    provider's real client; None in replay, which sends nothing)."""

    def __init__(
        self,
        cassette: Cassette,
        provider: str,
        send: Callable[[], httpx.AsyncClient] | None,
    ) -> None:
        self.cassette = cassette
        self.provider = provider
        self._send = send

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        path = recorded_path(request.url)
        secrets = _secrets(request)
        body = scrub(request_body(request.content), secrets)
        recorded, occurrence = self.cassette.take(self.provider, request.method, path, body)
        if recorded is not None:
            return _replayed(recorded, request)
        if self._send is None:  # a replay-only cassette answers or raises in `take`
            raise AssertionError("a cassette that records needs the provider's client")
        base = Exchange(self.provider, occurrence, request.method, path, body)
        return await _recorded(self.cassette, base, self._send(), request, secrets)


# -- replay ------------------------------------------------------------------------------------
def _replayed(exchange: Exchange, request: httpx.Request) -> httpx.Response:
    """The recorded answer, as the provider's client would have received it. A recorded
    failure is raised as the same kind of failure: a refused send, a timeout, a broken stream."""
    if not exchange.status:
        if exchange.error == "timeout":
            raise httpx.ReadTimeout("recorded: the request timed out", request=request)
        raise httpx.ConnectError("recorded: the request failed to send", request=request)
    if exchange.chunks is not None:
        stream: httpx.AsyncByteStream = _ReplayStream(exchange.chunks, exchange.error, request)
    elif isinstance(exchange.response, str):
        stream = httpx.ByteStream(exchange.response.encode("utf-8"))
    elif exchange.response is None:
        stream = httpx.ByteStream(b"")
    else:
        stream = httpx.ByteStream(json.dumps(exchange.response).encode("utf-8"))
    return httpx.Response(exchange.status, headers=exchange.headers, stream=stream, request=request)


class _ReplayStream(httpx.AsyncByteStream):
    """A recorded stream's events, at once: the recorded timings are for reading (and for
    a benchmark's first-token figure), a replay does not wait them out."""

    def __init__(
        self, chunks: tuple[Chunk, ...], error: str | None, request: httpx.Request
    ) -> None:
        self._chunks = chunks
        self._error = error
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk.data.encode("utf-8")
        if self._error == "timeout":
            raise httpx.ReadTimeout("recorded: the stream timed out here", request=self._request)
        if self._error is not None:
            raise httpx.ReadError("recorded: the stream broke here", request=self._request)


# -- record ------------------------------------------------------------------------------------
async def _recorded(
    cassette: Cassette,
    base: Exchange,
    client: httpx.AsyncClient,
    request: httpx.Request,
    secrets: list[str],
) -> httpx.Response:
    try:
        upstream = await client.send(request, stream=True)
    except asyncio.CancelledError:
        # Our own deadline ran out while the server kept silent (the router's attempt
        # timeout): a replay times out at once in its place. Cancelled before it (a Ctrl-C,
        # a caller's cancel), the answer was never seen: nothing is recorded, and
        # record-missing asks again.
        if deadline_passed():
            cassette.add(_failed(base, "timeout"))
        raise
    except (httpx.TimeoutException, TimeoutError):
        cassette.add(_failed(base, "timeout"))
        raise
    except Exception as exc:
        from workbench.providers.http import failure_kind, is_send_failure

        if is_send_failure(exc):
            cassette.add(_failed(base, "timeout" if failure_kind(exc) == "timeout" else "network"))
        raise
    kept = _kept_headers(upstream.headers, secrets)
    headers = [
        (k, v)
        for k, v in upstream.headers.multi_items()
        if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    streamed = "text/event-stream" in upstream.headers.get("content-type", "")
    recorder = _Recorder(cassette, base, upstream, kept, streamed, secrets)
    return httpx.Response(
        upstream.status_code,
        headers=headers,
        stream=recorder,
        request=request,
        extensions=upstream.extensions,
    )


def _failed(base: Exchange, error: SendFailure) -> Exchange:
    return Exchange(base.provider, base.occurrence, base.method, base.path, base.body, error=error)


class _Recorder(httpx.AsyncByteStream):
    """Passes the upstream body on as it arrives and writes the exchange once: when the body
    ends, breaks, or the reader stops reading (what arrived by then is what was answered)."""

    def __init__(
        self,
        cassette: Cassette,
        base: Exchange,
        upstream: httpx.Response,
        headers: dict[str, str],
        streamed: bool,
        secrets: list[str],
    ) -> None:
        self._cassette = cassette
        self._base = base
        self._upstream = upstream
        self._headers = headers
        self._streamed = streamed
        self._secrets = secrets
        self._started = time.perf_counter()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # a stream's text since its last complete event
        self._events: list[Chunk] = []
        self._body: list[str] = []
        self._written = False
        self._ended = False  # the upstream body was read to its end

    async def __aiter__(self) -> AsyncIterator[bytes]:
        broken: SendFailure | None = None
        try:
            async for data in self._upstream.aiter_bytes():
                self._take(self._decoder.decode(data))
                yield data
            self._ended = True
        except asyncio.CancelledError:
            if deadline_passed():
                broken = "timeout"  # our own deadline, as for a send (above)
            else:
                self._written = True  # someone else's cancel: an answer nobody finished
            raise
        except GeneratorExit:
            if self._streamed:
                self._written = True  # the reader left: what arrived is no answer
            raise
        except Exception as exc:
            from workbench.providers.http import failure_kind, is_send_failure

            if is_send_failure(exc):
                broken = "timeout" if failure_kind(exc) == "timeout" else "network"
            raise
        finally:
            self._take(self._decoder.decode(b"", final=True))
            self._write(broken)

    async def aclose(self) -> None:
        if self._streamed and not self._ended:
            # A stream its reader left early is not an answer: replayed to a reader who
            # reads it whole it would end without its reply. Nothing is recorded, so
            # record-missing asks again and a replay skips it as not recorded.
            self._written = True
        self._write(None)
        await self._upstream.aclose()

    def _take(self, text: str) -> None:
        if not text:
            return
        if not self._streamed:
            self._body.append(text)
            return
        self._pending += text.replace("\r\n", "\n")
        while "\n\n" in self._pending:
            event, self._pending = self._pending.split("\n\n", 1)
            self._events.append(Chunk(self._ms(), event + "\n\n"))

    def _ms(self) -> int:
        return round((time.perf_counter() - self._started) * 1000)

    def _write(self, broken: SendFailure | None) -> None:
        if self._written:
            return
        self._written = True
        base, secrets = self._base, self._secrets
        chunks = None
        response: Any = None
        if self._streamed:
            tail = [Chunk(self._ms(), self._pending)] if self._pending else []
            chunks = tuple(Chunk(c.ms, scrub(c.data, secrets)) for c in [*self._events, *tail])
        else:
            text = "".join(self._body)
            try:
                response = json.loads(text) if text else None
            except ValueError:
                response = text
            response = scrub(response, secrets)
        self._cassette.add(
            Exchange(
                base.provider,
                base.occurrence,
                base.method,
                base.path,
                base.body,
                status=self._upstream.status_code,
                headers=self._headers,
                response=response,
                chunks=chunks,
                error=broken,
            )
        )


def _kept_headers(headers: httpx.Headers, secrets: list[str]) -> dict[str, str]:
    kept: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower in KEPT_HEADERS or lower.startswith(KEPT_PREFIXES):
            if lower == "retry-after":
                value = retry_after_seconds(value, headers.get("date"))
            kept[lower] = scrub(value, secrets)
    return kept


def retry_after_seconds(value: str, date: str | None, now: float | None = None) -> str:
    """A `Retry-After` as seconds: an HTTP date becomes the wait it meant when it was said
    (from the response's own `Date`, else the record time). Kept as a date it would replay
    as "already past" the day after, and the router would not cool as it did."""
    if value.strip().isdigit():
        return value
    try:
        until = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return value  # not a date either: kept as said, the meter reads it as it can
    said = now if now is not None else time.time()
    if date:
        with contextlib.suppress(TypeError, ValueError, IndexError):
            said = parsedate_to_datetime(date).timestamp()
    return str(max(0, math.ceil(until - said)))


# -- secrets -----------------------------------------------------------------------------------
def _secrets(request: httpx.Request) -> list[str]:
    """Every credential `request` carries: its auth headers' values (and a bearer's token
    alone), and a key in its query."""
    found: list[str] = []
    for name, value in request.headers.items():
        lower = name.lower()
        if lower in _AUTH_HEADERS or any(word in lower for word in _AUTH_WORDS):
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() in ("bearer", "basic", "token"):
                found.append(token)
    for name, value in request.url.params.multi_items():
        if name.lower() in KEY_PARAMS:
            found.append(value)
    # Longest first: a bearer header is scrubbed whole before its token alone.
    return sorted({s.strip() for s in found if len(s.strip()) >= 4}, key=len, reverse=True)


def scrub(value: Any, secrets: list[str]) -> Any:
    """`value` (JSON or text) with every secret replaced, in every string and key."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    return value


__all__ = ["REDACTED", "CassetteTransport", "scrub"]
