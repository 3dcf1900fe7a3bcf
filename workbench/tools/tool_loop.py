"""The native tool loop (the seed's "Outils natifs : la boucle d'un agent qui appelle ses
outils").

`tool_caller` turns every way a call can go wrong — an invented tool, unreadable or
schema-violating arguments, a raise, a timeout — into a short JSON error the model *reads*
and can correct next turn. It never passes on an exception's message: a message can carry a
path, a query or someone else's data. `run_tool_loop` drives the turns: tools asked together
run together, and out of turns or time one last turn without tools answers from what was read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.errors import RoutingError, WorkbenchError
from workbench.events import Sink, ToolStepEvent
from workbench.events import emit as emit_event
from workbench.providers.protocols import compact_json, family_example
from workbench.tools.native_tools import Tool
from workbench.types import ChatRequest, Message, Reply, ToolCall, user

__all__ = [
    "CUT_MARKER",
    "DEFAULT_FINAL_INSTRUCTION",
    "DEFAULT_WAITING",
    "ToolLoopResult",
    "ToolOutcome",
    "run_tool_loop",
    "tool_caller",
]

log = logging.getLogger("workbench.tools")

DEFAULT_FINAL_INSTRUCTION = "Answer now with what you have read: no more tools."
DEFAULT_WAITING = "Nothing is written until a person confirms."
CUT_MARKER = "…[cut]"
STEP_PARAMS_MAX = 120
DETAIL_MAX = 200


# The messages that carry one turn's calls and their outcomes back to the model.
FeedBack = Callable[[Reply, list[ToolCall], list["ToolOutcome"]], list[Message]]


@dataclass(slots=True)
class ToolOutcome:
    call_id: str
    name: str
    ok: bool
    content: str  # what the model reads
    result: Any = None  # what the tool returned (a confirm tool: what `run` prepared)
    error: str | None = None  # the code the model read, when not ok


@dataclass(slots=True)
class ToolLoopResult:
    text: str
    turns: int
    steps: list[ToolOutcome] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)  # the whole conversation
    stopped: Literal["answer", "max_turns", "max_time"] = "answer"


def _json(value: Any) -> str:
    return compact_json(value)


def _serialise(value: Any) -> str:
    """What the model reads of a result: a string as is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return compact_json(value)
    except (TypeError, ValueError):
        return compact_json(str(value))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + CUT_MARKER


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    return await value if inspect.isawaitable(value) else value


