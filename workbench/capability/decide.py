"""What to send this time, and what to tell the user we can do (ai-kit's "decide").

Two questions, deliberately separated. `plan_tool_attempt` decides what goes on the wire and
is optimistic about an unobserved model, because asking is the only way to learn.
`claimable_verdict` decides what we may say and is pessimistic about it, because announcing a
capability nobody has seen is a promise the model may not keep. One boolean cannot hold both.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Literal

from workbench.errors import ConfigError
from workbench.events import now_ms as _now_ms

Verdict = Literal["native", "text", "none", "unobserved"]
CapabilityKind = Literal["tools", "vision"]
Provenance = Literal["declared", "probe", "live"]

VERDICTS: tuple[str, ...] = ("native", "text", "none", "unobserved")
CAPABILITIES: tuple[str, ...] = ("tools", "vision")
PROVENANCE_RANK: Mapping[str, int] = MappingProxyType({"declared": 0, "probe": 1, "live": 2})

_DAY_MS = 24 * 60 * 60 * 1000
# Negatives expire sooner than positives: a model that gained tool support and is still marked
# `none` is invisibly crippled, while one that lost it says so loudly on the next call.
DEFAULT_TTL_MS: Mapping[str, int] = MappingProxyType(
    {"native": 30 * _DAY_MS, "text": 30 * _DAY_MS, "none": 7 * _DAY_MS, "unobserved": 0}
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MIN_MS = int((datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) / timedelta(milliseconds=1))
_MAX_MS = int(
    (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - _EPOCH) / timedelta(milliseconds=1)
)


@dataclass(frozen=True, slots=True)
class CapabilityRecord:
    """One observation. `scope` is a hash of the credential (`scope_key`), never the key:
    capability differs per key, and the key itself must never be stored to keep them apart.

    `protocol_family` is the prose format a `text` verdict was seen in (`hermes`, `mistral`,
    …; None otherwise): a model asked for its calls in prose answers best in the format it
    was trained on, so the planner asks for that one next time."""

    provider: str
    model: str
    scope: str
    capability: CapabilityKind
    verdict: Verdict
    observed_at: str  # ISO-8601 UTC with milliseconds and Z: 2026-01-01T00:00:00.000Z
    via: Provenance
    evidence: str | None = None
    protocol_family: str | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What a store keys records by: provider, model, scope, capability."""
        return (self.provider, self.model, self.scope, self.capability)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CapabilityRecord:
        return cls(
            provider=data["provider"],
            model=data["model"],
            scope=data["scope"],
            capability=data["capability"],
            verdict=data["verdict"],
            observed_at=data["observed_at"],
            via=data["via"],
            evidence=data.get("evidence") or None,
            protocol_family=data.get("protocol_family") or None,
        )


@dataclass(frozen=True, slots=True)
class ToolPlan:
    send_tools: bool  # put tool definitions on the request
    expect_text_protocol: bool  # also read the prose for a tool call
    is_learning: bool  # this request is also the probe
    reason: str
    # The prose format to ask for when expecting the text protocol (None: the generic lines).
    protocol_family: str | None = None


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def iso_ms(now_ms: float | None = None) -> str:
    """Epoch milliseconds as JavaScript's `toISOString()`: `2026-01-01T00:00:00.000Z`.

    A missing or non-finite `now_ms` means now; one outside years 1..9999 is clamped."""
    ms = _finite(now_ms)
    value = _now_ms() if ms is None else min(max(int(ms), _MIN_MS), _MAX_MS)
    dt = _EPOCH + timedelta(milliseconds=value)
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:"
        f"{dt.second:02d}.{dt.microsecond // 1000:03d}Z"
    )


