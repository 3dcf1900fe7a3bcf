"""`Router`: walk the caller's chain of models until one answers.

`route` and `stream` read top to bottom and share every step: build the chain
(`candidates`), admit the request, walk it (`walk`: every rule of what an attempt's outcome
means; `attempt`: the steps of one attempt), and when every model was cooling, apply
`when_all_cooling` under the caller's deadline. The router owns the `RoutingState` the walks
share (quotas, cooldowns and degradation, breakers, health), the `RouteSettings` they follow,
and the one `CapabilityObserver` that learns from every attempt. Every attempt is an
`AttemptEvent`; every route a `RouteEvent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from workbench.capability.observer import CapabilityObserver
from workbench.capability.store import MemoryCapabilityStore
from workbench.errors import NoVisionLinkError, RoutingError
from workbench.events import RouteEvent, emit
from workbench.providers.base import HttpProvider
from workbench.providers.http import HttpTransport, check_transport
from workbench.providers.interface import Provider, ProviderLike, as_provider, unwrap
from workbench.providers.spec import ModelSpec
from workbench.routing import candidates as chains
from workbench.routing.breaker import BreakerPool, CircuitBreaker
from workbench.routing.cache import ResponseCache
from workbench.routing.candidates import Candidate
from workbench.routing.chain_health import HealthTracker
from workbench.routing.cooldown import Cooldowns
from workbench.routing.pacing import FailoverPace, MemoryPace, Pacer, PaceStore
from workbench.routing.privacy import Masker
from workbench.routing.quota import FailoverQuota, MemoryQuota, QuotaStore
from workbench.routing.settings import RouterSettings, RouteSettings
from workbench.routing.state import RoutingState
from workbench.routing.walk import Attempt, RouteResult, Walk
from workbench.types import CallContext, ChatRequest, Reply, messages_carry_images

if TYPE_CHECKING:
    from workbench.cassettes import Cassette

__all__ = ["Attempt", "RouteResult", "Router"]


def _now_ms() -> int:
    return int(time.time() * 1000)


class Router:
    """Routes requests across providers in the caller's fallback order, under its
    `RouterSettings` (each option is described there).

    `clock` returns epoch milliseconds (the unit of every ported pure function); durations
    given to the router are seconds. `settings` is what every walk follows: the options as
    given, with the clock and observer chosen."""

    def __init__(
        self,
        providers: Sequence[Provider | ProviderLike],
        *,
        settings: RouterSettings | None = None,
        **overrides: Any,
    ) -> None:
        """`settings` holds the options (`RouterSettings`); `overrides` are its fields by name,
        laid over it (`Router(providers, cooldown_s=5)` works as it always did)."""
        checked = [as_provider(p) for p in providers]
        chains.refuse_duplicate_ids(checked)
        given = RouterSettings(**overrides) if settings is None else replace(settings, **overrides)
        self.providers: list[Provider] = checked
        self.clock = given.clock or _now_ms
        self.sinks = tuple(given.sinks)
        # The router's sinks hear its verdicts too, unless the caller brought an observer.
        observer = given.observer or CapabilityObserver(MemoryCapabilityStore(), sinks=self.sinks)
        chosen = {"clock": self.clock, "observer": observer, "sinks": self.sinks}
        self.settings = RouteSettings(
            **{f.name: getattr(given, f.name) for f in fields(RouterSettings)} | chosen
        )
        breaker_pool = BreakerPool(given.breakers or (lambda key: CircuitBreaker()))
        for provider in self.providers:  # a factory sharing one breaker is refused now, not mid-run
            breaker_pool.get(provider.id)
        quota = given.quota
        if quota is None:
            quota = (
                FailoverQuota(given.redis_url, sinks=self.sinks, clock_ms=self.clock)
                if given.redis_url
                else MemoryQuota(clock_ms=self.clock)
            )
        cooldowns = Cooldowns(
            jitter_s=given.cooldown_jitter_s, degrade_after=given.degrade_after, clock_ms=self.clock
        )
        # Learnt limits are shared whenever the quotas are: four processes on one free tier
        # must not each learn it with their own 429s.
        pace: PaceStore = (
            FailoverPace(given.redis_url, clock_ms=self.clock)
            if given.redis_url and (given.quota is None or isinstance(quota, FailoverQuota))
            else MemoryPace()
        )
        self.state = RoutingState(
            quota=quota,
            cooldowns=cooldowns,
            breakers=breaker_pool,
            health=HealthTracker(now_ms=self.clock),
            pacer=Pacer(pace, self.clock, given.adaptive_concurrency),
        )
        if given.http_transport is not None:
            self.use_http(given.http_transport)

    # -- the parts, by name ----------------------------------------------------------------
    @property
    def observer(self) -> CapabilityObserver:
        return self.settings.observer

    @observer.setter
    def observer(self, observer: CapabilityObserver) -> None:
        """Send this router's observations elsewhere (the workbench points them at its store)."""
        self.settings = replace(self.settings, observer=observer)

    def use_http(self, transport: HttpTransport | None = None, pool: int | None = None) -> None:
        """Choose the HTTP transport (`aiohttp`, the default, or `httpx`) and the keep-alive
        pool size of every provider's own client; the runner sizes the pool from its
        concurrency. A client the caller gave a provider is left as it is."""
        if transport is not None:
            check_transport(transport)
        for provider in self.providers:
            given = unwrap(provider)
            if isinstance(given, HttpProvider):
                given.use_http(transport, pool)

    def use_cassette(self, cassette: Cassette | None) -> None:
        """Send every HTTP provider's requests through `cassette` (`workbench.cassettes`):
        recorded, replayed with no network, or both; None stops. A provider that is not HTTP
        (a function, the in-process local model) sends nothing to record and is left as is."""
        for provider in self.providers:
            given = unwrap(provider)
            if isinstance(given, HttpProvider):
                given.use_cassette(cassette)

    def with_cache(self, cache: ResponseCache | None, ttl_s: float | None) -> None:
        """Answer repeated requests from `cache` (None: stop caching)."""
        self.settings = replace(self.settings, cache=cache, cache_ttl_s=ttl_s)

    @property
    def quota(self) -> QuotaStore:
        return self.state.quota

    @property
    def cooldowns(self) -> Cooldowns:
        return self.state.cooldowns

    @property
    def breakers(self) -> BreakerPool:
        return self.state.breakers

    @property
    def health(self) -> HealthTracker:
        return self.state.health

    @property
    def flagged(self) -> dict[str, str]:
        """Provider key → why its credential was refused."""
        return self.state.flagged

    @property
    def attempt_timeout_s(self) -> float | None:
        return self.settings.attempt_timeout_s

    @property
    def first_token_timeout_s(self) -> float | None:
        return self.settings.first_token_timeout_s

    # -- the public verbs ----------------------------------------------------------------
    async def ask(
        self,
        prompt_or_request: str | ChatRequest,
        ctx: CallContext | dict[str, Any] | None = None,
        masker: Masker | None = None,
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
            return self._text_stream(request, ctx, masker)
        result = await self.route(request, ctx=ctx, masker=masker)
        return result.value.text

    async def _text_stream(
        self, request: ChatRequest, ctx: CallContext | dict[str, Any] | None, masker: Masker | None
    ) -> AsyncIterator[str]:
        async for item in self.stream(request, ctx=ctx, masker=masker):
            if isinstance(item, str):
                yield item

    async def route(
        self,
        request: ChatRequest,
        candidates: Iterable[dict[str, Any]] | None = None,
        select: Callable[[ModelSpec, Any], bool] | None = None,
        accepts: Callable[[Reply], bool] | None = None,
        partial: Callable[[Reply], bool] | None = None,
        ctx: CallContext | dict[str, Any] | None = None,
        masker: Masker | None = None,
    ) -> RouteResult:
        """Walk the chain until a model answers; see the module docstring for the order."""
        walk = self._walk(request, ctx, accepts=accepts, partial=partial, masker=masker)
        order = await self._begin(walk, candidates, select)
        try:
            result = await walk.run(order)
            if result is None:
                async with contextlib.aclosing(self._more_passes(walk, order)) as passes:
                    async for ignore_cooling in passes:
                        result = await walk.run(order, ignore_cooling=ignore_cooling)
                        if result is not None:
                            break
        except BaseException as exc:
            await self._if_stopped(walk, order, exc)
            raise
        if result is None:
            raise await self._give_up(walk, order)
        return await self._done(walk, order, result)

    async def stream(
        self,
        request: ChatRequest,
        candidates: Iterable[dict[str, Any]] | None = None,
        select: Callable[[ModelSpec, Any], bool] | None = None,
        ctx: CallContext | dict[str, Any] | None = None,
        masker: Masker | None = None,
    ) -> AsyncIterator[str | RouteResult]:
        """Text deltas from the first model that starts answering, then the RouteResult.

        Before its first token a model may fail (or miss `first_token_timeout_s`, never applied
        to the last model) and the walk moves on; after it, `StreamInterrupted` is raised with
        the partial text: the reader has seen it, so nobody else may rewrite it. The caller's
        deadline and `when_all_cooling` apply exactly as in `route`."""
        walk = self._walk(request, ctx, masker=masker)
        order = await self._begin(walk, candidates, select)
        try:
            async with contextlib.aclosing(self._passes(walk, order)) as passes:
                async for ignore_cooling in passes:
                    async with contextlib.aclosing(
                        walk.run_stream(order, ignore_cooling=ignore_cooling)
                    ) as items:
                        async for item in items:
                            if isinstance(item, RouteResult):
                                done = await self._done(walk, order, item)
                                break
                            yield item
                        else:
                            continue
                        break
                else:
                    done = None
        except BaseException as exc:
            await self._if_stopped(walk, order, exc)
            raise
        if done is None:
            raise await self._give_up(walk, order)
        yield done  # its route already logged: a reader leaving now changes nothing

    # -- state -----------------------------------------------------------------------------
    async def stats(self) -> dict[str, Any]:
        """Per key: quota used and limits, cooling, degradation, circuit, lane, backend.

        Async because the quota may live in Redis: `used` is the shared count, not ours."""
        cooling = self.cooldowns.snapshot()
        breakers = self.breakers.snapshot()
        backend = getattr(self.quota, "backend", "memory")  # a user's own QuotaStore may not say
        keys: dict[str, Any] = {}
        for c in self._known_candidates():
            state = cooling.get(c.key, {})
            keys[c.key] = {
                "provider": c.provider.id,
                "model": c.model.id,
                "lane": c.lane,
                "used": await self.quota.usage(c.key),
                "limits": {
                    "rpm": c.model.rpm,
                    "rpd": c.model.rpd,
                    "tpd": c.model.tpd,
                    "tpm": c.model.tpm,
                },
                "cooling_until_ms": state.get("until_ms"),
                "cooling_reason": state.get("reason"),
                "provider_cooling_until_ms": cooling.get(c.provider_key, {}).get("until_ms"),
                "degraded": state.get("degraded", False),
                "consecutive_failures": state.get("consecutive_failures", 0),
                "circuit": breakers.get(c.provider_key, {}).get("state", "closed"),
                "key_flagged": self.flagged.get(c.provider_key),
                "backend": backend,
                "quota_readings": [
                    dataclasses.asdict(r) for r in self.state.readings.get(c.key, [])
                ],
                # Its adaptive concurrency and each window the provider stated.
                "pacing": await self.state.pacer.snapshot(c.key),
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
        out.update(self.state.lanes_seen)
        return list(out.values())

    async def usage(self, key: str) -> dict[str, int]:
        return await self.quota.usage(key)

    def reset(self) -> None:
        """Forget cooldowns, degradation and flagged keys (quotas are real and stay)."""
        self.cooldowns.reset()
        self.flagged.clear()

    async def close(self) -> None:
        await self.quota.close()
        await self.state.pacer.close()
        for provider in self.providers:
            await provider.aclose()

    async def __aenter__(self) -> Router:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- internals -------------------------------------------------------------------------
    def _walk(
        self,
        request: ChatRequest,
        ctx: CallContext | dict[str, Any] | None,
        *,
        accepts: Callable[[Reply], bool] | None = None,
        partial: Callable[[Reply], bool] | None = None,
        masker: Masker | None = None,
    ) -> Walk:
        return Walk(
            self.state,
            self.settings,
            request,
            CallContext.of(ctx),
            accepts=accepts,
            partial=partial,
            masker=masker,
        )

    async def _begin(
        self,
        walk: Walk,
        candidates: Iterable[dict[str, Any]] | None,
        select: Callable[[ModelSpec, Any], bool] | None,
    ) -> list[Candidate]:
        """The chain for this request, and the admission step before anything is sent."""
        order = self._order(walk.request, walk.ctx, candidates, select)
        if self.settings.admission is not None:
            await self.settings.admission.check(walk.ctx, walk.tokens)
        return order

    async def _passes(self, walk: Walk, order: list[Candidate]) -> AsyncGenerator[bool]:
        """The passes down the chain, each saying whether to ignore cooldowns: the first, then
        `_more_passes`."""
        yield False
        async for ignore_cooling in self._more_passes(walk, order):
            yield ignore_cooling

    async def _more_passes(self, walk: Walk, order: list[Candidate]) -> AsyncGenerator[bool]:
        """After a pass that found every model cooling, what `when_all_cooling` asks: `try`
        them anyway once (a cooldown is a guess) or `wait` for the first to free, never past
        the caller's deadline; `fail` asks for no further pass. (`route` makes its first pass
        without this generator: the common route pays nothing for it.)"""
        ignore_cooling = False
        while not walk.stopped and walk.all_cooling(order):
            if self.settings.when_all_cooling == "try" and not ignore_cooling:
                ignore_cooling = True
            elif self.settings.when_all_cooling != "wait" or not await self._wait_for_free(
                order, walk
            ):
                return
            yield ignore_cooling

    async def _done(self, walk: Walk, order: list[Candidate], result: RouteResult) -> RouteResult:
        await self._route_event(order, result.key, walk, partial=result.partial)
        self.health.record_success()
        return result

    async def _if_stopped(self, walk: Walk, order: list[Candidate], exc: BaseException) -> None:
        """A route its caller stopped (a cancelled task, the caller's signal, a stream's reader
        that left) is logged as a route too: no model chosen, `AI_CANCELLED`."""
        stopped = isinstance(exc, asyncio.CancelledError | GeneratorExit) or (
            isinstance(exc, RoutingError) and exc.code == "AI_CANCELLED"
        )
        if stopped:
            await self._route_event(order, None, walk, error_code="AI_CANCELLED")

    async def _give_up(self, walk: Walk, order: list[Candidate]) -> RoutingError:
        if walk.replay_miss is not None:  # a replay no recorded answer could serve: stop
            raise walk.replay_miss
        await self._route_event(order, None, walk)
        error = walk.unavailable(order)
        self.health.record_failure(error)
        return error

    def _order(
        self,
        request: ChatRequest,
        ctx: CallContext,
        candidates: Iterable[dict[str, Any]] | None,
        select: Callable[[ModelSpec, Any], bool] | None,
    ) -> list[Candidate]:
        order = chains.chain(
            self.providers, ctx, candidates=candidates, intent_routing=self.settings.intent_routing
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

    async def _wait_for_free(self, order: list[Candidate], walk: Walk) -> bool:
        """Sleep until the first model is free: its cooldown over, or its provider's reset."""
        deadline = walk.deadline
        keys = [c.key for c in order] + [c.provider_key for c in order]
        until = self.cooldowns.earliest_free(keys)
        paced = walk.paced_until(self.clock())
        if paced is not None:
            until = paced if until is None else min(until, paced)
        if until is None:
            return True
        wait_s = max(0.0, (until - self.clock()) / 1000)
        if deadline is not None and time.monotonic() + wait_s > deadline:
            return False  # the caller's deadline comes first: fail now rather than late
        await asyncio.sleep(wait_s)
        return True

    async def _route_event(
        self,
        order: list[Candidate],
        chosen: str | None,
        walk: Walk,
        partial: bool = False,
        error_code: str = "AI_UNAVAILABLE",
    ) -> None:
        skipped = {a.key: a.reason or a.outcome for a in walk.attempts if a.outcome != "ok"}
        keys = [c.key for c in order]
        depth = keys.index(chosen) if chosen in keys else len(keys)
        await emit(
            (*self.sinks, *walk.ctx.sinks),
            RouteEvent(
                tuple(keys),
                chosen,
                skipped,
                partial,
                route_id=walk.route_id,
                fallback_depth=depth,
                error_code=None if chosen else error_code,
            ),
        )
