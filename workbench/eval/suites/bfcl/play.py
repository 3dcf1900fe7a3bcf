"""A BFCL multi-turn entry played as BFCL's handlers play it, through the project's tool loop.

Each turn sends the entry's user message (a held-back turn: the held-back docs join the tools
and the model reads BFCL's "I have updated some more functions..."); within a turn, the model
is asked again after each step's calls have run against the entry's backends (in order, in
the sandbox) until it answers without a call — or, past BFCL's 20 steps, the entry is
force-quit and the remaining turns are never asked, as BFCL does. What a reply holds is read
as BFCL reads it in the run's mode:

- `native` (function calling): the native calls; one whose arguments are not a JSON object
  makes the step undecodable, which ends the turn (BFCL's decoder raises on it);
- `text` (prompting): the reply as written, through BFCL's decoder (`[f(a=1), g(b='x')]`);
  results go back as BFCL sends them, the repr of `[{"role": "tool", "name": call, ...}]`
  in a user message;
- `plan` (this project's planner): native calls, else BFCL's decoder, else the prose readers
  of every family (a model writing `<tool_call>` blocks is read, where BFCL would read
  nothing) — a workbench score, not a leaderboard one.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.eval.suites.bfcl.case import BfclEntry, Undecodable
from workbench.eval.suites.bfcl.decode import decode_prompt_reply, well_formed
from workbench.eval.suites.bfcl.entries import STEP_LIMIT, more_functions_message, turn_tools
from workbench.events import ToolStepEvent
from workbench.events import emit as emit_event
from workbench.tools.tool_loop import ToolOutcome, feed_back_messages, run_tool_loop
from workbench.types import ChatRequest, Message, Reply, ToolCall, ToolsMode

Execute = Callable[[ToolCall], Awaitable[str]]  # one call run against the entry's backends
ERROR_PREFIX = "Error during execution:"  # how BFCL's results say a call failed
_BFCL = "bfcl"  # the family name of calls read by BFCL's own decoder


@dataclass(slots=True)
class Played:
    """An entry as played: `turns[t][s]` the calls of step s of turn t (`{"name",
    "arguments"}`; an empty list for a step that held none), `results` the backends' answers
    in the same shape, the last answer's text, and whether BFCL's step limit force-quit it."""

    turns: list[list[list[dict[str, Any]]]] = field(default_factory=list)
    results: list[list[list[str]]] = field(default_factory=list)
    texts: list[list[str]] = field(default_factory=list)  # each step's reply as written
    text: str = ""
    force_quit: bool = False


async def play_entry(
    entry: BfclEntry,
    *,
    mode: ToolsMode,
    ask: Callable[[ChatRequest], Awaitable[Reply]],
    execute: Execute,
    sinks: Sequence[Any] = (),
) -> Played:
    """Play `entry`: `ask` routes one request (the run's turn: logged, held, resumable),
    `execute` runs one call against the entry's backends and returns BFCL's result text."""
    from workbench.eval.suites.bfcl.loader import hinted_docs, openai_tool

    played = Played()
    prompting = mode == "text"
    convo: list[Message] = []
    system: str | None = None
    steps: list[list[dict[str, Any]]] = []
    outcomes: list[list[str]] = []
    texts: list[str] = []

    def read(reply: Reply) -> list[ToolCall]:
        found = calls_in(reply, mode)
        steps.append([{"name": c.name, "arguments": c.arguments} for c in found])
        outcomes.append([])
        texts.append(reply.content if reply.content is not None else reply.text)
        return found

    counter = 0

    async def call_tool(call: ToolCall) -> ToolOutcome:
        nonlocal counter
        counter += 1
        step_id = f"{entry.id}:{len(played.turns)}:{counter}"
        params = json.dumps(call.arguments, ensure_ascii=False)[:120]
        await emit_event(sinks, ToolStepEvent(step_id, call.name, params))
        result = await execute(call)
        ok = not result.startswith(ERROR_PREFIX)
        await emit_event(sinks, ToolStepEvent(step_id, call.name, params, ok))
        outcomes[-1].append(result)
        return ToolOutcome(call.id, call.name, ok, result, error=None if ok else "tool_failed")

    hinted = hinted_docs(list(entry.functions), entry.category)
    for t, asked in enumerate(entry.turns):
        messages = list(asked)
        if str(t) in entry.missed:
            messages = [more_functions_message(entry, t, prompting)]
        if t == 0:
            systems = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
            system = "\n\n".join(systems) or None
            messages = [m for m in messages if m.get("role") != "system"]
        convo += messages
        # BFCL hints the docs offered from the start; the held-back ones join the tools raw.
        held_back = turn_tools(entry, t)[len(entry.functions) :]
        tools = [openai_tool(d) for d in [*hinted, *held_back]]
        steps, outcomes, texts = [], [], []
        loop = await run_tool_loop(
            system,
            convo,
            tools,
            ask,
            call_tool,
            max_turns=STEP_LIMIT + 1,  # BFCL asks again after its 20th step, then quits
            max_s=math.inf,  # the route's own timeouts and the item's holds bound it
            read_calls=read,
            feed_back=_feed_back,
            in_order=True,
            final_turn=False,
            empty_is_answer=True,
        )
        convo = loop.messages
        played.turns.append(steps)
        played.results.append(outcomes)
        played.texts.append(texts)
        played.text = loop.text or played.text
        if loop.stopped != "answer":
            played.force_quit = True
            break
    return played


def calls_in(reply: Reply, mode: ToolsMode) -> list[ToolCall]:
    """The calls BFCL runs from `reply` in `mode` (see the module's docstring)."""
    native = [c for c in reply.tool_calls if c.source == "native"]
    if native or mode == "native":
        # BFCL json.loads each call's arguments and needs an object: else the step is undecodable.
        return [] if any(c.invalid for c in native) else native
    decoded = _bfcl_decoded(reply)
    if decoded or mode == "text":
        return decoded
    return [c for c in reply.tool_calls if not c.invalid]


def _bfcl_decoded(reply: Reply) -> list[ToolCall]:
    written = reply.content if reply.content is not None else reply.text
    try:
        decoded = decode_prompt_reply(written, "python")
    except Undecodable:
        return []
    if not well_formed(decoded):
        return []
    out = []
    for k, call in enumerate(decoded):
        ((name, arguments),) = call.items()
        out.append(
            ToolCall(
                id=f"bfcl_{k}",
                name=name,
                arguments=arguments,
                raw_arguments=json.dumps(arguments, ensure_ascii=False, default=repr),
                source="text",
                family=_BFCL,
            )
        )
    return out


def call_text(call: ToolCall) -> str:
    """A call as BFCL's prompting decoder writes it, the name its result goes back under:
    `name(a=1, b='x')`."""
    return f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


def _feed_back(reply: Reply, calls: list[ToolCall], outs: list[ToolOutcome]) -> list[Message]:
    """BFCL's prompting handlers send the results as the repr of a list of role-`tool` dicts
    in one user message, after the model's reply as written; other calls go back as the
    tool loop sends them."""
    if not calls or calls[0].family != _BFCL:
        return feed_back_messages(reply, calls, outs)
    results = [
        {"role": "tool", "name": call_text(c), "content": o.content}
        for c, o in zip(calls, outs, strict=True)
    ]
    written = reply.content if reply.content is not None else reply.text
    return [{"role": "assistant", "content": written}, {"role": "user", "content": repr(results)}]


class Sandboxes:
    """The idle sandbox workers of one run's process, reused from entry to entry: a worker's
    start and BFCL's imports (~40 ms) are paid once, not twice per entry (to play, to grade).
    A worker is reset to each entry it takes (fresh instances) and replaced by the sandbox
    itself when it has spent half its CPU budget."""

    def __init__(self) -> None:
        self._idle: list[Any] = []

    async def take(self, entry: BfclEntry) -> Any:
        """A worker for `entry`: an idle one reset to it, else a new one. The idle list is
        touched on the event loop's thread only (workers run their entries concurrently); the
        slow parts, a reset or a start, run in a thread."""
        import asyncio

        from workbench.eval.suites.bfcl.multi_turn_checker import grading_sides
        from workbench.eval.suites.bfcl.sandbox import BackendSandbox

        while self._idle:
            sandbox = self._idle.pop()
            if sandbox.entry.source == entry.source:
                await asyncio.to_thread(sandbox.reset, entry)
                return sandbox
            await asyncio.to_thread(sandbox.close)
        return await asyncio.to_thread(
            BackendSandbox, entry, source=entry.source or None, sides=grading_sides()
        )

    def give(self, sandbox: Any) -> None:
        self._idle.append(sandbox)

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


@dataclass(slots=True)
class Verdict:
    """A played entry and BFCL's verdict on it (None for a memory prerequisite: it writes
    the memory, nothing grades it), and the memory it left (a prerequisite's snapshot)."""

    played: Played
    valid: bool | None
    error_type: str | None = None
    reason: str = ""
    details: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None

    def grade_json(self) -> str:
        """The output's `grade` column: the checks, the reason, the whole trace (each turn's
        steps and the backends' answers) and what BFCL's checker found different."""
        return json.dumps(
            {
                "checks": {} if self.valid is None else {"bfcl": self.valid},
                "reason": self.reason,
                **({"error_type": self.error_type} if self.error_type else {}),
                "turns": self.played.turns,
                "results": self.played.results,
                "force_quit": self.played.force_quit,
                **({"details": self.details} if self.details else {}),
                **({"memory": self.memory} if self.memory is not None else {}),
            },
            ensure_ascii=False,
            default=repr,
        )


async def play_and_grade(
    entry: BfclEntry,
    *,
    mode: ToolsMode,
    ask: Callable[[ChatRequest], Awaitable[Reply]],
    sinks: Sequence[Any] = (),
    memory: dict[str, Any] | None = None,
    web: str | None = None,
    sandboxes: Sandboxes | None = None,
) -> Verdict:
    """Play `entry` against its backends, then grade it as BFCL does: a multi-turn trace
    against the ground truth's (fresh backends for both), an agentic one on its final answer.
    BFCL's own backends run in a sandboxed worker; web search runs our search backends.
    `memory`: the snapshot a memory entry starts from (its scenario's last conversation's);
    `web`: the simulator whose fixed web answers web search offline (else SerpAPI, by key);
    `sandboxes`: the run's idle workers to reuse (else one is started and closed here)."""
    import asyncio

    from workbench.eval.suites.bfcl.backends import BackendCall
    from workbench.eval.suites.bfcl.case import WEB_SEARCH_CATEGORIES

    if entry.category in WEB_SEARCH_CATEGORIES:
        from workbench.eval.suites.bfcl.agentic import play_and_grade_agentic

        return await play_and_grade_agentic(entry, mode=mode, ask=ask, sinks=sinks, offline=web)
    played_entry = entry
    if memory is not None:
        from workbench.eval.suites.bfcl.memory import with_memory_prompt

        played_entry = with_memory_prompt(entry, memory)
        backend: dict[str, Any] = {"snapshot": memory}
        if entry.involved_classes[0] == "MemoryAPI_vector":
            from workbench.eval.suites.bfcl.memory import encoder_folder

            backend["encoder"] = await asyncio.to_thread(encoder_folder)
        config = {entry.involved_classes[0]: backend}
        entry = dataclasses.replace(entry, initial_config=config)
    graded: Any = None
    pool = sandboxes if sandboxes is not None else Sandboxes()
    sandbox = await pool.take(entry)

    async def execute(call: ToolCall) -> str:
        try:
            backend_call = BackendCall.of(call)
        except ValueError as exc:  # arguments BFCL could not decode: nothing runs
            return f"{ERROR_PREFIX} {exc}"
        (result,) = await asyncio.to_thread(sandbox.execute, [backend_call])
        return result

    try:
        played = await play_entry(played_entry, mode=mode, ask=ask, execute=execute, sinks=sinks)
        snapshot = None
        if entry.prerequisite:
            from workbench.eval.suites.bfcl.memory import snapshot_of

            snapshot = snapshot_of(entry, await asyncio.to_thread(sandbox.state))
        if entry.kind == "multi_turn":  # graded in the same worker, reset to fresh instances
            from workbench.eval.suites.bfcl.multi_turn_checker import grade_multi_turn

            graded = await asyncio.to_thread(grade_multi_turn, entry, played.turns, sandbox=sandbox)
    except BaseException:
        await asyncio.to_thread(sandbox.close)  # a worker in an unknown state is not reused
        raise
    pool.give(sandbox)
    if sandboxes is None:
        await asyncio.to_thread(pool.close)
    if entry.prerequisite:
        return Verdict(played, None, memory=snapshot)
    if entry.kind == "agentic":
        from workbench.eval.suites.bfcl.agentic_checker import grade_agentic

        steps: list[Any] = (
            [calls or text for calls, text in zip(played.turns[0], played.texts[0], strict=True)]
            if played.turns
            else []
        )
        verdict = grade_agentic(entry, steps)
    else:
        verdict = graded
    reason = "" if verdict.valid else f"{verdict.error_type}: {'; '.join(verdict.errors[:2])}"
    return Verdict(
        played, verdict.valid, verdict.error_type, reason[:500], getattr(verdict, "details", None)
    )
