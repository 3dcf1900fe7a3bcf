"""The HTTP client every provider sends with: httpx's API over aiohttp's connection pool.

httpx is the API a provider speaks (and the seam tests swap: a user's own `httpx.AsyncClient`,
or a respx mock, is used as given). Its own connection pool is not fast enough for an eval:
against the simulator on this project's 2-core test machine, 32 concurrent requests through
a bare `httpx.AsyncClient` got ~460 requests/s and 128 got ~260 (the pool scans every
connection on every request), while the same client over the `httpx-aiohttp` transport got
~3,900 and ~4,100. So the default client is httpx over aiohttp, with its keep-alive pool sized
from the caller's concurrency; `http_transport="httpx"` keeps httpx's own pool.

aiohttp reports failures as its own exceptions, and `httpx-aiohttp` maps them to httpx's, but
coarsely (a refused connection arrives as `httpx.ConnectTimeout`). `failure_kind` reads the
original exception, kept as `__cause__`, so a refusal stays a network failure and only a real
timeout counts as one.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from contextvars import ContextVar
from typing import Literal, get_args

import httpx

from workbench.errors import ConfigError

HttpTransport = Literal["aiohttp", "httpx"]
HTTP_TRANSPORTS: tuple[str, ...] = get_args(HttpTransport)
DEFAULT_TRANSPORT: HttpTransport = "aiohttp"
# Connections one provider keeps open when nobody said how many requests run at once.
DEFAULT_POOL = 64


def check_transport(value: object, where: str = "http_transport") -> HttpTransport:
    """`value` as an `HttpTransport`, or `ROUTER_INVALID` naming the choices."""
    if value not in HTTP_TRANSPORTS:
        raise ConfigError(
            f"{where} must be one of {', '.join(HTTP_TRANSPORTS)}, not {value!r}",
            code="ROUTER_INVALID",
        )
    return value  # type: ignore[return-value]


#: When the router's own deadline for the attempt under way cancels its call (a monotonic
#: time; None: no deadline). A call cancelled before then was stopped by someone else (a
#: Ctrl-C, a caller's cancel, a sibling task failing): not a provider's timeout, so the edge
#: (a cassette recording the exchange) must not take it for one.
ATTEMPT_DEADLINE: ContextVar[float | None] = ContextVar("attempt_deadline", default=None)


def deadline_passed() -> bool:
    """The attempt's own deadline (`ATTEMPT_DEADLINE`) has passed: a cancel now is ours."""
    deadline = ATTEMPT_DEADLINE.get()
    # The loop runs a timer up to its clock resolution early: a few ms of slack.
    return deadline is not None and time.monotonic() >= deadline - 0.005


def pool_for(concurrency: int) -> int:
    """Connections to keep alive for `concurrency` requests in flight: one each, and a few
    spare for a stream whose connection is still being released."""
    return max(8, int(concurrency) + 4)


def new_client(
    transport: HttpTransport = DEFAULT_TRANSPORT,
    pool: int = DEFAULT_POOL,
    loop: asyncio.AbstractEventLoop | None = None,
) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` over `transport`, keeping up to `pool` connections alive.

    The aiohttp session behind it is made on the first request, inside the running loop, and
    belongs to that loop (`loop`, when the caller knows it): a provider keeps a client per
    event loop."""
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    if transport == "httpx":
        return _skipping_cookies(httpx.AsyncClient(limits=limits))
    from httpx_aiohttp import HttpxAiohttpClient  # imported on first use: aiohttp is big

    client = _skipping_cookies(HttpxAiohttpClient(limits=limits))
    # People drop providers without closing them (a notebook cell, a script's end); httpx's own
    # pool let that pass in silence, an aiohttp session complains when collected. So a client
    # that is collected unclosed closes its sockets then, as httpx's would have been dropped.
    home = weakref.ref(loop) if loop is not None else None
    weakref.finalize(client, _release, client._transport, home)
    return client


def _release(transport: object, home: weakref.ref[asyncio.AbstractEventLoop] | None) -> None:
    import aiohttp

    session = getattr(transport, "client", None)  # made at the first request, if there was one
    if not isinstance(session, aiohttp.ClientSession) or session.closed:
        return
    connector = session.connector
    if connector is None:
        return
    # What aiohttp's own finalizer does, without its complaint: the sockets closed at once (by
    # their loop's thread, if that loop still runs elsewhere; nothing to do once it closed).
    # The session then counts as closed.
    loop = home() if home is not None else None
    if loop is not None and loop.is_running() and not _runs_here(loop):
        loop.call_soon_threadsafe(connector._close)
    else:
        connector._close()


def _runs_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class _SetCookies(httpx.Cookies):
    """A client's cookie jar that reads a response for cookies only when it sets one. httpx
    reads every response (building urllib's request and response objects to do so): ~10 % of
    a request to a fast server, for LLM APIs that set no cookie."""

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers:
            super().extract_cookies(response)


def _skipping_cookies(client: httpx.AsyncClient) -> httpx.AsyncClient:
    client._cookies = _SetCookies(client.cookies)  # the jar httpx reads and fills
    return client


def failure_kind(exc: BaseException) -> Literal["timeout", "network", "bad_url"]:
    """What a failed send was: a timeout, a network failure, or a URL no client can send to."""
    cause = exc.__cause__
    if cause is not None and type(cause).__module__.startswith("aiohttp"):
        import aiohttp

        if isinstance(cause, aiohttp.ServerTimeoutError | asyncio.TimeoutError):
            return "timeout"
        if isinstance(cause, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
            return "bad_url"
        return "network"
    if isinstance(exc, httpx.TimeoutException | asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return "bad_url"
    return "network"


def is_send_failure(exc: BaseException) -> bool:
    """Whether `exc` is a failure to send or read over HTTP (httpx's, a timeout, or an aiohttp
    error the transport did not translate), as opposed to a bug that must surface."""
    if isinstance(exc, httpx.HTTPError | TimeoutError):
        return True
    return type(exc).__module__.startswith("aiohttp")
