"""Adaptive concurrency per provider:model: AIMD, as TCP finds a link's capacity.

A free tier states its requests per minute but not how many it serves at once, and a burst
at full concurrency into a window that is nearly spent turns into a burst of 429s. So each
key's concurrency starts at the ceiling the caller chose (a run's `--concurrency`), halves on
a 429 or a timeout (floor 1; at most once per round trip or per second, whichever is longer,
so one window's burst of refusals counts once, not once per refusal), and rises by one after
a limit's worth of answers in a row without one, never above the ceiling.

A request beyond the current limit waits for a slot (asyncio: cancellable, and never past the
caller's deadline) before anything else of its attempt is decided.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["AdaptiveConcurrency", "Change"]


@dataclass(frozen=True, slots=True)
class Change:
    """One key's concurrency changed: `why` is "answer" (+1), "429" or "timeout" (halved)."""

    key: str
    why: str
    concurrency: int
    in_flight: int


class _Key:
    __slots__ = ("cond", "in_flight", "last_cut", "limit", "rtt_s", "streak", "waiting")

    def __init__(self, ceiling: int) -> None:
        self.limit = ceiling
        self.in_flight = 0
        self.waiting = 0  # requests waiting for a slot
        self.streak = 0  # answers since the last change
        self.last_cut: float | None = None  # when it was last halved (None: never)
        self.rtt_s = 0.0
        self.cond = asyncio.Condition()


class AdaptiveConcurrency:
    """Per-key slots under an AIMD limit; `ceiling` is the most ever in flight per key.
    `clock` (monotonic seconds) times the cuts: injected, a test says when a refusal comes
    instead of hoping the scheduler does."""

    def __init__(self, ceiling: int, clock: Callable[[], float] = time.monotonic) -> None:
        if ceiling < 1:
            raise ValueError("adaptive concurrency needs a ceiling of at least 1")
        self.ceiling = ceiling
        self.clock = clock
        self._keys: dict[str, _Key] = {}

    def _get(self, key: str) -> _Key:
        state = self._keys.get(key)
        if state is None:
            state = self._keys[key] = _Key(self.ceiling)
        return state

    def limit(self, key: str) -> int:
        return self._get(key).limit

    def in_flight(self, key: str) -> int:
        return self._get(key).in_flight

    def round_trip_s(self, key: str) -> float:
        """The key's smoothed request latency (0 before any came back): about when a slot
        held now is given back."""
        return self._get(key).rtt_s

    def waiting(self, key: str) -> int:
        """Requests of `key` waiting for a slot now."""
        return self._get(key).waiting

    async def acquire(self, key: str, timeout_s: float | None = None) -> bool:
        """Wait for a slot of `key`; False when `timeout_s` passed first (the caller's deadline).
        Cancellation propagates and takes no slot."""
        state = self._get(key)
        async with state.cond:
            if state.in_flight < state.limit:
                state.in_flight += 1
                return True
            state.waiting += 1
            try:
                await asyncio.wait_for(
                    state.cond.wait_for(lambda: state.in_flight < state.limit), timeout_s
                )
            except TimeoutError:
                return False
            finally:
                state.waiting -= 1
            state.in_flight += 1
            return True

    async def release(self, key: str, latency_s: float | None = None) -> None:
        state = self._get(key)
        async with state.cond:
            state.in_flight = max(0, state.in_flight - 1)
            if latency_s is not None and latency_s > 0:
                state.rtt_s = latency_s if not state.rtt_s else 0.8 * state.rtt_s + 0.2 * latency_s
            state.cond.notify_all()

    async def answered(self, key: str) -> Change | None:
        """An answer without a refusal: +1 after a limit's worth of them, up to the ceiling."""
        state = self._get(key)
        state.streak += 1
        if state.streak < state.limit or state.limit >= self.ceiling:
            return None
        state.streak = 0
        async with state.cond:
            state.limit += 1
            state.cond.notify_all()
        return Change(key, "answer", state.limit, state.in_flight)

    def refused(self, key: str, why: str) -> Change | None:
        """A 429 or a timeout: halve (floor 1), unless cut within the last round trip."""
        state = self._get(key)
        now = self.clock()
        state.streak = 0
        recent = state.last_cut is not None and now - state.last_cut < max(1.0, state.rtt_s)
        if recent or state.limit <= 1:
            return None
        state.last_cut = now
        state.limit = max(1, state.limit // 2)
        return Change(key, why, state.limit, state.in_flight)
