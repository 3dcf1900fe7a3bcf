"""A sliding-window limit on how often one person may ask.

`AskLimit(max, window_s).check(person)` → None (the ask is recorded) or an `AskRefusal`
carrying a code and the wait in seconds — never a sentence: the app words it, in its
reader's language. Memory stays bounded by the people active lately: idle accounts are
forgotten by a sweep every 500 asks and whenever a window has passed since the last sweep.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from workbench.errors import ConfigError

__all__ = ["AskLimit", "AskRefusal"]

SWEEP_EVERY = 500


@dataclass(frozen=True)
class AskRefusal:
    code: str
    retry_after_s: float


class AskLimit:
    """At most `max` asks per person within any `window_s` seconds. `clock` returns
    monotonic seconds (default `time.monotonic`). An ask at time t counts while
    `now - t < window_s`."""

    def __init__(
        self,
        max: int,
        window_s: float,
        code: str = "AI_ASK_LIMIT",
        clock: Callable[[], float] | None = None,
    ) -> None:
        if isinstance(max, bool) or not isinstance(max, int) or max < 1:
            raise ConfigError(
                f"max must be a positive integer, not {max!r}", code="ASK_LIMIT_INVALID"
            )
        if not (isinstance(window_s, int | float) and math.isfinite(window_s) and window_s > 0):
            raise ConfigError(
                f"window_s must be a positive finite number, not {window_s!r}",
                code="ASK_LIMIT_INVALID",
            )
        self.max = max
        self.window_s = float(window_s)
        self.code = code
        self._clock = clock or time.monotonic
        self._asks: dict[str, deque[float]] = {}
        self._since_sweep = 0
        self._last_sweep = self._clock()

    def check(self, person: str) -> AskRefusal | None:
        """Refuse when `max` asks of `person` happened within the last window (the wait is
        the time until the oldest of them leaves it); otherwise record this ask."""
        now = self._clock()
        self._since_sweep += 1
        if self._since_sweep >= SWEEP_EVERY or now - self._last_sweep >= self.window_s:
            self._sweep(now)
        horizon = now - self.window_s
        asks = self._asks.get(person)
        if asks is None:
            asks = self._asks[person] = deque()
        while asks and asks[0] <= horizon:
            asks.popleft()
        if len(asks) >= self.max:
            return AskRefusal(self.code, max(0.0, asks[0] - horizon))
        asks.append(now)
        return None

    def _sweep(self, now: float) -> None:
        horizon = now - self.window_s
        for person in [p for p, asks in self._asks.items() if not asks or asks[-1] <= horizon]:
            del self._asks[person]
        self._since_sweep = 0
        self._last_sweep = now

    def __len__(self) -> int:
        """How many accounts are remembered (active ones, plus idle ones not swept yet)."""
        return len(self._asks)
