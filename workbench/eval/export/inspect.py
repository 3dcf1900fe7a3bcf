"""`workbench export inspect RUN --out DIR`: a logged run as Inspect AI eval logs, built from
inspect_ai's own types and written by its own writer, so `inspect view DIR` and
`inspect_ai.analysis.samples_df(DIR)` read our runs like their own.

The mapping:

- one log per configuration: an Inspect log is one task against one model, and a configuration
  (a router and its chain) is what plays the model here; the task is the prompt set, the same
  in every log of the run, so Inspect compares the configurations side by side;
- one sample per item × repeat: the sample's id is the item's, its epoch the repeat + 1
  (Inspect's epochs are our repeats);
- the sample's messages are its conversation: the input, then each turn's answer with that
  turn's tool calls, then the tool results the loop sent back (`ChatMessageTool`, as the next
  turn's request carried them), down to the final answer;
- a `ModelEvent` per attempt that called a model (provider/model, the tools it sent natively,
  HTTP status, error, start and end as datetimes, working time) and an `InfoEvent` per
  candidate the router skipped, for every route of the sample (a tool loop routes once per
  turn); a `ToolEvent` per tool step, after the turn that called it, with its logged times, the
  call's arguments, the result the model read and the loop's error code when it failed;
- the grade as the `grade` score: CORRECT / INCORRECT, the grade's reason as its explanation;
  an item with nothing to expect has no score;
- the fallback chain (`key=outcome`, in order), its depth, the answering model in the sample's
  metadata, and each fallback as Inspect's own `model_fallbacks`;
- input: the request as it left the machine, masked; output: the cleaned text and the calls,
  masked too (see `_content.py`).

File names follow Inspect's `{created}_{task}_{id}.eval`, the id derived from the run and the
configuration: exporting a run again replaces its logs rather than adding copies.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.dataset.prompt_set import Dataset
from workbench.eval.export._content import (
    Call,
    Exchange,
    Masking,
    SampleContent,
    Turn,
    step_trail,
)
from workbench.eval.export._run import (
    LoggedAttempt,
    LoggedRoute,
    LoggedRun,
    LoggedSample,
    LoggedToolStep,
    load_run,
    utc_ms,
)
from workbench.eval.store.rows import from_json
from workbench.output_files import staged, writable_dir

try:  # the `inspect` extra
    from inspect_ai.event import InfoEvent, ModelEvent, ScoreEvent, ToolEvent
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalError,
        EvalLog,
        EvalMetric,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        EvalStats,
        EvalStatus,
        write_eval_log,
    )
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
        GenerateConfig,
        ModelFallback,
        ModelOutput,
        ModelUsage,
        StopReason,
    )
    from inspect_ai.scorer import CORRECT, INCORRECT, Score
    from inspect_ai.tool import ToolCall, ToolCallError, ToolInfo, ToolParams
    from pydantic import ValidationError
except ImportError as exc:  # pragma: no cover - exercised by the CLI test without the extra
    raise ConfigError(
        f"inspect_ai is not installed ({exc.name}): install the `inspect` extra "
        "(pip install 'workbench[inspect]')",
        code="EXPORT_UNAVAILABLE",
    ) from None

__all__ = ["export_inspect"]

Source = Literal["input", "generate"]  # where Inspect says a message came from
# The loop's failure codes (`LoggedSample.tool_failure`) as Inspect's kinds of tool error.
_TOOL_ERROR: dict[str, Any] = {
    "tool_timeout": "timeout",
    "invalid_arguments": "parsing",
    "cancelled": "cancelled",
}
SCORER = "grade"  # the score's name: what `workbench.eval.scoring.grading.grade` said of the output
_STATUS: dict[str, EvalStatus] = {
    "finished": "success",
    "interrupted": "cancelled",
    "failed": "error",
}
_STOP: dict[str, StopReason] = {"stop": "stop", "length": "max_tokens", "tool_calls": "tool_calls"}


def export_inspect(
    db: str | Path | RunFrames,
    run: str = "latest",
    out_dir: str | Path = "logs",
    *,
    dataset: str | Path | Dataset | None = None,
) -> list[Path]:
    """Write the run's Inspect logs into `out_dir` (one per configuration) and return their
    paths. `run` is an id, a run's `--name` or `latest`; `dataset` the prompt set the run was
    made from, when it is no longer where the run read it."""
    folder = writable_dir(out_dir)  # refused before any work
    logged = load_run(db, run)
    masking = Masking.for_run(logged, dataset)
    logs = [_eval_log(logged, config, samples, masking) for config, samples in _configs(logged)]
    paths = []
    with staged(folder) as stage:
        for log in logs:
            name = _file_name(log)
            write_eval_log(log, stage(name), format="eval")
            paths.append(folder / name)
    return paths


def _configs(run: LoggedRun) -> list[tuple[str, list[LoggedSample]]]:
    """Every configuration of the run, with its samples (none yet for an interrupted one)."""
    found = run.by_config()
    return [(c, found.get(c, [])) for c in dict.fromkeys([*run.configs, *found])]


# ------------------------------------------------------------------ the log
def _eval_log(
    run: LoggedRun, config: str, samples: list[LoggedSample], masking: Masking
) -> EvalLog:
    exported = [_sample(run, s, masking.sample(s)) for s in samples]
    ended = run.finished_at or (utc_ms(max(s.end_ms for s in samples)) if samples else None)
    usage: dict[str, ModelUsage] = {}
    for sample in exported:
        for model, used in sample.model_usage.items():
            usage[model] = usage[model] + used if model in usage else used
    item_ids = sorted({s.item_id for s in samples})
    spec = EvalSpec(
        eval_id=_id(run.run_id, config),
        run_id=run.run_id,
        created=run.started_at.isoformat(),
        task=run.dataset_name,
        task_id=_id(run.run_id, config, "task"),
        task_version=0,
        dataset=EvalDataset(
            name=run.dataset_name,
            location=run.dataset,
            samples=len(item_ids),
            sample_ids=item_ids,
        ),
        model=f"workbench/{config}",
        solver="workbench.router",
        config=EvalConfig(epochs=int(run.settings.get("repeats") or 1)),
        packages={"workbench": run.version or ""},
        metadata={
            "workbench": {
                "run_id": run.run_id,
                "run_name": run.name,
                "config": config,
                "settings": run.settings,
                "candidates": list(samples[0].routes[0].candidates)
                if samples and samples[0].routes
                else [],
            }
        },
    )
    return EvalLog(
        version=2,
        status=_STATUS.get(run.status, "started"),
        eval=spec,
        plan=EvalPlan(
            name="workbench",
            steps=[EvalPlanStep(solver="workbench.router", params={"config": config})],
        ),
        results=_results(samples, exported),
        stats=EvalStats(
            started_at=run.started_at.isoformat(),
            completed_at=ended.isoformat() if ended else "",
            model_usage=usage,
        ),
        samples=exported,
    )


def _results(samples: list[LoggedSample], exported: list[EvalSample]) -> EvalResults:
    graded = [s.output.passed for s in samples if s.output.passed is not None]
    scores = []
    if graded:
        scores.append(
            EvalScore(
                name=SCORER,
                scorer=SCORER,
                scored_samples=len(graded),
                unscored_samples=len(samples) - len(graded),
                metrics={"accuracy": EvalMetric(name="accuracy", value=sum(graded) / len(graded))},
            )
        )
    return EvalResults(
        total_samples=len(samples),
        completed_samples=sum(1 for s in exported if s.error is None),
        scores=scores,
    )


def _file_name(log: EvalLog) -> str:
    """Inspect's `{created}_{task}_{id}.eval`: `_` separates the parts, so the task has none."""
    created = datetime.fromisoformat(log.eval.created).replace(microsecond=0).isoformat()
    task = re.sub(r"[^A-Za-z0-9-]+", "-", log.eval.task).strip("-") or "run"
    return f"{created.replace(':', '-')}_{task}_{log.eval.task_id}.eval"


