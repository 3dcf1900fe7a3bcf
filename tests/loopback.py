"""An ASGI app under a real uvicorn server on 127.0.0.1, for tests that need real HTTP.

The server runs in a thread with its own event loop, on a port the OS picks; `on_stop` (a
coroutine function) runs in that loop after the server stops, for clients that live there.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Self

import uvicorn


class LoopbackServer:
    def __init__(self, app: Any, *, on_stop: Callable[[], Awaitable[Any]] | None = None) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            access_log=False,
            ws="none",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._on_stop = on_stop
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            try:
                await self._server.serve(sockets=[self._sock])
            finally:
                if self._on_stop is not None:
                    await self._on_stop()

        try:
            asyncio.run(main())
        finally:
            self._sock.close()

    def start(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert self._thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
