"""Rows of the workbench store, built from the one declaration of each table's columns
(`schema.COLUMNS`): values coerced to their column's type at the caller (a bad value fails
there, never in a later flush that carries everybody else's rows), and each event type's row.

Pure functions: nothing here touches a connection; `database.py` writes what these build.
"""

from __future__ import annotations

import json
import math
import operator
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from datetime import datetime
from typing import Any

from workbench.capability.decide import CapabilityRecord
from workbench.errors import ConfigError
from workbench.eval.store.schema import COLUMNS
from workbench.events import (
    ActionEvent,
    AttemptEvent,
    PacingEvent,
    QuotaEvent,
    RouteEvent,
    ToolStepEvent,
    VerdictEvent,
    now_ms,
)


def _dumps(value: Any) -> str | None:
    """Compact JSON; None stays NULL."""
    if value is None:
        return None
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def from_json(value: Any) -> Any:
    """A JSON column's value as Python (DuckDB hands JSON back as text); text that is not
    JSON, which only a hand-written row can hold, reads as None."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _json_text(value: Any) -> str | None:
    """A JSON column's text: a str that already is JSON text is kept as it is (callers often
    pass `json.dumps(...)`), any other str is stored as a JSON string, anything else dumped."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return _dumps(value)
        return value
    return _dumps(value)


def _split_key(key: str) -> tuple[str, str]:
    """`provider:model@lane` → (provider, model)."""
    provider, _, model = key.partition(":")
    return provider, model.split("@", 1)[0]


_RANGE = {"INTEGER": 2**31, "BIGINT": 2**63}


def _coerce(value: Any, kind: str, column: str) -> Any:
    """A dict row's value as its column's type, so that a bad value fails here, at the caller,
    and never in a later flush that carries everybody else's rows."""
    if value is None:
        return None
    try:
        if kind == "JSON":
            return _json_text(value)
        if kind == "VARCHAR":
            if isinstance(value, str):
                return value
            return _dumps(value) if isinstance(value, dict | list | tuple) else str(value)
        if kind in ("INTEGER", "BIGINT"):
            if isinstance(value, float) and not math.isfinite(value):
                return None
            number = int(value)
            if not -_RANGE[kind] <= number < _RANGE[kind]:  # DuckDB would refuse it at flush
                raise ValueError(f"out of range for {kind}")
            return number
        if kind == "DOUBLE":
            return float(value)
        if kind == "BOOLEAN":
            return bool(value)
        if kind == "TIMESTAMP" and isinstance(value, str):
            return datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column {column!r} ({kind}) cannot hold {value!r}: {exc}") from exc
    return value


def _row(table: str, data: Mapping[str, Any]) -> tuple[Any, ...]:
    """A caller's dict row (missing columns NULL) as the table's tuple, each value coerced."""
    columns = COLUMNS[table]
    unknown = set(data) - set(columns)
    if unknown:
        raise ConfigError(
            f"{table} has no column(s) {sorted(unknown)}; columns: {list(columns)}",
            code="COLUMN_UNKNOWN",
        )
    return tuple(_coerce(data.get(name), kind, name) for name, kind in columns.items())


def cache_row(
    cache_key: str,
    provider: str,
    model: str,
    reply: dict[str, Any],
    ttl_s: float | None,
    now_ms: int,
) -> tuple[Any, ...]:
    """A successful reply as its `response_cache` row: kept `ttl_s` seconds (None: until
    replaced) from `now_ms`."""
    expires = None if ttl_s is None else now_ms + int(ttl_s * 1000)
    return _row(
        "response_cache",
        {
            "cache_key": cache_key,
            "provider": provider,
            "model": model,
            "reply": reply,
            "created_at_ms": now_ms,
            "expires_at_ms": expires,
        },
    )


# Every column of a table, in table order: a row dict → the tuple the appender takes.
_GETTERS = {table: operator.itemgetter(*columns) for table, columns in COLUMNS.items()}