def _id(*parts: object) -> str:
    """A stable id (22 characters, like Inspect's) for what `parts` name."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:22]


# ------------------------------------------------------------------ a sample
def _sample(run: LoggedRun, sample: LoggedSample, content: SampleContent) -> EvalSample:
    out = sample.output
    start = sample.start_ms
    model = _model(out.key) if out.key else f"workbench/{sample.config}"
    usage = ModelUsage(
        input_tokens=out.tokens_in or 0,
        output_tokens=out.tokens_out or 0,
        total_tokens=(out.tokens_in or 0) + (out.tokens_out or 0),
    )
    inputs = _messages(content.input(), source="input")
    answer = _assistant(content.output(out), model)
    exchanges = content.exchanges(sample)
    messages = _conversation(inputs, exchanges, content.output(out), model if out.key else None)
    events: list[Any] = []
    per_model: dict[str, ModelUsage] = {}
    steps = _steps_after(sample, exchanges)
    tool_events = {
        n: [_tool_event(sample, s, exchanges, messages, content, start) for s in found]
        for n, found in steps.items()
    }
    events += tool_events.pop(-1, [])  # logged before the sample's first route: first
    for n, route in enumerate(sample.routes):
        for attempt in route.attempts:
            events.append(_event(route, attempt, content, start))
            used = _reply_usage(route, attempt)
            if used is not None:
                name = _model(attempt.key)
                per_model[name] = per_model[name] + used if name in per_model else used
        events += tool_events.get(n, [])
    score = _score(sample, content)
    if score is not None:
        events.append(
            ScoreEvent(
                score=score,
                target=_target(sample, content),
                scorer=SCORER,
                timestamp=utc_ms(sample.end_ms),
                working_start=(sample.end_ms - start) / 1000,
            )
        )
    fallbacks = [
        ModelFallback(model=_model(r.candidates[0]), fallback_model=_model(r.chosen))
        for r in sample.routes
        if r.fallback_depth > 0 and r.chosen and r.candidates
    ]
    working = (out.latency_ms or 0.0) / 1000
    return EvalSample(
        id=sample.item_id,
        epoch=sample.repeat + 1,
        uuid=_id(run.run_id, sample.config, sample.item_id, sample.repeat),
        input=inputs,
        target=_target(sample, content),
        messages=messages,
        output=ModelOutput(
            model=model,
            choices=[ChatCompletionChoice(message=answer, stop_reason=_sample_stop(sample))],
            usage=usage,
            time=working,
        ),
        scores={SCORER: score} if score is not None else None,
        metadata=_metadata(sample),
        events=events,
        model_usage=per_model or ({model: usage} if out.key else {}),
        model_fallbacks=fallbacks or None,
        started_at=utc_ms(start).isoformat(),
        completed_at=utc_ms(sample.end_ms).isoformat(),
        # The clock times are whole milliseconds, the working time is not: never less than it.
        total_time=max(working, (sample.end_ms - start) / 1000),
        working_time=working,
        error=_error(out.error_code, out.error_message, content, out.unanswered),
    )


def _conversation(
    inputs: list[ChatMessage], exchanges: list[Exchange], output: Turn, model: str | None
) -> list[ChatMessage]:
    """The input, then each answered turn's answer and what the loop sent back after it. A
    sample whose turns were not logged (a store before `replies`) ends on its graded output."""
    messages = list(inputs)
    answered = False
    for x in exchanges:
        if x.answer is None:
            continue
        answered = True
        by = x.route.answered_by
        messages.append(_assistant(x.answer, _model(by.key) if by else None))
        messages += _messages(x.fed_back, source=None)
    if not answered and model is not None:
        messages.append(_assistant(output, model))
    return messages


def _steps_after(
    sample: LoggedSample, exchanges: list[Exchange]
) -> dict[int, list[LoggedToolStep]]:
    """Each step under the turn whose answer called it (the last that started before it):
    the order in which they happened."""
    out: dict[int, list[LoggedToolStep]] = {}
    for step in sample.tool_steps:
        out.setdefault(sample.turn_of(step), []).append(step)
    return out


def _metadata(sample: LoggedSample) -> dict[str, Any]:
    out = sample.output
    return {
        "config": sample.config,
        "repeat": sample.repeat,
        "category": sample.category,
        "tags": list(sample.tags),
        "answered_by": out.key,
        "fallback_chain": [step for r in sample.routes for step in r.chain],
        "fallback_depth": max((r.fallback_depth for r in sample.routes), default=0),
        "routes": [r.route_id for r in sample.routes],
        "protocol": out.protocol,
        "cached": bool(out.cached),
        "error_code": out.error_code,
        "unanswered": out.unanswered,  # why the provider kept it from the model, or None
        "retry_at_ms": out.retry_at_ms,
    }


def _score(sample: LoggedSample, content: SampleContent) -> Score | None:
    out = sample.output
    if out.passed is None:
        return None
    grade = from_json(out.grade) or {}
    reason = str(grade.get("reason") or "") if isinstance(grade, dict) else ""
    if not reason:
        reason = "every check passed" if out.passed else (out.error_code or "failed")
    meta = {"score": out.score}
    if isinstance(grade, dict):
        meta |= {k: v for k, v in grade.items() if k != "reason"}
    return Score(
        value=CORRECT if out.passed else INCORRECT,
        answer=content.text(out.cleaned),
        explanation=content.text(reason),
        metadata=meta,
    )


def _target(sample: LoggedSample, content: SampleContent) -> str:
    """What the grade expected, as compact JSON of the checks the item sets."""
    expect = {k: v for k, v in (sample.expect or {}).items() if v not in (None, False, [], {}, "")}
    return content.text(json.dumps(expect, ensure_ascii=False)) if expect else ""


def _sample_stop(sample: LoggedSample) -> StopReason:
    if sample.output.error_code:
        return "unknown"
    last = next((r.reply for r in reversed(sample.routes) if r.reply), None)
    return _STOP.get(str((last or {}).get("finish_reason")), "stop")


def _error(
    code: str | None, message: str | None, content: SampleContent, unanswered: str | None = None
) -> EvalError | None:
    """A sample's error. One the provider kept unanswered says so first: Inspect counts it as
    an error (no score), never as a wrong answer."""
    if not code:
        return None
    text = content.text(message) or code
    if not text.startswith(code):
        text = f"{code}: {text}"
    if unanswered:
        text = f"unanswered ({unanswered}): {text}"
    return EvalError(message=text, traceback="", traceback_ansi="")


# ------------------------------------------------------------------ an attempt
def _event(
    route: LoggedRoute, attempt: LoggedAttempt, content: SampleContent, sample_start: float
) -> Any:
    meta = {
        "route_id": route.route_id,
        "position": attempt.position,
        "key": attempt.key,
        "outcome": attempt.outcome,
        "status": attempt.status,
        "error_code": attempt.error_code,
        "error_kind": attempt.error_kind,
        "cached": attempt.cached,
    }
    began = utc_ms(attempt.start_ms)
    offset = max(0.0, attempt.start_ms - sample_start) / 1000
    if not attempt.called:  # the router decided not to ask: no model call to show
        return InfoEvent(
            source="workbench.router",
            data={"skipped": attempt.key, "outcome": attempt.outcome, "reason": attempt.reason},
            timestamp=began,
            working_start=offset,
            metadata=meta,
        )
    model = _model(attempt.key)
    if attempt.outcome == "ok":
        reply = route.reply if attempt is route.answered_by else None
        if reply is not None:
            message = _assistant(content.answer(reply), model)
            stop = _STOP.get(str(reply.get("finish_reason")), "stop")
            output = ModelOutput(
                model=model,
                choices=[ChatCompletionChoice(message=message, stop_reason=stop)],
                usage=_reply_usage(route, attempt),
                time=attempt.latency_ms / 1000,
            )
        else:
            output = ModelOutput(model=model, time=attempt.latency_ms / 1000)
        error = None
    else:
        error = _error(attempt.error_code or attempt.outcome, attempt.error_message, content)
        output = ModelOutput(model=model, error=error.message if error else None)
    return ModelEvent(
        model=model,
        input=_messages(content.sent(attempt), source="input"),
        tools=_tools(attempt, content),
        tool_choice="auto",
        config=GenerateConfig(),
        output=output,
        error=error.message if error else None,
        cache="read" if attempt.cached else None,
        timestamp=began,
        completed=utc_ms(attempt.end_ms),
        working_start=offset,
        working_time=attempt.latency_ms / 1000 if attempt.outcome == "ok" else None,
        metadata=meta,
    )


def _tools(attempt: LoggedAttempt, content: SampleContent) -> list[ToolInfo]:
    """What the attempt offered natively; a schema Inspect cannot read is shown as none."""
    out = []
    for tool in content.offered(attempt):
        try:
            params = ToolParams.model_validate(tool.parameters or {})
        except ValidationError:
            params = ToolParams()
        out.append(ToolInfo(name=tool.name, description=tool.description, parameters=params))
    return out


def _tool_event(
    sample: LoggedSample,
    step: LoggedToolStep,
    exchanges: list[Exchange],
    messages: list[ChatMessage],
    content: SampleContent,
    sample_start: float,
) -> ToolEvent:
    """A step as Inspect shows a tool call: its call's arguments and the result the model read
    (both masked, empty when not logged), its times, and the loop's code when it failed."""
    call, result = step_trail(exchanges, step, sample.turn_of(step))
    # Its tool message: the k-th with its id, k the steps of that id before it (ids repeat).
    k = sample.step_rank(step)
    replies = [
        m for m in messages if isinstance(m, ChatMessageTool) and m.tool_call_id == step.step_id
    ]
    message = replies[k] if k < len(replies) else None
    failure = sample.tool_failure(step)
    if not step.finished:
        error = ToolCallError("unknown", "the run stopped while the tool ran")
    elif failure is not None:
        error = ToolCallError(_TOOL_ERROR.get(failure, "unknown"), failure)
    else:
        error = None
    finished = step.end_ms
    return ToolEvent(
        id=step.step_id,
        function=step.tool,
        arguments=_arguments(call) if call else {},
        result=result.text if result else "",
        error=error,
        timestamp=utc_ms(step.start_ms),
        completed=utc_ms(finished) if finished is not None else None,
        working_start=max(0.0, step.start_ms - sample_start) / 1000,
        working_time=(finished - step.start_ms) / 1000 if finished is not None else None,
        message_id=message.id if message else None,
        metadata={"params": content.params(step), "ok": step.ok, "error_code": failure},
    )


