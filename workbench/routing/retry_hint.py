"""Why a route found nobody, when the reason is the provider's, and when asking again can help.

An app with a person waiting fails fast and falls back; a benchmark must have every item
answered by the model under test. Both read the same failed route: `hint_for(attempts)` says
whether the failure belongs to the provider (a 429, a window or a day spent, a breaker open,
5xx, timeouts, the network) and the earliest instant a candidate is expected to be free again,
from what the walk already knows (cooldowns, Retry-After, quota resets, breaker recovery):
never a guess.

- `rate_limit`: some candidate refused for a minute's window (a 429, a quota reserved before
  the call, a cooldown a 429 set, a pace the provider's own headers or refusals set).
- `daily_quota`: every candidate that could answer is out for the day; `at_ms` is the reset.
- `provider_error`: 5xx, timeouts, a broken connection, an open breaker.

A route whose candidates failed for the caller's reasons (a 400, a bad key, a request too large
for every model) gets no hint: asking again would fail the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from workbench.errors import ProviderError
from workbench.routing.limits import classify_rate_limit

__all__ = ["HELD_REASONS", "HeldReason", "RetryHint", "hint_for"]

HeldReason = Literal["rate_limit", "daily_quota", "provider_error"]
HELD_REASONS: tuple[HeldReason, ...] = ("rate_limit", "daily_quota", "provider_error")

_PROVIDER_KINDS = {"outage", "timeout", "network"}


@dataclass(frozen=True, slots=True)
class RetryHint:
    """The provider's reason for a failed route, and the epoch ms when a candidate is free."""

    reason: HeldReason
    at_ms: int


def attempt_reason(outcome: str, error: BaseException | None, reason: str) -> HeldReason | None:
    """The held reason of one attempt of a route, or None when the caller's side failed."""
    if outcome == "skipped_quota":
        if "exceed" in reason:  # the request alone is larger than the window: no wait helps
            return None
        return "daily_quota" if reason.startswith(("rpd", "tpd")) else "rate_limit"
    if outcome == "skipped_cooling":
        return _cooling_reason(reason)
    if outcome == "skipped_paced":  # the provider said it would refuse, until its reset
        return "daily_quota" if " per day" in reason else "rate_limit"
    if outcome == "skipped_breaker":
        return "provider_error"
    if outcome != "error" or not isinstance(error, ProviderError):
        return None
    if error.status_code == 429:
        kind = classify_rate_limit(error.full_body)
        return None if kind == "size" else ("daily_quota" if kind == "daily" else "rate_limit")
    if error.status_code >= 500 or error.kind in _PROVIDER_KINDS:
        return "provider_error"
    return None


def _cooling_reason(reason: str) -> HeldReason | None:
    """A cooldown's reason, as the walk wrote it: "429 daily: …", "429 capacity: …", a quota
    header's "x-ratelimit-remaining-requests: requests per day spent", "404: …", "503 …"."""
    if reason.startswith("404"):
        return None  # a wrong or retired model id: no wait brings it back
    if reason.startswith("429 daily") or "per day spent" in reason:
        return "daily_quota"
    if reason.startswith("429") or " spent" in reason:
        return "rate_limit"
    return "provider_error"


def hint_for(attempts: Iterable[Any], now_ms: int) -> RetryHint | None:
    """The hint of a failed route from its attempts (each with `outcome`, `error`, `reason`
    and `free_at_ms`, the epoch ms its candidate is expected free, or None for "now").

    Rate limits outrank provider errors (the wait is known); a day's quota is the route's
    reason only when every held attempt is one (another candidate may answer sooner)."""
    held: list[tuple[HeldReason, int]] = []
    for a in attempts:
        why = attempt_reason(a.outcome, a.error, a.reason)
        if why is not None:
            free = getattr(a, "free_at_ms", None)
            held.append((why, now_ms if free is None else max(now_ms, int(free))))
    if not held:
        return None
    if all(why == "daily_quota" for why, _ in held):
        return RetryHint("daily_quota", min(at for _, at in held))
    sooner = [(why, at) for why, at in held if why != "daily_quota"]
    reason: HeldReason = (
        "rate_limit" if any(why == "rate_limit" for why, _ in sooner) else "provider_error"
    )
    return RetryHint(reason, min(at for _, at in sooner))
