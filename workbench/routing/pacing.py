"""Pacing learnt from the provider: no request is sent that the provider said it will refuse.

Free tiers state their limits where nobody wrote them down: in every reply's quota headers and
in every refusal's body (`workbench.providers.meter`). The `Pacer` keeps, per candidate key
(provider:model@lane: a lane has its own quota), what the provider last said of each window
(requests or tokens, per minute or per day): its limit, what remained, and when it resets.
Before a request goes out it asks whether the provider has said it will refuse it:

    left = remaining at the reading - what this key sent after the request that carried it

(the requests in flight count: the provider counted them, or will), below 1 request, or below
the request's estimated tokens → the attempt is skipped as "skipped_paced" until the reset.
A request the provider never counted (it refused it with a 429; a cached reply answered it)
is given back (`give_back_on`): it is kept as `back:{seq}:{tok}` and never counted among
"what this key sent after" any reading, whichever reply carries the next reading (an earlier
request's, slower than the refusal, included); else a minute's refusals would each take one
from the day, paced as spent while the provider would still answer. Once nothing is in
flight, what was given back is folded into each window (no later reading can come from
before it).
At the reset the window is assumed full again (its limit known) until a reading says
otherwise. Within a window the most cautious reading stands: requests let through in one
order reach the provider in another, so a reply may count fewer than were sent before it.
A refusal's wait runs until the window's first request leaves it; the window is whole once its
last one has, so a refusal rests its window until then. A window whose reset nobody stated
(Gemini says nothing on success) rests for the length it was seen to have (from the first
request of a window to the reset its refusal named) after its last request; a window of
unknown length and unknown reset is never paced: the provider's next refusal teaches it.

Every change is a `PacingEvent` (its `concurrency` is 0 when adaptive concurrency is off).

Limits written in the providers file still apply (`quota.py`, unchanged): the stricter wins
by construction, since a request must pass both.

The state is a flat record per key (`seq`, `tok`: requests and estimated tokens sent;
`{scope}:{window}:{field}`) so that Redis (`pacing_redis.py`, one Lua script per step, the
same rules) and memory hold the same thing; `FailoverPace` is Redis while it answers, memory
(the last shared state it saw) when not. Adaptive concurrency (`concurrency.py`) is per
process and sits in front of it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from workbench._failover import FailoverStore
from workbench.events import PacingEvent, Sink, emit
from workbench.providers.meter import QuotaReading
from workbench.routing.concurrency import AdaptiveConcurrency, Change

if TYPE_CHECKING:  # pacing_redis imports this module; named as a string in FailoverPace's base
    from workbench.routing.pacing_redis import RedisPace  # noqa: F401

__all__ = [
    "WINDOWS",
    "FailoverPace",
    "MemoryPace",
    "PaceStore",
    "Paced",
    "Pacer",
    "Ticket",
    "admit_on",
    "give_back_on",
    "learn_on",
    "overestimate_on",
]

log = logging.getLogger("workbench.routing.pacing")

# The windows a provider may state, checked in this order (a day spent outranks a minute).
WINDOWS = (
    "requests:day",
    "tokens:day",
    "requests:minute",
    "tokens:minute",
    "requests:unknown",
    "tokens:unknown",
)
FIELDS = ("limit", "left", "said", "at", "reset", "period", "start", "last")
# Requests given back and not yet folded into the windows: past this many, the oldest are
# folded while requests are in flight (a reading carried by one of those may then count a
# request given back: more cautious, never bolder).
MOST_BACK = 32
# The longest a window is taken to be (a guess from a refusal never rests a key for longer).
LONGEST_MS = {"minute": 60_000, "day": 86_400_000, "unknown": 60_000}

State = dict[str, float]
# Given back: its seq, its tok, its tokens, whether the whole request (a 429, a cache hit) or
# only tokens (an answer that cost less than its estimate), and its field in the state.
Back = tuple[int, int, float, bool, str]


@dataclass(frozen=True, slots=True)
class Ticket:
    """A request let through: its place in its key's count of requests (`seq`) and estimated
    tokens (`tok`) sent, this one included, and its own estimate (`tokens`: what a window
    that counted it gets back if the provider never did). A reading its reply carries counts
    up to here."""

    key: str
    seq: int
    tok: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Paced:
    """The provider said it would refuse: `window` ("requests:minute") has `left` until
    `reset_at_ms`."""

    key: str
    window: str
    left: float
    reset_at_ms: int

    @property
    def reason(self) -> str:
        scope, per = self.window.split(":")
        return f"the provider's {scope} per {per}: {_num(self.left)} left until its reset"

    @property
    def daily(self) -> bool:
        return self.window.endswith(":day")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


# -- the rules, on one key's flat state (pacing_redis.py's scripts say the same in Lua) ------------
def admit_on(state: State, key: str, now_ms: int, tokens: int) -> Ticket | Paced:
    """Let one request of `tokens` estimated tokens through, or say which window refuses it."""
    seq, tok = int(state.get("seq", 0)), int(state.get("tok", 0))
    backs = _backs(state)
    for w in WINDOWS:
        left = state.get(f"{w}:left")
        if left is None:
            continue
        requests = w.startswith("requests")
        counter = seq if requests else tok
        need = 1 if requests else tokens
        limit = state.get(f"{w}:limit")
        avail = _avail(state, w, counter, backs)
        reset = state.get(f"{w}:reset")
        if reset is None and avail < need:
            period, last = state.get(f"{w}:period"), state.get(f"{w}:last")
            if period is not None and last is not None:
                reset = last + period
        if reset is not None and now_ms >= reset:
            if limit is None:  # nothing known of the next window: forget this one
                for f in FIELDS:
                    state.pop(f"{w}:{f}", None)
                continue
            state[f"{w}:left"], state[f"{w}:at"] = limit, counter
            for f in ("reset", "start", "said"):
                state.pop(f"{w}:{f}", None)
            avail, reset = limit, None
        # A request larger than the whole window is the providers file's business (or the
        # provider's): pacing it would wait for ever.
        if avail < need and reset is not None and (limit is None or need <= limit):
            return Paced(key, w, max(0.0, avail), math.ceil(reset))
    state["seq"], state["tok"] = seq + 1, tok + tokens
    state["inflight"] = state.get("inflight", 0) + 1
    state.setdefault("first", now_ms)
    state["last"] = now_ms
    for w in WINDOWS:
        if f"{w}:left" in state:
            state[f"{w}:last"] = now_ms
            state.setdefault(f"{w}:start", now_ms)
    return Ticket(key, seq + 1, tok + tokens, tokens)


def learn_on(state: State, readings: Iterable[QuotaReading], ticket: Ticket | None) -> None:
    """What one reply or refusal said, counted from the request that carried it (`ticket`;
    None: from now). Within a window the most cautious reading stands: requests numbered here
    in one order reach the provider in another (a new connection is slower), so a reply may
    count fewer than were sent before it. A reading that names a later window (its reset a
    second or more past the known one, or the known one passed) starts afresh.

    A day's count only rises until its reset (no request leaves it within a run), so of two
    readings of the same day the one that says fewer left was taken after the other, stands,
    and counted the other's request too: it counts from the later of the two requests (two
    that say as many counted the same requests: a refusal's is counted from the later too).
    Without this a reply that reached the provider after a request sent later counts that
    request twice, and the day is paced as spent with requests left."""
    seq, tok = int(state.get("seq", 0)), int(state.get("tok", 0))
    backs = _backs(state)
    for r in readings:
        w = f"{r.scope}:{r.window}"
        counter = seq if r.scope == "requests" else tok
        at: float = (
            counter if ticket is None else (ticket.seq if r.scope == "requests" else ticket.tok)
        )
        old_left, old_reset = state.get(f"{w}:left"), state.get(f"{w}:reset")
        if old_left is not None:
            later = r.reset_at_ms is not None and (
                old_reset is None or r.reset_at_ms > old_reset + 1000
            )
            passed = old_reset is not None and r.observed_at_ms >= old_reset
            said, old_at = state.get(f"{w}:said"), state.get(f"{w}:at", counter)
            if r.window == "day" and said is not None and not later and not passed:
                if r.remaining > said:  # the known one came after it, and counted its request
                    state[f"{w}:at"] = max(old_at, at)
                    continue
                at = max(at, old_at)  # it came after the known one, and counted its request
            else:
                new = r.remaining - (counter - at) + _credit(w, at, backs)
                bolder = new > _avail(state, w, counter, backs)
                if bolder and not later and not passed:
                    continue
        state[f"{w}:left"], state[f"{w}:at"] = float(r.remaining), at
        state[f"{w}:said"] = float(r.remaining)
        if r.limit is not None:
            state[f"{w}:limit"] = float(r.limit)
        reset = r.reset_at_ms
        # A window first heard of in a refusal began, at the latest, with the key's first request.
        start = state.get(f"{w}:start", state.get("first"))
        if r.source.startswith("429") and reset is not None and start is not None:
            if f"{w}:period" not in state and reset > start:
                # A refusal ends the window that began with its first request: its length.
                state[f"{w}:period"] = min(reset - start, LONGEST_MS[r.window])
            # A refusal's wait is until the window's first request leaves it; the window is
            # whole once its last one has (a sliding window frees one request at a time).
            last, period = state.get(f"{w}:last", state.get("last")), state.get(f"{w}:period")
            if last is not None and period is not None:
                reset = max(reset, math.ceil(last + period))
        if reset is not None:
            state[f"{w}:reset"] = reset


def _backs(state: State) -> list[Back]:
    out = []
    for f, tokens in state.items():
        if f.startswith(("back:", "over:")):
            kind, seq, tok = f.split(":")
            out.append((int(seq), int(tok), tokens, kind == "back", f))
    return sorted(out)


def _credit(w: str, at: float, backs: list[Back]) -> float:
    """What was given back among the requests sent after a reading taken at `at`: the provider
    counted none of those requests, nor the tokens an answer cost less than its estimate."""
    if w.startswith("requests"):
        return float(sum(1 for seq, _, _, whole, _ in backs if whole and seq > at))
    return float(sum(tokens for _, tok, tokens, _, _ in backs if tok > at))


def _avail(state: State, w: str, counter: int, backs: list[Back]) -> float:
    """What `w` has left now: its reading, less what was sent after it and not given back."""
    at = state.get(f"{w}:at", counter)
    return state[f"{w}:left"] - (counter - at) + _credit(w, at, backs)


def give_back_on(state: State, ticket: Ticket) -> None:
    """A request the provider never counted (it refused it with a 429, or a cached reply
    answered it) is not among what this key sent after any reading: a window whose reading
    came before it gets it back (a request; its estimated tokens), and so will a reading that
    comes later from a request sent before it. Else each refusal would take one from every
    window for good: a day whose headers said 2 left would be paced as spent."""
    state[f"back:{ticket.seq}:{ticket.tok}"] = float(ticket.tokens)


def overestimate_on(state: State, ticket: Ticket, used: int) -> None:
    """An answer that cost `used` tokens, fewer than its ticket's estimate: the difference is
    given back to the token windows (the request itself was counted). Else the estimates of the
    requests in flight before the first answers (the whole `max_tokens` each) would pace a
    token window as spent while the provider has most of it left."""
    if ticket.tokens > used:
        state[f"over:{ticket.seq}:{ticket.tok}"] = float(ticket.tokens - used)


def finished_on(state: State) -> None:
    """One request fewer in flight; with none left (or too many given back), what was given
    back is folded into each window: every reading to come is carried by a later request."""
    state["inflight"] = max(0, state.get("inflight", 0) - 1)
    backs = _backs(state)
    if not backs or (state["inflight"] > 0 and len(backs) <= MOST_BACK):
        return
    folded = backs if state["inflight"] == 0 else backs[: len(backs) - MOST_BACK]
    for w in WINDOWS:
        at = state.get(f"{w}:at")
        if f"{w}:left" in state and at is not None:
            state[f"{w}:left"] += _credit(w, at, folded)
    for *_, field in folded:
        del state[field]


def learnt(state: State) -> dict[str, dict[str, float | None]]:
    """Each window the provider stated: its limit, what is left now, and its reset."""
    seq, tok = int(state.get("seq", 0)), int(state.get("tok", 0))
    backs = _backs(state)
    out: dict[str, dict[str, float | None]] = {}
    for w in WINDOWS:
        if f"{w}:left" not in state:
            continue
        counter = seq if w.startswith("requests") else tok
        out[w] = {
            "limit": state.get(f"{w}:limit"),
            "left": max(0.0, _avail(state, w, counter, backs)),
            "reset_at_ms": state.get(f"{w}:reset"),
            "period_ms": state.get(f"{w}:period"),
        }
    return out


# -- where the state lives -------------------------------------------------------------------------
class PaceStore(Protocol):
    async def admit(self, key: str, now_ms: int, tokens: int) -> Ticket | Paced: ...
    async def learn(
        self, key: str, readings: list[QuotaReading], ticket: Ticket | None
    ) -> State: ...
    async def give_back(self, ticket: Ticket, used: int | None = None) -> State: ...
    async def finished(self, key: str) -> None: ...
    async def state(self, key: str) -> State: ...
    async def close(self) -> None: ...


class MemoryPace:
    """One process's pacing state."""

    backend = "memory"

    def __init__(self) -> None:
        self.states: dict[str, State] = {}

    def _of(self, key: str) -> State:
        return self.states.setdefault(key, {})

    async def admit(self, key: str, now_ms: int, tokens: int) -> Ticket | Paced:
        return admit_on(self._of(key), key, now_ms, tokens)

    async def learn(self, key: str, readings: list[QuotaReading], ticket: Ticket | None) -> State:
        state = self._of(key)
        learn_on(state, readings, ticket)
        return state

    async def give_back(self, ticket: Ticket, used: int | None = None) -> State:
        state = self._of(ticket.key)
        if used is None:
            give_back_on(state, ticket)
        else:
            overestimate_on(state, ticket, used)
        return state

    async def finished(self, key: str) -> None:
        finished_on(self._of(key))

    async def state(self, key: str) -> State:
        return dict(self._of(key))

    async def close(self) -> None:
        return None


