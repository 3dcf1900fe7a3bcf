"""`workbench serve gateway`'s server: the gateway's app under uvicorn, ended gracefully.

Its socket is bound first (`bind`), before any file is opened: a port in use, a bad port or a
host that does not resolve is one `GATEWAY_INVALID` line, and no empty run is left behind.

SIGTERM (or Ctrl-C) stops taking connections; the requests in flight finish (a stream keeps
streaming) for up to `grace_s` seconds. Then, or at once on a second signal, every route left
is told to stop (one signal, `InFlight.stop`): each ends `AI_CANCELLED`, its attempt logged
`cancelled`, its client answered (a 503 in OpenAI's error shape, or a stream's error event).
The requests are awaited; only then is the run marked finished and the store flushed and
closed. uvicorn's own graceful timeout is only a backstop past that. The process exits 0: a
gateway told to stop has done its job. (uvicorn raises the signal again once it has shut down,
for the handler that was there before it; ours only notes it, so that closing the store is
never cut short.)
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import signal
import socket
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn

from workbench.errors import ConfigError
from workbench.eval.gateway.app import MAX_BODY_BYTES, create_app
from workbench.eval.gateway.in_flight import InFlight
from workbench.eval.gateway.keys import ClientKeys
from workbench.eval.gateway.logged_router import LoggedRouter

# How long past the grace uvicorn waits before it cancels requests itself: by then the
# gateway's own stop has ended them all, unless one is stuck on a client that reads nothing.
_BACKSTOP_S = 10

__all__ = ["bind", "is_loopback", "serve"]


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def bind(
    host: str, port: int, *, who: str = "the gateway", code: str = "GATEWAY_INVALID"
) -> socket.socket:
    """A TCP socket bound to `host`:`port` (0: any free port), or `code` naming the address
    and why (a port in use, out of range, a host that does not resolve)."""
    where = f"{host}:{port}"
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: a port is 0 to 65535", code=code)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (OSError, UnicodeError) as exc:
        raise ConfigError(
            f"{who} cannot listen on {where}: the host does not resolve ({exc})", code=code
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        why = exc.strerror or str(exc)
        raise ConfigError(f"{who} cannot listen on {where}: {why}", code=code) from None
    return sock


def serve(
    logged: LoggedRouter,
    keys: ClientKeys,
    sock: socket.socket,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    grace_s: float = 30.0,
    started: Callable[[], Any] | None = None,
) -> None:
    """Serve on `sock` (from `bind`) until SIGTERM or SIGINT, then close `logged` (its run
    finished, its store closed) once every request has ended. `started` is called once the
    server listens."""
    asyncio.run(_serve(logged, keys, sock, max_body_bytes, grace_s, started))


async def _serve(
    logged: LoggedRouter,
    keys: ClientKeys,
    sock: socket.socket,
    max_body_bytes: int,
    grace_s: float,
    started: Callable[[], Any] | None,
) -> None:
    in_flight = InFlight()
    config = uvicorn.Config(
        create_app(logged, keys, max_body_bytes=max_body_bytes, in_flight=in_flight),
        log_level="warning",
        access_log=False,  # a request line is logged to DuckDB, with what it cost
        lifespan="off",
        timeout_graceful_shutdown=math.ceil(grace_s) + _BACKSTOP_S,
    )
    server = _Server(config, started, in_flight, grace_s)
    # uvicorn hands the signal it stopped for back to the handler it found: this one, which
    # lets `serve` return (the default would end the process before the store is closed).
    previous = {
        sig: signal.signal(sig, lambda _sig, _frame: None)
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        try:
            await server.serve(sockets=[sock])
        finally:
            server.cancel_grace()
            await in_flight.drain()  # every route stopped and awaited: no row is lost
    finally:
        try:
            await logged.aclose()
        finally:
            sock.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)


class _Server(uvicorn.Server):
    """uvicorn's server, saying when it listens (its banner is ours), whose signals start the
    gateway's own graceful stop: the first gives the requests in flight `grace_s`, a second
    stops them at once. uvicorn's forced exit (which would await none of them) never happens."""

    def __init__(
        self,
        config: uvicorn.Config,
        started: Callable[[], Any] | None,
        in_flight: InFlight,
        grace_s: float,
    ) -> None:
        super().__init__(config)
        self._started = started
        self._in_flight = in_flight
        self._grace_s = grace_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._grace: asyncio.TimerHandle | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets)
        if self.started and self._started is not None:
            self._started()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        again = self.should_exit
        super().handle_exit(sig, frame)
        self.force_exit = False
        if self._loop is not None:  # a signal handler: hand the rest to the loop
            self._loop.call_soon_threadsafe(self._stopping, again)

    def _stopping(self, again: bool) -> None:
        if again or self._grace_s <= 0:
            self._in_flight.stop.set()
        elif self._grace is None:
            self._grace = asyncio.get_running_loop().call_later(
                self._grace_s, self._in_flight.stop.set
            )

    def cancel_grace(self) -> None:
        if self._grace is not None:
            self._grace.cancel()