def _reply_usage(route: LoggedRoute, attempt: LoggedAttempt) -> ModelUsage | None:
    """The tokens of the turn's answer, on the attempt that answered it."""
    if route.reply is None or attempt is not route.answered_by:
        return None
    usage = route.reply.get("usage") or {}
    got, made = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if got is None and made is None:
        return None
    return ModelUsage(
        input_tokens=got or 0, output_tokens=made or 0, total_tokens=(got or 0) + (made or 0)
    )


# ------------------------------------------------------------------ messages
def _model(key: str) -> str:
    """`provider:model@lane` as Inspect names a model: `provider/model`."""
    provider, _, model = key.partition(":")
    return f"{provider}/{model.split('@', 1)[0]}" if model else provider


def _messages(turns: Sequence[Turn], *, source: Source | None) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for turn in turns:
        if turn.role == "system":
            out.append(ChatMessageSystem(content=turn.text, source=source))
        elif turn.role == "assistant":
            out.append(_assistant(turn, None, source=source))
        elif turn.role == "tool":
            out.append(
                ChatMessageTool(
                    content=turn.text,
                    tool_call_id=turn.tool_call_id,
                    function=turn.name,
                    source=source,
                )
            )
        else:
            out.append(ChatMessageUser(content=turn.text, source=source))
    return out


def _assistant(
    turn: Turn, model: str | None, *, source: Source | None = "generate"
) -> ChatMessageAssistant:
    calls = [
        ToolCall(
            id=c.id,
            function=c.name,
            arguments=_arguments(c),
            parse_error=None if isinstance(c.arguments, dict) else "not a JSON object",
        )
        for c in turn.calls
    ]
    return ChatMessageAssistant(
        content=turn.text, tool_calls=calls or None, model=model, source=source
    )


def _arguments(call: Call) -> dict[str, Any]:
    """Inspect's arguments are an object: anything else the model wrote goes as its value."""
    return call.arguments if isinstance(call.arguments, dict) else {"value": call.arguments}