def parse_iso_ms(value: Any) -> float:
    """An ISO-8601 timestamp as epoch milliseconds; NaN when it cannot be read (never raises).
    A timestamp without a zone is read as UTC."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            return math.nan
    else:
        return math.nan
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return (dt - _EPOCH) / timedelta(milliseconds=1)


def _limit(verdict: str, ttl: Mapping[str, Any] | None) -> Any:
    chosen = ttl.get(verdict) if ttl else None
    return DEFAULT_TTL_MS.get(verdict, 0) if chosen is None else chosen


def is_stale(
    record: CapabilityRecord, now_ms: float | None = None, ttl: Mapping[str, Any] | None = None
) -> bool:
    """Stale once older than its verdict's TTL (strictly: age == limit is still fresh).

    A zero, missing or NaN limit means stale (so `unobserved` always is); an infinite limit
    never expires; an age that cannot be computed (NaN clock, unreadable date) is stale."""
    limit = _limit(record.verdict, ttl)
    if isinstance(limit, bool) or not isinstance(limit, int | float):
        return True
    if math.isnan(limit) or not limit:
        return True
    now = _now_ms() if now_ms is None else now_ms
    if isinstance(now, bool) or not isinstance(now, int | float):
        return True
    age = now - parse_iso_ms(record.observed_at)
    return not math.isfinite(age) or age > limit


def current_verdict(
    record: CapabilityRecord | None,
    now_ms: float | None = None,
    ttl: Mapping[str, Any] | None = None,
) -> Verdict:
    """The verdict a record still supports, or `unobserved` when missing or expired."""
    if record is None:
        return "unobserved"
    return "unobserved" if is_stale(record, now_ms, ttl) else record.verdict


def plan_tool_attempt(
    observed: str, declared: str | None = None, protocol_family: str | None = None
) -> ToolPlan:
    """What to send, given what was observed. `declared` (a registry's claim) is a prior only:
    it matters just for a model nobody has observed yet. `protocol_family` (the format a
    `text` verdict was seen in) travels with a text plan only: for any other verdict the
    model has shown no prose format worth asking for."""
    if observed == "native":
        return ToolPlan(True, False, False, "observed to return tool_calls")
    if observed == "text":
        return ToolPlan(
            False, True, False, "observed to answer tools only in prose", protocol_family or None
        )
    if observed == "none":
        return ToolPlan(False, False, False, "the vendor said this model does not support tools")
    # Unobserved: ask, and accept either answer — a model that ignores the definitions and
    # writes the call in prose is capable, just not natively.
    if declared == "none":
        return ToolPlan(
            False, True, True, "never observed, and the registry says no — asking in prose only"
        )
    return ToolPlan(True, True, True, "never observed — this request is also the probe")


def claimable_verdict(observed: str) -> Literal["native", "text", "none"]:
    """What the prompt and the UI may claim: never-observed (or unknown) counts as `none`."""
    if observed in ("native", "text", "none"):
        return observed  # type: ignore[return-value]
    return "none"


def scope_key(secret: str | bytes | None) -> str:
    """The first 16 hex chars of SHA-256 of the credential; `anonymous` without one."""
    if not secret:
        return "anonymous"
    raw = secret if isinstance(secret, bytes) else str(secret).encode("utf-8")
    return hashlib.sha256(raw).hexdigest()[:16]


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code="CAPABILITY_INVALID")


def make_record(
    provider: str,
    model: str,
    scope: str,
    capability: str,
    verdict: str,
    via: str,
    evidence: str | None = None,
    now_ms: float | None = None,
    protocol_family: str | None = None,
) -> CapabilityRecord:
    """Build a record, stamping `observed_at` here so every record is stamped the same way.
    An unknown capability, verdict or provenance is refused (CAPABILITY_INVALID). A
    `protocol_family` is kept on a `text` tools verdict only: on any other it would tell the
    planner a format the verdict says the model does not use."""
    if capability not in CAPABILITIES:
        raise _invalid(f"unknown capability {capability!r}; expected one of {CAPABILITIES}")
    if verdict not in VERDICTS:
        raise _invalid(f"unknown verdict {verdict!r}; expected one of {VERDICTS}")
    if via not in PROVENANCE_RANK:
        raise _invalid(f"unknown provenance {via!r}; expected one of {tuple(PROVENANCE_RANK)}")
    return CapabilityRecord(
        provider=provider,
        model=model,
        scope=scope,
        capability=capability,  # type: ignore[arg-type]
        verdict=verdict,  # type: ignore[arg-type]
        observed_at=iso_ms(now_ms),
        via=via,  # type: ignore[arg-type]
        evidence=evidence or None,
        protocol_family=(protocol_family or None)
        if capability == "tools" and verdict == "text"
        else None,
    )


def should_replace(existing: CapabilityRecord | None, incoming: CapabilityRecord) -> bool:
    """Stronger provenance wins (a real call overrules a registry guess), then the newer — a
    `none` may replace a `native` of equal provenance, because models do lose capabilities.
    An unknown provenance ranks below `declared`; an unreadable stored date loses to a
    readable incoming one."""
    if existing is None:
        return True
    new_rank = PROVENANCE_RANK.get(incoming.via, -1)
    old_rank = PROVENANCE_RANK.get(existing.via, -1)
    if new_rank != old_rank:
        return new_rank > old_rank
    new_at = parse_iso_ms(incoming.observed_at)
    old_at = parse_iso_ms(existing.observed_at)
    if math.isnan(new_at):
        return False
    if math.isnan(old_at):
        return True
    return new_at >= old_at
