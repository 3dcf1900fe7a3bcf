"""The optional admission step the router runs before it sends a request.

An `Admission` answers "may this request go out?" before any quota is reserved or any provider
is asked: `check(ctx, estimated_tokens)` raises `AdmissionDenied` to refuse and returns None to
admit; `spent(ctx, tokens)` records what an answered request really cost.

Three ready-made admissions wrap the pure functions of policy, fair_share and budget_class. Each keeps its own
in-memory day counters, keyed by what it reads from the ctx (a mapping, or an object with
attributes): "user" (and "tier") for turns and fair shares, "class" for budget classes. The
counters belong to one UTC day, recognised by its `YYYY-MM-DD` key: the first call of a new
day finds a new key and starts from zero, so no timer keeps the process alive.

Counters move in `spent()`, not in `check()`: two requests by the same person checked at the
same moment may both pass and overshoot by what is in flight. These are fairness rules; the
provider quotas (reserved atomically by the router) are the hard limits.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict
from typing import Any, Protocol, runtime_checkable

from workbench.errors import ConfigError, WorkbenchError
from workbench.routing.budget_class import ClassPolicy, class_budget
from workbench.routing.fair_share import DEFAULT_BURST, fair_share, utc_day_elapsed, utc_day_key
from workbench.routing.policy import AiPolicy, UserState, Wall, decide, next_utc_reset

Clock = Callable[[], float]  # epoch milliseconds


def _epoch_ms() -> int:
    return int(time.time() * 1000)


class AdmissionDenied(WorkbenchError):
    """A request refused before it was sent. `reason` is the pure function's reason
    (day-spent, no-credits, unknown-tier, share-spent, paced, no-capacity, class-cap,
    reserved); `wall` (a policy Wall) says which ways out exist; `retry_after_s` is set only
    when waiting that long is known to help; `reset_at` (epoch ms) is the next UTC midnight
    when the refusal is about today's budget."""

    code = "AI_ADMISSION_DENIED"
    status = 429

    def __init__(
        self,
        reason: str,
        message: str | None = None,
        *,
        wall: Wall | None = None,
        retry_after_s: float | None = None,
        reset_at: int | None = None,
    ) -> None:
        self.reason = reason
        self.wall = wall
        self.retry_after_s = retry_after_s
        self.reset_at = reset_at if reset_at is not None or wall is None else wall.reset_at
        if message is None:
            message = f"request not admitted ({reason})"
            if retry_after_s is not None:
                message += f"; retry in {retry_after_s:g} s"
        super().__init__(
            message,
            details={
                "reason": reason,
                "retry_after_s": retry_after_s,
                "reset_at": self.reset_at,
                "wall": asdict(wall) if wall is not None else None,
            },
        )


@runtime_checkable
class Admission(Protocol):
    async def check(self, ctx: Mapping[str, Any] | Any, estimated_tokens: int) -> None:
        """Raise AdmissionDenied to refuse; return None to admit."""
        ...

    async def spent(self, ctx: Mapping[str, Any] | Any, tokens: int) -> None:
        """Record what an answered request really cost."""
        ...


def _read(ctx: Mapping[str, Any] | Any, key: str, default: Any = None) -> Any:
    if ctx is None:
        return default
    if isinstance(ctx, Mapping):
        value = ctx.get(key, default)
    elif isinstance(getattr(ctx, "values", None), Mapping) and key in ctx.values:
        value = ctx.values[key]  # a CallContext: who is asking lives in its values
    else:
        # `class` is a keyword: objects spell it `cls` or `class_`.
        names = (key, "cls", "class_") if key == "class" else (key,)
        value = next((getattr(ctx, n) for n in names if hasattr(ctx, n)), default)
    return default if value is None else value


def _tokens(x: Any) -> float:
    if not isinstance(x, int | float) or not math.isfinite(x):
        return 0.0
    return max(0.0, float(x))


class _DayCounters:
    """Amounts per key for one UTC day. A new day key empties them: no timer needed."""

    def __init__(self) -> None:
        self._day = ""
        self._counts: dict[str, float] = {}

    def _roll(self, now_ms: float) -> None:
        day = utc_day_key(now_ms)
        if day != self._day:
            self._day, self._counts = day, {}

    def get(self, key: str, now_ms: float) -> float:
        self._roll(now_ms)
        return self._counts.get(key, 0)

    def all(self, now_ms: float) -> dict[str, float]:
        self._roll(now_ms)
        return dict(self._counts)

    def add(self, key: str, amount: float, now_ms: float) -> None:
        self._roll(now_ms)
        self._counts[key] = self._counts.get(key, 0) + amount


