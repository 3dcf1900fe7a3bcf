"""A logged run, read once into small records both exports walk: its samples (one per graded
output: item × repeat × configuration), each sample's routes in the order they ran (a tool
loop routes once per turn), each route's attempts in chain order, the answer each turn got,
and the tool steps the loop ran between the turns.

Read through `RunFrames` (`outputs`, `attempts`, `Store.replies`); SQL only for the tables it
has no method for (`routes`, `items`, `tool_steps`). The item's prompt is kept as the store
holds it, in clear: it is only ever compared with the prompt set, never exported (see
`_content.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.eval.analysis import run_rows
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import resolve_run
from workbench.eval.store.rows import from_json
from workbench.eval.store.schema import OutputRow

if TYPE_CHECKING:
    import pandas as pd


_NS = 1_000_000  # nanoseconds in a millisecond
# What the tool loop tells the model when a step fails (`tools/tool_loop.py`, `agent_loop.py`).
TOOL_FAILURES = frozenset(
    {"tool_failed", "tool_timeout", "invalid_arguments", "cancelled", "unknown_tool"}
)


@dataclass(frozen=True, slots=True)
class LoggedAttempt:
    """One candidate of one route, as the `attempts` table has it."""

    key: str
    provider: str
    model: str
    position: int
    seq: int  # its place in the route, across passes down the chain (position restarts)
    outcome: str  # ok, error, skipped_* …
    start_ms: int
    latency_ms: float
    status: int | None = None
    error_kind: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    tokens: int | None = None
    cached: bool = False
    reason: str | None = None
    # What it sent, as it left the machine (masked for a provider outside it); None when the
    # store predates that column, or for a skipped or cached attempt.
    request: dict[str, Any] | None = None

    @property
    def end_ms(self) -> float:
        return self.start_ms + self.latency_ms

    @property
    def start_ns(self) -> int:
        return self.start_ms * _NS

    @property
    def end_ns(self) -> int:
        """In integers: a float of epoch nanoseconds is only exact to a few hundred."""
        return self.start_ns + round(self.latency_ms * _NS)

    @property
    def called(self) -> bool:
        """A request reached (or was meant to reach) the model; a skip is a decision."""
        return not self.outcome.startswith("skipped")

    @property
    def failed(self) -> bool:
        return self.called and self.outcome != "ok"


@dataclass(frozen=True, slots=True)
class LoggedRoute:
    """One request through the router: its chain, who answered, and its attempts."""

    route_id: str
    candidates: tuple[str, ...]
    chosen: str | None
    fallback_depth: int
    at_ms: int
    attempts: tuple[LoggedAttempt, ...]
    error_code: str | None = None
    partial: bool = False
    skipped: dict[str, str] = field(default_factory=dict)
    # The answer this turn received (`replies`: text, tool_calls, usage, finish_reason), unmasked.
    reply: dict[str, Any] | None = None

    @property
    def start_ms(self) -> float:
        return min((a.start_ms for a in self.attempts), default=self.at_ms)

    @property
    def end_ms(self) -> float:
        return max([float(self.at_ms), *(a.end_ms for a in self.attempts)])

    @property
    def start_ns(self) -> int:
        return min((a.start_ns for a in self.attempts), default=self.at_ms * _NS)

    @property
    def end_ns(self) -> int:
        return max([self.at_ms * _NS, *(a.end_ns for a in self.attempts)])

    @property
    def chain(self) -> list[str]:
        """`key=outcome` for every attempt, in order (as `RunFrames.fallbacks` shows it)."""
        return [f"{a.key}={a.outcome}" for a in self.attempts]

    @property
    def answered_by(self) -> LoggedAttempt | None:
        return next((a for a in reversed(self.attempts) if a.outcome == "ok"), None)


@dataclass(frozen=True, slots=True)
class LoggedToolStep:
    """One tool the loop ran: its start row and its end row (`tool_steps`) made one."""

    step_id: str  # the model's call id when it gave one: how a step meets its call and result
    tool: str
    params: str  # the tool's own one-line summary of its arguments, in clear: mask to export
    start_ms: int
    end_ms: int | None = None  # None: the run stopped while it ran
    ok: bool | None = None

    @property
    def finished(self) -> bool:
        return self.end_ms is not None

    @property
    def start_ns(self) -> int:
        return self.start_ms * _NS

    @property
    def end_ns(self) -> int:
        return (self.end_ms if self.end_ms is not None else self.start_ms) * _NS


@dataclass(frozen=True, slots=True)
class LoggedSample:
    """One graded output with everything that led to it."""

    output: OutputRow
    routes: tuple[LoggedRoute, ...]
    category: str | None = None
    tags: tuple[str, ...] = ()
    expect: dict[str, Any] | None = None
    prompt: str = ""  # in clear, as the store keeps it: compared, never exported
    tool_steps: tuple[LoggedToolStep, ...] = ()  # in the order they started

    @property
    def item_id(self) -> str:
        return self.output.item_id

    @property
    def repeat(self) -> int:
        return self.output.repeat

    @property
    def config(self) -> str:
        return self.output.config

    @property
    def start_ms(self) -> float:
        starts = [r.start_ms for r in self.routes]
        if starts:
            return min(starts)
        end = self.output.at_ms or 0
        return end - (self.output.latency_ms or 0.0)

    @property
    def end_ms(self) -> float:
        return float(self.output.at_ms or max((r.end_ms for r in self.routes), default=0.0))

    @property
    def start_ns(self) -> int:
        """From its first attempt (or step); in integers, as the spans take it."""
        starts = [r.start_ns for r in self.routes] + [s.start_ns for s in self.tool_steps]
        if starts:
            return min(starts)
        return (self.output.at_ms or 0) * _NS - round((self.output.latency_ms or 0.0) * _NS)

    @property
    def end_ns(self) -> int:
        """Its output's time, or the last thing it logged when that came later (the output's
        time is in whole milliseconds, an attempt's end is not)."""
        ends = [r.end_ns for r in self.routes] + [s.end_ns for s in self.tool_steps]
        return max([(self.output.at_ms or 0) * _NS, *ends])

    def turn_of(self, step: LoggedToolStep) -> int:
        """The turn whose answer asked for `step` (-1: none). Ids repeat across turns (`call_0`
        from a server that gives none, a prose call's name), so the k-th step of an id is the
        k-th call of that id, in turn order; a step no answer names goes under the last turn
        that started before it."""
        k = self.step_rank(step)
        calling = [
            n
            for n, r in enumerate(self.routes)
            for c in (r.reply or {}).get("tool_calls") or ()
            if isinstance(c, dict) and c.get("id") == step.step_id
        ]
        if k < len(calling):
            return calling[k]
        return max(
            (i for i, r in enumerate(self.routes) if r.start_ms <= step.start_ms), default=-1
        )

    def step_rank(self, step: LoggedToolStep) -> int:
        """How many steps of the same id came before `step`."""
        return sum(
            1 for s in self.tool_steps[: self.tool_steps.index(step)] if s.step_id == step.step_id
        )

    def tool_failure(self, step: LoggedToolStep) -> str | None:
        """Why a step failed, as the loop told the model (`{"error": CODE}` in the tool
        message the next turn sent): one of the loop's own codes, else `tool_failed`. Only a
        known code is read back: the message is content, and may be in clear."""
        if step.ok is not False:
            return None
        after = self.turn_of(step) + 1  # the turn that sent the step's result back
        for route in (*self.routes[after:], *self.routes[:after]):
            for attempt in route.attempts:
                for message in (attempt.request or {}).get("messages") or []:
                    if isinstance(message, dict) and message.get("tool_call_id") == step.step_id:
                        said = from_json(message.get("content"))
                        code = said.get("error") if isinstance(said, dict) else None
                        known = isinstance(code, str) and code in TOOL_FAILURES
                        return str(code) if known else "tool_failed"
        return "tool_failed"


