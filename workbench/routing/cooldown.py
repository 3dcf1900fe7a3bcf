"""How long a failure cools a key (ai-kit's durations), and the store of cooldowns and
consecutive failures the router reads.

`cooldown_decision` is pure: it reads one `ProviderError` and says how long to cool, and
whether the refusal concerns one model or the whole provider key. `Cooldowns` only stores:
the router decides which key (`provider:model`, `provider:model@lane`, or `provider` for a
provider-wide daily refusal). Nothing here runs a timer or a task; expiry is computed on
read. Times are epoch milliseconds; durations are seconds.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from workbench.errors import ConfigError, ProviderError
from workbench.routing.limits import (
    classify_rate_limit,
    humanize_wait,
    names_model,
    next_utc_midnight_ms,
    retry_after_seconds,
)

__all__ = ["NOT_FOUND_COOL_S", "Cooldowns", "CoolingDecision", "cooldown_decision"]

NOT_FOUND_COOL_S = 3600.0  # a 404: the model id is wrong or retired (ai-kit: 60 x minuteMs)
_MAX_COOL_S = 7 * 86_400.0  # an infinite wait is clamped, never stored

CoolingScope = Literal["model", "provider", "none"]


@dataclass(frozen=True)
class CoolingDecision:
    """`seconds` None means: do not cool. `scope` says which key to cool: the model's own
    (`provider:model[@lane]`), the whole provider key (a daily refusal that does not name its
    model), or none. `daily` marks a daily-quota refusal."""

    seconds: float | None
    reason: str
    scope: CoolingScope
    daily: bool


def _stated_wait(value: Any) -> float | None:
    """A wait the vendor stated, when it is a usable finite number of seconds. Zero is one: a
    Retry-After already past says the model is free now, not "wait the default minute"."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _no_cooling(reason: str) -> CoolingDecision:
    return CoolingDecision(seconds=None, reason=reason, scope="none", daily=False)


def cooldown_decision(
    error: ProviderError,
    *,
    default_s: float = 60.0,
    now_ms: int,
    body: str | None = None,
) -> CoolingDecision:
    """How long `error` cools, and what.

    - 429 (or kind `rate_limit`), classified by the body: `size` cools nothing (the walk
      stops); `daily` cools the model when the body names it, else the whole provider key,
      for the stated wait, else until the next UTC midnight; `capacity` cools the model for
      the stated wait, else `default_s`.
    - 404 cools the model for an hour: the id is wrong or retired.
    - 401/403 cool nothing here: the router takes the provider out for the request.
    - 5xx, 408, timeouts, network and empty replies cool nothing (they demote; breakers and
      degradation handle outages), except a 503 that states a wait: cool that long.

    The stated wait is `error.retry_after_s`, else what the body says ("try again in …").
    `body` overrides `error.body` for the classification (the error keeps only a 300-char
    excerpt; a caller holding the full vendor body may pass it).
    """
    text = error.body if body is None else body
    status = error.status_code
    wait = _stated_wait(error.retry_after_s)
    said = _stated_wait(retry_after_seconds(text))
    if wait is None:  # an error built without the meter's reading: the body may still say
        wait = said
    elif said is not None and said <= wait < said + 1:
        wait = said  # a Retry-After in whole seconds rounding up the body's finer "650ms"

    if status == 429 or (status == 0 and error.kind == "rate_limit"):
        kind = classify_rate_limit(text)
        if kind == "size":
            return _no_cooling("429 size: the request is too large for any model; not cooled")
        if kind == "daily":
            scope: CoolingScope = "model" if names_model(text, error.model) else "provider"
            if wait is not None:
                seconds = wait
            else:
                seconds = max(0.0, (next_utc_midnight_ms(now_ms) - now_ms) / 1000)
            whom = "the model's" if scope == "model" else "the provider's"
            return CoolingDecision(
                seconds=seconds,
                reason=f"429 daily: {whom} daily quota is used up "
                f"(resets in {humanize_wait(seconds) or 'a moment'})",
                scope=scope,
                daily=True,
            )
        seconds = wait if wait is not None else _default(default_s)
        return CoolingDecision(
            seconds=seconds,
            reason=f"429 capacity: rate-limited (retry in {humanize_wait(seconds) or 'a moment'})",
            scope="model",
            daily=False,
        )
    if status == 404:
        return CoolingDecision(
            seconds=NOT_FOUND_COOL_S,
            reason="404: the model id is wrong or retired",
            scope="model",
            daily=False,
        )
    if status in (401, 403):
        return _no_cooling(f"{status}: the key was refused; the provider is out for this request")
    if status == 503 and wait is not None:
        return CoolingDecision(
            seconds=wait,
            reason=f"503 with a stated wait (retry in {humanize_wait(wait)})",
            scope="model",
            daily=False,
        )
    label = str(status) if status else error.kind
    return _no_cooling(f"{label}: demoted, not cooled")