def tool_caller(
    tools: Iterable[Tool],
    context: Any = None,
    signal: asyncio.Event | None = None,
    timeout_s: float = 20,
    emit: Callable[[str, dict[str, Any]], Any] | None = None,
    keep: Callable[[str, Any], Any] | None = None,
    record: Callable[[dict[str, Any]], Any] | None = None,
    messages: Mapping[str, str] | None = None,
    result_max: int = 6000,
    sinks: Iterable[Sink] = (),
    masker: Any = None,
) -> Callable[[ToolCall], Awaitable[ToolOutcome]]:
    """An async `call(ToolCall) -> ToolOutcome` over `tools` (already validated).

    - `context` is handed to every `run(args, context)`;
    - `signal` set: calls are not started (`{"error":"cancelled"}`);
    - `emit(event, data)` (sync or async; its failures are swallowed) gets `"step"`
      `{id, tool, params}` then `"step_done"` `{id, ok}`; `sinks` get the same as
      `ToolStepEvent`s. Calls to an invented tool emit nothing: there is no step to show;
    - `keep(tool, result)` receives every successful result (a source ledger);
    - `record({tool, args, found})` keeps a confirm tool's pending action;
    - `messages["waiting"]`: what the model reads while a confirm tool waits."""
    # Imported here: jsonschema takes 0.1 s to import, 0.9 s beside the notebook extras
    # (their rfc3987-syntax builds a grammar on import), and the runner imports this module
    # whether or not any item offers a tool.
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for

    by_name = {t.name: t for t in tools}
    validators = {name: validator_for(t.parameters)(t.parameters) for name, t in by_name.items()}
    waiting = (messages or {}).get("waiting", DEFAULT_WAITING)
    sink_list = tuple(sinks)
    on_step = emit
    counter = 0

    async def _emit(event: str, data: dict[str, Any]) -> None:
        if on_step is None:
            return
        try:
            await _call(on_step, event, data)
        except Exception:  # the step line is decoration: it never breaks the call
            log.exception("tool step emit failed")

    def _params(tool: Tool, args: dict[str, Any]) -> str:
        if tool.summary is None:
            return ""
        try:
            return str(tool.summary(args))[:STEP_PARAMS_MAX]
        except Exception:
            return ""

    def _failed(call: ToolCall, code: str, result: Any = None) -> ToolOutcome:
        return ToolOutcome(call.id, call.name, False, _json({"error": code}), result, code)

    async def execute(tool: Tool, call: ToolCall) -> ToolOutcome:
        args = call.arguments
        if tool.external and masker is not None:
            args = masker.mask_value(args)  # the tool sends them off the machine: masked
        found = await _call(tool.run, args, context)
        if tool.kind == "confirm":
            # `run` may prepare; nothing is performed until a person confirms (`perform`).
            if record is not None:
                await _call(record, {"tool": tool.name, "args": args, "found": found})
            body = {"status": "awaiting_confirmation", "message": waiting}
            return ToolOutcome(call.id, call.name, True, _json(body), found)
        if keep is not None:
            try:
                await _call(keep, tool.name, found)
            except Exception:
                log.exception("keep failed for tool %s", tool.name)
        return ToolOutcome(call.id, call.name, True, _cut(_serialise(found), result_max), found)

    async def call_tool(call: ToolCall) -> ToolOutcome:
        nonlocal counter
        counter += 1
        tool = by_name.get(call.name)
        if tool is None:
            body = {"error": "unknown_tool", "tool": call.name, "available": list(by_name)}
            return ToolOutcome(call.id, call.name, False, _json(body), None, "unknown_tool")
        step_id = call.id or f"step_{counter}"
        params = _params(tool, call.arguments)
        await _emit("step", {"id": step_id, "tool": tool.name, "params": params})
        if sink_list:
            await emit_event(sink_list, ToolStepEvent(step_id, tool.name, params))
        outcome = await _guarded(tool, call)
        await _emit("step_done", {"id": step_id, "ok": outcome.ok})
        if sink_list:
            await emit_event(sink_list, ToolStepEvent(step_id, tool.name, params, outcome.ok))
        return outcome

    async def _guarded(tool: Tool, call: ToolCall) -> ToolOutcome:
        if signal is not None and signal.is_set():
            return _failed(call, "cancelled")
        if call.invalid:
            reason = call.invalid_reason or "not_json"
            body = {"error": "invalid_arguments", "reason": reason}
            return ToolOutcome(call.id, call.name, False, _json(body), None, "invalid_arguments")
        error = best_match(validators[tool.name].iter_errors(call.arguments))
        if error is not None:
            body = {"error": "invalid_arguments", "detail": error.message[:DETAIL_MAX]}
            return ToolOutcome(call.id, call.name, False, _json(body), None, "invalid_arguments")
        try:
            return await asyncio.wait_for(execute(tool, call), timeout_s)
        except TimeoutError:
            return _failed(call, "tool_timeout")
        except Exception:
            # The model reads a code, never the message.
            log.warning("tool %s failed", tool.name, exc_info=True)
            return _failed(call, "tool_failed")

    return call_tool


# --------------------------------------------------------------------------- the loop


def feed_back_messages(
    reply: Reply, calls: list[ToolCall], outcomes: list[ToolOutcome]
) -> list[Message]:
    """How a turn's calls and results go back to the model: native calls as an assistant
    message with `tool_calls` and one role-`tool` message per result; prose calls as the
    model's own text and its calls written again, then the results in a user message."""
    out: list[Message] = []
    native = [(c, o) for c, o in zip(calls, outcomes, strict=True) if c.source != "text"]
    prose = [(c, o) for c, o in zip(calls, outcomes, strict=True) if c.source == "text"]
    if native:
        out.append(_native_message(reply, [c for c, _ in native]))
        out.extend(
            {"role": "tool", "tool_call_id": c.id, "name": c.name, "content": o.content}
            for c, o in native
        )
    if prose:
        text = "" if native else reply.text  # the text went with the native message
        out.extend(_prose_messages(text, [c for c, _ in prose], [o for _, o in prose]))
    return out


def _native_message(reply: Reply, calls: list[ToolCall]) -> Message:
    return {
        "role": "assistant",
        "content": reply.text or None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                # Unreadable arguments are sent back as {}.
                "function": {"name": c.name, "arguments": "{}" if c.invalid else c.raw_arguments},
            }
            for c in calls
        ],
    }


def _prose_messages(text: str, calls: list[ToolCall], outcomes: list[ToolOutcome]) -> list[Message]:
    # A model that writes its calls in prose does not understand role "tool": it reads its own
    # calls (written again in the format it used, since the adapter stripped them from `text`)
    # and the results as <tool_result> blocks in a user message.
    written = "\n".join(as_written(c) for c in calls)
    said = f"{text.strip()}\n{written}" if text.strip() else written
    results = "\n".join(f'<tool_result name="{o.name}">{o.content}</tool_result>' for o in outcomes)
    return [{"role": "assistant", "content": said}, user(results)]


