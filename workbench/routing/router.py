"""`Router`: walk the caller's chain of models until one answers.

The walk, top to bottom (`route`): build the chain (`candidates`), then for each model — stop
if the caller cancelled; skip it if its provider is out for this request, if it is cooling,
if its breaker is open, if its quota is spent; otherwise call it, and read the outcome with
the rules of SPEC 3 (`_after_failure`). Every attempt, skipped or not, is an `AttemptEvent`;
every route a `RouteEvent`. State lives in small parts, each its own module: quotas
(`quota`), cooldowns and degradation (`cooldown`), breakers (`breaker`), admission.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.errors import (
    ConfigError,
    NoVisionLinkError,
    ProviderError,
    RoutingError,
    StreamInterrupted,
)
from workbench.events import AttemptEvent, RouteEvent, Sink, emit
from workbench.routing import candidates as chains
from workbench.routing.admission import Admission
from workbench.routing.breaker import BreakerPool, CircuitBreaker, is_provider_outage
from workbench.routing.budget_class import estimate_tokens
from workbench.routing.candidates import Candidate
from workbench.routing.cooldown import Cooldowns, cooldown_decision
from workbench.routing.health import HealthTracker
from workbench.routing.limits import classify_rate_limit
from workbench.routing.quota import (
    FailoverQuota,
    Limits,
    MemoryQuota,
    QuotaStore,
    Refusal,
    Reservation,
)
from workbench.types import CallContext, ChatRequest, Reply, messages_carry_images

log = logging.getLogger("workbench.routing")

Outcome = Literal[
    "ok", "rejected", "partial", "error", "skipped_cooling", "skipped_quota", "skipped_breaker",
    "skipped_provider",
]  # fmt: skip
WhenAllCooling = Literal["fail", "try", "wait"]


@dataclass(slots=True)
class Attempt:
    """What happened at one candidate of one route."""

    key: str
    lane: str | None
    outcome: Outcome
    position: int
    status: int | None = None
    error: BaseException | None = None
    latency_ms: float = 0.0
    tokens: int | None = None
    reason: str = ""


@dataclass(slots=True)
class RouteResult:
    value: Reply
    key: str
    partial: bool = False
    attempts: list[Attempt] = field(default_factory=list)


def _now_ms() -> int:
    return int(time.time() * 1000)


class Router:
    """Routes requests across providers in the caller's fallback order.

    `clock` returns epoch milliseconds (the unit of every ported pure function); durations
    given to the router are seconds."""

    def __init__(
        self,
        providers: Sequence[Any],
        *,
        redis_url: str | None = None,
        intent_routing: dict[str, Any] | None = None,
        cooldown_s: float = 60.0,
        cooldown_jitter_s: float = 2.0,
        cooldown_on: Callable[[ProviderError], float | None] | None = None,
        degrade_after: int = 3,
        breakers: Callable[[str], CircuitBreaker] | None = None,
        when_all_cooling: WhenAllCooling = "fail",
        clock: Callable[[], int] | None = None,
        sinks: Iterable[Sink] = (),
        attempt_timeout_s: float | None = 30.0,
        first_token_timeout_s: float | None = None,
        admission: Admission | None = None,
        quota: QuotaStore | None = None,
    ) -> None:
        chains.validate_providers(providers)
        if when_all_cooling not in ("fail", "try", "wait"):
            raise ConfigError(f"when_all_cooling must be fail, try or wait, not {when_all_cooling!r}",
                              code="ROUTER_INVALID")  # fmt: skip
        if degrade_after < 1 or cooldown_s < 0 or cooldown_jitter_s < 0:
            raise ConfigError(
                "degrade_after ≥ 1 and non-negative cooldowns, please", code="ROUTER_INVALID"
            )
        self.providers = list(providers)
        self.intent_routing = intent_routing
        self.cooldown_s = cooldown_s
        self.cooldown_on = cooldown_on
        self.when_all_cooling = when_all_cooling
        self.clock = clock or _now_ms
        self.sinks = tuple(sinks)
        self.attempt_timeout_s = attempt_timeout_s
        self.first_token_timeout_s = first_token_timeout_s
        self.admission = admission
        self.cooldowns = Cooldowns(jitter_s=cooldown_jitter_s, degrade_after=degrade_after,
                                   clock_ms=self.clock)  # fmt: skip
        self.breakers = BreakerPool(breakers or (lambda key: CircuitBreaker()))
        self.health = HealthTracker(now_ms=self.clock)
        if quota is not None:
            self.quota: QuotaStore = quota
        elif redis_url:
            self.quota = FailoverQuota(redis_url, sinks=self.sinks, clock_ms=self.clock)
        else:
            self.quota = MemoryQuota(clock_ms=self.clock)
        self.flagged: dict[str, str] = {}  # provider key → why its credential was refused
        self.readings: dict[str, list[Any]] = {}  # key → latest quota readings from headers
        self._lanes_seen: dict[str, Candidate] = {}

    # -- the public verbs ----------------------------------------------------------------
    async def ask(
        self,
        prompt_or_request: str | ChatRequest,
        ctx: CallContext | dict[str, Any] | None = None,
        masker: Any = None,
        *,
        stream: bool = False,
    ) -> str | AsyncIterator[str]:
        """The short way: text in, text out (or an async iterator of text with stream=True)."""
        request = (
            ChatRequest.of(prompt_or_request)
            if isinstance(prompt_or_request, str)
            else prompt_or_request
        )
        if stream:
            return self._text_stream(request, ctx)
        result = await self.route(request, ctx=ctx)
        return result.value.text

    async def _text_stream(
        self, request: ChatRequest, ctx: CallContext | dict[str, Any] | None
    ) -> AsyncIterator[str]:
        async for item in self.stream(request, ctx=ctx):
            if isinstance(item, str):
                yield item

    async def route(
        self,
        request: ChatRequest,
        candidates: Iterable[dict[str, Any]] | None = None,
        select: Callable[[Any, Any], bool] | None = None,
        accepts: Callable[[Reply], bool] | None = None,
        partial: Callable[[Reply], bool] | None = None,
        ctx: CallContext | dict[str, Any] | None = None,
    ) -> RouteResult:
        """Walk the chain until a model answers; see the module docstring for the order."""
        ctx = CallContext.of(ctx)
        walk = _Walk(self, request, ctx, accepts=accepts, partial=partial)
        order = self._order(request, ctx, candidates, select)
        await self._admit(ctx, walk.tokens)
        deadline = None if ctx.deadline_s is None else time.monotonic() + ctx.deadline_s
        ignore_cooling = False
        while True:
            result = await walk.run(order, ignore_cooling=ignore_cooling, deadline=deadline)
            if result is not None:
                await self._route_event(order, result.key, walk, partial=result.partial)
                self.health.record_success()
                return result
            if walk.stopped or not walk.all_cooling(order):
                break
            if self.when_all_cooling == "try" and not ignore_cooling:
                ignore_cooling = True  # a cooldown is a guess: try them anyway, once
                continue
            if self.when_all_cooling == "wait" and await self._wait_for_free(order, deadline):
                continue
            break
        await self._route_event(order, None, walk)
        error = walk.unavailable(order)
        self.health.record_failure(error)
        raise error

    async def stream(
        self,
        request: ChatRequest,
        candidates: Iterable[dict[str, Any]] | None = None,
        select: Callable[[Any, Any], bool] | None = None,
        ctx: CallContext | dict[str, Any] | None = None,
    ) -> AsyncIterator[str | RouteResult]:
        """Text deltas from the first model that starts answering, then the RouteResult.

        Before its first token a model may fail (or miss `first_token_timeout_s`, never applied
        to the last model) and the walk moves on; after it, `StreamInterrupted` is raised with
        the partial text: the reader has seen it, so nobody else may rewrite it."""
        ctx = CallContext.of(ctx)
        walk = _Walk(self, request, ctx)
        order = self._order(request, ctx, candidates, select)
        await self._admit(ctx, walk.tokens)
        async for item in walk.run_stream(order):
            yield item
            if isinstance(item, RouteResult):
                await self._route_event(order, item.key, walk)
                self.health.record_success()
                return
        await self._route_event(order, None, walk)
        error = walk.unavailable(order)
        self.health.record_failure(error)
        raise error

    # -- state -----------------------------------------------------------------------------
    async def stats(self) -> dict[str, Any]:
        """Per key: quota used and limits, cooling, degradation, circuit, lane, backend.

        Async because the quota may live in Redis: `used` is the shared count, not ours."""
        cooling = self.cooldowns.snapshot()
        breakers = self.breakers.snapshot()
        backend = getattr(self.quota, "backend", "memory")
        keys: dict[str, Any] = {}
        for c in self._known_candidates():
            state = cooling.get(c.key, {})
            keys[c.key] = {
                "provider": c.provider.id,
                "model": c.model.id,
                "lane": c.lane,
                "used": await self.quota.usage(c.key),
                "limits": {"rpm": c.model.rpm, "rpd": c.model.rpd, "tpd": c.model.tpd},
                "cooling_until_ms": state.get("until_ms"),
                "cooling_reason": state.get("reason"),
                "provider_cooling_until_ms": cooling.get(c.provider_key, {}).get("until_ms"),
                "degraded": state.get("degraded", False),
                "consecutive_failures": state.get("consecutive_failures", 0),
                "circuit": breakers.get(c.provider_key, {}).get("state", "closed"),
                "key_flagged": self.flagged.get(c.provider_key),
                "backend": backend,
                "quota_readings": [dataclasses.asdict(r) for r in self.readings.get(c.key, [])],
            }
        quota = self.quota.stats() if hasattr(self.quota, "stats") else {"backend": backend}
        return {
            "backend": backend,
            "quota": quota,
            "health": self.health.get_health(),
            "keys": keys,
        }

    def _known_candidates(self) -> list[Candidate]:
        """Every configured model on its default lane, plus every lane a route has used."""
        out = {c.key: c for c in chains.chain(self.providers, CallContext())}
        out.update(self._lanes_seen)
        return list(out.values())

    async def usage(self, key: str) -> dict[str, int]:
        return await self.quota.usage(key)

    def reset(self) -> None:
        """Forget cooldowns, degradation and flagged keys (quotas are real and stay)."""
        self.cooldowns.reset()
        self.flagged.clear()

    async def close(self) -> None:
        await self.quota.close()
        for provider in self.providers:
            closer = getattr(provider, "aclose", None)
            if closer is not None:
                await closer()

    async def __aenter__(self) -> Router:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- internals -------------------------------------------------------------------------
    def _order(
        self,
        request: ChatRequest,
        ctx: CallContext,
        candidates: Iterable[dict[str, Any]] | None,
        select: Callable[[Any, Any], bool] | None,
    ) -> list[Candidate]:
        order = chains.chain(
            self.providers, ctx, candidates=candidates, intent_routing=self.intent_routing
        )
        if not order:
            raise RoutingError("no provider is available for this request", code="AI_NO_PROVIDER")
        order = chains.selected(order, select)
        if not order:
            raise RoutingError("no candidate model matches the selection", code="AI_NO_MATCH")
        if messages_carry_images(request.messages):
            order, blind = chains.sighted(order)
            if not order:
                raise NoVisionLinkError(blind)  # before any request: nobody could read it
        return chains.healthy_first(order, self.cooldowns.degraded)

    async def _admit(self, ctx: CallContext, tokens: int) -> None:
        if self.admission is not None:
            await self.admission.check(ctx, tokens)

    async def _wait_for_free(self, order: list[Candidate], deadline: float | None) -> bool:
        keys = [c.key for c in order] + [c.provider_key for c in order]
        until = self.cooldowns.earliest_free(keys)
        if until is None:
            return True
        wait_s = max(0.0, (until - self.clock()) / 1000)
        if deadline is not None and time.monotonic() + wait_s > deadline:
            return False  # the caller's deadline comes first: fail now rather than late
        await asyncio.sleep(wait_s)
        return True

    async def _route_event(
        self, order: list[Candidate], chosen: str | None, walk: _Walk, partial: bool = False
    ) -> None:
        skipped = {a.key: a.reason or a.outcome for a in walk.attempts if a.outcome != "ok"}
        await emit(
            self.sinks,
            RouteEvent(tuple(c.key for c in order), chosen, skipped, partial),
        )


class _Walk:
    """One route's walk: the attempts so far, and the rules applied after each failure."""

    def __init__(
        self,
        router: Router,
        request: ChatRequest,
        ctx: CallContext,
        *,
        accepts: Callable[[Reply], bool] | None = None,
        partial: Callable[[Reply], bool] | None = None,
    ) -> None:
        self.r = router
        self.request = request
        self.ctx = ctx
        self.accepts = accepts
        self.partial = partial
        self.attempts: list[Attempt] = []
        self.dead: set[str] = set()  # provider keys out for the rest of this request
        self.stopped = False  # a size refusal or a cancellation: no further model
        self.stop_reason = ""
        self.partial_result: RouteResult | None = None
        self.tokens = (
            ctx.estimated_tokens if ctx.estimated_tokens is not None else _estimate(request)
        )

    # -- the walk ----------------------------------------------------------------------------
    async def run(
        self, order: list[Candidate], *, ignore_cooling: bool = False, deadline: float | None = None
    ) -> RouteResult | None:
        for position, cand in enumerate(order):
            self._check_cancelled()
            if self.stopped:
                break
            if deadline is not None and time.monotonic() >= deadline:
                self.stopped, self.stop_reason = True, "the caller's deadline passed"
                break
            permit, reservation = await self._clear(cand, position, ignore_cooling)
            if permit is None:
                continue
            ctx = self.ctx.replace(lane=cand.lane, timeout_s=self.r.attempt_timeout_s)
            request = self._request_for(cand)
            start_ms, t0 = self.r.clock(), time.perf_counter()
            try:
                reply = await self._call(cand, request, ctx)
            except asyncio.CancelledError:
                permit.cancel()
                await self.r.quota.release(reservation)
                raise
            except _Cancelled:
                permit.cancel()
                await self.r.quota.release(reservation)
                self._cancelled()
            except Exception as exc:  # a provider's bug is an attempt error, not a crash
                await self._after_failure(cand, position, permit, exc, start_ms, t0)
                continue
            done = await self._after_success(
                cand, position, permit, reservation, reply, start_ms, t0
            )
            if done is not None:
                return done
        return self.partial_result

    async def run_stream(self, order: list[Candidate]) -> AsyncIterator[str | RouteResult]:
        for position, cand in enumerate(order):
            self._check_cancelled()
            if self.stopped:
                return
            permit, reservation = await self._clear(cand, position, ignore_cooling=False)
            if permit is None:
                continue
            last = position == len(order) - 1
            ctx = self.ctx.replace(lane=cand.lane, timeout_s=self.r.attempt_timeout_s)
            start_ms, t0 = self.r.clock(), time.perf_counter()
            stream = cand.provider.stream(self._request_for(cand), ctx, cand.model.id)
            shown = False
            try:
                first_deadline = None if last else self.r.first_token_timeout_s
                async for item in _first_token_bounded(stream, first_deadline):
                    if isinstance(item, Reply):
                        result = await self._after_success(
                            cand, position, permit, reservation, item, start_ms, t0
                        )
                        if result is not None:
                            yield result
                            return
                        break
                    shown = True
                    yield item
            except StreamInterrupted as exc:
                await self._record(
                    cand, position, "error", start_ms, t0, error=exc, status=exc.status_code
                )
                permit.cancel()
                raise
            except asyncio.CancelledError:
                permit.cancel()
                await self.r.quota.release(reservation)
                raise
            except Exception as exc:
                if shown:  # a failure after text was shown is an interruption, never a retry
                    raise
                await self._after_failure(cand, position, permit, exc, start_ms, t0)
                continue
            finally:
                await stream.aclose()

    async def _clear(
        self, cand: Candidate, position: int, ignore_cooling: bool
    ) -> tuple[Any, Reservation | None]:
        """Everything that may skip a model before a request is sent, cheapest first."""
        if cand.lane is not None:
            self.r._lanes_seen.setdefault(cand.key, cand)
        if cand.provider_key in self.dead:
            await self._record(
                cand, position, "skipped_provider", reason="provider out for this request"
            )
            return None, None
        if not ignore_cooling:
            for key in (cand.provider_key, cand.key):
                if self.r.cooldowns.is_cooling(key):
                    await self._record(cand, position, "skipped_cooling",
                                       reason=self.r.cooldowns.reason(key) or "cooling")  # fmt: skip
                    return None, None
        permit = self.r.breakers.get(cand.provider_key).allow()
        if permit is None:  # an open breaker consumes no quota and is not a model failure
            await self._record(cand, position, "skipped_breaker", reason="circuit open")
            return None, None
        limits = Limits(rpm=cand.model.rpm, rpd=cand.model.rpd, tpd=cand.model.tpd)
        try:
            taken = await self.r.quota.reserve(cand.key, limits, self.tokens)
        except BaseException:
            permit.cancel()  # a half-open probe slot must never be lost to a cancellation
            raise
        if isinstance(taken, Refusal):
            permit.cancel()
            await self._record(cand, position, "skipped_quota",
                               reason=f"{taken.limit} {taken.used}/{taken.cap}")  # fmt: skip
            return None, None
        return permit, taken

    def _request_for(self, cand: Candidate) -> ChatRequest:
        if not cand.extra:
            return self.request
        return ChatRequest(
            messages=self.request.messages, system=self.request.system, tools=self.request.tools,
            max_tokens=self.request.max_tokens, temperature=self.request.temperature,
            extra={**self.request.extra, **cand.extra}, tool_protocol=self.request.tool_protocol,
        )  # fmt: skip

    async def _call(self, cand: Candidate, request: ChatRequest, ctx: CallContext) -> Reply:
        """The call, raced against the caller's signal and bounded by the attempt deadline."""
        call = cand.provider.call(request, ctx, cand.model.id)
        timeout = self.r.attempt_timeout_s
        if self.ctx.signal is None:
            try:
                async with asyncio.timeout(timeout):
                    return await call
            except TimeoutError:
                raise _timeout(cand, timeout) from None
        task = asyncio.ensure_future(call)
        signal = asyncio.ensure_future(self.ctx.signal.wait())
        try:
            done, _ = await asyncio.wait(
                {task, signal}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            signal.cancel()
        if task in done:
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        if signal in done:
            raise _Cancelled
        raise _timeout(cand, timeout)

    # -- reading outcomes ------------------------------------------------------------------------
    async def _after_success(
        self,
        cand: Candidate,
        position: int,
        permit: Any,
        reservation: Reservation | None,
        reply: Reply,
        start_ms: int,
        t0: float,
    ) -> RouteResult | None:
        permit.success()
        self.r.cooldowns.record_success(cand.key)
        self._heed(cand, reply.quota)
        used = reply.usage.total_tokens
        if reservation is not None and used is not None:
            await self.r.quota.reconcile(reservation, used)
        tokens = used if used is not None else self.tokens
        if self.accepts is not None and not self.accepts(reply):
            await self._record(cand, position, "rejected", start_ms, t0, status=reply.raw_status, tokens=tokens,
                               reason="refused by accepts")  # fmt: skip
            return None
        if self.partial is not None and self.partial(reply):
            await self._record(
                cand, position, "partial", start_ms, t0, status=reply.raw_status, tokens=tokens
            )
            if self.partial_result is None:  # returned only if nobody finishes
                self.partial_result = RouteResult(reply, cand.key, True, self.attempts)
            return None
        await self._record(
            cand, position, "ok", start_ms, t0, status=reply.raw_status, tokens=tokens
        )
        if self.r.admission is not None:
            await self.r.admission.spent(self.ctx, tokens)
        return RouteResult(reply, cand.key, False, self.attempts)

    async def _after_failure(
        self, cand: Candidate, position: int, permit: Any, exc: Exception, start_ms: int, t0: float
    ) -> None:
        """SPEC 3's chain-walk rules, read from one failed attempt."""
        if not isinstance(exc, ProviderError):
            # A custom provider raised something we do not know: record it, walk on.
            log.warning("provider %s raised %s", cand.key, type(exc).__name__)
            permit.cancel()
            await self._record(
                cand,
                position,
                "error",
                start_ms,
                t0,
                error=exc,
                reason=f"unexpected {type(exc).__name__}",
            )
            return
        if is_provider_outage(exc):
            permit.failure(exc)
        else:
            permit.cancel()  # neutral for the breaker: a 429 or a 400 says nothing of an outage
        self.r.cooldowns.record_failure(cand.key)
        self._heed(cand, exc.quota)
        await self._record(cand, position, "error", start_ms, t0, error=exc, status=exc.status_code)
        self._cool(cand, exc)
        if exc.status_code in (401, 403):
            # The same credential serves every model of the provider: out for this request.
            self.dead.add(cand.provider_key)
            self.r.flagged[cand.provider_key] = f"HTTP {exc.status_code}"
        elif exc.status_code == 429 and classify_rate_limit(exc.full_body) == "size":
            # Every model would refuse a request this large: stop instead of burning quota.
            self.stopped, self.stop_reason = True, "the request is too large for the models"

    def _heed(self, cand: Candidate, readings: list[Any]) -> None:
        """Vendors' quota headers update our state: a window the vendor says is spent rests
        until the vendor's reset, before we spend a request to hear a 429 (AI-KIT 1.6)."""
        if not readings:
            return
        self.r.readings[cand.key] = list(readings)
        now = self.r.clock()
        for r in readings:
            if r.remaining <= 0 and r.reset_at_ms and r.reset_at_ms > now:
                self.r.cooldowns.cool_until(
                    cand.key, r.reset_at_ms, reason=f"{r.source}: {r.scope} per {r.window} spent"
                )

    def _cool(self, cand: Candidate, exc: ProviderError) -> None:
        if self.r.cooldown_on is not None:
            seconds = self.r.cooldown_on(exc)
            if seconds:
                self.r.cooldowns.cool(cand.key, seconds, reason=f"cooldown_on: {exc.code}")
            return
        decision = cooldown_decision(
            exc, default_s=self.r.cooldown_s, now_ms=self.r.clock(), body=exc.full_body
        )
        if decision.seconds is None or decision.scope == "none":
            return
        # A daily refusal that does not name its own model exhausts the whole key.
        key = cand.provider_key if decision.scope == "provider" else cand.key
        if decision.scope == "provider":
            self.dead.add(cand.provider_key)
        self.r.cooldowns.cool(key, decision.seconds, reason=decision.reason)

    async def _record(
        self,
        cand: Candidate,
        position: int,
        outcome: Outcome,
        start_ms: int | None = None,
        t0: float | None = None,
        *,
        error: BaseException | None = None,
        status: int | None = None,
        tokens: int | None = None,
        reason: str = "",
    ) -> None:
        latency = 0.0 if t0 is None else (time.perf_counter() - t0) * 1000
        attempt = Attempt(
            cand.key, cand.lane, outcome, position, status, error, latency, tokens, reason
        )
        self.attempts.append(attempt)
        kind = (
            error.kind
            if isinstance(error, ProviderError)
            else (type(error).__name__ if error else None)
        )
        await emit(
            self.r.sinks,
            AttemptEvent(
                key=cand.key, lane=cand.lane, outcome=outcome,
                start_ms=start_ms if start_ms is not None else self.r.clock(), latency_ms=latency,
                status=status, error_kind=kind, tokens=tokens, position=position,
            ),
        )  # fmt: skip

    # -- endings -------------------------------------------------------------------------------------
    def _check_cancelled(self) -> None:
        if self.ctx.signal is not None and self.ctx.signal.is_set():
            self._cancelled()

    def _cancelled(self) -> None:
        reason = self.ctx.get("cancel_reason") or "the caller cancelled the request"
        raise RoutingError(str(reason), code="AI_CANCELLED", status=499, attempts=self.attempts)

    def all_cooling(self, order: list[Candidate]) -> bool:
        tried = [a for a in self.attempts if a.outcome not in ("skipped_cooling",)]
        return bool(order) and not tried

    def unavailable(self, order: list[Candidate]) -> RoutingError:
        counts: dict[str, int] = {}
        for a in self.attempts:
            counts[a.outcome] = counts.get(a.outcome, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing tried"
        why = f" ({self.stop_reason})" if self.stop_reason else ""
        return RoutingError(
            f"no model could answer: {len(order)} candidate(s), {summary}{why}",
            code="AI_UNAVAILABLE", attempts=self.attempts,
        )  # fmt: skip


class _Cancelled(Exception):
    """The caller's signal fired mid-call."""


def _timeout(cand: Candidate, timeout: float | None) -> ProviderError:
    return ProviderError(
        f"no response within {timeout} s — abandoned, trying the next model",
        kind="timeout", provider=cand.provider.id, model=cand.model.id,
    )  # fmt: skip


def _estimate(request: ChatRequest) -> int:
    texts: list[str] = [request.system or ""]
    for m in request.messages:
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return estimate_tokens(*texts) + (request.max_tokens or 256)


async def _first_token_bounded(
    stream: AsyncIterator[Any], first_token_s: float | None
) -> AsyncIterator[Any]:
    """Pass a stream through, failing it if its first item takes longer than `first_token_s`."""
    iterator = aiter(stream)
    try:
        if first_token_s is None:
            first = await anext(iterator)
        else:
            async with asyncio.timeout(first_token_s):
                first = await anext(iterator)
    except StopAsyncIteration:
        return
    except TimeoutError:
        raise ProviderError(f"no first token within {first_token_s} s", kind="timeout") from None
    yield first
    async for item in iterator:
        yield item