def _ordered(table: str, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A row dict naming EVERY column of `table` (no more, no fewer) as its tuple, in the
    declared order; the builders below say each value by its column's name."""
    try:
        if len(row) == len(COLUMNS[table]):
            return _GETTERS[table](row)
    except KeyError:
        pass
    extra = sorted(set(row) - set(COLUMNS[table]))
    missing = sorted(set(COLUMNS[table]) - set(row))
    raise ValueError(f"{table} row: unknown column(s) {extra}, missing {missing}")


# ------------------------------------------------------------------ events → rows
# The tags every event row carries, in the order a sink passes them.
TAGS = ("run_id", "item_id", "repeat", "config")
Tags = tuple[Any, Any, int, str]  # run_id, item_id, repeat, config


def attempt_id(tags: Tags, tries: int) -> str:
    """An attempt's id: its output's (run, item, repeat, config) and its try, the attempt's
    place among that output's attempts, as a JSON array (no item id or config name can make
    two of them alike). Derived, never drawn: the same attempt logged twice (a worker's batch
    sent again) has the same id, so the writer keeps one."""
    return json.dumps([*tags, tries], separators=(",", ":"), ensure_ascii=False)


def _attempt(e: AttemptEvent, t: Tags, attempt: str | None = None) -> tuple[Any, ...]:
    provider, model = (e.provider, e.model) if e.provider or e.model else _split_key(e.key)
    return _ordered(
        "attempts",
        {
            **dict(zip(TAGS, t, strict=True)),
            "route_id": e.route_id or None,
            "key": e.key,
            "provider": provider,
            "model": model,
            "lane": e.lane,
            "position": e.position,
            "outcome": e.outcome,
            "status": e.status,
            "error_kind": e.error_kind,
            "error_code": e.error_code,
            "error_message": e.error_message,
            "tokens": e.tokens,
            "latency_ms": e.latency_ms,
            "start_ms": e.start_ms,
            "cached": e.cached,
            "reason": e.reason or None,
            "request": None if e.request is None else _dumps(e.request),
            "seq": e.seq,
            "attempt_id": attempt,
            "batch_id": e.batch_id,
        },
    )


def _route(e: RouteEvent, t: Tags) -> tuple[Any, ...]:
    return _ordered(
        "routes",
        {
            **dict(zip(TAGS, t, strict=True)),
            "route_id": e.route_id or None,
            "candidates": _dumps(list(e.candidates)),
            "chosen": e.chosen,
            "partial": e.partial,
            "fallback_depth": e.fallback_depth,
            "skipped": _dumps(dict(e.skipped)),
            "error_code": e.error_code,
            "at_ms": e.at_ms,
        },
    )


def _verdict(e: VerdictEvent, t: Tags) -> tuple[Any, ...]:
    return _ordered(
        "verdicts",
        {
            **dict(zip(TAGS, t, strict=True)),
            "provider": e.provider,
            "model": e.model,
            "scope": e.scope,
            "capability": e.capability,
            "verdict": e.verdict,
            "recorded": e.recorded,
            "evidence": e.evidence,
            "via": e.via,
            "at_ms": e.at_ms,
            "protocol_family": e.protocol_family,
        },
    )


def _tool_step(e: ToolStepEvent, t: Tags) -> tuple[Any, ...]:
    params = e.params if isinstance(e.params, str) or e.params is None else _dumps(e.params)
    return _ordered(
        "tool_steps",
        {
            **dict(zip(TAGS, t, strict=True)),
            "step_id": e.step_id,
            "tool": e.tool,
            "params": params,
            "ok": e.ok,
            "at_ms": e.at_ms,
        },
    )


def _quota(e: QuotaEvent, t: Tags) -> tuple[Any, ...]:
    tags = dict(zip(TAGS, t, strict=True))
    return _ordered(
        "quota",
        {
            "run_id": tags["run_id"],
            "item_id": tags["item_id"],
            "key": e.key,
            "provider": e.provider,
            "model": e.model,
            "scope": e.scope,
            "window": e.window,
            "limit": e.limit,
            "remaining": e.remaining,
            "reset_at_ms": e.reset_at_ms,
            "source": e.source,
            "observed_at_ms": e.observed_at_ms,
        },
    )


def _pacing(e: PacingEvent, t: Tags) -> tuple[Any, ...]:
    """A pacing change; its item is the one whose request made the router learn it."""
    tags = dict(zip(TAGS, t, strict=True))
    return _ordered(
        "pacing",
        {"run_id": tags["run_id"], "item_id": tags["item_id"]}
        | {c: getattr(e, c) for c in COLUMNS["pacing"] if c not in ("run_id", "item_id")},
    )


def _other(e: object, t: Tags) -> tuple[Any, ...]:
    if is_dataclass(e) and not isinstance(e, type):
        data: Any = asdict(e)
    elif isinstance(e, Mapping):
        data = dict(e)
    else:
        data = {"repr": repr(e)}
    at = data.get("at_ms") if isinstance(data, dict) else None
    tags = dict(zip(TAGS, t, strict=True))
    return _ordered(
        "events",
        {
            "run_id": tags["run_id"],
            "item_id": tags["item_id"],
            "type": type(e).__name__,
            "at_ms": at if isinstance(at, int) else now_ms(),
            "data": _dumps(data),
        },
    )


def _capability(record: CapabilityRecord) -> tuple[Any, ...]:
    """A record's row: its fields are the `capabilities` columns."""
    return _ordered("capabilities", {c: getattr(record, c) for c in COLUMNS["capabilities"]})


_HANDLERS: dict[type, tuple[str, Callable[[Any, Tags], tuple[Any, ...]]]] = {
    AttemptEvent: ("attempts", _attempt),
    RouteEvent: ("routes", _route),
    VerdictEvent: ("verdicts", _verdict),
    ToolStepEvent: ("tool_steps", _tool_step),
    QuotaEvent: ("quota", _quota),
    PacingEvent: ("pacing", _pacing),
}


def _handler(event: object) -> tuple[str, Callable[[Any, Tags], tuple[Any, ...]]]:
    found = _HANDLERS.get(type(event))
    if found is None:
        for cls, value in _HANDLERS.items():
            if isinstance(event, cls):
                return value
        return ("events", _other)
    return found


def event_row(event: object, tags: Tags) -> tuple[str, Any]:
    """(table, row) for one event tagged with its output's (run, item, repeat, config). An
    action's move is kept as a plain record: the writer folds the moves of one action."""
    if isinstance(event, ActionEvent):
        return "actions", (tags, _action_move(event))
    table, build = _handler(event)
    return table, build(event, tags)


class JobSink:
    """The sink of one output's events: tags each with (run, item, repeat, config) and numbers
    its attempts, so that every attempt has a derived id (`attempt_id`). `put(table, row)` is
    the writer's: the DuckDB store's buffer, or a Ray worker's outbox.

    An output made again after an interruption (a resumed run, a lost Ray worker) replays the
    turns already answered and runs their tools again. `steps` counts the tool-step rows it
    logged before, per (step id, finished?): those rows are not logged twice, whatever order
    the tools of a turn finish in this time."""

    __slots__ = ("_put", "steps", "tags", "tries")

    def __init__(
        self,
        put: Callable[[str, Any], None],
        tags: Tags,
        tries: int = 0,
        steps: Mapping[tuple[str, bool], int] | None = None,
    ) -> None:
        self._put = put
        self.tags = tags
        self.tries = tries
        self.steps = Counter(steps or {})

    def __call__(self, event: object) -> None:
        if isinstance(event, AttemptEvent):
            row = _attempt(event, self.tags, attempt_id(self.tags, self.tries))
            self.tries += 1
            self._put("attempts", row)
            return
        if isinstance(event, ToolStepEvent) and self.steps:
            seen = (event.step_id, event.ok is not None)
            if self.steps[seen] > 0:
                self.steps[seen] -= 1
                return
        self._put(*event_row(event, self.tags))


def _action_move(e: ActionEvent) -> dict[str, Any]:
    """An action event as the plain record the store buffers and journals (JSON-safe)."""
    return {
        "action_id": e.action_id,
        "action": e.action,
        "status": e.status,
        "by": e.by,
        "at_ms": e.at_ms,
        "payload": getattr(e, "payload", None),
        "amended": getattr(e, "amended", None) or getattr(e, "amend", None),
        "dedupe_key": getattr(e, "dedupe_key", None),
    }
