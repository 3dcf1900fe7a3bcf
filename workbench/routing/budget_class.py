"""Priority classes over one day's token budget (pure functions).

Classes such as "interactive" and "background" draw on the same daily pool. A class may be
capped (`max_share`: it never spends more than this fraction of the day) and may have to stop
while the pool is still fairly full (`stop_below`: it leaves this fraction of the day for the
others). `BACKGROUND_POLICY` does both, so batch work can never starve the people who are
waiting for an answer.

Non-finite inputs never raise: a NaN or infinite capacity means no capacity (fail closed), a
NaN spend or cost is 0 while an infinite one never fits, and a non-finite `max_share` or
`stop_below` is treated as absent (as in ai-kit: "non-finite means absent").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

ClassReason = Literal["ok", "no-capacity", "class-cap", "reserved"]


@dataclass(frozen=True, slots=True)
class ClassPolicy:
    """Both fractions of the day's capacity, clamped to 0..1; None (or non-finite) = absent."""

    max_share: float | None = None
    stop_below: float | None = None


BACKGROUND_POLICY = ClassPolicy(max_share=0.25, stop_below=0.5)


@dataclass(frozen=True, slots=True)
class ClassBudgetInput:
    day_capacity_tokens: float
    spent: Mapping[str, float]  # class -> tokens spent today
    cls: str
    cost_tokens: float
    policy: Mapping[str, ClassPolicy]


@dataclass(frozen=True, slots=True)
class ClassBudget:
    allowed: bool
    reason: ClassReason
    room_tokens: float  # what this class may still spend today
    remaining_tokens: float  # what is left of the day for everyone


def _fraction(x: float | None) -> float | None:
    if x is None or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return min(1.0, max(0.0, float(x)))


def _amount(x: float | None) -> float:
    if x is None or not isinstance(x, int | float) or math.isnan(x):
        return 0.0
    return max(0.0, float(x))


def class_budget(inp: ClassBudgetInput | None = None, /, **fields: object) -> ClassBudget:
    """May class `cls` spend `cost_tokens` more today? Pass a ClassBudgetInput, or its fields
    as keywords: `class_budget(day_capacity_tokens=..., spent=..., cls=..., ...)`."""
    if inp is None:
        inp = ClassBudgetInput(**fields)  # type: ignore[arg-type]
    elif fields:
        raise TypeError("pass a ClassBudgetInput or keyword fields, not both")
    cap = inp.day_capacity_tokens
    capacity = max(0.0, float(cap)) if isinstance(cap, int | float) and math.isfinite(cap) else 0.0
    total = sum(_amount(v) for v in inp.spent.values())
    mine = _amount(inp.spent.get(inp.cls))
    cost = _amount(inp.cost_tokens)
    remaining = max(0.0, capacity - total)
    if capacity <= 0 or remaining <= 0:
        return ClassBudget(False, "no-capacity", 0.0, remaining)

    rule = inp.policy.get(inp.cls) or ClassPolicy()
    max_share = _fraction(rule.max_share)
    stop_below = _fraction(rule.stop_below)
    by_cap = math.inf if max_share is None else max_share * capacity - mine
    # The floor is kept for the other classes: this one stops while that much is still left.
    by_floor = math.inf if stop_below is None else remaining - stop_below * capacity
    room = max(0.0, min(remaining, by_cap, by_floor))

    if cost > remaining:
        return ClassBudget(False, "no-capacity", room, remaining)
    if cost > by_cap:
        return ClassBudget(False, "class-cap", room, remaining)
    if cost > by_floor:
        return ClassBudget(False, "reserved", room, remaining)
    return ClassBudget(True, "ok", room, remaining)


def estimate_tokens(*texts: str | None) -> int:
    """ceil(characters / 4) over all `texts`; None counts as 0. A rough guess, made before
    the call, that the real usage corrects afterwards."""
    return math.ceil(sum(len(t) for t in texts if t) / 4)
