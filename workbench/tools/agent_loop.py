"""The text-protocol agent loop (the seed's "Boucle d'agent" and "outils en panne, budget
de temps, dernier tour").

Each turn asks the router with the registry's listing for the role as the system prompt, reads
``<tool_call name="…">{json}</tool_call>`` blocks (and every other prose shape) restricted to
the registry's names, runs what the role may run, and feeds the results back as
``<tool_result name="…">{json}</tool_result>`` in the next user message — until a turn with no
call (the answer) or ``max_steps``. Out of steps or time, one last turn without tools answers
from what was read, rather than an error.

Privacy: the ``masker`` goes to the router, which masks what leaves for an external
provider and unmasks the reply (streams included) — a local provider gets clear text. Here it
masks only the string values of an ``external=True`` tool's parameters: that tool is the other
way data leaves the machine.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.errors import WorkbenchError
from workbench.events import Sink, ToolStepEvent, emit
from workbench.providers.protocols import compact_json, read_text_tool_calls
from workbench.tools.tool_registry import RegisteredTool, ToolRegistry
from workbench.types import CallContext, ChatRequest, Message, Reply, ToolCall, user

__all__ = [
    "DEFAULT_FINAL_INSTRUCTION",
    "AgentResult",
    "AgentStep",
    "format_tool_result",
    "run_agent_loop",
]

DEFAULT_FINAL_INSTRUCTION = "Answer now with what you have read: no more tools."
StepStatus = Literal[
    "ok", "forbidden", "denied", "invalid_arguments", "tool_failed", "tool_timeout"
]
Stopped = Literal["answer", "max_steps", "max_time"]


@dataclass(slots=True)
class AgentStep:
    """One tool call of the loop: what was asked, and what the model read back."""

    id: str
    tool: str
    params: dict[str, Any]  # as the model wrote them (clear text)
    status: StepStatus
    content: str  # the JSON the model read inside <tool_result>
    result: Any = None  # the handler's return value (None unless status == "ok")

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(slots=True)
class AgentResult:
    text: str
    steps: list[AgentStep] = field(default_factory=list)
    stopped: Stopped = "answer"
    turns: int = 0
    messages: list[Message] = field(default_factory=list)  # the conversation, in clear


def format_tool_result(name: str, content: str) -> str:
    return f'<tool_result name="{name}">{content}</tool_result>'


def _to_json(value: Any) -> str:
    try:
        return compact_json(value)
    except (TypeError, ValueError):
        return compact_json(str(value))


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _mask_values(value: Any, masker: Any) -> Any:
    """Every string value (not key) of `value`, masked, recursively."""
    if isinstance(value, str):
        return masker.mask(value)
    if isinstance(value, dict):
        return {k: _mask_values(v, masker) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_values(v, masker) for v in value]
    return value


class _Loop:
    def __init__(
        self,
        ctx: Any,
        registry: ToolRegistry,
        router: Any,
        user_role: str | None,
        on_chunk: Callable[[str], Any] | None,
        confirm_tool: Callable[[ToolCall, Any], Awaitable[bool] | bool] | None,
        masker: Any,
        report_tool_errors: bool,
        tool_timeout_s: float | None,
        sinks: Iterable[Sink],
    ) -> None:
        self.ctx = ctx
        self.registry = registry
        self.router = router
        self.role = user_role
        self.on_chunk = on_chunk
        self.confirm_tool = confirm_tool
        self.masker = masker
        self.report = report_tool_errors
        self.tool_timeout_s = tool_timeout_s
        extra = ctx.sinks if isinstance(ctx, CallContext) else ()
        self.sinks = (*tuple(sinks), *extra)
        self.turns = 0

    # -- one model turn -------------------------------------------------------------------
    async def ask(self, system: str | None, messages: list[Message]) -> str:
        request = ChatRequest(messages=list(messages), system=system)
        self.turns += 1
        if self.on_chunk is None:
            result = await self.router.route(request, ctx=self.ctx, masker=self.masker)
            text = result.value.text
        else:
            # The seed's passthrough: each chunk goes to the UI as it comes, and the loop keeps
            # the whole text, since it needs it to find a <tool_call>.
            chunks: list[str] = []
            final: Reply | None = None
            async for item in self.router.stream(request, ctx=self.ctx, masker=self.masker):
                if isinstance(item, str):
                    chunks.append(item)
                    await _maybe_await(self.on_chunk(item))
                elif isinstance(getattr(item, "value", None), Reply):
                    final = item.value
            text = "".join(chunks) or (final.text if final is not None else "")
        return text

    def read_calls(self, text: str) -> tuple[list[ToolCall], str]:
        # Every registered name, not only the role's: a forbidden call is refused out loud.
        return read_text_tool_calls(text, self.registry.names())

    # -- the tools of one turn --------------------------------------------------------------
    async def run_calls(self, calls: list[ToolCall]) -> list[AgentStep]:
        # Checks and confirmations first, one at a time (a person answers one question at a
        # time); then the allowed calls run together.
        steps: list[AgentStep | None] = []
        to_run: list[tuple[int, RegisteredTool, ToolCall]] = []
        for k, call in enumerate(calls):
            tool = self.registry.get(call.name)
            step_id = call.id or f"step_{self.turns}_{k}"
            if tool is None or not tool.allows(self.role):
                # Parsed against every registered name: a forbidden tool is refused, not run.
                steps.append(self._refusal(call, step_id, "forbidden"))
                continue
            if call.invalid:
                steps.append(self._refusal(call, step_id, "invalid_arguments"))
                continue
            if self.confirm_tool is not None:
                approved = await _maybe_await(self.confirm_tool(call, self.ctx))
                if not approved:  # None counts as "no": a write waits for a clear yes
                    steps.append(self._refusal(call, step_id, "denied"))
                    continue
            steps.append(None)
            to_run.append((k, tool, call))
        for refused in steps:
            if refused is not None:
                await self._event(refused.id, refused.tool, refused.params, ok=False)
        done = await asyncio.gather(
            *(
                self._run(tool, call, call.id or f"step_{self.turns}_{k}")
                for k, tool, call in to_run
            ),
            return_exceptions=True,
        )
        for (k, _, _), outcome in zip(to_run, done, strict=True):
            if isinstance(outcome, BaseException):
                raise outcome  # without report_tool_errors a raising tool propagates (seed)
            steps[k] = outcome
        return [s for s in steps if s is not None]

    def _refusal(self, call: ToolCall, step_id: str, status: StepStatus) -> AgentStep:
        if status == "forbidden":
            body: dict[str, Any] = {"error": "forbidden", "tool": call.name}
        elif status == "denied":
            body = {"denied": True, "tool": call.name}
        else:
            body = {"error": "invalid_arguments", "reason": call.invalid_reason or "not_json"}
        return AgentStep(step_id, call.name, call.arguments, status, _to_json(body))

    async def _run(self, tool: RegisteredTool, call: ToolCall, step_id: str) -> AgentStep:
        params = call.arguments
        if tool.external and self.masker is not None:
            params = _mask_values(params, self.masker)
        await self._event(step_id, tool.name, call.arguments, ok=None)

        async def invoke() -> Any:
            return await _maybe_await(tool.handler(params, self.ctx))

        try:
            if self.tool_timeout_s is None:
                value = await invoke()
            else:
                value = await asyncio.wait_for(invoke(), self.tool_timeout_s)
        except TimeoutError as exc:
            await self._event(step_id, tool.name, call.arguments, ok=False)
            if not self.report:
                raise WorkbenchError(
                    f"tool {tool.name} took longer than {self.tool_timeout_s}s",
                    code="TOOL_TIMEOUT",
                    status=504,
                    details={"tool": tool.name},
                ) from exc
            return AgentStep(
                step_id, tool.name, call.arguments, "tool_timeout", '{"error":"tool_timeout"}'
            )
        except Exception:
            await self._event(step_id, tool.name, call.arguments, ok=False)
            if not self.report:
                raise
            # The model reads a code, never the message: a message can carry a path, a query,
            # someone else's data.
            return AgentStep(
                step_id, tool.name, call.arguments, "tool_failed", '{"error":"tool_failed"}'
            )
        await self._event(step_id, tool.name, call.arguments, ok=True)
        return AgentStep(step_id, tool.name, call.arguments, "ok", _to_json(value), value)

    async def _event(
        self, step_id: str, tool: str, params: dict[str, Any], ok: bool | None
    ) -> None:
        if self.sinks:
            await emit(self.sinks, ToolStepEvent(step_id, tool, _to_json(params)[:120], ok))


async def run_agent_loop(
    prompt: str,
    ctx: Any,
    registry: ToolRegistry,
    router: Any,
    user_role: str | None,
    max_steps: int = 5,
    on_chunk: Callable[[str], Any] | None = None,
    confirm_tool: Callable[[ToolCall, Any], Awaitable[bool] | bool] | None = None,
    masker: Any = None,
    report_tool_errors: bool = False,
    tool_timeout_s: float | None = None,
    max_s: float | None = None,
    final_instruction: str | None = None,
    *,
    sinks: Iterable[Sink] = (),
) -> AgentResult:
    """Ask, run the tools the model calls, feed their results back, until an answer.

    `router` needs `route(request, ctx=...)` (a RouteResult whose `.value` is a Reply) and,
    with `on_chunk`, `stream(request, ctx=...)` (text deltas, then the RouteResult).
    `ctx` goes to the router and to every handler as is. Tool steps are also emitted as
    `ToolStepEvent`s to `sinks` (and to `ctx.sinks` when ctx is a CallContext).
    Raises WorkbenchError AI_NO_ANSWER when a turn holds neither text nor a tool call."""
    loop = _Loop(
        ctx,
        registry,
        router,
        user_role,
        on_chunk,
        confirm_tool,
        masker,
        report_tool_errors,
        tool_timeout_s,
        sinks,
    )
    system = registry.format_tools_for_prompt(user_role) or None
    messages: list[Message] = [user(prompt)]
    steps: list[AgentStep] = []
    started = time.monotonic()
    stopped: Stopped = "max_steps"
    for _ in range(max(0, max_steps)):
        if max_s is not None and time.monotonic() - started >= max_s:
            stopped = "max_time"
            break
        raw = await loop.ask(system, messages)
        calls, rest = loop.read_calls(raw)
        if not calls:
            if not rest.strip():
                raise _no_answer(loop.turns)
            messages.append({"role": "assistant", "content": raw})
            return AgentResult(rest, steps, "answer", loop.turns, messages)
        # The assistant message keeps its <tool_call> blocks: the model sees what it asked.
        messages.append({"role": "assistant", "content": raw})
        done = await loop.run_calls(calls)
        steps.extend(done)
        messages.append(user("\n".join(format_tool_result(s.tool, s.content) for s in done)))
    # The last turn: no tool listing, an explicit instruction, an answer from what was read.
    messages.append(user(final_instruction or DEFAULT_FINAL_INSTRUCTION))
    raw = await loop.ask(None, messages)
    _, text = loop.read_calls(raw)  # a call written anyway is not run, and not shown
    if not text.strip():
        raise _no_answer(loop.turns)
    messages.append({"role": "assistant", "content": raw})
    return AgentResult(text, steps, stopped, loop.turns, messages)


def _no_answer(turns: int) -> WorkbenchError:
    return WorkbenchError(
        "the model answered with neither text nor a tool call",
        code="AI_NO_ANSWER",
        status=502,
        details={"turns": turns},
    )
