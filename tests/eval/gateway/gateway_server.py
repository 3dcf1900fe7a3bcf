"""A real gateway on loopback for the gateway's tests: its uvicorn in a thread of the test
process (the `sim` fixture's simulator behind it), its DuckDB file in the test's folder."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn

from workbench.eval.gateway import LoggedRouter
from workbench.eval.gateway.app import create_app
from workbench.eval.gateway.keys import ClientKeys

CLIENT_KEY = "wbgw-client-key-0123456789abcdef"
PROVIDER_KEY = "sk-provider-secret-0123456789abcdef"


def providers_toml(sim: Any, *models: str, name: str = "gw") -> str:
    listed = ", ".join(f'"{m}"' for m in models)
    return (
        f'[router]\nname = "{name}"\n[[providers]]\nid = "sim"\n'
        f'base_url = "{sim.openai_url}"\nkey_env = "WB_TEST_GW_KEY"\nmodels = [{listed}]\n'
    )


class Gateway:
    """`LoggedRouter.open` + `create_app` under uvicorn, in a background thread."""

    def __init__(self, providers: Path, db: Path, max_body_bytes: int) -> None:
        self.db = db
        self.logged = LoggedRouter.open(providers, db, dataset="gateway")
        self.run_id = self.logged.run_id
        app = create_app(self.logged, ClientKeys([CLIENT_KEY]), max_body_bytes=max_body_bytes)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", access_log=False, ws="none"
        )
        self.server = uvicorn.Server(config)

        async def serve() -> None:
            try:
                await self.server.serve(sockets=[sock])
            finally:
                try:
                    await app.state.in_flight.drain()  # as `workbench serve gateway` does
                finally:
                    await self.logged.aclose()

        self.thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "no gateway"
            time.sleep(0.005)

    def stop(self) -> None:
        """Stop as SIGTERM does: the requests in flight finish (those left are stopped and
        logged cancelled), then the store is closed."""
        if self.thread.is_alive():
            self.server.should_exit = True
            self.thread.join(timeout=30)
