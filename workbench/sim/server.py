"""The simulator's HTTP server: a Starlette app over a fleet, and `SimServer` to run it.

URL layout (base = http://127.0.0.1:PORT):

    POST /v1/chat/completions                         OpenAI chat completions (JSON or SSE)
    GET  /v1/models, /v1/models/{id}                  OpenAI model list / model (OpenRouter's
                                                      fields; `listed = false` personas left out)
    POST /v1beta/openai/chat/completions              Gemini's OpenAI-compatible surface
    GET  /v1beta/openai/models                        (ids prefixed with models/)
    POST /{v1|v1beta|v1alpha}/models/{id}:generateContent          native Gemini
    POST /{v1|v1beta|v1alpha}/models/{id}:streamGenerateContent    (?alt=sse → SSE)
    GET  /v1beta/models, /v1beta/models/{id}          Gemini model list / model
    /v1/files, /v1/batches                            OpenAI's Files and Batch APIs
                                                      (openai_files.py, openai_batch.py)
    POST /{v1|v1beta|v1alpha}/models/{id}:batchGenerateContent     Gemini batch mode, with
    /{v}/batches, /upload/{v}/files, /{v}/files       its Files API (gemini_batch.py,
                                                      gemini_files.py; on /v1, Google's when
                                                      it carries Google's key: batch_routes.py)
    GET  /sim/requests    every request received (bodies, never keys)
    GET  /sim/batches     every batch submitted (id, vendor, model, keys, time)
    POST /sim/reset       clear the logs, ordinals, rate-limit windows, files and batches
    GET  /sim/fleet       the personas and their `expect` tables
    GET  /sim/search, /sim/page   a small fixed web for BFCL's web search offline (fixed_web.py)
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Generator, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from workbench.errors import ConfigError
from workbench.sim import gemini_surface, openai_surface, respond
from workbench.sim.batch_jobs import BatchBook
from workbench.sim.batch_routes import batch_routes
from workbench.sim.conversation import Conversation
from workbench.sim.failures import FailureSchedule, draw
from workbench.sim.fixed_web import fixed_web_routes
from workbench.sim.fleet import Fleet, Persona, load_fleet, strip_model_prefix
from workbench.sim.gemini_batch import GeminiBatches
from workbench.sim.ratelimit import RateLimiter, rate_limit_error
from workbench.sim.streaming import StreamCut
from workbench.sim.vendor_errors import (
    MALFORMED_BODY,
    SimError,
    bad_request,
    context_length,
    missing_key,
    server_error,
    unknown_model,
)

log = logging.getLogger("workbench.sim")

_INCOMPLETE = "ASGI callable returned without completing response"


class _QuietCut(logging.Filter):
    """uvicorn reports a deliberately cut stream as an error; a stream_cut is the point."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _INCOMPLETE not in record.getMessage()


_filter_installed = False


def _install_log_filter() -> None:
    global _filter_installed
    if not _filter_installed:
        logging.getLogger("uvicorn.error").addFilter(_QuietCut())
        _filter_installed = True


# ---------------------------------------------------------------------------- state


