"""Tiers, walls and the way-out ladder (pure functions).

`decide` answers one question — may this person take another turn now? — and, when the answer
is no, builds a `Wall`: why, and which ways out exist (their own key, a local model, earning
or buying credits, or waiting for the next UTC midnight). Waiting is always offered, because it
is the one way out that never depends on anything the person has.

Unknown tiers fail closed: a typo in a tier name must not hand out unlimited turns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

PoolId = Literal["platform", "user", "local"]
RungId = Literal["byok", "local", "earn", "paid", "wait"]
WallReason = Literal["day-spent", "no-credits", "unknown-tier"]

DEFAULT_LADDER: tuple[RungId, ...] = ("byok", "local", "earn", "paid", "wait")
SURFACE_THRESHOLD = 0.34
_DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class TierPolicy:
    """`turns_per_day` None = uncapped. `meter="credits"` spends credits instead of turns."""

    turns_per_day: int | None
    pool: PoolId = "platform"
    meter: Literal["credits"] | None = None


@dataclass(frozen=True, slots=True)
class AiPolicy:
    tiers: Mapping[str, TierPolicy]
    ladder: Sequence[RungId] | None = None  # None = DEFAULT_LADDER; an empty list = wait only


@dataclass(frozen=True, slots=True)
class UserState:
    tier: str
    spent_today: float = 0
    credits: float | None = None
    available: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WallOption:
    rung: RungId
    available: bool


@dataclass(frozen=True, slots=True)
class Wall:
    reason: WallReason
    options: tuple[WallOption, ...]
    reset_at: int  # epoch ms of the next UTC midnight


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    policy: TierPolicy | None
    pool: PoolId | None
    remaining: int | float | None  # None = uncapped (or credits-metered)
    wall: Wall | None = None


def _now_ms(now: float | None) -> float:
    if now is None or not isinstance(now, int | float) or not math.isfinite(now):
        return time.time() * 1000
    return now


def next_utc_reset(now_ms: float | None = None) -> int:
    """Epoch ms of the next UTC midnight strictly after `now_ms` (months and years roll, since
    it is day arithmetic on the epoch). A missing or non-finite `now_ms` means now."""
    now = _now_ms(now_ms)
    return (math.floor(now / _DAY_MS) + 1) * _DAY_MS


def _wall(policy: AiPolicy, state: UserState, reason: WallReason, now: float | None) -> Wall:
    ladder = DEFAULT_LADDER if policy.ladder is None else policy.ladder
    available = state.available or {}
    options = [
        WallOption(rung, bool(available.get(rung, True))) for rung in ladder if rung != "wait"
    ]
    # Always last and always open: waiting for the reset needs nothing the person lacks.
    options.append(WallOption("wait", True))
    return Wall(reason=reason, options=tuple(options), reset_at=next_utc_reset(now))


def decide(policy: AiPolicy, state: UserState, now: float | None = None) -> Decision:
    """May this person take another turn? `now` is epoch ms (default: the current time)."""
    tier = policy.tiers.get(state.tier)
    if tier is None:
        return Decision(False, None, None, 0, _wall(policy, state, "unknown-tier", now))
    if tier.meter == "credits":
        credits = 0 if state.credits is None else state.credits
        if credits > 0:  # NaN compares False: unreadable credits are no credits
            return Decision(True, tier, tier.pool, None)
        return Decision(False, tier, tier.pool, 0, _wall(policy, state, "no-credits", now))
    cap = tier.turns_per_day
    if cap is None or (isinstance(cap, float) and math.isinf(cap) and cap > 0):
        return Decision(True, tier, tier.pool, None)
    spent = state.spent_today
    if not isinstance(spent, int | float) or math.isnan(spent):
        spent = math.inf  # an unreadable counter fails closed, like an unknown tier
    remaining = max(0, cap - max(0, spent))
    if isinstance(remaining, float) and math.isnan(remaining):
        remaining = 0  # a NaN cap: nothing is allowed
    if isinstance(remaining, float) and remaining.is_integer():
        remaining = int(remaining)
    if remaining > 0:
        return Decision(True, tier, tier.pool, remaining)
    return Decision(False, tier, tier.pool, 0, _wall(policy, state, "day-spent", now))


def should_surface(decision: Decision, threshold: float = SURFACE_THRESHOLD) -> bool:
    """Whether to show the person their remaining turns: always at a wall, never when
    uncapped, otherwise once at most `threshold` of the day's turns are left."""
    if decision.remaining is None:
        return False
    if not decision.allowed:
        return True
    cap = decision.policy.turns_per_day if decision.policy is not None else None
    if not cap or (isinstance(cap, float) and not math.isfinite(cap)):
        return False
    return decision.remaining / cap <= threshold