def as_written(call: ToolCall) -> str:
    """A prose call as its family writes it, so the history shows the model its own format."""
    again = family_example(call.family, call.name, call.arguments) if call.family else None
    if again is not None and not call.invalid:
        return again
    return (
        f'<tool_call name="{call.name}">{"{}" if call.invalid else call.raw_arguments}</tool_call>'
    )


def _no_answer(turns: int) -> WorkbenchError:
    return WorkbenchError(
        "the model answered with neither text nor a tool call",
        code="AI_NO_ANSWER",
        status=502,
        details={"turns": turns},
    )


def _cancelled(turns: int) -> RoutingError:
    # The same error the router raises when the caller cancels mid-route.
    return RoutingError(
        "the tool loop was cancelled", code="AI_CANCELLED", status=499, details={"turns": turns}
    )


async def run_tool_loop(
    system: str | None,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    turn: Callable[[ChatRequest], Awaitable[Reply]],
    call_tool: Callable[[ToolCall], Awaitable[ToolOutcome]],
    max_turns: int = 6,
    max_s: float = 60,
    final_instruction: str = DEFAULT_FINAL_INSTRUCTION,
    signal: asyncio.Event | None = None,
    *,
    read_calls: Callable[[Reply], list[ToolCall]] | None = None,
    feed_back: FeedBack | None = None,
    in_order: bool = False,
    final_turn: bool = True,
    empty_is_answer: bool = False,
) -> ToolLoopResult:
    """Turns until an answer: each turn sends ChatRequest(system, messages, tools); the calls of
    one turn run concurrently and their results are fed back (native calls as role `tool`,
    prose calls as `<tool_result>` blocks). Out of turns or time (`max_s`, checked before each
    turn), one last turn with `tools=None` and `final_instruction`.

    A benchmark that defines its own loop (BFCL's multi-turn) changes what it must:
    `read_calls` (the calls a reply holds, when the benchmark reads them its own way),
    `feed_back` (the messages that carry a turn's calls and results back), `in_order` (the
    calls of a turn run one after another: a file system's `cd` then `mv`), `final_turn=False`
    (out of turns the loop stops, `stopped="max_turns"`, instead of asking for an answer) and
    `empty_is_answer` (a reply with neither text nor a call ends the loop).

    Raises WorkbenchError AI_NO_ANSWER (a turn with neither text nor a tool call) and
    AI_CANCELLED (`signal` set: nothing further is asked). `messages` is not modified."""
    convo: list[Message] = list(messages)
    steps: list[ToolOutcome] = []
    started = time.monotonic()
    turns = 0
    stopped: Literal["max_turns", "max_time"] = "max_turns"
    for _ in range(max(0, max_turns)):
        if signal is not None and signal.is_set():
            raise _cancelled(turns)
        if time.monotonic() - started >= max_s:
            stopped = "max_time"
            break
        reply = await turn(ChatRequest(messages=list(convo), system=system, tools=tools))
        turns += 1
        found = read_calls(reply) if read_calls is not None else reply.tool_calls
        if not found:
            if not reply.text.strip() and not empty_is_answer:
                raise _no_answer(turns)
            convo.append({"role": "assistant", "content": reply.text})
            return ToolLoopResult(reply.text, turns, steps, convo, "answer")
        # Gemini may send parallel calls without ids: a role-tool message needs one.
        calls = [
            c if c.id else dataclasses.replace(c, id=f"call_{turns}_{k}")
            for k, c in enumerate(found)
        ]
        if in_order:
            outcomes = [await call_tool(c) for c in calls]
        else:
            outcomes = list(await asyncio.gather(*(call_tool(c) for c in calls)))
        steps.extend(outcomes)
        convo.extend((feed_back or feed_back_messages)(reply, calls, outcomes))
    if signal is not None and signal.is_set():
        raise _cancelled(turns)
    if not final_turn:  # the benchmark's own limit: it stops here, no answer asked for
        return ToolLoopResult("", turns, steps, convo, stopped)
    # The last turn: no tools, an explicit instruction, an answer from what was read.
    convo.append(user(final_instruction))
    reply = await turn(ChatRequest(messages=list(convo), system=system, tools=None))
    turns += 1
    if not reply.text.strip():
        raise _no_answer(turns)
    convo.append({"role": "assistant", "content": reply.text})
    return ToolLoopResult(reply.text, turns, steps, convo, stopped)
