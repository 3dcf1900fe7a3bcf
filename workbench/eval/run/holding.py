"""Holding an item the provider refused: wait until a candidate is expected free, ask again.

A benchmark measures the model, never the rate limiter. A route that fails for the provider's
reasons (a 429, a spent window, an outage: its `RoutingError.retry` says so and when a
candidate is free) is not a failed item: the job waits until then and asks the same turn
again (a refusal that states no wait, a 5xx, is asked again after 1 s, then 2 s, 4 s … 30 s).
An item the provider keeps refusing is given up, *unanswered* with its reason, never
graded as wrong:

- `daily_quota`: a reset past the item's `max_wait_s` is not waited for (hours away, as a
  rule); `retry_at_ms` is the reset, when to resume. A reset within it is waited for.
- `max_wait`: the next wait would take the item past the run's `max_wait_s`, counted in
  wall time from its first refusal (`RUN_MAX_WAIT`).
- `rate_limit` / `provider_error`: refused `max_tries` times.

A route refused for the caller's reasons (a 400, a bad key) has no hint and fails as before:
asking again would fail the same way.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from workbench.errors import RoutingError, WorkbenchError

__all__ = ["ItemHold", "Unanswered", "UnansweredReason", "floor_s", "spread_ms"]

T = TypeVar("T")
# The held reasons of a route (`RetryHint.reason`), and the run's own: held past --max-wait.
UnansweredReason = Literal["rate_limit", "daily_quota", "provider_error", "max_wait"]


class Unanswered(Exception):
    """An item the provider kept from being answered: why, when a candidate was expected free,
    and the route's error (its code is the output's; `RUN_MAX_WAIT` for `max_wait`)."""

    def __init__(
        self,
        reason: UnansweredReason,
        retry_at_ms: int,
        error: WorkbenchError,
        tries: int,
        *,
        code: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.code = code or error.code
        self.reason = reason
        self.retry_at_ms = retry_at_ms
        self.error = error
        self.tries = tries

    @property
    def message(self) -> str:
        """One line for the output's `error_message`: the route's own, with the hold's."""
        if self.reason == "max_wait":
            return f"held past --max-wait; last refusal: {self.error}"
        if self.reason == "daily_quota":
            # At the earliest: a day without the vendor's word ends at midnight UTC here, and
            # a provider's day may end later (Gemini's: midnight Pacific time).
            until = _utc(self.retry_at_ms)
            return f"a day's quota is spent until {until} at the earliest; {self.error}"
        return f"refused {self.tries} times ({self.reason}); last: {self.error}"


def spread_ms(wait_ms: float, rng: random.Random) -> float:
    """A small random delay added to a hold: workers freed by the same reset do not all ask at
    the same instant (a stampede the provider answers with 429s). A tenth of the wait, at
    most one second, at least a few milliseconds."""
    return rng.uniform(0.0, min(1000.0, 5.0 + wait_ms / 10))


# A refusal that says no wait (a 5xx, a timeout, a Retry-After already past: "free now") is
# asked again after a floor that doubles per such refusal: a provider that answers 500 every
# time must not see an item's tries spent in milliseconds. A stated wait overrides it.
FLOOR_FIRST_S = 1.0
FLOOR_CAP_S = 30.0


def floor_s(unsaid: int) -> float:
    """The wait after the `unsaid`-th refusal (from 1) that stated none: 1 s, 2 s, 4 s … 30 s."""
    return min(FLOOR_CAP_S, FLOOR_FIRST_S * 2 ** max(0, unsaid - 1))


@dataclass(slots=True)
class ItemHold:
    """One item's account of its holds, across its turns: the wall time it was held and the
    routes refused. `ask(route)` routes once, and on a refusal of the provider's waits and asks
    again until answered, or raises `Unanswered`. Only a failed route is asked again, so an
    answered turn is never asked twice.

    `held_s` is wall time on the hold's clock, from the start of a turn's first refused route
    until the turn is answered: the sleeps, and also the time spent inside the routes asked
    again (a slot's wait, the requests themselves). `--max-wait` bounds that, the time the
    provider kept the item, not only the hold's own sleeps."""

    max_wait_s: float
    max_tries: int
    held_s: float = 0.0  # turns already settled; the turn under way is added as it goes
    refused: int = 0
    unsaid: int = 0  # refusals that stated no wait (see `floor_s`)
    clock_ms: Callable[[], float] = field(default=lambda: time.time() * 1000)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)

    async def ask(self, route: Callable[[], Awaitable[T]]) -> T:
        began: float | None = None  # when this turn's first refused route was sent
        try:
            while True:
                sent = self.clock_ms()
                try:
                    return await route()
                except RoutingError as exc:
                    hint = exc.retry
                    if hint is None:  # the caller's side failed: asking again would fail alike
                        raise
                    began = sent if began is None else began
                    self.refused += 1
                    now = self.clock_ms()
                    wait_ms = hint.at_ms - now
                    if wait_ms <= 0:  # "free now", or no wait said: back off all the same
                        self.unsaid += 1
                        wait_ms = floor_s(self.unsaid) * 1000
                    wait_ms += spread_ms(wait_ms, self.rng)
                    held_s = self.held_s + (now - began) / 1000
                    fits = held_s + wait_ms / 1000 <= self.max_wait_s
                    # A day's quota is waited for only when its reset comes within the item's
                    # --max-wait (a quota whose "day" is a rolling window, a reset minutes
                    # away); hours away, the item is unanswered at once, with the reset to
                    # resume after.
                    if (hint.reason == "daily_quota" and not fits) or (
                        self.refused >= self.max_tries
                    ):
                        raise Unanswered(hint.reason, hint.at_ms, exc, self.refused) from exc
                    if not fits:
                        raise Unanswered(
                            "max_wait", hint.at_ms, exc, self.refused, code="RUN_MAX_WAIT"
                        ) from exc
                    await self.sleep(wait_ms / 1000)
        finally:
            if began is not None:
                self.held_s += (self.clock_ms() - began) / 1000


def _utc(at_ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at_ms / 1000))
