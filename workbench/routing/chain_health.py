"""A health tracker for a chain: ok, degraded, down or unknown, from the
consecutive failures and the last success. Each instance is independent; no singleton."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Health", "HealthStatus", "HealthTracker"]

HealthStatus = Literal["ok", "degraded", "down", "unknown"]


@dataclass(frozen=True)
class Health:
    status: HealthStatus
    consecutive_failures: int
    last_error: str | None
    last_success_at: int | None  # epoch ms
    last_failure_at: int | None  # epoch ms


def _system_clock_ms() -> int:
    return int(time.time() * 1000)


def _describe(err: object) -> str:
    if err is None:
        return "unknown error"
    message = getattr(err, "message", None)
    if isinstance(message, str):
        return message
    return str(err)


class HealthTracker:
    """`down` after `down_after` consecutive failures, `degraded` after any, `ok` once a
    success was seen, else `unknown`. `now_ms` is a clock returning epoch ms."""

    def __init__(self, down_after: int = 3, now_ms: Callable[[], int] | None = None) -> None:
        self.down_after = down_after
        self._now = now_ms or _system_clock_ms
        self._failures = 0
        self._last_error: str | None = None
        self._last_success_at: int | None = None
        self._last_failure_at: int | None = None

    def record_success(self) -> None:
        self._failures = 0
        self._last_error = None
        self._last_success_at = int(self._now())

    def record_failure(self, err: object = None) -> None:
        """One more consecutive failure. The error is kept as its `.message` when it has one
        (a string), else as `str(err)`; None becomes "unknown error"."""
        self._failures += 1
        self._last_failure_at = int(self._now())
        self._last_error = _describe(err)

    def get_health(self) -> Health:
        if self._failures >= self.down_after:
            status: HealthStatus = "down"
        elif self._failures > 0:
            status = "degraded"
        elif self._last_success_at is not None:
            status = "ok"
        else:
            status = "unknown"
        return Health(
            status=status,
            consecutive_failures=self._failures,
            last_error=self._last_error,
            last_success_at=self._last_success_at,
            last_failure_at=self._last_failure_at,
        )

    def reset(self) -> None:
        self._failures = 0
        self._last_error = None
        self._last_success_at = None
        self._last_failure_at = None