def _default(default_s: float) -> float:
    if isinstance(default_s, int | float) and math.isfinite(default_s) and default_s >= 0:
        return float(default_s)
    return 60.0


def _system_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _Entry:
    until_ms: int
    reason: str


class Cooldowns:
    """Cooldowns and consecutive failures per key; everything computed on read.

    A cooldown is never shortened by a later, shorter one; a later, longer one extends it.
    A key is cooling while `now < until_ms`; an expired entry is forgotten when next read.
    """

    def __init__(
        self,
        *,
        jitter_s: float = 2.0,
        degrade_after: int = 3,
        clock_ms: Callable[[], int] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not math.isfinite(jitter_s) or jitter_s < 0:
            raise ConfigError(
                f"jitter_s must be a finite number >= 0, got {jitter_s!r}", code="ROUTER_INVALID"
            )
        if degrade_after < 1:
            raise ConfigError(
                f"degrade_after must be >= 1, got {degrade_after!r}", code="ROUTER_INVALID"
            )
        self.jitter_s = float(jitter_s)
        self.degrade_after = int(degrade_after)
        self._clock = clock_ms or _system_clock_ms
        self._rng = rng or random.Random()
        self._cool: dict[str, _Entry] = {}
        self._failures: dict[str, int] = {}

    def _now(self) -> int:
        return int(self._clock())

    # --- cooldowns ------------------------------------------------------------------
    def cool(self, key: str, seconds: float, *, reason: str = "") -> int:
        """Cool `key` for `seconds` plus uniform(0, jitter_s) seconds; returns the effective
        until_ms (the existing one when it is later). Negative or NaN seconds count as 0,
        infinite ones are clamped to a week."""
        if not isinstance(seconds, int | float) or math.isnan(seconds) or seconds < 0:
            seconds = 0.0
        seconds = min(float(seconds), _MAX_COOL_S)
        jitter = self._rng.uniform(0.0, self.jitter_s) if self.jitter_s > 0 else 0.0
        until_ms = self._now() + math.floor((seconds + jitter) * 1000 + 0.5)
        return self._extend(key, until_ms, reason)

    def cool_until(self, key: str, until_ms: int, *, reason: str = "") -> int:
        """Cool `key` until the epoch-ms `until_ms` (no jitter: a daily reset is a known
        instant); never shortens an existing cooldown. Returns the effective until_ms."""
        return self._extend(key, int(until_ms), reason)

    def _extend(self, key: str, until_ms: int, reason: str) -> int:
        current = self._cool.get(key)
        if current is not None and current.until_ms >= until_ms:
            return current.until_ms
        self._cool[key] = _Entry(until_ms, reason)
        return until_ms

    def until(self, key: str) -> int | None:
        """The epoch ms at which `key` stops cooling; None when it is not cooling."""
        entry = self._cool.get(key)
        if entry is None:
            return None
        if entry.until_ms <= self._now():
            del self._cool[key]
            return None
        return entry.until_ms

    def is_cooling(self, key: str) -> bool:
        return self.until(key) is not None

    def reason(self, key: str) -> str | None:
        """Why `key` is cooling; None when it is not."""
        if self.until(key) is None:
            return None
        return self._cool[key].reason

    def earliest_free(self, keys: Iterable[str]) -> int | None:
        """The smallest until_ms among the given keys that are cooling; None if none is."""
        untils = [u for u in (self.until(k) for k in keys) if u is not None]
        return min(untils) if untils else None

    # --- degradation ----------------------------------------------------------------
    def record_failure(self, key: str) -> int:
        """Count one more consecutive failure of `key`; returns the count."""
        count = self._failures.get(key, 0) + 1
        self._failures[key] = count
        return count

    def record_success(self, key: str) -> None:
        self._failures.pop(key, None)

    def consecutive_failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def degraded(self, key: str) -> bool:
        """True after `degrade_after` consecutive failures: tried after healthy models."""
        return self._failures.get(key, 0) >= self.degrade_after

    # --- whole state ----------------------------------------------------------------
    def reset(self) -> None:
        """Forget every cooldown and every failure count."""
        self._cool.clear()
        self._failures.clear()

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per key that is cooling or has failures: until_ms, reason, consecutive_failures,
        degraded. Expired cooldowns are dropped."""
        out: dict[str, dict[str, Any]] = {}
        for key in sorted(set(self._cool) | set(self._failures)):
            until_ms = self.until(key)
            failures = self._failures.get(key, 0)
            if until_ms is None and failures == 0:
                continue
            out[key] = {
                "until_ms": until_ms,
                "reason": self._cool[key].reason if until_ms is not None else None,
                "consecutive_failures": failures,
                "degraded": failures >= self.degrade_after,
            }
        return out
