"""`workbench serve gateway`'s server: the gateway's app under uvicorn, ended gracefully.

SIGTERM (or Ctrl-C) stops taking connections; the requests in flight finish (a stream keeps
streaming) for up to `grace_s` seconds, after which the ones left are cancelled and logged
cancelled; then the run is marked finished and the store flushed and closed. The process then
exits 0: a gateway told to stop has done its job. (uvicorn raises the signal again once it has
shut down, for the handler that was there before it; ours only notes it, so that closing the
store is never cut short.)
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import signal
import socket
from collections.abc import Callable
from typing import Any

import uvicorn

from workbench.eval.gateway.app import MAX_BODY_BYTES, create_app
from workbench.eval.gateway.keys import ClientKeys
from workbench.eval.gateway.logged_router import LoggedRouter

__all__ = ["is_loopback", "serve"]


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def serve(
    logged: LoggedRouter,
    keys: ClientKeys,
    *,
    host: str = "127.0.0.1",
    port: int = 8780,
    max_body_bytes: int = MAX_BODY_BYTES,
    grace_s: float = 30.0,
    started: Callable[[], Any] | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT, then close `logged` (its run finished, its store
    closed). `started` is called once the port is bound."""
    asyncio.run(_serve(logged, keys, host, port, max_body_bytes, grace_s, started))


async def _serve(
    logged: LoggedRouter,
    keys: ClientKeys,
    host: str,
    port: int,
    max_body_bytes: int,
    grace_s: float,
    started: Callable[[], Any] | None,
) -> None:
    config = uvicorn.Config(
        create_app(logged, keys, max_body_bytes=max_body_bytes),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,  # a request line is logged to DuckDB, with what it cost
        lifespan="off",
        timeout_graceful_shutdown=math.ceil(grace_s),
    )
    server = _Server(config, started)
    # uvicorn hands the signal it stopped for back to the handler it found: this one, which
    # lets `serve` return (the default would end the process before the store is closed).
    previous = {
        sig: signal.signal(sig, lambda _sig, _frame: None)
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        await server.serve()
    finally:
        try:
            await logged.aclose()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


class _Server(uvicorn.Server):
    """uvicorn's server, saying when its port is bound (its banner is ours)."""

    def __init__(self, config: uvicorn.Config, started: Callable[[], Any] | None) -> None:
        super().__init__(config)
        self._started = started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self._started is not None:
            self._started()