@dataclass(frozen=True, slots=True)
class LoggedRun:
    run_id: str
    name: str | None
    dataset: str  # the prompt set's path as the run was given it (or BFCL's source)
    dataset_name: str  # `masking`, `bfcl:simple_python` …
    dataset_sha: str  # the prompt set's sha256 as the run read it
    status: str
    started_at: datetime  # UTC
    finished_at: datetime | None
    configs: tuple[str, ...]
    settings: dict[str, Any]
    version: str | None
    samples: tuple[LoggedSample, ...]

    def by_config(self) -> dict[str, list[LoggedSample]]:
        """Samples per configuration, in the run's order of configurations."""
        out: dict[str, list[LoggedSample]] = {c: [] for c in self.configs}
        for sample in self.samples:
            out.setdefault(sample.config, []).append(sample)
        return {c: s for c, s in out.items() if s}


def load_run(db: str | Path | RunFrames, ref: str) -> LoggedRun:
    """The run `ref` names (an id, a `--name`, or `latest`: `RUN_UNKNOWN` otherwise), read
    whole from `db` (a file, opened read-only for the read, or an open RunFrames).

    Whole means past `RunFrames.max_rows` too: an export carries every sample, and its user
    has no `limit=` to pass, so a big run is read uncapped (it needs the memory its rows do)
    rather than refused with `FRAME_TOO_BIG`."""
    if isinstance(db, RunFrames):
        with db.uncapped():
            return _load_run(db, ref)
    with RunFrames.open(db) as wb, wb.uncapped():
        return _load_run(wb, ref)


