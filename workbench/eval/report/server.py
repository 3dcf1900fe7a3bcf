"""`workbench view`: a run's report served straight from its DuckDB file.

The same page a big run's report folder holds, at the same URLs under the launch's secret
(`/<token>/`, `/<token>/data/rows-NNNNN.js`, `/<token>/data/stories-NNNNN.js`), each chunk
built on request by the functions the writer uses (`chunks.RunTable`): nothing is written, and
a chunk is one bounded read, whatever the run's size. The file is opened read-only (a snapshot
copy while a run writes it), DuckDB's memory is capped, and one request reads at a time (a
DuckDB connection is one reader); the server listens on loopback unless told otherwise.

Loopback is not private from the browser: any website the user visits may add
`<script src="http://127.0.0.1:8790/data/stories-00000.js">` (a chunk is a script, and
browsers load cross-origin scripts without asking), or rebind its own name to 127.0.0.1. So
every URL holds a random token made at launch and printed once (as Jupyter does), every
response says `Cross-Origin-Resource-Policy: same-origin`, and a request is refused (403)
when its Host is not the address the server listens on, or when the browser says another
site asked for it (`Sec-Fetch-Site`).
"""

from __future__ import annotations

import asyncio
import re
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.errors import WorkbenchError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import resolve_run
from workbench.eval.report.chunks import RunTable, chunk_script
from workbench.eval.report.page import MEMORY_LIMIT, run_index_page

__all__ = ["ViewAddress", "ViewedRun", "create_app", "serve_view"]

_CHUNK = re.compile(r"(rows|stories)-(\d{5})\.js")
# Names a browser on this machine may use for a loopback server.
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
# Listening on every interface: the machine's names are not known, the token guards it.
_EVERY_INTERFACE = ("0.0.0.0", "::", "")
# Said on every response: no other origin may embed what the server answers, and the page's
# address (which holds the token) is never sent on as a referrer.
_HEADERS = {
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True)
class ViewAddress:
    """Where the view listens and the launch's secret every URL holds (`token`, random per
    launch unless given)."""

    host: str
    port: int
    token: str

    @classmethod
    def of(cls, sock: socket.socket, host: str) -> ViewAddress:
        """The address `sock` (bound to `host`) listens on, with a fresh token."""
        return cls(host, int(sock.getsockname()[1]), secrets.token_urlsafe(24))

    @property
    def url(self) -> str:
        """The page's URL: it ends with "/", so the page's relative `data/...` URLs resolve
        under the token."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/{self.token}/"

    def refusal(self, headers: Headers) -> str | None:
        """Why a request is refused, or None. A Host other than this address's (a website
        rebinding its own name to loopback) is refused, as is a request the browser says
        another site made: a page of another port of localhost is the same *site*, so only
        the page itself (`same-origin`) and the user's own navigation (`none`) pass, and a
        link followed to the page (a top-level navigation: the linking site cannot read what
        it opens)."""
        asked = headers.get("sec-fetch-site")
        followed = (
            headers.get("sec-fetch-mode") == "navigate"
            and headers.get("sec-fetch-dest") == "document"
        )
        if asked not in (None, "none", "same-origin") and not followed:
            return "refused: asked by another site"
        if self.host in _EVERY_INTERFACE:
            return None
        bound = f"[{self.host}]" if ":" in self.host else self.host
        hosts = {f"{name}:{self.port}" for name in (bound, *_LOOPBACK_NAMES)}
        if headers.get("host", "").lower() not in hosts:
            return "refused: not an address this server listens on"
        return None


class ViewedRun:
    """One run of an open file, its page made once and its chunks read on request."""

    def __init__(self, wb: RunFrames, run: str = "latest") -> None:
        self.wb = wb
        with wb.out_of_memory_said():  # REPORT_OUT_OF_MEMORY, one line
            self.run_id = resolve_run(wb, run)  # RUN_UNKNOWN
            self.table = RunTable(wb, self.run_id)
            self.page = run_index_page(wb, self.run_id, self.table)
        self._lock = threading.Lock()

    @classmethod
    def open(cls, db: str | Path, run: str = "latest") -> ViewedRun:
        """Read-only (STORE_NOT_FOUND, STORE_UNREADABLE, RUN_UNKNOWN before anything listens)."""
        wb = RunFrames.open(db, memory_limit=MEMORY_LIMIT)
        try:
            return cls(wb, run)
        except BaseException:
            wb.close()
            raise

    def chunk(self, kind: str, k: int) -> str | None:
        """A chunk file's text, or None when the run has no such chunk
        (`REPORT_OUT_OF_MEMORY` when DuckDB could not read it even given room)."""
        read = self.table.rows_chunk if kind == "rows" else self.table.stories_chunk
        with self._lock, self.wb.out_of_memory_said():
            try:
                return chunk_script(read(k))
            except IndexError:
                return None

    def close(self) -> None:
        self.wb.close()


def create_app(viewed: ViewedRun, address: ViewAddress) -> ASGIApp:
    """The view's app: the page and its chunks under `/<token>/`, nothing else (404)."""

    async def index(request: Request) -> Response:
        return HTMLResponse(viewed.page)

    async def data(request: Request) -> Response:
        found = _CHUNK.fullmatch(request.path_params["name"])
        try:
            text = await run_in_threadpool(viewed.chunk, found[1], int(found[2])) if found else None
        except WorkbenchError as exc:  # this chunk failed; the server and the page go on
            return PlainTextResponse(str(exc), status_code=exc.status)
        if text is None:
            return PlainTextResponse("no such chunk", status_code=404)
        return Response(text, media_type="text/javascript; charset=utf-8")

    app = Starlette(
        routes=[
            Mount(
                f"/{address.token}",
                routes=[
                    Route("/", index),
                    Route("/index.html", index),
                    Route("/data/{name}", data),
                ],
            )
        ]
    )
    return _Guarded(app, address)


class _Guarded:
    """The app behind the view's checks (see the module's docstring): a refused request is
    answered 403 before any route is matched, and every answer carries `_HEADERS`."""

    def __init__(self, app: ASGIApp, address: ViewAddress) -> None:
        self.app = app
        self.address = address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.address.refusal(Headers(scope=scope))
        if refusal is not None:
            await PlainTextResponse(refusal, status_code=403, headers=_HEADERS)(
                scope, receive, send
            )
            return

        async def said(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, said)


def serve_view(
    viewed: ViewedRun,
    sock: socket.socket,
    address: ViewAddress,
    started: Callable[[], Any] | None = None,
) -> None:
    """Serve on `sock` (bound by the caller, at `address`) until Ctrl-C or SIGTERM."""
    config = uvicorn.Config(
        create_app(viewed, address), log_level="warning", access_log=False, lifespan="off"
    )
    server = _Server(config, started)
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        sock.close()


class _Server(uvicorn.Server):
    """uvicorn's server, saying when it listens (its banner is ours)."""

    def __init__(self, config: uvicorn.Config, started: Callable[[], Any] | None) -> None:
        super().__init__(config)
        self._started = started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self._started is not None:
            self._started()
