"""One route's walk down the chain, and SPEC 3's rules for what each outcome means.

Per candidate, cheapest check first: the caller cancelled → stop; its provider is out for
this request (401/403, a provider-wide daily refusal) → skip; cooling → skip; breaker open →
skip (no quota spent); quota spent → skip; else call it, bounded by the attempt deadline and
raced against the caller's signal. After a failure (`_after_failure`): outages feed the
breaker, 429s and 404s cool, a size refusal stops the walk, a bad credential takes the
provider out. Each step is an `Attempt` and an `AttemptEvent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from workbench.errors import ProviderError, RoutingError, StreamInterrupted
from workbench.events import AttemptEvent, QuotaEvent, emit
from workbench.routing.breaker import is_provider_outage
from workbench.routing.budget_class import estimate_tokens
from workbench.routing.candidates import Candidate
from workbench.routing.cooldown import cooldown_decision
from workbench.routing.limits import classify_rate_limit
from workbench.routing.privacy import (
    Masker,
    leaves_the_machine,
    mask_request,
    unmask_reply,
    unmask_stream,
)
from workbench.routing.quota import Limits, Refusal, Reservation
from workbench.types import CallContext, ChatRequest, Reply

if TYPE_CHECKING:
    from workbench.routing.router import Router

log = logging.getLogger("workbench.routing")

Outcome = Literal[
    "ok", "rejected", "partial", "error", "skipped_cooling", "skipped_quota", "skipped_breaker",
    "skipped_provider",
]  # fmt: skip


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


class Walk:
    """One route's walk: the attempts so far, and the rules applied after each failure."""

    def __init__(
        self,
        router: Router,
        request: ChatRequest,
        ctx: CallContext,
        *,
        accepts: Callable[[Reply], bool] | None = None,
        partial: Callable[[Reply], bool] | None = None,
        masker: Masker | None = None,
    ) -> None:
        self.r = router
        self.request = request
        self.ctx = ctx
        self.accepts = accepts
        self.partial = partial
        self.masker = masker
        self.attempts: list[Attempt] = []
        self.dead: set[str] = set()  # provider keys out for the rest of this request
        self.stopped = False  # a size refusal or a cancellation: no further model
        self.stop_reason = ""
        self.partial_result: RouteResult | None = None
        self.route_id = uuid.uuid4().hex[:16]
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
                await self._after_failure(cand, position, permit, reservation, exc, start_ms, t0)
                continue
            if self._masks(cand):
                reply = unmask_reply(self.masker, reply)  # (streams unmask as they go)
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
            source = cand.provider.stream(self._request_for(cand), ctx, cand.model.id)
            stream = unmask_stream(self.masker, source) if self._masks(cand) else source
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
                await self._after_failure(cand, position, permit, reservation, exc, start_ms, t0)
                continue
            finally:
                await stream.aclose()
                if stream is not source:
                    await source.aclose()

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
        request = self.request
        if cand.extra:
            request = dataclasses.replace(request, extra={**request.extra, **cand.extra})
        if self._masks(cand):
            request = mask_request(self.masker, request)  # masked as it leaves, not before
        return request

    def _masks(self, cand: Candidate) -> bool:
        return self.masker is not None and leaves_the_machine(cand.provider)

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
        await self._heed(cand, reply.quota)
        used = reply.usage.total_tokens
        if reservation is not None and reply.cached:
            await self.r.quota.release(reservation)  # a cache hit asked no provider
        elif reservation is not None and used is not None:
            await self.r.quota.reconcile(reservation, used)
        tokens = used if used is not None else self.tokens
        if self.accepts is not None and not self.accepts(reply):
            await self._record(cand, position, "rejected", start_ms, t0, status=reply.raw_status, tokens=tokens, cached=reply.cached,
                               reason="refused by accepts")  # fmt: skip
            return None
        if self.partial is not None and self.partial(reply):
            await self._record(
                cand,
                position,
                "partial",
                start_ms,
                t0,
                status=reply.raw_status,
                tokens=tokens,
                cached=reply.cached,
            )
            if self.partial_result is None:  # returned only if nobody finishes
                self.partial_result = RouteResult(reply, cand.key, True, self.attempts)
            return None
        await self._record(
            cand,
            position,
            "ok",
            start_ms,
            t0,
            status=reply.raw_status,
            tokens=tokens,
            cached=reply.cached,
        )
        if self.r.admission is not None:
            await self.r.admission.spent(self.ctx, tokens)
        return RouteResult(reply, cand.key, False, self.attempts)

    async def _after_failure(
        self,
        cand: Candidate,
        position: int,
        permit: Any,
        reservation: Reservation | None,
        exc: Exception,
        start_ms: int,
        t0: float,
    ) -> None:
        """SPEC 3's chain-walk rules, read from one failed attempt."""
        if (
            reservation is not None
            and isinstance(exc, ProviderError)
            and 400 <= exc.status_code < 500
        ):
            # A refused request generated nothing: its tokens go back (the request still counts).
            await self.r.quota.reconcile(reservation, 0)
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
        await self._heed(cand, exc.quota)
        await self._record(cand, position, "error", start_ms, t0, error=exc, status=exc.status_code)
        self._cool(cand, exc)
        if exc.status_code in (401, 403):
            # The same credential serves every model of the provider: out for this request.
            self.dead.add(cand.provider_key)
            self.r.flagged[cand.provider_key] = f"HTTP {exc.status_code}"
        elif exc.status_code == 429 and classify_rate_limit(exc.full_body) == "size":
            # Every model would refuse a request this large: stop instead of burning quota.
            self.stopped, self.stop_reason = True, "the request is too large for the models"

    async def _heed(self, cand: Candidate, readings: list[Any]) -> None:
        """Vendors' quota headers update our state: a window the vendor says is spent rests
        until the vendor's reset, before we spend a request to hear a 429 (AI-KIT 1.6)."""
        if not readings:
            return
        self.r.readings[cand.key] = list(readings)
        now = self.r.clock()
        for r in readings:
            await emit(
                (*self.r.sinks, *self.ctx.sinks),
                QuotaEvent(cand.key, r.provider, r.model, r.scope, r.window, r.limit, r.remaining,
                           r.reset_at_ms, r.source, r.observed_at_ms),
            )  # fmt: skip
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
        cached: bool = False,
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
            (*self.r.sinks, *self.ctx.sinks),
            AttemptEvent(
                key=cand.key, lane=cand.lane, outcome=outcome,
                start_ms=start_ms if start_ms is not None else self.r.clock(), latency_ms=latency,
                status=status, error_kind=kind, tokens=tokens, position=position,
                provider=cand.provider.id, model=cand.model.id, route_id=self.route_id,
                error_code=getattr(error, "code", None) if error else None,
                error_message=_one_line(error) if error else None,
                cached=cached, reason=reason,
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


def _one_line(error: BaseException) -> str:
    """A WorkbenchError is already one scrubbed line; anything else is named, never dumped."""
    from workbench.errors import WorkbenchError, scrub

    if isinstance(error, WorkbenchError):
        return str(error)
    return scrub(f"{type(error).__name__}: {' '.join(str(error).split())}")[:300]


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