def _load_run(wb: RunFrames, ref: str) -> LoggedRun:
    run_id = resolve_run(wb, ref)
    run = wb.store.run(run_id)
    items = {str(r["item_id"]): r for r in _records(run_rows.item_table(wb, run_id))}
    attempts: dict[str, list[LoggedAttempt]] = {}
    for row in _records(wb.attempts(run_id)):
        route_id = _str(row.get("route_id"))
        if route_id is not None:
            attempts.setdefault(route_id, []).append(_attempt(row))
    replies = wb.store.replies(run_id)
    routes: dict[tuple[str, int, str], list[LoggedRoute]] = {}
    for row in _records(run_rows.route_table(wb, run_id)):
        route_id = _str(row.get("route_id")) or ""
        tried = sorted(attempts.get(route_id, []), key=lambda a: (a.seq, a.start_ms, a.position))
        failure = _str(row.get("error_code"))  # a column name, not a code
        route = LoggedRoute(
            route_id=route_id,
            candidates=tuple(_json(row.get("candidates")) or ()),
            chosen=_str(row.get("chosen")),
            fallback_depth=_int(row.get("fallback_depth")) or 0,
            at_ms=_int(row.get("at_ms")) or 0,
            attempts=tuple(tried),
            error_code=failure,
            partial=bool(_bool(row.get("partial"))),
            skipped={str(k): str(v) for k, v in (_json(row.get("skipped")) or {}).items()},
        )
        key = (str(row["item_id"]), int(row["repeat"]), str(row["config"]))
        routes.setdefault(key, []).append(route)
    steps = _tool_steps(wb, run_id)
    samples = []
    for row in _records(wb.outputs(run_id)):
        output = OutputRow(**{k: _clean(v) for k, v in row.items()})
        key = (output.item_id, output.repeat, output.config)
        ran = sorted(routes.get(key, []), key=lambda r: (r.start_ms, r.at_ms))
        item = items.get(output.item_id, {})
        samples.append(
            LoggedSample(
                output=output,
                routes=tuple(_with_replies(ran, replies.get(key, []))),
                category=_str(item.get("category")),
                tags=tuple(_json(item.get("tags")) or ()),
                expect=_json(item.get("expect")),
                prompt=_str(item.get("prompt")) or "",
                tool_steps=tuple(steps.get(key, [])),
            )
        )
    settings = run.settings
    return LoggedRun(
        run_id=run_id,
        name=run.name,
        dataset=run.dataset or "",
        dataset_name=str(settings.get("dataset_name") or run.dataset or "run"),
        dataset_sha=run.dataset_sha or "",
        status=run.status or "",
        started_at=_utc(run.started_at) or datetime.fromtimestamp(0, UTC),
        finished_at=_utc(run.finished_at),
        configs=run.configs,
        settings=dict(settings),
        version=run.version,
        samples=tuple(samples),
    )