class FailoverPace(FailoverStore["RedisPace", MemoryPace]):
    """Redis while it answers, memory when not: every Redis step hands back the shared state,
    kept in memory, so an outage goes on from what every process had learnt, not from nothing.
    On restore memory gives nothing back: the next reading teaches Redis again."""

    _log = log
    _label = "pacing backend"
    _memory_note = "learnt limits not shared"

    def __init__(
        self,
        redis_url: Any,
        *,
        clock_ms: Callable[[], int],
        retry_every_s: float = 2.0,
        prefix: str = "wb:pace:",
        socket_timeout_s: float = 2.0,
        ping_timeout_s: float = 0.2,
    ) -> None:
        from workbench.routing.pacing_redis import RedisPace

        super().__init__(
            RedisPace(redis_url, prefix=prefix, socket_timeout_s=socket_timeout_s),
            MemoryPace(),
            clock_ms=clock_ms,
            retry_every_ms=max(0.0, float(retry_every_s)) * 1000,
            ping_timeout_s=ping_timeout_s,
        )

    async def admit(self, key: str, now_ms: int, tokens: int) -> Ticket | Paced:
        async def on_redis() -> Ticket | Paced:
            verdict, state = await self._redis.admit(key, now_ms, tokens)
            self._memory.states[key] = state
            return verdict

        return await self._serve(on_redis, lambda: self._memory.admit(key, now_ms, tokens))

    async def learn(self, key: str, readings: list[QuotaReading], ticket: Ticket | None) -> State:
        async def on_redis() -> State:
            state = await self._redis.learn(key, readings, ticket)
            self._memory.states[key] = state
            return state

        return await self._serve(on_redis, lambda: self._memory.learn(key, readings, ticket))

    async def give_back(self, ticket: Ticket, used: int | None = None) -> State:
        async def on_redis() -> State:
            state = await self._redis.give_back(ticket, used)
            self._memory.states[ticket.key] = state
            return state

        return await self._serve(on_redis, lambda: self._memory.give_back(ticket, used))

    async def finished(self, key: str) -> None:
        await self._serve(
            lambda: self._redis.finished(key), lambda: self._memory.finished(key), probe=False
        )

    async def state(self, key: str) -> State:
        return await self._serve(
            lambda: self._redis.state(key), lambda: self._memory.state(key), probe=False
        )


