"""A small chat app on the workbench: one agent turn per request, streamed as server-sent events.

    python examples/chat_app.py --port 8000      # against the built-in provider simulator

What it shows, end to end:

- `POST /chat` `{"person", "message", "history"?, "sensitive"?, "language"?}`: an `AskLimit`
  per person (a refusal is a 429 `{"code", "retry_after_s"}`, never a sentence), then an SSE
  stream of one agent turn:
  `step` `{id, tool, params}` / `step_done` `{id, ok}` for each tool call, `text` `{"text"}`
  (the cleaned answer, in one or a few chunks), and exactly one terminal event:
  `done` `{"actions": [ids proposed], "degraded": bool}`, `declined` `{"code"}` or
  `error` `{"code"}`;
- one `ReversibleMasker` per conversation (the request's `sensitive` names, the e-mail and
  phone patterns, a small local name detector): what leaves for a model is masked, the reply
  and the tool arguments come back clear;
- the demo tool catalogue: read tools answer, write tools (`send_email`, `create_ticket`) only
  PROPOSE into the app's `PendingActions`; a person approves or rejects them at
  `/actions/{id}/approve|reject`;
- a client that leaves mid-turn sets the turn's cancel signal: the route stops at once and no
  further model is asked;
- every model down: a `DeterministicFallback` answers what it can from a tiny table
  (`degraded: true`) and declines the rest, never inventing;
- `GET /health/ai`: the router's passive health, and an active probe behind a secret.

`create_app` does not own the router: whoever built it closes it (`main` does).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import re
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench.errors import WorkbenchError
from workbench.routing.router import Router
from workbench.serve.ask_limit import AskLimit
from workbench.serve.fallback import DeterministicFallback
from workbench.serve.liveness import LivenessProbe, ai_health_handler
from workbench.serve.sse import EventStream, event_stream
from workbench.text.cleaner import ResponseCleaner, load_vocabulary, vocabulary_config
from workbench.text.detectors import PATTERNS, detect_names
from workbench.text.masker import ReversibleMasker
from workbench.tools.demo import demo_executors, demo_tools
from workbench.tools.native_tools import Tool, tool_specs, validate_native_tools
from workbench.tools.pending import MemoryActionStore, PendingActions
from workbench.tools.tool_loop import run_tool_loop, tool_caller
from workbench.types import CallContext, ChatRequest, Message, Reply

__all__ = ["SYSTEM_PROMPT", "classify", "create_app", "main"]

log = logging.getLogger("chat_app")

ROOT = Path(__file__).resolve().parent.parent
TOOLS_PATH = ROOT / "datasets" / "tools.json"
VOCABULARY_PATH = ROOT / "datasets" / "cleaning_vocabulary.json"

SYSTEM_PROMPT = (
    "You are the assistant of a small online shop. Use a tool whenever one can answer. "
    "E-mails and tickets are only proposed: a person approves them before anything is sent."
)

# Bounds of a request: a chat turn is not an upload.
MAX_PERSON = 100
MAX_MESSAGE = 4000
MAX_HISTORY = 40
MAX_SENSITIVE = 50
MAX_TURNS = 4
MAX_TURN_S = 45.0
MAX_TURN_RECORDS = 200

# --- the deterministic fallback: what the app can say with every model down --------------
RESPONDERS: dict[str, Callable[[str], str | None]] = {
    "hours": lambda _question: "We are open 9:00–17:00, Monday to Friday.",
    "contact": lambda _question: "You can reach us at support@example.com.",
}
_CATEGORIES = (
    ("hours", re.compile(r"\b(hours?|opening|open|close[ds]?|closing)\b", re.I)),
    ("contact", re.compile(r"\b(contact|reach you|phone number|support address)\b", re.I)),
)


def classify(question: str) -> str | None:
    """The category of a question the fallback table can answer, or None (declined)."""
    for category, pattern in _CATEGORIES:
        if pattern.search(question):
            return category
    return None


# --- helpers -------------------------------------------------------------------------------
def _error(status: int, code: str, **extra: Any) -> JSONResponse:
    """Errors are codes: the client writes the sentence, in its own language."""
    return JSONResponse({"code": code, **extra}, status_code=status)


def _code(exc: BaseException) -> str:
    return getattr(exc, "code", None) or "CHAT_FAILED"


def _cleaner(vocabulary: Any) -> ResponseCleaner:
    """`vocabulary`: None (the dataset's file when present), a path, parsed JSON, or a cleaner."""
    if isinstance(vocabulary, ResponseCleaner):
        return vocabulary
    if vocabulary is None:
        return (
            ResponseCleaner(**load_vocabulary(VOCABULARY_PATH))
            if VOCABULARY_PATH.is_file()
            else ResponseCleaner()
        )
    if isinstance(vocabulary, str | Path):
        return ResponseCleaner(**load_vocabulary(vocabulary))
    if isinstance(vocabulary, Mapping):
        return ResponseCleaner(**vocabulary_config(dict(vocabulary)))
    raise TypeError("vocabulary: None, a path, a mapping or a ResponseCleaner")


def _chunks(text: str) -> list[str]:
    """The cleaned text in a few chunks (paragraphs, separators kept): joined, it is the text."""
    parts = [p for p in re.split(r"(?<=\n\n)", text) if p]
    if len(parts) <= 4:
        return parts or [text]
    return [*parts[:3], "".join(parts[3:])]


class _Asgi:
    """A Route endpoint that is an ASGI app (Starlette wraps bare functions as handlers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class _BadRequest(Exception):
    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


def _parse_chat(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise _BadRequest("body")
    person, message = body.get("person"), body.get("message")
    if not isinstance(person, str) or not person.strip() or len(person) > MAX_PERSON:
        raise _BadRequest("person")
    if not isinstance(message, str) or not message.strip() or len(message) > MAX_MESSAGE:
        raise _BadRequest("message")
    history: list[Message] = []
    raw_history = body.get("history") or []
    if not isinstance(raw_history, list) or len(raw_history) > MAX_HISTORY:
        raise _BadRequest("history")
    for item in raw_history:
        # Only what a person and the assistant said: a client never injects a system or a
        # tool message.
        if (
            not isinstance(item, dict)
            or item.get("role") not in ("user", "assistant")
            or not isinstance(item.get("content"), str)
            or len(item["content"]) > MAX_MESSAGE
        ):
            raise _BadRequest("history")
        history.append({"role": item["role"], "content": item["content"]})
    sensitive = body.get("sensitive") or []
    if (
        not isinstance(sensitive, list)
        or len(sensitive) > MAX_SENSITIVE
        or not all(isinstance(s, str) and len(s) <= MAX_PERSON for s in sensitive)
    ):
        raise _BadRequest("sensitive")
    language = body.get("language")
    if language is not None and (not isinstance(language, str) or len(language) > 35):
        raise _BadRequest("language")
    return {
        "person": person.strip(),
        "message": message,
        "history": history,
        "sensitive": tuple(sensitive),
        "language": language,
    }


async def _json_body(request: Request) -> Any:
    try:
        return json.loads(await request.body() or b"null")
    except ValueError:
        return None


# --- the app -------------------------------------------------------------------------------
def create_app(
    router: Router,
    *,
    pending: PendingActions | None = None,
    secret: str | Callable[[], str | None] | None = None,
    vocabulary: Any = None,
    limit: AskLimit | None = None,
) -> Starlette:
    """The chat app over `router`. `pending`: where write tools propose (default: in memory,
    executing the demo's harmless writes). `secret`: the probe secret of `/health/ai` (None:
    probing is not configured, 501). `vocabulary`: see `_cleaner`. `limit`: asks per person
    (default 20 a minute).

    `app.state.turns` keeps one record per recent turn (person, outcome, whether the client left,
    and what an emit after that returned): an example's window into what happened."""
    limit = limit if limit is not None else AskLimit(20, 60)
    pending = pending or PendingActions(MemoryActionStore(), tools=demo_executors())
    specs: list[dict[str, Any]] = json.loads(TOOLS_PATH.read_text(encoding="utf-8"))
    # Checked once, at start-up: a broken catalogue fails the deploy, not a conversation.
    validate_native_tools(demo_tools(specs, pending), require_summary=False)
    cleaner = _cleaner(vocabulary)
    fallback = DeterministicFallback(responders=RESPONDERS, classify=classify)
    turns: deque[dict[str, Any]] = deque(maxlen=MAX_TURN_RECORDS)  # bounded: a server runs long

    def _summary(tool: Tool) -> Tool:
        # The step line's values (the UI writes the sentence): the arguments, compactly.
        if tool.summary is None:
            tool.summary = lambda args: ", ".join(f"{v}" for v in args.values())
        return tool

    async def chat(request: Request) -> Response:
        try:
            ask = _parse_chat(await _json_body(request))
        except _BadRequest as bad:
            return _error(400, "CHAT_INVALID", field=bad.field)
        refusal = limit.check(ask["person"])
        if refusal is not None:
            wait = refusal.retry_after_s
            return JSONResponse(
                {"code": refusal.code, "retry_after_s": wait},
                status_code=429,
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )
        return event_stream(_turn_job(ask), on_error=_on_error)

    def _on_error(exc: BaseException) -> tuple[str, dict[str, Any]]:
        return "error", {"code": _code(exc)}  # a code, never the message

    def _turn_job(ask: dict[str, Any]) -> Callable[[EventStream], Any]:
        async def job(stream: EventStream) -> None:
            record: dict[str, Any] = {
                "person": ask["person"],
                "outcome": None,
                "cancelled": False,
                "late_emit": None,
                "models": [],
            }
            turns.append(record)
            signal = stream.cancelled
            # One masker per conversation: the whole history goes through it, so a name
            # learned in an early message is masked in every later one.
            masker = ReversibleMasker(
                names=ask["sensitive"], patterns=PATTERNS, detect=detect_names
            )
            ctx = CallContext(signal=signal, purpose="chat", values={"person": ask["person"]})
            proposed: list[str] = []
            tools = [
                _summary(t)
                for t in demo_tools(specs, pending, proposed_by=f"agent:{ask['person']}")
            ]

            def remember(entry: dict[str, Any]) -> None:
                found = entry.get("found")
                if isinstance(found, dict) and found.get("action_id") not in (None, *proposed):
                    proposed.append(found["action_id"])

            call_tool = tool_caller(
                tools,
                context={"person": ask["person"]},
                signal=signal,
                emit=stream.emit,
                record=remember,
                masker=masker,
            )

            async def turn(chat_request: ChatRequest) -> Reply:
                # The client's leaving is the route's signal: the model being asked is
                # abandoned and no further model is asked.
                result = await router.route(chat_request, ctx=ctx, masker=masker)
                record["models"].append(result.key)
                return result.value

            async def agent(message: str) -> str:
                messages: list[Message] = [*ask["history"], {"role": "user", "content": message}]
                result = await run_tool_loop(
                    SYSTEM_PROMPT,
                    messages,
                    tool_specs(tools),
                    turn,
                    call_tool,
                    max_turns=MAX_TURNS,
                    max_s=MAX_TURN_S,
                    signal=signal,
                )
                return result.text

            try:
                outcome = await fallback.with_fallback(agent, ask["message"])
            except Exception as exc:  # not a provider failure: a code, never the message
                if signal.is_set():
                    await _cancelled(stream, record)
                    return
                log.warning("chat turn failed", exc_info=True)
                record["outcome"] = "error"
                await stream.emit("error", {"code": _code(exc)})
                return
            if signal.is_set():
                await _cancelled(stream, record)
                return
            if outcome.declined:
                record["outcome"] = "declined"
                cause = getattr(outcome.provider_error, "code", None) or "AI_UNAVAILABLE"
                await stream.emit("declined", {"code": "AI_DECLINED", "cause": cause})
                return
            text = outcome.answer or ""
            if not outcome.degraded:
                text = cleaner.clean(text, ask["language"]) or text.strip()
            for chunk in _chunks(text):
                await stream.emit("text", {"text": chunk})
            record["outcome"] = "degraded" if outcome.degraded else "answered"
            await stream.emit("done", {"actions": proposed, "degraded": bool(outcome.degraded)})

        return job

    async def _cancelled(stream: EventStream, record: dict[str, Any]) -> None:
        record["outcome"] = "cancelled"
        record["cancelled"] = True
        # Nobody is listening: the stream must swallow this (and say so with False).
        record["late_emit"] = await stream.emit("error", {"code": "AI_CANCELLED"})

    async def list_actions(request: Request) -> Response:
        status = request.query_params.get("status")
        try:
            actions = await pending.list(status=status)
        except WorkbenchError as exc:
            return _error(exc.status, exc.code)
        return JSONResponse({"actions": [a.to_dict() for a in actions]})

    async def decide(request: Request) -> Response:
        action_id = request.path_params["action_id"]
        verb = request.path_params["verb"]
        body = await _json_body(request)
        by = body.get("by") if isinstance(body, dict) else None
        if not isinstance(by, str) or not by.strip() or len(by) > MAX_PERSON:
            return _error(400, "ACTION_INVALID", field="by")
        try:
            if verb == "approve":
                amend = body.get("amend")
                if amend is not None and not isinstance(amend, dict):
                    return _error(400, "ACTION_INVALID", field="amend")
                action = await pending.approve(action_id, by.strip(), amend=amend)
            else:
                note = body.get("note")
                action = await pending.reject(
                    action_id, by.strip(), note=note if isinstance(note, str) else None
                )
        except WorkbenchError as exc:
            return _error(exc.status, exc.code)
        return JSONResponse(action.to_dict())

    health = ai_health_handler(secret, health=router.health, probe=LivenessProbe(router))
    app = Starlette(
        routes=[
            Route("/chat", chat, methods=["POST"]),
            Route("/actions", list_actions, methods=["GET"]),
            Route("/actions/{action_id}/{verb:str}", decide, methods=["POST"]),
            Route("/health/ai", _Asgi(health), methods=["GET"]),
        ]
    )
    app.state.turns = turns
    app.state.pending = pending
    app.state.router = router
    return app


# --- serving against the simulator ---------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    import os

    import uvicorn

    from workbench.sim import SimServer
    from workbench.sim.fleet_providers import sim_chain_config

    parser = argparse.ArgumentParser(description="The workbench chat example, on the simulator.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--fleet", default=None, help="a simulator fleet TOML (default: built in)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per model call is noise

    sim = SimServer(args.fleet).start()
    router = sim_chain_config(sim).build_router()
    # Read per request: set CHAT_PROBE_SECRET to enable /health/ai?probe=1.
    app = create_app(router, secret=lambda: os.environ.get("CHAT_PROBE_SECRET"))
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port))

    async def serve() -> None:
        try:
            await server.serve()
        finally:
            await router.close()

    print(f"simulator at {sim.base_url}; chat at http://{args.host}:{args.port}/chat")
    try:
        asyncio.run(serve())
    finally:
        sim.stop()


if __name__ == "__main__":
    main()