class SimState:
    """The request log, per-persona ordinals and rate-limit windows. Thread-safe reads."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.limiter = RateLimiter()
        self.schedules = {pid: FailureSchedule(p, fleet.seed) for pid, p in fleet.personas.items()}
        self.batches = BatchBook(fleet)
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.log: list[dict[str, Any]] = []
            self.seq = 0
            self.ordinals: Counter[str] = Counter()
            self.limiter.reset()
        self.batches.reset()

    def record(self, entry: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.seq += 1
            entry["seq"] = self.seq
            self.log.append(entry)
        return entry

    def next_ordinal(self, pid: str) -> int:
        with self.lock:
            self.ordinals[pid] += 1
            return self.ordinals[pid]

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return json.loads(json.dumps(self.log))


# ---------------------------------------------------------------------------- responses


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body, ensure_ascii=False),
        status_code=status,
        headers=headers or {},
        media_type="application/json",
    )


class _CuttableStream:
    """A streaming response that may drop the connection mid-body (no final chunk)."""

    def __init__(
        self, body: AsyncIterator[bytes], media_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.body, self.media_type, self.headers = body, media_type, headers or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = [(b"content-type", self.media_type.encode())]
        if self.media_type == "text/event-stream":
            raw += [(b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]
        raw += [(k.lower().encode(), v.encode()) for k, v in self.headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": raw})
        try:
            async for piece in self.body:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        except StreamCut:
            return  # the server closes the connection: the client sees a broken body
        except OSError:
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _cut_json(text: str) -> AsyncIterator[bytes]:
    yield text[: max(1, len(text) // 2)].encode()
    raise StreamCut


# ---------------------------------------------------------------------------- pipeline


def _has_key(request: Request, surface: str) -> bool:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer ") and auth[7:].strip():
        return True
    if surface == "gemini" or surface == "gemini-openai":
        if request.headers.get("x-goog-api-key") or request.query_params.get("key"):
            return True
    return bool(request.headers.get("api-key"))


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _sleep_latency(persona: Persona, seed: int, ordinal: int) -> None:
    jitter = persona.latency_jitter_ms * (2 * draw(seed, "latency", persona.id, ordinal) - 1)
    delay = max(0.0, persona.latency_ms + jitter) / 1000
    if delay:
        await asyncio.sleep(delay)


class SimApp:
    """The Starlette application around a fleet and its state."""

    def __init__(self, fleet: Fleet, state: SimState | None = None) -> None:
        self.fleet = fleet
        self.state = state or SimState(fleet)
        self.gemini_batches = GeminiBatches(self.state.batches)
        routes = [
            Route("/", self.index, methods=["GET"]),
            Route("/v1/chat/completions", self.openai_chat, methods=["POST"]),
            Route("/v1beta/openai/chat/completions", self.gemini_openai_chat, methods=["POST"]),
            Route("/v1/models", self.openai_models, methods=["GET"]),
            Route("/v1beta/openai/models", self.gemini_openai_models, methods=["GET"]),
            Route("/v1beta/openai/models/{model:path}", self.gemini_openai_model, methods=["GET"]),
            Route("/{version}/models", self.gemini_models, methods=["GET"]),
            Route("/{version}/models/{rest:path}", self.models_rest, methods=["GET", "POST"]),
            Route("/sim/requests", self.sim_requests, methods=["GET"]),
            Route("/sim/batches", self.sim_batches, methods=["GET"]),
            Route("/sim/reset", self.sim_reset, methods=["POST"]),
            Route("/sim/fleet", self.sim_fleet, methods=["GET"]),
            *batch_routes(self.state.batches, self.gemini_batches, self._list_refusal),
            *fixed_web_routes(),
        ]
        self.app = Starlette(routes=routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    # -- sim endpoints

    async def index(self, request: Request) -> Response:
        # The pid tells which worker answered: with `sim serve --workers N` each process keeps
        # its own log, so a client reading /sim/requests needs to know whose share it read.
        return _json(
            200,
            {
                "simulator": "workbench",
                "personas": self.fleet.ids,
                "openai": "/v1",
                "gemini": "/v1beta/models/{id}:generateContent",
                "gemini_openai": "/v1beta/openai",
                "openai_batches": "/v1/batches",
                "gemini_batches": "/v1beta/models/{id}:batchGenerateContent",
                "pid": os.getpid(),
            },
        )

    async def sim_requests(self, request: Request) -> Response:
        return _json(200, self.state.snapshot())

    async def sim_batches(self, request: Request) -> Response:
        return _json(200, self.state.batches.snapshot())

    async def sim_reset(self, request: Request) -> Response:
        self.state.reset()
        return _json(200, {"ok": True})

    async def sim_fleet(self, request: Request) -> Response:
        return _json(
            200,
            {
                "seed": self.fleet.seed,
                "batch": asdict(self.fleet.batch),
                "personas": [
                    {k: v for k, v in asdict(p).items()} for p in self.fleet.personas.values()
                ],
            },
        )

    # -- model lists

    def _list_refusal(self, request: Request, surface: str) -> Response | None:
        # A vendor's model list wants the key its chat wants (OpenRouter's is the exception).
        if self.fleet.require_key and not _has_key(request, surface):
            return self._error(missing_key(surface), surface)
        return None

    async def openai_models(self, request: Request) -> Response:
        personas = self.fleet.personas.values()
        refused = self._list_refusal(request, "openai")
        return refused or _json(200, openai_surface.models_list(personas))

    async def gemini_openai_models(self, request: Request) -> Response:
        personas = self.fleet.personas.values()
        refused = self._list_refusal(request, "gemini-openai")
        return refused or _json(200, openai_surface.models_list(personas, prefix="models/"))

    async def gemini_openai_model(self, request: Request) -> Response:
        model = strip_model_prefix(request.path_params["model"])
        persona = self.fleet.get(model)
        if persona is None:
            return self._error(unknown_model(model, "gemini-openai"), "gemini-openai")
        return _json(200, openai_surface.model_record(persona, "models/"))

    async def gemini_models(self, request: Request) -> Response:
        refused = self._list_refusal(request, "gemini")
        return refused or _json(200, gemini_surface.models_list(self.fleet.personas.values()))

    async def models_rest(self, request: Request) -> Response:
        rest = request.path_params["rest"]
        version = request.path_params["version"]
        if request.method == "GET":
            model = strip_model_prefix(rest)
            surface = "openai" if version == "v1" else "gemini"
            persona = self.fleet.get(model)
            if persona is None:
                return self._error(unknown_model(model, surface), surface)
            if surface == "openai":
                return _json(200, openai_surface.model_record(persona))
            return _json(200, gemini_surface.model_info(persona))
        model, _, method = rest.rpartition(":")
        if method == "batchGenerateContent":
            refused = self._list_refusal(request, "gemini")
            return refused or await self.gemini_batches.create(request, strip_model_prefix(model))
        if method not in ("generateContent", "streamGenerateContent"):
            return self._error(SimError(404, f"unknown method {method!r}"), "gemini")
        return await self.generate(
            request, "gemini", strip_model_prefix(model), stream=method == "streamGenerateContent"
        )

    async def openai_chat(self, request: Request) -> Response:
        return await self.generate(request, "openai", None, stream=None)

    async def gemini_openai_chat(self, request: Request) -> Response:
        return await self.generate(request, "gemini-openai", None, stream=None)

    # -- the pipeline

    def _error(self, err: SimError, surface: str, entry: dict[str, Any] | None = None) -> Response:
        status, body, headers = err.render(surface)
        if entry is not None:
            entry["status"] = status
        return _json(status, body, headers)

    async def generate(
        self, request: Request, surface: str, model: str | None, stream: bool | None
    ) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
            parse_error = True
        else:
            parse_error = False
        if model is None:
            requested = body.get("model") if isinstance(body, dict) else None
            model = strip_model_prefix(str(requested or ""))
        if stream is None:
            stream = bool(body.get("stream")) if isinstance(body, dict) else False
        persona = self.fleet.get(model)
        query = {k: v for k, v in request.query_params.items() if k.lower() != "key"}
        entry = self.state.record(
            {
                "time": _now_iso(),
                "method": request.method,
                "path": request.url.path,
                "query": query,
                "surface": surface,
                "model": model,
                "persona": persona.id if persona else None,
                "stream": stream,
                "auth": _has_key(request, surface),
                "body": body if not parse_error else raw.decode("utf-8", "replace"),
                "status": None,
                "ordinal": None,
                "outcome": None,
            }
        )
        if parse_error or not isinstance(body, dict):
            return self._error(bad_request("the request body is not a JSON object"), surface, entry)
        if persona is None:
            return self._error(unknown_model(model, surface), surface, entry)
        ordinal = self.state.next_ordinal(persona.id)
        entry["ordinal"] = ordinal
        try:
            return await self._answer(
                request, surface, persona, model, body, stream, ordinal, entry
            )
        except SimError as err:
            await _sleep_latency(persona, self.fleet.seed, ordinal)
            entry["outcome"] = entry["outcome"] or f"error {err.status}"
            return self._error(err, surface, entry)

    async def _answer(
        self,
        request: Request,
        surface: str,
        persona: Persona,
        model: str,
        body: dict[str, Any],
        stream: bool,
        ordinal: int,
        entry: dict[str, Any],
    ) -> Response:
        seed = self.fleet.seed
        if self.fleet.require_key and not entry["auth"]:
            raise missing_key(surface)
        conv: Conversation = respond.parse(surface, body)
        conv.stream = stream
        tokens = conv.prompt_tokens
        refusal = self.state.limiter.admit(persona, tokens, model)
        if refusal is not None:
            entry["outcome"] = "rate_limited"
            raise refusal
        failure = self.state.schedules[persona.id].kind_for(ordinal)
        entry["outcome"] = failure
        if failure == "429":
            raise rate_limit_error(
                persona,
                "rpm",
                persona.rpm or 30,
                persona.rpm or 30,
                1,
                persona.retry_after_s,
                model,
            )
        if failure in ("500", "502", "503", "408"):
            raise server_error(int(failure))
        if failure == "context_length":
            raise context_length(
                persona.context_window, max(tokens, persona.context_window + 1), surface
            )
        if failure == "hang":
            await self._hang(request, persona.hang_s)
            raise server_error(408)
        respond.refuse(persona, surface, model, body, conv)
        ans = respond.shaped_answer(persona, conv, seed, ordinal, failure)
        self.state.limiter.add_tokens(persona, ans.completion_tokens)
        headers = self.state.limiter.headers(persona)
        seq = entry["seq"]
        entry["status"] = 200
        if failure == "malformed":
            await _sleep_latency(persona, seed, ordinal)
            return Response(
                MALFORMED_BODY, status_code=200, headers=headers, media_type="application/json"
            )
        cut = failure == "stream_cut"
        if stream:
            renderer = gemini_surface.stream if surface == "gemini" else openai_surface.stream
            return _CuttableStream(
                renderer(ans, conv, persona, model, seq, cut=cut), "text/event-stream", headers
            )  # type: ignore[return-value]
        await _sleep_latency(persona, seed, ordinal)
        rendered = respond.render(surface, ans, conv, model, seq)
        if cut:
            text = json.dumps(rendered, ensure_ascii=False)
            return _CuttableStream(
                _cut_json(text),
                "application/json",  # type: ignore[return-value]
                headers,
            )
        return _json(200, rendered, headers)

    async def _hang(self, request: Request, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.state.stopping.is_set():
            await asyncio.sleep(0.05)
            if await request.is_disconnected():
                return


def create_app(fleet: Fleet | dict[str, Any] | str | Path | None = None) -> SimApp:
    """An ASGI app serving `fleet` (also usable with httpx.ASGITransport, no socket)."""
    return SimApp(load_fleet(fleet))


# ---------------------------------------------------------------------------- SimServer


class _Done(list):
    """A result usable both plainly and with `await` (sync notebooks and async tests alike)."""

    def __await__(self) -> Generator[Any, None, Any]:
        async def itself() -> _Done:
            return self

        return itself().__await__()


class SimServer:
    """A real HTTP server on loopback, in a background thread.

    `async with SimServer() as sim:` or `with SimServer() as sim:` or `sim.start()/.stop()`.
    """

    def __init__(
        self,
        fleet: Fleet | dict[str, Any] | str | Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: str = "warning",
    ) -> None:
        self.fleet = load_fleet(fleet)
        self.host, self.port, self.log_level = host, port, log_level
        self.state = SimState(self.fleet)
        self.app = SimApp(self.fleet, self.state)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    # -- URLs

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def gemini_url(self) -> str:
        return self.base_url

    @property
    def gemini_openai_url(self) -> str:
        return self.base_url + "/v1beta/openai"

    # -- lifecycle

    def start(self) -> SimServer:
        if self._thread is not None:
            return self
        import uvicorn

        _install_log_filter()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so (else
        # Nagle + delayed ACK add ~40 ms to every keep-alive response).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_level=self.log_level,
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=1,
            ws="none",
        )
        self._server = uvicorn.Server(config)
        self.state.stopping.clear()

        def run() -> None:
            try:
                asyncio.run(self._server.serve(sockets=[sock]))
            except BaseException as exc:  # surfaced by start()
                self._error = exc
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name=f"workbench-sim:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._thread = None
                raise RuntimeError(f"the simulator did not start: {self._error!r}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self.state.stopping.set()
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> SimServer:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    # -- inspection

    def requests(self) -> _Done:
        """Every request received so far (also `await sim.requests()`)."""
        return _Done(self.state.snapshot())

    def batches(self) -> _Done:
        """Every batch submitted so far (also `await sim.batches()`)."""
        return _Done(self.state.batches.snapshot())

    def reset(self) -> _Done:
        """Clear the log, ordinals (so failure schedules restart) and rate-limit windows."""
        self.state.reset()
        return _Done()

    def schedule(self, persona: str, n: int = 10) -> list[str | None]:
        """The failure kinds of a persona's first `n` requests."""
        return self.state.schedules[self.fleet.persona(persona).id].preview(n)