# -- the pacer: the store, the concurrency in front of it, and what it tells the sinks ----------
class Pacer:
    """One router's pacing: what each key's provider said (`store`) and, when `ceiling` is set,
    each key's adaptive concurrency. Every change is a `PacingEvent` to the sinks given."""

    def __init__(
        self, store: PaceStore, clock: Callable[[], int], ceiling: int | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        self.concurrency = AdaptiveConcurrency(ceiling) if ceiling else None

    async def slot(self, key: str, timeout_s: float | None) -> bool:
        """Wait for one of `key`'s slots (always True without adaptive concurrency)."""
        if self.concurrency is None:
            return True
        return await self.concurrency.acquire(key, timeout_s)

    async def release(self, key: str, latency_s: float | None) -> None:
        if self.concurrency is not None:
            await self.concurrency.release(key, latency_s)

    async def admit(self, key: str, tokens: int, sinks: tuple[Sink, ...]) -> Ticket | Paced:
        verdict = await self.store.admit(key, self.clock(), tokens)
        if isinstance(verdict, Paced):
            await self._event(sinks, key, "paced", await self.store.state(key))
        return verdict

    async def learn(
        self,
        key: str,
        readings: list[QuotaReading],
        ticket: Ticket | None,
        sinks: tuple[Sink, ...],
    ) -> None:
        if not readings:
            return
        state = await self.store.learn(key, readings, ticket)
        await self._event(sinks, key, "learnt", state)

    async def give_back(self, ticket: Ticket) -> None:
        """The provider never counted `ticket`'s request (a 429, a cache hit): the windows that
        counted it get it back (`give_back_on`). No event of its own: a refusal's reading and
        its cut follow it."""
        await self.store.give_back(ticket)

    async def reconcile(self, ticket: Ticket, used: int) -> None:
        """The provider counted `used` tokens for `ticket`'s answered request: what its estimate
        said beyond that is given back to the token windows (`overestimate_on`)."""
        if ticket.tokens > used:
            await self.store.give_back(ticket, used)

    async def finished(self, key: str) -> None:
        await self.store.finished(key)

    async def answered(self, key: str, sinks: tuple[Sink, ...]) -> None:
        if self.concurrency is not None:
            await self._changed(sinks, await self.concurrency.answered(key))

    async def refused(self, key: str, why: str, sinks: tuple[Sink, ...]) -> None:
        """A 429 or a timeout: the key's concurrency is cut (at most once per round trip)."""
        if self.concurrency is not None:
            await self._changed(sinks, self.concurrency.refused(key, why))

    async def _changed(self, sinks: tuple[Sink, ...], change: Change | None) -> None:
        if change is not None:
            await self._event(sinks, change.key, change.why, await self.store.state(change.key))

    async def _event(self, sinks: tuple[Sink, ...], key: str, why: str, state: State) -> None:
        windows = learnt(state)
        req = (
            windows.get("requests:minute")
            or windows.get("requests:day")
            or windows.get("requests:unknown")
        )
        tok = (
            windows.get("tokens:minute")
            or windows.get("tokens:day")
            or windows.get("tokens:unknown")
        )
        resets = [w["reset_at_ms"] for w in (req, tok) if w and w["reset_at_ms"] is not None]
        await emit(
            sinks,
            PacingEvent(
                key,
                why,
                self.concurrency.limit(key) if self.concurrency else 0,
                self.concurrency.in_flight(key)
                if self.concurrency
                else int(state.get("inflight", 0)),
                requests_limit=req["limit"] if req else None,
                requests_left=req["left"] if req else None,
                tokens_limit=tok["limit"] if tok else None,
                tokens_left=tok["left"] if tok else None,
                reset_at_ms=int(min(resets)) if resets else None,
                at_ms=self.clock(),
            ),
        )

    async def snapshot(self, key: str) -> dict[str, Any]:
        """What `Router.stats()` shows of a key: its concurrency and each learnt window."""
        state = await self.store.state(key)
        return {
            "concurrency": self.concurrency.limit(key) if self.concurrency else None,
            "in_flight": int(state.get("inflight", 0)),
            "learnt": learnt(state),
        }

    async def close(self) -> None:
        await self.store.close()
