"""Per-key request and token quotas: RPM, TPM, RPD and TPD, reserved before a call.

Keys are the router's `provider:model` or `provider:model@lane` strings: a lane has its own
counters, so a saturated background key never stops conversations.

Windows (the same in every store)
- RPM is a FIXED calendar-minute window, bucket `epoch_ms // 60_000`. The promise is exact
  and cheap to make atomic across processes: never more than `rpm` reservations within any
  calendar minute. (A burst straddling a minute boundary can see up to 2 x rpm within 60 s;
  that is the price of exactness without a sorted set of timestamps.) A refusal waits until
  the end of the current minute, so `retry_after_s` is in (0, 60].
- TPM counts tokens in the same calendar-minute bucket as RPM, exactly as TPD counts them in
  the day: reserved tokens (`estimated_tokens`), corrected by `reconcile` in the
  reservation's own minute bucket, refused when `used + tokens > cap`, waiting until the
  minute ends. (LiteLLM's per-deployment `tpm` lands here.)
- RPD and TPD are per UTC day (`YYYY-MM-DD`). The day rolls over at UTC midnight with no
  timer: the counter's key simply changes. Redis keys carry TTLs (minute keys 120 s, day
  keys 2 days) and expire by themselves; the memory store prunes lazily. A daily refusal
  waits until the next UTC midnight.
- TPD counts reserved tokens (`estimated_tokens`); `reconcile` corrects the reservation's
  own day bucket by (actual - reserved), never below zero. A reservation is refused when
  `used + tokens > cap`.
- When several limits refuse, the refusal names the one that frees last (rpd, then tpd,
  then tpm, then rpm). `None` means unlimited; usage is counted either way.

Stores
- `MemoryQuota`: one process, one event loop.
- `RedisQuota` (`workbench.routing.quota_redis`): atomic across processes, one Lua script
  per reservation, Redis's own `TIME` as the clock.
- `FailoverQuota`: Redis while it answers, memory when it does not, back to Redis when it
  returns; it never raises an outage to the caller and says which backend it is on.

`redis` is an optional dependency: this module imports it only when a Redis store is built.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from workbench._failover import FailoverStore, describe
from workbench.events import QuotaBackendEvent, Sink, emit

if TYPE_CHECKING:  # quota_redis imports this module; named as a string in FailoverQuota's base
    from workbench.routing.quota_redis import RedisQuota  # noqa: F401

log = logging.getLogger("workbench.routing.quota")

MINUTE_MS = 60_000
DAY_MS = 86_400_000

LimitName = Literal["rpm", "rpd", "tpd", "tpm"]
Clock = Callable[[], int]


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps per key; None = unlimited."""

    rpm: int | None = None
    rpd: int | None = None
    tpd: int | None = None
    tpm: int | None = None


@dataclass(frozen=True, slots=True)
class Reservation:
    """What was taken, so that it can be reconciled or released later."""

    key: str
    tokens: int
    minute_bucket: int
    day: str
    backend: str


@dataclass(frozen=True, slots=True)
class Refusal:
    key: str
    limit: LimitName
    retry_after_s: float
    used: int
    cap: int


class QuotaStore(Protocol):
    backend: str  # "memory" | "redis"

    async def reserve(self, key: str, limits: Limits, tokens: int) -> Reservation | Refusal: ...

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None: ...

    async def release(self, reservation: Reservation) -> None: ...

    async def usage(self, key: str) -> dict[str, int]: ...

    async def close(self) -> None: ...


def wall_ms() -> int:
    return int(time.time() * 1000)


