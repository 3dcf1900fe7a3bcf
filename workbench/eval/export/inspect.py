"""`workbench export inspect RUN --out DIR`: a logged run as Inspect AI eval logs, built from
inspect_ai's own types and written by its own writer, so `inspect view DIR` and
`inspect_ai.analysis.samples_df(DIR)` read our runs like their own.

The mapping:

- one log per configuration: an Inspect log is one task against one model, and a configuration
  (a router and its chain) is what plays the model here; the task is the prompt set, the same
  in every log of the run, so Inspect compares the configurations side by side;
- one sample per item × repeat: the sample's id is the item's, its epoch the repeat + 1
  (Inspect's epochs are our repeats);
- a `ModelEvent` per attempt that called a model (provider/model, HTTP status, error, start and
  end as datetimes, working time) and an `InfoEvent` per candidate the router skipped, for
  every route of the sample (a tool loop routes once per turn);
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
from workbench.eval._rows import from_json
from workbench.eval.analysis import Workbench
from workbench.eval.datasets import Dataset
from workbench.eval.export._content import Masking, SampleContent, Turn
from workbench.eval.export._run import (
    LoggedAttempt,
    LoggedRoute,
    LoggedRun,
    LoggedSample,
    load_run,
    utc_ms,
)
from workbench.eval.output_files import staged, writable_dir

try:  # the `inspect` extra
    from inspect_ai.event import InfoEvent, ModelEvent, ScoreEvent
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
    from inspect_ai.tool import ToolCall
except ImportError as exc:  # pragma: no cover - exercised by the CLI test without the extra
    raise ConfigError(
        f"inspect_ai is not installed ({exc.name}): install the `inspect` extra "
        "(pip install 'workbench[inspect]')",
        code="EXPORT_UNAVAILABLE",
    ) from None

__all__ = ["export_inspect"]

Source = Literal["input", "generate"]  # where Inspect says a message came from
SCORER = "grade"  # the score's name: what `workbench.eval.grading.grade` said of the output
_STATUS: dict[str, EvalStatus] = {
    "finished": "success", "interrupted": "cancelled", "failed": "error",
}  # fmt: skip
_STOP: dict[str, StopReason] = {"stop": "stop", "length": "max_tokens", "tool_calls": "tool_calls"}


def export_inspect(
    db: str | Path | Workbench,
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
        input_tokens=out.tokens_in or 0, output_tokens=out.tokens_out or 0,
        total_tokens=(out.tokens_in or 0) + (out.tokens_out or 0),
    )  # fmt: skip
    inputs = _messages(content.input(), source="input")
    answer = _assistant(content.output(out), model)
    events: list[Any] = []
    per_model: dict[str, ModelUsage] = {}
    for route in sample.routes:
        for attempt in route.attempts:
            events.append(_event(route, attempt, content, start))
            used = _reply_usage(route, attempt)
            if used is not None:
                name = _model(attempt.key)
                per_model[name] = per_model[name] + used if name in per_model else used
    score = _score(sample, content)
    if score is not None:
        events.append(
            ScoreEvent(score=score, target=_target(sample, content), scorer=SCORER,
                       timestamp=utc_ms(sample.end_ms), working_start=(sample.end_ms - start) / 1000)
        )  # fmt: skip
    fallbacks = [
        ModelFallback(model=_model(r.candidates[0]), fallback_model=_model(r.chosen))
        for r in sample.routes
        if r.fallback_depth > 0 and r.chosen and r.candidates
    ]
    return EvalSample(
        id=sample.item_id,
        epoch=sample.repeat + 1,
        uuid=_id(run.run_id, sample.config, sample.item_id, sample.repeat),
        input=inputs,
        target=_target(sample, content),
        messages=[*inputs, answer],
        output=ModelOutput(
            model=model,
            choices=[ChatCompletionChoice(message=answer, stop_reason=_sample_stop(sample))],
            usage=usage,
            time=(out.latency_ms or 0.0) / 1000,
        ),
        scores={SCORER: score} if score is not None else None,
        metadata=_metadata(sample),
        events=events,
        model_usage=per_model or ({model: usage} if out.key else {}),
        model_fallbacks=fallbacks or None,
        started_at=utc_ms(start).isoformat(),
        completed_at=utc_ms(sample.end_ms).isoformat(),
        total_time=max(0.0, sample.end_ms - start) / 1000,
        working_time=(out.latency_ms or 0.0) / 1000,
        error=_error(out.error_code, out.error_message, content),
    )


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


def _error(code: str | None, message: str | None, content: SampleContent) -> EvalError | None:
    if not code:
        return None
    text = content.text(message) or code
    if not text.startswith(code):
        text = f"{code}: {text}"
    return EvalError(message=text, traceback="", traceback_ansi="")


# ------------------------------------------------------------------ an attempt
def _event(
    route: LoggedRoute, attempt: LoggedAttempt, content: SampleContent, sample_start: float
) -> Any:
    meta = {
        "route_id": route.route_id, "position": attempt.position, "key": attempt.key,
        "outcome": attempt.outcome, "status": attempt.status, "error_code": attempt.error_code,
        "error_kind": attempt.error_kind, "cached": attempt.cached,
    }  # fmt: skip
    began = utc_ms(attempt.start_ms)
    offset = max(0.0, attempt.start_ms - sample_start) / 1000
    if not attempt.called:  # the router decided not to ask: no model call to show
        return InfoEvent(
            source="workbench.router",
            data={"skipped": attempt.key, "outcome": attempt.outcome, "reason": attempt.reason},
            timestamp=began, working_start=offset, metadata=meta,
        )  # fmt: skip
    model = _model(attempt.key)
    if attempt.outcome == "ok":
        reply = route.reply if attempt is route.answered_by else None
        if reply is not None:
            message = _assistant(content.answer(reply), model)
            stop = _STOP.get(str(reply.get("finish_reason")), "stop")
            output = ModelOutput(
                model=model, choices=[ChatCompletionChoice(message=message, stop_reason=stop)],
                usage=_reply_usage(route, attempt), time=attempt.latency_ms / 1000,
            )  # fmt: skip
        else:
            output = ModelOutput(model=model, time=attempt.latency_ms / 1000)
        error = None
    else:
        error = _error(attempt.error_code or attempt.outcome, attempt.error_message, content)
        output = ModelOutput(model=model, error=error.message if error else None)
    return ModelEvent(
        model=model,
        input=_messages(content.sent(attempt), source="input"),
        tools=[],
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


def _messages(turns: Sequence[Turn], *, source: Source) -> list[ChatMessage]:
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
    turn: Turn, model: str | None, *, source: Source = "generate"
) -> ChatMessageAssistant:
    calls = [
        ToolCall(
            id=c.id,
            function=c.name,
            arguments=c.arguments if isinstance(c.arguments, dict) else {"value": c.arguments},
            parse_error=None if isinstance(c.arguments, dict) else "not a JSON object",
        )
        for c in turn.calls
    ]
    return ChatMessageAssistant(
        content=turn.text, tool_calls=calls or None, model=model, source=source
    )