class PolicyAdmission:
    """Turns per UTC day per user, by tier (`decide`). Reads ctx "user", "tier", and
    optionally "credits" and "available" (rung -> bool) for the wall. Every `spent()` call is
    one turn, whatever it cost."""

    def __init__(self, policy: AiPolicy, *, clock: Clock | None = None) -> None:
        self.policy = policy
        self._clock = clock or _epoch_ms
        self._turns = _DayCounters()

    def turns_today(self, user: str) -> int:
        return int(self._turns.get(user, self._clock()))

    async def check(self, ctx: Mapping[str, Any] | Any, estimated_tokens: int) -> None:
        now = self._clock()
        user = str(_read(ctx, "user", ""))
        state = UserState(
            tier=str(_read(ctx, "tier", "")),
            spent_today=self._turns.get(user, now),
            credits=_read(ctx, "credits"),
            available=_read(ctx, "available", {}),
        )
        decision = decide(self.policy, state, now)
        if decision.allowed:
            return
        wall = decision.wall
        assert wall is not None
        # Only a spent day is cured by waiting; credits or a tier are not.
        retry = (wall.reset_at - now) / 1000 if wall.reason == "day-spent" else None
        raise AdmissionDenied(wall.reason, wall=wall, retry_after_s=retry)

    async def spent(self, ctx: Mapping[str, Any] | Any, tokens: int) -> None:
        self._turns.add(str(_read(ctx, "user", "")), 1, self._clock())


class FairShareAdmission:
    """Tokens per user per UTC day, rationed by `fair_share`. `active_users` is a number or a
    callable (sync or async) read at every check. A "paced" refusal carries retry_after_s;
    "share-spent" and "no-capacity" carry only reset_at (the next UTC midnight)."""

    def __init__(
        self,
        day_capacity_tokens: float,
        active_users: Callable[[], int | Awaitable[int]] | int,
        burst: float = DEFAULT_BURST,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.day_capacity_tokens = day_capacity_tokens
        self.active_users = active_users
        self.burst = burst
        self._clock = clock or _epoch_ms
        self._spent = _DayCounters()

    def spent_today(self, user: str) -> float:
        return self._spent.get(user, self._clock())

    async def _users(self) -> float:
        users: Any = self.active_users
        if callable(users):
            users = users()
            if inspect.isawaitable(users):
                users = await users
        return users

    async def check(self, ctx: Mapping[str, Any] | Any, estimated_tokens: int) -> None:
        users = await self._users()
        now = self._clock()
        user = str(_read(ctx, "user", ""))
        verdict = fair_share(
            day_capacity_tokens=self.day_capacity_tokens,
            active_users=users,
            user_spent_tokens=self._spent.get(user, now),
            cost_tokens=estimated_tokens,
            day_elapsed=utc_day_elapsed(now),
            burst=self.burst,
        )
        if verdict.allowed:
            return
        raise AdmissionDenied(
            verdict.reason,
            retry_after_s=verdict.retry_after_seconds,
            reset_at=next_utc_reset(now),
        )

    async def spent(self, ctx: Mapping[str, Any] | Any, tokens: int) -> None:
        self._spent.add(str(_read(ctx, "user", "")), _tokens(tokens), self._clock())


class BudgetClassAdmission:
    """Tokens per class per UTC day over one pool (`class_budget`). Reads ctx "class"
    (default `default_class`). Refusals carry reset_at (the next UTC midnight), no retry."""

    def __init__(
        self,
        day_capacity_tokens: float,
        policy: Mapping[str, ClassPolicy],
        *,
        default_class: str = "default",
        clock: Clock | None = None,
    ) -> None:
        self.day_capacity_tokens = day_capacity_tokens
        self.policy = dict(policy)
        self.default_class = default_class
        self._clock = clock or _epoch_ms
        self._spent = _DayCounters()

    def spent_today(self) -> dict[str, float]:
        return self._spent.all(self._clock())

    def _cls(self, ctx: Mapping[str, Any] | Any) -> str:
        return str(_read(ctx, "class", self.default_class))

    async def check(self, ctx: Mapping[str, Any] | Any, estimated_tokens: int) -> None:
        now = self._clock()
        verdict = class_budget(
            day_capacity_tokens=self.day_capacity_tokens,
            spent=self._spent.all(now),
            cls=self._cls(ctx),
            cost_tokens=estimated_tokens,
            policy=self.policy,
        )
        if verdict.allowed:
            return
        raise AdmissionDenied(verdict.reason, reset_at=next_utc_reset(now))

    async def spent(self, ctx: Mapping[str, Any] | Any, tokens: int) -> None:
        self._spent.add(self._cls(ctx), _tokens(tokens), self._clock())


class AllOf:
    """Admits only when every admission admits (checked in order, the first refusal wins);
    `spent()` is recorded by all of them."""

    def __init__(self, *admissions: Admission) -> None:
        for a in admissions:
            if not isinstance(a, Admission):
                raise ConfigError(
                    f"{a!r} is not an admission (it needs async check() and spent())",
                    code="ADMISSION_INVALID",
                )
        self.admissions = tuple(admissions)

    async def check(self, ctx: Mapping[str, Any] | Any, estimated_tokens: int) -> None:
        for admission in self.admissions:
            await admission.check(ctx, estimated_tokens)

    async def spent(self, ctx: Mapping[str, Any] | Any, tokens: int) -> None:
        for admission in self.admissions:
            await admission.spent(ctx, tokens)


def all_of(*admissions: Admission) -> AllOf:
    return AllOf(*admissions)
