"""Circuit breakers: stop calling a provider that is down, and find out cheaply when it is back.

One breaker per provider key, never one for all: a shared breaker would let one vendor's outage
stop every vendor, which is why `BreakerPool` refuses a factory that hands out the same object
twice.

The states::

    closed ──(failure_threshold consecutive outages)──▶ open
    open ──(recovery_s elapsed)──▶ half_open: exactly ONE probe call in flight
    half_open ──probe succeeds──▶ closed (counters reset)
    half_open ──probe is an outage──▶ open (the recovery timer restarts)

Only outages count (`is_provider_outage`). A 429 is the cooldown's business, a 400/401/403/404
is the caller's or the key's fault: none of them says the provider is down, so they are neutral
— they neither count as a failure nor reset the run of consecutive outages.

`allow()` is synchronous on purpose: under asyncio nothing can interleave between the check and
the claim of the probe slot, and a lock makes the same true across threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from workbench.errors import ConfigError, ProviderError, WorkbenchError

BreakerState = Literal["closed", "open", "half_open"]

_OUTAGE_KINDS = frozenset({"outage", "timeout", "network", "empty"})


def is_provider_outage(err: BaseException | None) -> bool:
    """True when `err` says the provider itself is down (the only thing a breaker counts).

    Outages: timeouts (ours or a 408), transport errors (refused, reset, DNS, TLS), 5xx, and an
    empty 200 — an outage wearing a success code, so it counts too.
    Not outages: 429 (the cooldown handles it), 400/401/403/404 and other 4xx, cancellation,
    and exceptions that are not about the provider at all (a bug of ours must not open a
    breaker on a healthy vendor).
    """
    if err is None or isinstance(err, asyncio.CancelledError):
        return False
    if isinstance(err, ProviderError):
        status = err.status_code or 0
        if status == 408 or status >= 500:
            return True
        if status == 429 or 400 <= status < 500:
            # A status wins over the kind: a 4xx is never the provider being down.
            return False
        return err.kind in _OUTAGE_KINDS
    if isinstance(err, TimeoutError | ConnectionError):
        return True
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx is a core dependency
        return False
    return isinstance(err, httpx.TransportError)


class BreakerOpen(WorkbenchError):
    """A call refused by an open (or busy half-open) breaker. It consumed no quota and is not
    a model failure: the router records it as `skipped_breaker` and moves on."""

    code = "AI_BREAKER_OPEN"
    status = 503

    def __init__(self, key: str = "", *, retry_after_s: float | None = None) -> None:
        self.key = key
        self.retry_after_s = retry_after_s
        where = f"{key}: " if key else ""
        wait = f"; next probe in {retry_after_s:.1f} s" if retry_after_s else ""
        super().__init__(
            f"{where}circuit breaker is open, the provider is not called{wait}",
            details={"key": key, "retry_after_s": retry_after_s},
        )


class Permit:
    """Leave to make one call. Settle it exactly once: `success()`, `failure(err)` or
    `cancel()`. A second settlement raises RuntimeError (it is a bug in the caller).

    Also a context manager (sync or async): leaving the block without settling counts a clean
    exit as success, an exception as `failure(exc)`, and a cancellation as `cancel()`.
    """

    __slots__ = ("_breaker", "_generation", "_settled", "probe")

    def __init__(self, breaker: CircuitBreaker, generation: int, probe: bool) -> None:
        self._breaker = breaker
        self._generation = generation
        self._settled = False
        self.probe = probe

    @property
    def settled(self) -> bool:
        return self._settled

    def _settle(self) -> None:
        if self._settled:
            raise RuntimeError("a breaker permit is settled exactly once")
        self._settled = True

    def success(self) -> None:
        self._settle()
        self._breaker._on_success(self)

    def failure(self, err: BaseException | None) -> None:
        """Report the call's error. Only an outage (`is_provider_outage`) counts; any other
        error is neutral, exactly like `cancel()`."""
        self._settle()
        if is_provider_outage(err):
            self._breaker._on_outage(self)
        else:
            self._breaker._on_neutral(self)

    def cancel(self) -> None:
        """The call did not happen or was abandoned: frees the probe slot, counts nothing."""
        self._settle()
        self._breaker._on_neutral(self)

    def _exit(self, exc: BaseException | None) -> None:
        if self._settled:
            return
        if exc is None:
            self.success()
        elif isinstance(exc, Exception):
            self.failure(exc)
        else:  # CancelledError, KeyboardInterrupt, GeneratorExit: nothing was learned
            self.cancel()

    def __enter__(self) -> Permit:
        return self

    def __exit__(self, _t: object, exc: BaseException | None, _tb: object) -> None:
        self._exit(exc)

    async def __aenter__(self) -> Permit:
        return self

    async def __aexit__(self, _t: object, exc: BaseException | None, _tb: object) -> None:
        self._exit(exc)


class CircuitBreaker:
    """closed → open after `failure_threshold` consecutive outages → half-open once
    `recovery_s` has passed, with exactly one probe in flight. `clock` returns monotonic
    seconds (default `time.monotonic`)."""

    def __init__(
        self,
        failure_threshold: int = 5,
        recovery_s: float = 30.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if isinstance(failure_threshold, bool) or not isinstance(failure_threshold, int):
            raise ConfigError("failure_threshold must be an integer", code="BREAKER_INVALID")
        if failure_threshold < 1:
            raise ConfigError("failure_threshold must be at least 1", code="BREAKER_INVALID")
        if not isinstance(recovery_s, int | float) or not math.isfinite(recovery_s):
            raise ConfigError("recovery_s must be a finite number", code="BREAKER_INVALID")
        if recovery_s < 0:
            raise ConfigError("recovery_s must not be negative", code="BREAKER_INVALID")
        self.failure_threshold = failure_threshold
        self.recovery_s = float(recovery_s)
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._open = False
        self._opened_at: float | None = None
        self._failures = 0
        self._probe_in_flight = False
        # Bumped whenever the breaker opens or closes: a permit issued before the change
        # reports on a world that no longer exists and must not move the state.
        self._generation = 0

    # --- reading --------------------------------------------------------------------------
    def _state(self, now: float) -> BreakerState:
        if not self._open:
            return "closed"
        assert self._opened_at is not None
        if now - self._opened_at >= self.recovery_s:
            return "half_open"
        return "open"

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state(self._clock())

    @property
    def consecutive_failures(self) -> int:
        return self._failures

    def snapshot(self) -> dict[str, Any]:
        """state, consecutive_failures, opened_at (clock seconds or None), next_probe_in_s
        (None when closed, 0.0 once a probe may run), probe_in_flight."""
        with self._lock:
            now = self._clock()
            state = self._state(now)
            if state == "closed":
                next_probe: float | None = None
            else:
                assert self._opened_at is not None
                next_probe = max(0.0, self._opened_at + self.recovery_s - now)
            return {
                "state": state,
                "consecutive_failures": self._failures,
                "opened_at": self._opened_at,
                "next_probe_in_s": next_probe,
                "probe_in_flight": self._probe_in_flight,
            }

    # --- asking -----------------------------------------------------------------------------
    def allow(self) -> Permit | None:
        """A Permit to make one call, or None when refused (open, or half-open with the probe
        already in flight)."""
        with self._lock:
            state = self._state(self._clock())
            if state == "closed":
                return Permit(self, self._generation, probe=False)
            if state == "open" or self._probe_in_flight:
                return None
            self._probe_in_flight = True
            return Permit(self, self._generation, probe=True)

    @contextlib.asynccontextmanager
    async def guard(self, key: str = "") -> AsyncIterator[Permit]:
        """`async with breaker.guard(key):` raises BreakerOpen when refused, and settles the
        permit from how the block ends (see Permit) unless the block settled it itself."""
        permit = self.allow()
        if permit is None:
            raise BreakerOpen(key, retry_after_s=self.snapshot()["next_probe_in_s"])
        try:
            yield permit
        except BaseException as exc:
            permit._exit(exc)
            raise
        else:
            permit._exit(None)

    def reset(self) -> None:
        """Forget everything: closed, no failures, no probe."""
        with self._lock:
            self._close()

    # --- settling (called by Permit) --------------------------------------------------------
    def _close(self) -> None:
        self._open = False
        self._opened_at = None
        self._failures = 0
        self._probe_in_flight = False
        self._generation += 1

    def _trip(self) -> None:
        self._open = True
        self._opened_at = self._clock()
        self._probe_in_flight = False
        self._generation += 1

    def _on_success(self, permit: Permit) -> None:
        with self._lock:
            if permit._generation != self._generation:
                return
            if permit.probe:
                self._close()
            elif not self._open:
                self._failures = 0

    def _on_outage(self, permit: Permit) -> None:
        with self._lock:
            if permit._generation != self._generation:
                return
            self._failures += 1
            if permit.probe:
                self._trip()  # the probe failed: open again, the recovery timer restarts
            elif not self._open and self._failures >= self.failure_threshold:
                self._trip()

    def _on_neutral(self, permit: Permit) -> None:
        with self._lock:
            if permit.probe and permit._generation == self._generation:
                self._probe_in_flight = False

    def __repr__(self) -> str:
        snap = self.snapshot()
        return (
            f"CircuitBreaker(state={snap['state']!r}, failures={snap['consecutive_failures']}, "
            f"threshold={self.failure_threshold}, recovery_s={self.recovery_s})"
        )


class BreakerPool:
    """One breaker per key, created lazily by `factory(key)`. Refuses (ConfigError
    BREAKER_SHARED) a factory that returns a breaker already serving another key: one breaker
    for every provider would let one outage stop them all."""

    def __init__(self, factory: Callable[[str], CircuitBreaker]) -> None:
        self._factory = factory
        self._by_key: dict[str, CircuitBreaker] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> CircuitBreaker:
        with self._lock:
            found = self._by_key.get(key)
            if found is not None:
                return found
            breaker = self._factory(key)
            for other_key, other in self._by_key.items():
                if other is breaker:
                    raise ConfigError(
                        f"the breaker factory returned the same breaker for {other_key!r} and "
                        f"{key!r}: give each provider key its own breaker "
                        "(breakers=lambda key: CircuitBreaker(...)), or one outage stops all",
                        code="BREAKER_SHARED",
                        details={"keys": [other_key, key]},
                    )
            self._by_key[key] = breaker
            return breaker

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._by_key)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            items = list(self._by_key.items())
        return {key: breaker.snapshot() for key, breaker in items}

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)