def _tool_steps(wb: RunFrames, run_id: str) -> dict[tuple[str, int, str], list[LoggedToolStep]]:
    """Every sample's steps. A step logs a start (ok NULL) and an end: an end closes the oldest
    open step of its id, so a model that reuses a call id across turns still gets two steps;
    in the same millisecond, starts sort first."""
    rows = run_rows.tool_step_events(wb, run_id)
    out: dict[tuple[str, int, str], list[LoggedToolStep]] = {}
    for row in _records(rows):
        key = (str(row["item_id"]), int(row["repeat"]), str(row["config"]))
        steps = out.setdefault(key, [])
        step_id, tool = _str(row.get("step_id")) or "", str(row.get("tool") or "")
        params, ok = _str(row.get("params")) or "", _bool(row.get("ok"))
        at = _int(row.get("at_ms")) or 0
        if ok is None:
            steps.append(LoggedToolStep(step_id, tool, params, at))
            continue
        n = next((i for i, s in enumerate(steps) if s.step_id == step_id and not s.finished), None)
        if n is None:  # an end without its start: the step, from its end alone
            steps.append(LoggedToolStep(step_id, tool, params, at, at, ok))
        else:
            steps[n] = replace(steps[n], end_ms=at, ok=ok)
    return out


def _with_replies(
    routes: list[LoggedRoute], replies: list[tuple[str, dict[str, Any]]]
) -> list[LoggedRoute]:
    """Each turn's answer on the route that got it: the answered routes, in order, are the
    turns (a route nobody answered ended the item, so it has no turn)."""
    answered = iter(replies)
    out = []
    for route in routes:
        if route.chosen is not None and route.answered_by is not None:
            got = next(answered, None)
            if got is not None:
                route = replace(route, reply=got[1])
        out.append(route)
    return out


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in df.to_dict("records")]


def _attempt(row: dict[str, Any]) -> LoggedAttempt:
    request = _json(row.get("request"))
    failure = _str(row.get("error_code"))  # a column name, not a code
    return LoggedAttempt(
        key=str(row.get("key") or ""),
        provider=str(row.get("provider") or ""),
        model=str(row.get("model") or ""),
        position=_int(row.get("position")) or 0,
        seq=_int(row.get("seq")) or 0,
        outcome=str(row.get("outcome") or ""),
        start_ms=_int(row.get("start_ms")) or 0,
        latency_ms=float(_clean(row.get("latency_ms")) or 0.0),
        status=_int(row.get("status")),
        error_kind=_str(row.get("error_kind")),
        error_code=failure,
        error_message=_str(row.get("error_message")),
        tokens=_int(row.get("tokens")),
        cached=bool(_bool(row.get("cached"))),
        reason=_str(row.get("reason")),
        request=request if isinstance(request, dict) else None,
    )


def _clean(value: Any) -> Any:
    """A DataFrame cell as a plain value: NaN, NA and NaT are None; numpy scalars are Python's."""
    if value is None:
        return None
    import pandas as pd

    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):  # a list or dict cell: never missing
        return value
    item = getattr(value, "item", None)
    return item() if callable(item) else value


def _str(value: Any) -> str | None:
    value = _clean(value)
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    value = _clean(value)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return int(value)


def _bool(value: Any) -> bool | None:
    value = _clean(value)
    return None if value is None else bool(value)


def _json(value: Any) -> Any:
    return from_json(_clean(value))


def _utc(value: Any) -> datetime | None:
    value = _clean(value)
    if value is None:
        return None
    if hasattr(value, "to_pydatetime"):
        value = value.to_pydatetime()
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utc_ms(ms: float) -> datetime:
    """Epoch milliseconds (the store's clock) as a UTC datetime."""
    return datetime.fromtimestamp(ms / 1000, UTC)