def utc_day(now_ms: int) -> str:
    """`YYYY-MM-DD` of the UTC day containing `now_ms`."""
    return _day_name(now_ms // DAY_MS)


@functools.lru_cache(maxsize=8)
def _day_name(day: int) -> str:
    # Every reservation asks for it; formatting a date each time was a visible share of a
    # fast run, and a run sees one or two days.
    return datetime.fromtimestamp(day * 86400, UTC).strftime("%Y-%m-%d")


def clean_count(value: Any) -> int:
    """Tokens as a non-negative int: garbage, NaN, inf and negatives count as 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    if not math.isfinite(number) or number <= 0:
        return 0
    return int(number)


def clean_cap(value: Any) -> int | None:
    """A cap as an int >= 0, or None (unlimited) for None, inf, NaN and garbage."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return max(0, int(number))


def check(
    key: str, limits: Limits, tokens: int, used: tuple[int, int, int, int], now_ms: int
) -> Refusal | None:
    """The refusal for taking one request and `tokens` now, or None if it fits (pure).

    `used` is (requests this minute, requests today, tokens today, tokens this minute)."""
    rpm_used, rpd_used, tpd_used, tpm_used = used
    day_wait_s = (DAY_MS - now_ms % DAY_MS) / 1000
    minute_wait_s = (MINUTE_MS - now_ms % MINUTE_MS) / 1000
    rpd, tpd, rpm = clean_cap(limits.rpd), clean_cap(limits.tpd), clean_cap(limits.rpm)
    tpm = clean_cap(limits.tpm)
    if rpd is not None and rpd_used + 1 > rpd:
        return Refusal(key, "rpd", day_wait_s, rpd_used, rpd)
    if tpd is not None and tpd_used + tokens > tpd:
        return Refusal(key, "tpd", day_wait_s, tpd_used, tpd)
    if tpm is not None and tpm_used + tokens > tpm:
        return Refusal(key, "tpm", minute_wait_s, tpm_used, tpm)
    if rpm is not None and rpm_used + 1 > rpm:
        return Refusal(key, "rpm", minute_wait_s, rpm_used, rpm)
    return None


class MemoryQuota:
    """In-process counters.

    Asyncio-safe without a lock: no method awaits anything between reading a counter and
    writing it, so no other coroutine can run in between (the event loop only switches
    tasks at an await). It is NOT thread-safe: use one instance per event loop.
    Counters older than the previous minute / previous day are pruned lazily, when the
    minute / day changes; the previous bucket is kept so a late release or reconcile of a
    call that straddled the boundary still lands where it was taken.
    """

    backend = "memory"

    def __init__(self, clock_ms: Clock | None = None) -> None:
        self._clock = clock_ms or wall_ms
        self._minutes: dict[tuple[str, int], list[int]] = {}  # (key, minute) -> [requests, tokens]
        self._days: dict[tuple[str, str], list[int]] = {}  # (key, day) -> [requests, tokens]
        self._pruned_minute: int | None = None
        self._pruned_day: int | None = None

    def _now(self) -> int:
        return int(self._clock())

    def _prune(self, now_ms: int) -> None:
        minute, day_number = now_ms // MINUTE_MS, now_ms // DAY_MS
        if minute != self._pruned_minute:
            self._pruned_minute = minute
            for old in [k for k in self._minutes if k[1] < minute - 1]:
                del self._minutes[old]
        if day_number != self._pruned_day:
            self._pruned_day = day_number
            keep = {utc_day(now_ms), utc_day(now_ms - DAY_MS)}
            for stale in [k for k in self._days if k[1] not in keep]:
                del self._days[stale]

    async def reserve(self, key: str, limits: Limits, tokens: int) -> Reservation | Refusal:
        return self.take(key, limits, tokens)

    def take(self, key: str, limits: Limits, tokens: int) -> Reservation | Refusal:
        """`reserve` without the coroutine: check and take in one synchronous step."""
        now = self._now()
        self._prune(now)
        tokens = clean_count(tokens)
        minute, day = now // MINUTE_MS, utc_day(now)
        counts = self._days.get((key, day), [0, 0])
        in_minute = self._minutes.get((key, minute), [0, 0])
        used = (in_minute[0], counts[0], counts[1], in_minute[1])
        refusal = check(key, limits, tokens, used, now)
        if refusal is not None:
            return refusal
        self._minutes[(key, minute)] = [in_minute[0] + 1, in_minute[1] + tokens]
        self._days[(key, day)] = [counts[0] + 1, counts[1] + tokens]
        return Reservation(key, tokens, minute, day, self.backend)

    def record(self, key: str, tokens: int) -> None:
        """Count a reservation another backend granted, without checking: the mirror that lets
        memory take over from the real numbers when that backend fails."""
        now = self._now()
        self._prune(now)
        minute, day = now // MINUTE_MS, utc_day(now)
        tokens = clean_count(tokens)
        in_minute = self._minutes.get((key, minute), [0, 0])
        self._minutes[(key, minute)] = [in_minute[0] + 1, in_minute[1] + tokens]
        counts = self._days.get((key, day), [0, 0])
        self._days[(key, day)] = [counts[0] + 1, counts[1] + tokens]

    def current(
        self,
    ) -> tuple[dict[tuple[str, int], list[int]], dict[tuple[str, str], list[int]]]:
        """The [requests, tokens] of the current minute and day, per key (what a restored
        backend needs)."""
        now = self._now()
        minute, day = now // MINUTE_MS, utc_day(now)
        minutes = {k: list(v) for k, v in self._minutes.items() if k[1] == minute}
        days = {k: list(v) for k, v in self._days.items() if k[1] == day}
        return minutes, days

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        delta = clean_count(actual_tokens) - reservation.tokens
        # A pruned day or minute is over: nothing left to correct there.
        for counts in (
            self._days.get((reservation.key, reservation.day)),
            self._minutes.get((reservation.key, reservation.minute_bucket)),
        ):
            if counts is not None:
                counts[1] = max(0, counts[1] + delta)

    async def release(self, reservation: Reservation) -> None:
        in_minute = self._minutes.get((reservation.key, reservation.minute_bucket))
        if in_minute is not None:
            in_minute[0] = max(0, in_minute[0] - 1)
            in_minute[1] = max(0, in_minute[1] - reservation.tokens)
        counts = self._days.get((reservation.key, reservation.day))
        if counts is not None:
            counts[0] = max(0, counts[0] - 1)
            counts[1] = max(0, counts[1] - reservation.tokens)

    async def usage(self, key: str) -> dict[str, int]:
        now = self._now()
        counts = self._days.get((key, utc_day(now)), [0, 0])
        in_minute = self._minutes.get((key, now // MINUTE_MS), [0, 0])
        return {"rpm": in_minute[0], "rpd": counts[0], "tpd": counts[1], "tpm": in_minute[1]}

    async def close(self) -> None:
        return None


class FailoverQuota(FailoverStore["RedisQuota", MemoryQuota]):
    """The router's store when a `redis_url` is given: Redis while it answers, memory when not.

    An outage (connection refused or lost, timeout, Redis still loading, any Redis error)
    never reaches the caller: the call is served by an internal `MemoryQuota`, `backend`
    becomes "memory", `degraded_reason` says why, and one
    `QuotaBackendEvent(backend="memory", state="degraded")` is emitted per transition.
    On memory the quota is per process only (it cannot be distributed then). At most every
    `retry_every_s` a call first PINGs Redis (bounded by ~0.2 s); when it answers, Redis's
    counters of the current minute and day are raised to at least what this process counted
    in memory (never lowered, never added to: a Redis that restarted empty must not grant the
    window again), then the store switches back and emits
    `QuotaBackendEvent(backend="redis", state="restored")`.

    `reconcile`/`release` go to the backend named in the reservation; when that backend is
    Redis and Redis is down (or fails), the correction is dropped with a log line.
    `clock_ms` drives the memory counters and the retry pacing only: Redis always uses its
    own `TIME`, so every process agrees on the minute and the day.
    """

    _log = log
    _label = "quota backend"
    _memory_note = "not distributed"

    def __init__(
        self,
        redis_url: Any,
        *,
        sinks: Iterable[Sink] = (),
        clock_ms: Clock | None = None,
        retry_every_s: float = 2.0,
        prefix: str = "wb:quota:",
        socket_timeout_s: float = 2.0,
        ping_timeout_s: float = 0.2,
    ) -> None:
        from workbench.routing.quota_redis import RedisQuota

        self._clock = clock_ms or wall_ms
        self._sinks = tuple(sinks)
        super().__init__(
            RedisQuota(redis_url, prefix=prefix, socket_timeout_s=socket_timeout_s),
            MemoryQuota(clock_ms=self._clock),
            clock_ms=self._now,
            retry_every_ms=max(0.0, float(retry_every_s)) * 1000,
            ping_timeout_s=ping_timeout_s,
        )

    def _now(self) -> int:
        return int(self._clock())

    async def reserve(self, key: str, limits: Limits, tokens: int) -> Reservation | Refusal:
        async def on_redis() -> Reservation | Refusal:
            taken = await self._redis.reserve(key, limits, tokens)
            # Mirrored in memory: if Redis dies, memory goes on from this process's real
            # counts, not from zero (a fresh window would let a model get its RPM twice).
            if isinstance(taken, Reservation):
                self._memory.record(key, taken.tokens)
            return taken

        return await self._serve(on_redis, lambda: self._memory.reserve(key, limits, tokens))

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        if reservation.backend != "redis":
            await self._memory.reconcile(reservation, actual_tokens)
        elif await self._redis_usable("reconcile", reservation):
            try:
                await self._redis.reconcile(reservation, actual_tokens)
            except self._outages as exc:
                self._dropped("reconcile", reservation, exc)

    async def release(self, reservation: Reservation) -> None:
        if reservation.backend != "redis":
            await self._memory.release(reservation)
        elif await self._redis_usable("release", reservation):
            try:
                await self._redis.release(reservation)
            except self._outages as exc:
                self._dropped("release", reservation, exc)

    async def usage(self, key: str) -> dict[str, int]:
        return await self._serve(
            lambda: self._redis.usage(key), lambda: self._memory.usage(key), probe=False
        )

    async def close(self) -> None:
        await super().close()
        await self._memory.close()

    # --- transitions (the rules are FailoverStore's) ---------------------------------------
    async def _redis_usable(self, what: str, reservation: Reservation) -> bool:
        if self.backend == "memory":
            await self._maybe_restore()
        if self.backend == "redis":
            return True
        log.info(
            "quota %s of %s dropped: redis is down (%s)",
            what,
            reservation.key,
            self.degraded_reason,
        )
        return False

    def _dropped(self, what: str, reservation: Reservation, exc: BaseException) -> None:
        self.last_error = describe(exc)
        log.warning("quota %s of %s dropped: %s", what, reservation.key, self.last_error)

    async def _write_back(self) -> str:
        await self._redis.raise_counts(*self._memory.current())
        return ""

    async def _degraded(self, reason: str) -> None:
        await emit(self._sinks, QuotaBackendEvent("memory", "degraded", reason, self._now()))

    async def _restored(self, was: str | None) -> None:
        reason = f"redis answered PING (was: {was})"
        await emit(self._sinks, QuotaBackendEvent("redis", "restored", reason, self._now()))


def __getattr__(name: str) -> Any:
    if name == "RedisQuota":  # lazy: `redis` is an optional dependency
        from workbench.routing.quota_redis import RedisQuota

        return RedisQuota
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