#: How `run_forever(workers=N)` hands the fleet to its workers: each is a fresh interpreter
#: (uvicorn spawns them), which inherits the environment and no Python objects.
FLEET_ENV = "WORKBENCH_SIM_FLEET"


def app_from_env() -> SimApp:
    """The ASGI factory every worker of `run_forever(workers=N)` builds its app with."""
    _install_log_filter()  # a spawned worker starts without the parent's logging set-up
    return create_app(os.environ.get(FLEET_ENV) or None)


def run_forever(
    fleet: Fleet | dict[str, Any] | str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8765,
    announce: Callable[[str], Any] | None = print,
    workers: int = 1,
) -> None:
    """Serve the fleet until interrupted (`workbench sim serve --port N [--workers N]`).

    `workers > 1` runs that many processes on one port (uvicorn's own multi-process mode), so
    a benchmark measures its client rather than a simulator bound to one core. Each process
    keeps its own request log, ordinals and rate-limit windows: /sim/requests and /sim/reset
    reach whichever worker takes the connection, failure schedules and rate limits count per
    worker, and the index (`GET /`) names the pid that answered. The fleet then has to travel
    as text (a path or TOML), since a worker is a fresh interpreter.
    """
    import uvicorn

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(
            f"--workers must be a whole number of at least 1, not {workers!r}", code="SIM_INVALID"
        )
    if workers > 1 and isinstance(fleet, Fleet | Mapping):
        raise ConfigError(
            "several workers each load the fleet themselves: give it as a path or TOML text, "
            f"not a {type(fleet).__name__}",
            code="SIM_INVALID",
        )
    _install_log_filter()
    loaded = load_fleet(fleet)  # here, once: a bad fleet is one error, not one per worker
    base = f"http://{host}:{port}"
    processes = f" ({workers} worker processes, each with its own request log)"
    banner = (
        f"workbench simulator: {len(loaded.personas)} personas on {base}"
        f"{processes if workers > 1 else ''}\n"
        f"  OpenAI:        {base}/v1\n"
        f"  Gemini:        {base}  (google-genai http_options base_url)\n"
        f"  Gemini/OpenAI: {base}/v1beta/openai\n"
        f"  personas:      {', '.join(loaded.ids)}"
    )
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": "warning",
        "lifespan": "off",
        "access_log": False,
        "timeout_graceful_shutdown": 1,
        "ws": "none",
    }
    if workers == 1:
        if announce:
            announce(banner)
        uvicorn.run(SimApp(loaded), **options)
        return
    from uvicorn.supervisors import Multiprocess

    # What `uvicorn.run(..., workers=N)` does, but on a socket that says IPPROTO_TCP: asyncio
    # sets TCP_NODELAY only on connections accepted from such a socket, and uvicorn's own
    # bind leaves the protocol unset, so Nagle + delayed ACK added ~40 ms to every keep-alive
    # response (measured on loopback) — more than the latency a benchmark asks for.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc})", code="SIM_INVALID"
        ) from None
    sock.set_inheritable(True)
    if announce:
        announce(banner)
    before = os.environ.get(FLEET_ENV)
    if fleet is None:
        os.environ.pop(FLEET_ENV, None)
    else:
        os.environ[FLEET_ENV] = str(Path(fleet).resolve() if isinstance(fleet, Path) else fleet)
    config = uvicorn.Config(f"{__name__}:app_from_env", factory=True, workers=workers, **options)
    try:
        Multiprocess(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        if before is None:
            os.environ.pop(FLEET_ENV, None)
        else:
            os.environ[FLEET_ENV] = before


def serve(fleet_path: str | Path | None = None, host: str = "127.0.0.1", port: int = 8765) -> None:
    run_forever(fleet_path, host=host, port=port)
