"""Pure rationing of a fixed daily token pool among the people using it.

Each active person's share is `capacity / users`. The share is released with the day (plus a
`burst` head start), so an early riser cannot spend the whole share at 00:05 and a late one
still finds theirs; but one turn is always allowed if it fits in the share, or nobody could
ever start. Only a "paced" refusal carries a retry: after "share-spent" waiting for the pace
does not help, only the next UTC day does.

Non-finite inputs never raise: a NaN or infinite capacity means no capacity (fail closed), a
NaN user count means one user, a NaN spend or cost means 0 while an infinite one can never fit,
and a non-finite burst or day fraction is 0 (the seed's `clamp01`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

DAY_SECONDS = 86_400
DEFAULT_BURST = 0.25

ShareReason = Literal["ok", "no-capacity", "share-spent", "paced"]


@dataclass(frozen=True, slots=True)
class FairShareInput:
    day_capacity_tokens: float
    active_users: float
    user_spent_tokens: float
    cost_tokens: float
    day_elapsed: float  # 0..1, see utc_day_elapsed
    burst: float | None = None  # None = DEFAULT_BURST


@dataclass(frozen=True, slots=True)
class FairShare:
    allowed: bool
    share_tokens: float
    allowance_tokens: float
    reason: ShareReason
    retry_after_seconds: int | None = None


def _clamp01(x: float | None) -> float:
    if x is None or not isinstance(x, int | float) or not math.isfinite(x):
        return 0.0
    return min(1.0, max(0.0, float(x)))


def _amount(x: float) -> float:
    """max(0, x) for a spend or a cost: NaN is 0, +inf stays (it never fits)."""
    if not isinstance(x, int | float) or math.isnan(x):
        return 0.0
    return max(0.0, float(x))


def _capacity(x: float) -> float:
    if not isinstance(x, int | float) or not math.isfinite(x):
        return 0.0
    return max(0.0, float(x))


def _users(x: float) -> float:
    """max(1, floor(x) or 1): NaN, 0 and negatives are one user; +inf stays (share 0)."""
    if not isinstance(x, int | float) or math.isnan(x):
        return 1.0
    if math.isinf(x):
        return math.inf if x > 0 else 1.0
    return float(max(1, math.floor(x) or 1))


def fair_share(inp: FairShareInput | None = None, /, **fields: float | None) -> FairShare:
    """May this person spend `cost_tokens` more today? Pass a FairShareInput, or its fields as
    keywords: `fair_share(day_capacity_tokens=..., active_users=..., ...)`."""
    if inp is None:
        inp = FairShareInput(**fields)  # type: ignore[arg-type]
    elif fields:
        raise TypeError("pass a FairShareInput or keyword fields, not both")
    capacity = _capacity(inp.day_capacity_tokens)
    users = _users(inp.active_users)
    spent = _amount(inp.user_spent_tokens)
    cost = _amount(inp.cost_tokens)
    burst = _clamp01(DEFAULT_BURST if inp.burst is None else inp.burst)
    elapsed = _clamp01(inp.day_elapsed)

    if capacity <= 0:
        return FairShare(False, 0.0, 0.0, "no-capacity")
    share = capacity / users
    pace = _clamp01(elapsed + burst)
    one_turn = min(share, cost)
    # The one-turn floor, capped by the share: someone can always start their day.
    allowance = min(share, max(share * pace, one_turn))
    wanted = spent + cost
    if wanted <= allowance:
        return FairShare(True, share, allowance, "ok")
    if wanted > share:
        return FairShare(False, share, allowance, "share-spent")
    retry = max(1, math.ceil((wanted / share - burst - elapsed) * DAY_SECONDS))
    return FairShare(False, share, allowance, "paced", retry)


def _as_datetime(dt: datetime | float | None) -> datetime:
    if dt is None:
        return datetime.now(UTC)
    if isinstance(dt, datetime):
        return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)  # naive = UTC
    if not math.isfinite(dt):
        return datetime.now(UTC)
    return datetime.fromtimestamp(dt / 1000, tz=UTC)  # epoch ms


def utc_day_elapsed(dt: datetime | float | None = None) -> float:
    """Fraction of the UTC day that has passed at `dt` (a datetime, naive = UTC, or epoch ms;
    default now), clamped to 0..1."""
    d = _as_datetime(dt).astimezone(UTC)
    seconds = d.hour * 3600 + d.minute * 60 + d.second + d.microsecond / 1e6
    return _clamp01(seconds / DAY_SECONDS)


def utc_day_key(dt: datetime | float | None = None) -> str:
    """`YYYY-MM-DD` of `dt` in UTC (a datetime, naive = UTC, or epoch ms; default now)."""
    return _as_datetime(dt).astimezone(UTC).strftime("%Y-%m-%d")
