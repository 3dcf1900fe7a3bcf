"""One route's walk down the chain, and the rules for what each outcome means.

Per candidate, cheapest check first: the caller cancelled → stop; the caller's deadline
passed → stop; its provider is out for this request (401/403, a provider-wide daily refusal)
→ skip; the cache has its answer → answered, nothing held or sent; cooling → skip; (with
adaptive concurrency, wait for one of its slots: the deadline passing meanwhile is a paced
skip that stops the walk, with a hint); breaker open → skip (no quota spent); quota spent →
skip; the provider said it would refuse (`pacing.py`) → skip; else the attempt runs
(`attempt.py`: mask, call, unmask, observe), holding its breaker permit and quota reservation
in one `Hold` (and its pacing ticket and slot, given back in `_paced_done` on every path).
After a failure (`_after_failure`): outages feed the breaker, 429s and 404s cool, a size
refusal stops the walk, a bad credential takes the provider out. Each step is an `Attempt`
record and an `AttemptEvent`.

A walk reads and changes only the `RoutingState` it is given, under the `RouteSettings` the
user configured: never the Router itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.errors import (
    CassetteError,
    ProviderError,
    RoutingError,
    StreamInterrupted,
    WorkbenchError,
    scrub,
)
from workbench.events import AttemptEvent, QuotaEvent, Sink, emit
from workbench.providers.meter import QuotaReading, read_refusal
from workbench.providers.openai_compat import wire_messages
from workbench.routing import attempt as steps
from workbench.routing.budget_class import estimate_tokens
from workbench.routing.candidates import Candidate
from workbench.routing.cooldown import cooldown_decision
from workbench.routing.limits import classify_rate_limit, retry_after_seconds
from workbench.routing.pacing import Paced, Ticket
from workbench.routing.privacy import Masker
from workbench.routing.quota import Limits, Refusal
from workbench.routing.retry_hint import hint_for
from workbench.routing.settings import RouteSettings
from workbench.routing.state import RoutingState, TokenCost
from workbench.types import CallContext, ChatRequest, Reply

log = logging.getLogger("workbench.routing")

# How long a route refused by a half-open breaker (its probe in flight) expects to wait.
_PROBE_ANSWER_S = 1.0
# Why a walk stopped with nothing left to wait for: every model would refuse the request.
_TOO_LARGE = "the request is too large for the models"
# Why an attempt was cut short by its caller rather than by its model.
_GONE = "the caller stopped the route"
_NOT_RECORDED = "not in the cassette"

Outcome = Literal[
    "ok",
    "rejected",
    "partial",
    "error",
    "skipped_cooling",
    "skipped_quota",
    "skipped_paced",
    "skipped_breaker",
    "skipped_provider",
    # The caller stopped the route while this model was asked: a task cancelled, the caller's
    # signal, or a stream's reader that left (a gateway's client that hung up).
    "cancelled",
]


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
    free_at_ms: int | None = None  # when its candidate is expected free again (None: unknown)


@dataclass(slots=True)
class RouteResult:
    value: Reply
    key: str
    partial: bool = False
    attempts: list[Attempt] = field(default_factory=list)


class Walk:
    """One route's walk: the attempts so far, and the rules applied after each outcome."""

    def __init__(
        self,
        state: RoutingState,
        settings: RouteSettings,
        request: ChatRequest,
        ctx: CallContext,
        *,
        accepts: Callable[[Reply], bool] | None = None,
        partial: Callable[[Reply], bool] | None = None,
        masker: Masker | None = None,
    ) -> None:
        self.state = state
        self.settings = settings
        self.request = request
        self.ctx = ctx
        self.accepts = accepts
        self.partial = partial
        self.masker = masker
        self.attempts: list[Attempt] = []
        self.dead: set[str] = set()  # provider keys out for the rest of this request
        self.stopped = False  # a size refusal, the caller's deadline: no further model
        self.stop_reason = ""
        self.partial_result: RouteResult | None = None
        # The first request a replay's cassette did not hold (`_not_recorded`).
        self.replay_miss: CassetteError | None = None
        self.route_id = uuid.uuid4().hex[:16]
        self.prompt_tokens = _prompt_estimate(request)
        self.tokens = (
            ctx.estimated_tokens
            if ctx.estimated_tokens is not None
            else self.prompt_tokens + _answer_allowance(request)
        )
        self.deadline = None if ctx.deadline_s is None else time.monotonic() + ctx.deadline_s
        # What each tried candidate was sent (masked when it left the machine), by position:
        # its attempt event carries it, so a run's log shows the request, not a rebuild of it.
        self.sent: dict[int, tuple[ChatRequest, bool]] = {}
        self.candidates: dict[str, Candidate] = {}  # by key, as the attempts name them
        # The attempt under way (one at a time): its pacing ticket and its concurrency slot.
        self.ticket: Ticket | None = None
        self.slot_key: str | None = None

    @property
    def sinks(self) -> tuple[Sink, ...]:
        return (*self.settings.sinks, *self.ctx.sinks)

    # -- the walk ----------------------------------------------------------------------------
    async def run(
        self, order: list[Candidate], *, ignore_cooling: bool = False
    ) -> RouteResult | None:
        for position, cand in enumerate(order):
            if not self._may_go_on():
                break
            ready = await self._clear(cand, position, ignore_cooling)
            if ready is None:
                continue
            attempt, hold = ready
            if isinstance(hold, Reply):  # from the cache: nothing was held, nothing is sent
                done = await self._after_success(cand, position, None, hold)
                if done is not None:
                    return done
                continue
            try:
                try:
                    self._sending(position, attempt)
                    reply = await steps.run(
                        self.settings, attempt, self.ctx.signal, self._replanned(position)
                    )
                except asyncio.CancelledError:
                    await hold.abandoned()
                    await self._record(cand, position, "cancelled", hold, reason=_GONE)
                    raise
                except steps.Cancelled:
                    await hold.abandoned()
                    await self._record(cand, position, "cancelled", hold, reason=_GONE)
                    self._cancelled()
                except CassetteError as exc:
                    await hold.abandoned()
                    if not self._not_recorded(exc):
                        raise
                    await self._record(cand, position, "skipped_provider", reason=_NOT_RECORDED)
                    continue
                except Exception as exc:  # a provider's bug is an attempt error, not a crash
                    await self._after_failure(cand, position, hold, exc)
                    continue
                done = await self._after_success(cand, position, hold, reply)
            finally:
                await self._paced_done(hold)
            if done is not None:
                return done
        return self.partial_result

    async def run_stream(
        self, order: list[Candidate], *, ignore_cooling: bool = False
    ) -> AsyncGenerator[str | RouteResult]:
        for position, cand in enumerate(order):
            if not self._may_go_on():
                return
            ready = await self._clear(cand, position, ignore_cooling)
            if ready is None:
                continue
            attempt, hold = ready
            if isinstance(hold, Reply):  # from the cache: its whole text as one delta
                if hold.text:
                    yield hold.text
                result = await self._after_success(cand, position, None, hold)
                if result is not None:
                    yield result
                    return
                continue
            first_token_s = (
                None if position == len(order) - 1 else self.settings.first_token_timeout_s
            )
            shown: list[str] = []
            reply: Reply | None = None
            try:
                try:
                    self._sending(position, attempt)
                    async with contextlib.aclosing(
                        steps.stream(
                            self.settings, attempt, first_token_s, self._replanned(position)
                        )
                    ) as items:
                        async for item in items:
                            if isinstance(item, Reply):
                                reply = item
                                break
                            shown.append(item)
                            yield item
                    if reply is None:  # the provider's stream ended without its Reply
                        raise ProviderError(
                            "the stream ended without a reply",
                            kind="empty",
                            provider=cand.provider.id,
                            model=cand.model.id,
                        )
                except CassetteError as exc:
                    if shown:
                        hold.interrupted()
                    else:
                        await hold.abandoned()
                    if shown or not self._not_recorded(exc):
                        raise
                    await self._record(cand, position, "skipped_provider", reason=_NOT_RECORDED)
                    continue
                except Exception as exc:
                    if not shown:
                        await self._after_failure(cand, position, hold, exc)
                        continue
                    # A failure after text was shown is an interruption, never a retry: the
                    # reader has seen the answer, so nobody else may rewrite it.
                    if not isinstance(exc, StreamInterrupted):
                        cause = exc if isinstance(exc, ProviderError) else _unexpected(cand, exc)
                        exc = StreamInterrupted(cause, "".join(shown))
                    hold.interrupted()
                    await self._record(
                        cand, position, "error", hold, error=exc, status=exc.status_code
                    )
                    raise exc from None
                except BaseException:
                    # Cancelled, or the reader stopped reading (GeneratorExit): what was shown
                    # spent the request; what was not gives its quota (and a half-open probe
                    # slot) back.
                    if shown:
                        hold.interrupted()
                    else:
                        await hold.abandoned()
                    # Logged all the same: a client that hung up mid-answer still cost a
                    # request, and a log missing it would not add up to the provider's bill.
                    # (The sinks are called without suspending: a cancelled task gets here.)
                    await self._record(cand, position, "cancelled", hold, reason=_GONE)
                    raise
                result = await self._after_success(cand, position, hold, reply)
            finally:
                await self._paced_done(hold)
            if result is not None:
                yield result
                return

    def _sending(self, position: int, attempt: steps.Attempt) -> None:
        self.sent[position] = (steps.masked(attempt), attempt.masker is not None)

    def _replanned(self, position: int) -> Callable[[steps.Attempt], None]:
        """What the attempt at `position` is told when a replay asks its model another way:
        its log then shows the request the cassette answered."""
        return lambda attempt: self._sending(position, attempt)

    def _not_recorded(self, error: CassetteError) -> bool:
        """A replay's cassette holds no answer to this model's request: the model is skipped
        like one that is out, and the walk moves on. Under concurrency the router's choices
        follow timing a replay cannot reproduce (a model cooling when the recording asked it
        may be free now), so another model's recorded answer is as good an answer; the first
        miss is kept, and stops the run only if no model of the route could answer."""
        if error.code != "REPLAY_MISS":
            return False
        if self.replay_miss is None:
            self.replay_miss = error
        return True

    def _may_go_on(self) -> bool:
        """False once the walk must stop: cancelled (raises), stopped, or past the deadline."""
        if self.ctx.signal is not None and self.ctx.signal.is_set():
            self._cancelled()
        if self.stopped:
            return False
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.stopped, self.stop_reason = True, "the caller's deadline passed"
            return False
        return True

    def _pace_tokens(self, cand: Candidate) -> int:
        """The tokens the provider is expected to count for this request: the caller's own
        estimate when it gave one, else what this key's answers have cost so far."""
        if self.ctx.estimated_tokens is not None:
            return self.tokens
        cost = self.state.token_costs.get(cand.key)
        if cost is None:
            return self.tokens
        return cost.expected(self.prompt_tokens, _answer_allowance(self.request))

    def _attempt_ctx(self, cand: Candidate) -> CallContext:
        return self.ctx.replace(lane=cand.lane, timeout_s=self.settings.attempt_timeout_s)

    async def _clear(
        self, cand: Candidate, position: int, ignore_cooling: bool
    ) -> tuple[steps.Attempt, steps.Hold | Reply] | None:
        """Everything that may skip a model before a request is sent, cheapest first. What
        passes is the planned attempt with either its cached reply or its hold: a breaker
        permit and a quota reservation (and the walk's slot and pacing ticket). The cache is
        looked up before the model's cooldown, slot, breaker, quota and pace: an answer that
        sends nothing must not wait for, nor use up, what the provider allows."""
        state = self.state
        if cand.lane is not None:
            state.lanes_seen.setdefault(cand.key, cand)
        if cand.provider_key in self.dead:
            await self._record(
                cand, position, "skipped_provider", reason="provider out for this request"
            )
            return None
        attempt = None
        if self.settings.cache is not None:  # a model cooling may still have answered this
            attempt = await self._planned(cand, position)
            if attempt is None:
                return None
            hit = steps.cached(self.settings, attempt)
            if hit is not None:
                return attempt, hit
        if not ignore_cooling and await self._cooling(cand, position):
            return None
        if attempt is None:
            attempt = await self._planned(cand, position)
            if attempt is None:
                return None
        aimd = state.pacer.concurrency
        busy = aimd is not None and aimd.in_flight(cand.key) >= aimd.limit(cand.key)
        if not await self._slot(cand, position):
            return None
        try:
            if busy:
                # While it waited, the model may have been observed (the plan follows what
                # it was seen to do) and the same question answered: plan and look up again.
                again = await self._planned(cand, position)
                hit = None if again is None else steps.cached(self.settings, again)
                if again is None:
                    await self._paced_done(None)
                    return None
                attempt = again
                if hit is not None:
                    await self._paced_done(None)
                    return attempt, hit
            hold = await self._held(cand, position, ignore_cooling)
        except BaseException:
            await self._paced_done(None)
            raise
        if hold is None:
            await self._paced_done(None)
            return None
        return attempt, hold

    async def _planned(self, cand: Candidate, position: int) -> steps.Attempt | None:
        """The request planned for this model and keyed for the cache; a failure to plan (a
        user's provider raising for its key, a capability store down) is the attempt's error."""
        try:
            return await steps.prepare(
                self.settings, cand, self.request, self._attempt_ctx(cand), self.masker
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._after_failure(cand, position, None, exc)
            return None

    async def _cooling(self, cand: Candidate, position: int) -> bool:
        cooldowns = self.state.cooldowns
        for key in (cand.provider_key, cand.key):
            if cooldowns.is_cooling(key):
                reason = cooldowns.reason(key) or "cooling"
                await self._record(cand, position, "skipped_cooling", reason=reason)
                return True
        return False

    async def _slot(self, cand: Candidate, position: int) -> bool:
        """One of the key's adaptive-concurrency slots, waited for (never past the caller's
        deadline, and given up when the caller's signal fires); False stops the walk: the
        deadline passed while waiting. That wait is the provider's pacing (its 429s cut the
        slots), so it is recorded as paced: the route's hint says when to ask again, about
        one round trip from now, when a slot is given back."""
        pacer = self.state.pacer
        if pacer.concurrency is None:
            return True
        timeout = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        got = await self._unless_cancelled(pacer.slot(cand.key, timeout), cand.key)
        if not got:
            back_s = pacer.concurrency.round_trip_s(cand.key)
            await self._record(
                cand,
                position,
                "skipped_paced",
                reason="no concurrency slot free before the deadline "
                f"(limit {pacer.concurrency.limit(cand.key)})",
                free_at_ms=self.settings.clock() + math.ceil(back_s * 1000),
            )
            self.stopped, self.stop_reason = True, "the caller's deadline passed"
            return False
        self.slot_key = cand.key
        return True

    async def _unless_cancelled(self, waiting: Coroutine[Any, Any, bool], key: str) -> bool:
        """`waiting` for a slot, unless the caller's signal fires first (then AI_CANCELLED).
        A slot won in the same instant as a cancellation is given back, never lost."""
        signal = self.ctx.signal
        if signal is None:
            return await waiting
        slot = asyncio.ensure_future(waiting)
        fired = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({slot, fired}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            fired.cancel()
            await self._give_back(slot, key)
            raise
        fired.cancel()
        if slot.done() and not signal.is_set():
            return slot.result()
        await self._give_back(slot, key)
        self._cancelled()
        return False

    async def _give_back(self, slot: asyncio.Future[bool], key: str) -> None:
        slot.cancel()
        await asyncio.wait({slot})  # its own cancellation is not raised here
        if not slot.cancelled() and slot.exception() is None and slot.result():
            await self.state.pacer.release(key, None)

    async def _held(
        self, cand: Candidate, position: int, ignore_cooling: bool
    ) -> steps.Hold | None:
        """After a wait for a slot: cooling again (a 429 may have come meanwhile), the breaker,
        the quota written in the providers file, and what the provider said of its own."""
        state = self.state
        if self.slot_key is not None and not ignore_cooling and await self._cooling(cand, position):
            return None
        permit = state.breakers.get(cand.provider_key).allow()
        if permit is None:  # an open breaker consumes no quota and is not a model failure
            await self._record(cand, position, "skipped_breaker", reason="circuit open")
            return None
        model = cand.model
        limits = Limits(rpm=model.rpm, rpd=model.rpd, tpd=model.tpd, tpm=model.tpm)
        try:
            taken = await state.quota.reserve(cand.key, limits, self.tokens)
        except BaseException:
            permit.cancel()  # a half-open probe slot must never be lost to a cancellation
            raise
        if isinstance(taken, Refusal):
            permit.cancel()
            reason = f"{taken.limit} {taken.used}/{taken.cap}"
            if taken.limit in ("tpm", "tpd") and self.tokens > taken.cap:  # no wait helps
                reason = f"{self.tokens} estimated tokens exceed {taken.limit} {taken.cap} alone"
            free_at = self.settings.clock() + math.ceil(taken.retry_after_s * 1000)
            await self._record(cand, position, "skipped_quota", reason=reason, free_at_ms=free_at)
            return None
        try:
            verdict = await state.pacer.admit(cand.key, self._pace_tokens(cand), self.sinks)
        except BaseException:
            permit.cancel()
            await state.quota.release(taken)
            raise
        if isinstance(verdict, Paced):  # the provider said it would refuse: ask nobody
            permit.cancel()
            await state.quota.release(taken)
            await self._record(
                cand,
                position,
                "skipped_paced",
                reason=verdict.reason,
                free_at_ms=verdict.reset_at_ms,
            )
            return None
        self.ticket = verdict
        return steps.Hold(permit, taken, state.quota, self.settings.clock())

    async def _paced_done(self, hold: steps.Hold | None) -> None:
        """The attempt's pacing ticket and concurrency slot, given back once (idempotent)."""
        ticket, self.ticket = self.ticket, None
        key, self.slot_key = self.slot_key, None
        if ticket is not None:
            await self.state.pacer.finished(ticket.key)
        if key is not None:
            latency = None if hold is None else hold.latency_ms / 1000
            await self.state.pacer.release(key, latency)

    # -- reading outcomes ------------------------------------------------------------------------
    async def _after_success(
        self, cand: Candidate, position: int, hold: steps.Hold | None, reply: Reply
    ) -> RouteResult | None:
        """`hold` is None for a cached reply: no provider was asked, so its breaker, quota,
        cooldowns, pacing and concurrency learn nothing."""
        if hold is not None:
            await hold.succeeded(reply)
            self.state.cooldowns.record_success(cand.key)
            await self._heed(cand, reply.quota)
            await self.state.pacer.answered(cand.key, self.sinks)
            self.state.token_costs.setdefault(cand.key, TokenCost()).learn(
                self.prompt_tokens, reply.usage.prompt_tokens, reply.usage.completion_tokens
            )
            if self.ticket is not None and reply.usage.total_tokens is not None:
                await self.state.pacer.reconcile(self.ticket, reply.usage.total_tokens)
        used = reply.usage.total_tokens
        tokens = used if used is not None else self.tokens
        outcome: Outcome = "ok"
        reason = ""
        if self.accepts is not None and not self.accepts(reply):
            outcome, reason = "rejected", "refused by accepts"
        elif self.partial is not None and self.partial(reply):
            outcome = "partial"
        await self._record(
            cand,
            position,
            outcome,
            hold,
            status=reply.raw_status,
            tokens=tokens,
            cached=reply.cached,
            reason=reason,
        )
        if outcome == "rejected":
            return None
        if outcome == "partial":
            if self.partial_result is None:  # returned only if nobody finishes
                self.partial_result = RouteResult(reply, cand.key, True, self.attempts)
            return None
        if self.settings.admission is not None:
            await self.settings.admission.spent(self.ctx, tokens)
        return RouteResult(reply, cand.key, False, self.attempts)

    async def _after_failure(
        self, cand: Candidate, position: int, hold: steps.Hold | None, exc: Exception
    ) -> None:
        """The chain-walk rules, read from one failed attempt (`hold` None: it failed while
        being planned, before anything was held)."""
        if hold is not None:
            await hold.failed(exc)
        if not isinstance(exc, ProviderError):
            # A custom provider raised something we do not know: record it, walk on.
            log.warning("provider %s raised %s", cand.key, type(exc).__name__)
            await self._record(
                cand, position, "error", hold, error=exc, reason=f"unexpected {type(exc).__name__}"
            )
            return
        state = self.state
        state.cooldowns.record_failure(cand.key)
        if exc.status_code == 429 and self.ticket is not None:
            # The provider counted no request it refused: the pacer's windows give it back
            # before they read what the refusal said.
            await state.pacer.give_back(self.ticket)
        readings = exc.quota
        if exc.status_code == 429:  # its body names the limit its headers may not
            # The body's wait ("try again in 650ms") is finer than a Retry-After in whole
            # seconds: the window's length is learnt from it.
            said = retry_after_seconds(exc.full_body)
            readings = read_refusal(
                cand.provider.id,
                cand.model.id,
                exc.full_body,
                exc.quota,
                exc.retry_after_s if said is None else said,
                self.settings.clock(),
            )
        await self._heed(cand, readings)
        if exc.status_code == 429 and classify_rate_limit(exc.full_body) != "size":
            await state.pacer.refused(cand.key, "429", self.sinks)
        elif exc.kind == "timeout":
            await state.pacer.refused(cand.key, "timeout", self.sinks)
        await self._record(cand, position, "error", hold, error=exc, status=exc.status_code)
        self._cool(cand, exc)
        if exc.status_code in (401, 403):
            # The same credential serves every model of the provider: out for this request.
            self.dead.add(cand.provider_key)
            state.flagged[cand.provider_key] = f"HTTP {exc.status_code}"
        elif exc.status_code == 429 and classify_rate_limit(exc.full_body) == "size":
            # Every model would refuse a request this large: stop instead of burning quota.
            self.stopped, self.stop_reason = True, _TOO_LARGE

    async def _heed(self, cand: Candidate, readings: list[QuotaReading]) -> None:
        """Vendors' quota headers update our state: a window the vendor says is spent rests
        until the vendor's reset, before we spend a request to hear a 429."""
        if not readings:
            return
        self.state.readings[cand.key] = list(readings)
        await self.state.pacer.learn(cand.key, readings, self.ticket, self.sinks)
        now = self.settings.clock()
        for r in readings:
            await emit(
                self.sinks,
                QuotaEvent(
                    cand.key,
                    r.provider,
                    r.model,
                    r.scope,
                    r.window,
                    r.limit,
                    r.remaining,
                    r.reset_at_ms,
                    r.source,
                    r.observed_at_ms,
                ),
            )
            if r.remaining <= 0 and r.reset_at_ms and r.reset_at_ms > now:
                self.state.cooldowns.cool_until(
                    cand.key, r.reset_at_ms, reason=f"{r.source}: {r.scope} per {r.window} spent"
                )

    def _cool(self, cand: Candidate, exc: ProviderError) -> None:
        cooldowns, settings = self.state.cooldowns, self.settings
        if settings.cooldown_on is not None:
            seconds = settings.cooldown_on(exc)
            if seconds:
                cooldowns.cool(cand.key, seconds, reason=f"cooldown_on: {exc.code}")
            return
        decision = cooldown_decision(
            exc, default_s=settings.cooldown_s, now_ms=settings.clock(), body=exc.full_body
        )
        if decision.seconds is None or decision.scope == "none":
            return
        # A daily refusal that does not name its own model exhausts the whole key.
        key = cand.provider_key if decision.scope == "provider" else cand.key
        if decision.scope == "provider":
            self.dead.add(cand.provider_key)
        cooldowns.cool(key, decision.seconds, reason=decision.reason)

    async def _record(
        self,
        cand: Candidate,
        position: int,
        outcome: Outcome,
        hold: steps.Hold | None = None,
        *,
        error: BaseException | None = None,
        status: int | None = None,
        tokens: int | None = None,
        reason: str = "",
        cached: bool = False,
        free_at_ms: int | None = None,
    ) -> None:
        latency = 0.0 if hold is None else hold.latency_ms
        sent = self.sent.pop(position, None)
        self.attempts.append(
            Attempt(
                cand.key,
                cand.lane,
                outcome,
                position,
                status,
                error,
                latency,
                tokens,
                reason,
                free_at_ms,
            )
        )
        self.candidates.setdefault(cand.key, cand)
        # Its place in the route: a second pass down the chain (every model cooling) starts
        # again at position 0, so the position alone does not order a route's attempts.
        seq = len(self.attempts) - 1
        kind = (
            error.kind
            if isinstance(error, ProviderError)
            else (type(error).__name__ if error else None)
        )
        await emit(
            self.sinks,
            AttemptEvent(
                key=cand.key,
                lane=cand.lane,
                outcome=outcome,
                start_ms=hold.start_ms if hold is not None else self.settings.clock(),
                latency_ms=latency,
                status=status,
                error_kind=kind,
                tokens=tokens,
                position=position,
                provider=cand.provider.id,
                model=cand.model.id,
                route_id=self.route_id,
                error_code=error.code if isinstance(error, WorkbenchError) else None,
                error_message=_one_line(error) if error else None,
                cached=cached,
                reason=reason,
                seq=seq,
                request=None if cached or sent is None or not self.sinks else _sent(*sent),
            ),
        )

    # -- endings -------------------------------------------------------------------------------------
    def _cancelled(self) -> None:
        reason = self.ctx.cancel_reason or "the caller cancelled the request"
        raise RoutingError(str(reason), code="AI_CANCELLED", status=499, attempts=self.attempts)

    def all_cooling(self, order: list[Candidate]) -> bool:
        """Every model of every pass so far was resting: cooling, or paced by its provider's
        own word (`when_all_cooling` treats both alike: a wait ends either)."""
        tried = [a for a in self.attempts if a.outcome not in ("skipped_cooling", "skipped_paced")]
        return bool(order) and not tried

    def paced_until(self, now_ms: int) -> int | None:
        """The earliest reset still ahead among the models paced in this walk."""
        ahead = [
            a.free_at_ms
            for a in self.attempts
            if a.outcome == "skipped_paced" and a.free_at_ms is not None and a.free_at_ms > now_ms
        ]
        return min(ahead) if ahead else None

    def unavailable(self, order: list[Candidate]) -> RoutingError:
        counts: dict[str, int] = {}
        for a in self.attempts:
            counts[a.outcome] = counts.get(a.outcome, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing tried"
        why = f" ({self.stop_reason})" if self.stop_reason else ""
        return RoutingError(
            f"no model could answer: {len(order)} candidate(s), {summary}{why}",
            code="AI_UNAVAILABLE",
            attempts=self.attempts,
            # A deadline's stop keeps its hint (a route stopped while the provider paced it
            # is held, not failed); a request too large for every model has none.
            retry=None
            if self.stop_reason == _TOO_LARGE
            else hint_for(self._freed(), self.settings.clock()),
        )

    def _freed(self) -> list[Attempt]:
        """The attempts, each with when its candidate is free again, from what the state knows
        now: its cooldown (or its provider's), its breaker's recovery, its quota's reset."""
        now, state = self.settings.clock(), self.state
        out = []
        for a in self.attempts:
            cand = self.candidates.get(a.key)
            free = a.free_at_ms
            if cand is not None:
                cooling = state.cooldowns.earliest_free([cand.key, cand.provider_key])
                if cooling is not None:
                    free = max(free or now, cooling)
                if a.outcome == "skipped_breaker":
                    probe = state.breakers.get(cand.provider_key).snapshot()["next_probe_in_s"]
                    # Half-open with its one probe in flight: the probe's answer frees it, not
                    # the clock; asking again at once would only be refused again.
                    wait_s = probe if probe else _PROBE_ANSWER_S
                    free = now + math.ceil(wait_s * 1000)
            out.append(dataclasses.replace(a, free_at_ms=free))
        return out


def _sent(request: ChatRequest, masked: bool) -> dict[str, object]:
    """What an attempt's log keeps of its request: the words (calls in their wire form, a
    picture's bytes replaced by their size), whether they were masked, and the names of the
    tools and how they went (natively, or described in the system prompt). A schema is the
    caller's, the same on every attempt; a picture would weigh down every row of its route."""
    wire = wire_messages(request)
    return {
        "masked": masked,
        "system": request.system,
        "messages": [_without_pictures(m) for m in (wire[1:] if request.system else wire)],
        "tools": [t.get("function", {}).get("name") for t in request.tools or ()],
        "tools_sent": "native" if request.send_tools else "in the prompt",
    }


def _without_pictures(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = []
    for part in content:
        url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
        if isinstance(url, str) and url.startswith("data:"):
            part = {**part, "image_url": {"url": f"{url[: url.find(',') + 1]}… ({len(url)} bytes)"}}
        parts.append(part)
    return {**message, "content": parts}


def _unexpected(cand: Candidate, exc: BaseException) -> ProviderError:
    """A custom provider's own exception, as the interruption's cause (named, never dumped)."""
    return ProviderError(
        _one_line(exc), kind="network", provider=cand.provider.id, model=cand.model.id
    )


def _one_line(error: BaseException) -> str:
    """A WorkbenchError is already one scrubbed line; anything else is named, never dumped."""
    if isinstance(error, WorkbenchError):
        return str(error)
    return scrub(f"{type(error).__name__}: {' '.join(str(error).split())}")[:300]


def _prompt_estimate(request: ChatRequest) -> int:
    texts: list[str] = [request.system or ""]
    for m in request.messages:
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return estimate_tokens(*texts)


def _answer_allowance(request: ChatRequest) -> int:
    """The longest answer a request allows: what a quota reserves before it knows better."""
    return request.max_tokens or 256
