"""`workbench view`: a run's report served straight from its DuckDB file.

The same page a big run's report folder holds, at the same URLs (`/`, `/data/rows-NNNNN.js`,
`/data/stories-NNNNN.js`), each chunk built on request by the functions the writer uses
(`chunks.RunTable`): nothing is written, and a chunk is one bounded read, whatever the run's
size. The file is opened read-only (a snapshot copy while a run writes it), DuckDB's memory is
capped, and one request reads at a time (a DuckDB connection is one reader); the server
listens on loopback unless told otherwise.
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import resolve_run
from workbench.eval.report.chunks import RunTable, chunk_script
from workbench.eval.report.page import MEMORY_LIMIT, run_index_page

__all__ = ["ViewedRun", "create_app", "serve_view"]

_CHUNK = re.compile(r"(rows|stories)-(\d{5})\.js")


class ViewedRun:
    """One run of an open file, its page made once and its chunks read on request."""

    def __init__(self, wb: RunFrames, run: str = "latest") -> None:
        self.wb = wb
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
        """A chunk file's text, or None when the run has no such chunk."""
        read = self.table.rows_chunk if kind == "rows" else self.table.stories_chunk
        with self._lock:
            try:
                return chunk_script(read(k))
            except IndexError:
                return None

    def close(self) -> None:
        self.wb.close()


def create_app(viewed: ViewedRun) -> Starlette:
    async def index(request: Request) -> Response:
        return HTMLResponse(viewed.page)

    async def data(request: Request) -> Response:
        found = _CHUNK.fullmatch(request.path_params["name"])
        text = await run_in_threadpool(viewed.chunk, found[1], int(found[2])) if found else None
        if text is None:
            return PlainTextResponse("no such chunk", status_code=404)
        return Response(text, media_type="text/javascript; charset=utf-8")

    return Starlette(
        routes=[
            Route("/", index),
            Route("/index.html", index),
            Route("/data/{name}", data),
        ]
    )


def serve_view(
    viewed: ViewedRun, sock: socket.socket, started: Callable[[], Any] | None = None
) -> None:
    """Serve on `sock` (bound by the caller) until Ctrl-C or SIGTERM."""
    config = uvicorn.Config(
        create_app(viewed), log_level="warning", access_log=False, lifespan="off"
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
