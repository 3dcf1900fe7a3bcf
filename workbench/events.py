"""The one event stream that ties the library to the workbench.

The router, its capability observer and the tool loops emit these records to
any sink a caller passes: a sink is any callable taking one event (a `list.append`, the
DuckDB store's `write`). A sink that raises never breaks the traffic it observes.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.errors import WorkbenchError

log = logging.getLogger("workbench.events")

Sink = Callable[[Any], Any]


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True, frozen=True)
class VerdictEvent:
    """A capability classification of one real attempt, recorded or not: a 429 that taught
    nothing is an event too, so a notebook can see what was not learnt."""

    provider: str
    model: str
    scope: str
    capability: Literal["tools", "vision"]
    verdict: str
    recorded: bool
    evidence: str
    via: str = "live"
    at_ms: int = field(default_factory=now_ms)
    # The prose format of a `text` verdict's calls (hermes, mistral, …): which format a model
    # writes is half of what its text verdict means.
    protocol_family: str | None = None


@dataclass(slots=True, frozen=True)
class AttemptEvent:
    """One candidate of one route: a call to a model, or why it was skipped. Emitted by the
    router."""

    key: str
    lane: str | None
    outcome: str
    start_ms: int
    latency_ms: float
    status: int | None = None
    error_kind: str | None = None
    tokens: int | None = None
    position: int = 0
    provider: str = ""
    model: str = ""
    route_id: str = ""
    error_code: str | None = None
    error_message: str | None = None  # one line, scrubbed: never a key
    cached: bool = False  # answered from the response cache: not a provider latency
    reason: str = ""  # why a candidate was skipped
    # The request as it left the machine (masked for a provider outside it): masked or not,
    # system, messages and the offered tools' names. None for a skipped or cached attempt, or
    # with no sink.
    request: dict[str, Any] | None = None
    # This attempt's place in its route, across passes down the chain (a pass that finds every
    # model cooling may be followed by another, whose positions start at 0 again).
    seq: int = 0
    # The vendor's batch that carried this request (`workbench run --batch`); None when it was
    # asked on its own.
    batch_id: str | None = None


@dataclass(slots=True, frozen=True)
class RouteEvent:
    """One routing decision: the chain, who answered, and why the others were skipped."""

    candidates: tuple[str, ...]
    chosen: str | None
    skipped: dict[str, str] = field(default_factory=dict)
    partial: bool = False
    at_ms: int = field(default_factory=now_ms)
    route_id: str = ""
    # How many candidates were tried or skipped before the one that answered (0 = first).
    fallback_depth: int = 0
    error_code: str | None = None


@dataclass(slots=True, frozen=True)
class QuotaEvent:
    """A vendor's quota headers, read on one reply or refusal (what `quota_timeline()` shows)."""

    key: str
    provider: str
    model: str
    scope: str
    window: str
    limit: float | None
    remaining: float
    reset_at_ms: int | None
    source: str
    observed_at_ms: int


@dataclass(slots=True, frozen=True)
class ToolStepEvent:
    step_id: str
    tool: str
    params: str
    ok: bool | None = None
    at_ms: int = field(default_factory=now_ms)


@dataclass(slots=True, frozen=True)
class ActionEvent:
    action_id: str
    action: str
    status: str
    by: str | None = None
    at_ms: int = field(default_factory=now_ms)


async def emit(sinks: Iterable[Sink], event: Any) -> None:
    """Send `event` to every sink; a failing sink is logged, never raised into the traffic."""
    for sink in sinks:
        try:
            result = sink(event)
            if inspect.isawaitable(result):
                await result
        except WorkbenchError as exc:  # a coded failure (a store on a full disk): one line
            log.error("event sink %r failed: %s", sink, exc)
        except Exception:  # a broken observer must not break the call it observes
            log.exception("event sink %r failed", sink)


@dataclass(slots=True, frozen=True)
class QuotaBackendEvent:
    """The quota store changed backend: `degraded` to memory when Redis fails (a distributed
    quota cannot be guaranteed then), or `restored` to redis when it returns."""

    backend: str
    state: str
    reason: str
    at_ms: int = field(default_factory=now_ms)


@dataclass(slots=True, frozen=True)
class PacingEvent:
    """How fast one provider:model may be asked changed: its adaptive concurrency (raised while
    answers come back, cut on a 429 or a timeout) or what the pacer learnt of its limits from the
    provider's own headers and refusals. A run logs them as its pacing history.

    `why`: "answer" (additive increase), "429", "timeout" (multiplicative decrease), "learnt"
    (a limit, a remaining count or a reset read from a response), "paced" (a request held
    back because the provider said it would refuse it). `requests_left`/`tokens_left` are what
    the pacer will still send before `reset_at_ms`, requests in flight already counted."""

    key: str
    why: str
    concurrency: int
    in_flight: int
    requests_limit: float | None = None
    requests_left: float | None = None
    tokens_limit: float | None = None
    tokens_left: float | None = None
    reset_at_ms: int | None = None
    at_ms: int = field(default_factory=now_ms)
