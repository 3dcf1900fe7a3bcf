"""One attempt at one model, always in the same order, for `route` and `stream` alike:

    plan → cache lookup → (the walk: slot, breaker, quota, pace) → mask
         → provider.call / provider.stream → unmask → observe → cache store
         → (the walk's bookkeeping: quota, cooldown, breaker, health)

Each step is a small function below; `run` and `stream` compose them. The provider only
speaks to its vendor, so everything a measurement depends on happens here, once:

- plan: which tools the model is offered is a pure function of what it was observed to do
  and of `CallContext.tools_mode` (`plan_request`);
- cache: the key is computed on the planned request, so a reply cached under one plan is
  never served to another; the walk looks it up (`cached`) before it takes anything the
  provider allows (a concurrency slot, a pacing ticket, a quota reservation): a hit sends
  nothing, so it neither waits for those nor uses them up;
- mask: personal data is masked only on the way out of the machine, unmasked on the way in;
- observe: every attempt that carried tools or a picture classifies the model, at no extra
  request (a cache hit asked no model and teaches nothing).

`Hold` is what an attempt holds while it runs (a breaker permit and a quota reservation),
settled exactly once whatever happens, like the breaker's own `Permit`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from workbench.capability.classify import Classification
from workbench.capability.decide import ToolPlan, Verdict, plan_tool_attempt
from workbench.capability.observer import CapabilityObserver
from workbench.errors import CassetteError, ProviderError
from workbench.events import now_ms
from workbench.providers.base import HttpProvider
from workbench.providers.http import ATTEMPT_DEADLINE
from workbench.providers.interface import Provider, unwrap
from workbench.providers.protocols import (
    TEXT_TOOL_PROTOCOL_HINT,
    compact_json,
    family_example,
    family_names,
    family_takes_one_list,
)
from workbench.providers.spec import ModelSpec
from workbench.routing.breaker import Permit
from workbench.routing.cache import cache_key, reply_from_dict, reply_to_dict
from workbench.routing.candidates import Candidate
from workbench.routing.privacy import (
    Masker,
    leaves_the_machine,
    mask_request,
    unmask_reply,
    unmask_stream,
)
from workbench.routing.quota import QuotaStore, Reservation
from workbench.routing.settings import RouteSettings
from workbench.types import (
    CallContext,
    ChatRequest,
    Reply,
    ToolCall,
    ToolsMode,
    messages_carry_images,
)

__all__ = [
    "Attempt",
    "Cancelled",
    "Hold",
    "cached",
    "family_hint",
    "observe_failure",
    "observe_reply",
    "plan_request",
    "prepare",
    "run",
    "single",
    "stream",
]


# ------------------------------------------------------------------ held resources
class Hold:
    """A breaker permit and a quota reservation, taken before a call and settled exactly once
    on every path (the walk settles it in a `finally` when nothing else did): `succeeded`,
    `failed`, `abandoned` (cancelled before anything was shown: the permit's probe slot and the
    quota go back) or `interrupted` (a stream stopped after its first token: the quota was
    spent, the breaker learns nothing). A second settlement raises RuntimeError: it is a bug.

    ::

        held ──succeeded──► settled      held ──abandoned───► settled
        held ──failed─────► settled      held ──interrupted─► settled
    """

    __slots__ = ("_quota", "_settled", "permit", "reservation", "start_ms", "t0")

    def __init__(
        self, permit: Permit, reservation: Reservation, quota: QuotaStore, start_ms: int
    ) -> None:
        self.permit = permit
        self.reservation = reservation
        self._quota = quota
        self._settled = False
        self.start_ms = start_ms
        self.t0 = time.perf_counter()

    @property
    def settled(self) -> bool:
        return self._settled

    @property
    def latency_ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1000

    def _settle(self) -> None:
        if self._settled:
            raise RuntimeError("an attempt's hold is settled exactly once")
        self._settled = True

    async def succeeded(self, reply: Reply) -> None:
        self._settle()
        self.permit.success()
        used = reply.usage.total_tokens
        if reply.cached:
            await self._quota.release(self.reservation)  # a cache hit asked no provider
        elif used is not None:
            await self._quota.reconcile(self.reservation, used)  # real usage beats the guess

    async def failed(self, exc: BaseException) -> None:
        self._settle()
        if not isinstance(exc, ProviderError):
            self.permit.cancel()  # a provider's own bug says nothing of an outage
            return
        if 400 <= exc.status_code < 500:
            # A refused request generated nothing: its tokens go back (the request still counts).
            await self._quota.reconcile(self.reservation, 0)
        self.permit.failure(exc)  # only an outage counts; a 429 or a 400 is neutral

    async def abandoned(self) -> None:
        self._settle()
        self.permit.cancel()
        await self._quota.release(self.reservation)

    def interrupted(self) -> None:
        self._settle()
        self.permit.cancel()


class Cancelled(Exception):
    """The caller's signal fired mid-call."""


# ------------------------------------------------------------------ plan
def family_hint(family: str | None) -> str:
    """How to ask for a call in prose. A model seen writing its calls in a format it was
    trained on (Mistral's `[TOOL_CALLS]`, Hermes' `<tool_call>`) keeps to that format far
    better than to TOOL:/ARGS: lines it has never seen, and every family is read back anyway;
    with no format seen, or one we cannot write, the generic lines are asked for."""
    if not family or family == "tool_lines":
        return TEXT_TOOL_PROTOCOL_HINT
    example = family_example(family, "tool_name", {"argument": "value"})
    if example is None:
        return TEXT_TOOL_PROTOCOL_HINT
    several = "all calls in one list" if family_takes_one_list(family) else "one block per call"
    return (
        f"If you need a tool, call it in this exact format ({several}), then stop:\n"
        f"{example}\nUse one of the tool names offered."
    )


def plan_request(
    request: ChatRequest,
    verdict: Verdict,
    tools_mode: ToolsMode,
    *,
    protocol_family: str | None = None,
) -> ChatRequest:
    """The request as this model should get it. `native` sends the tools as written; `text`
    describes them in the system prompt and reads the calls from prose; `plan` follows the
    observed verdict: a model seen answering tools only in prose gets the text protocol
    instead of a `tools` field it ignores, one the vendor said cannot use tools gets neither,
    and an unknown model gets both (its first real call is the probe). `protocol_family` is
    the prose format the model was seen writing (its stored record's): the text protocol
    then asks for that format (`family_hint`)."""
    if not request.tools or tools_mode == "native":
        return request
    if tools_mode == "text":
        plan = ToolPlan(False, True, False, "tools_mode=text", protocol_family)
    else:
        plan = plan_tool_attempt(verdict, protocol_family=protocol_family)
    if plan.send_tools:
        return request
    system = request.system
    if plan.expect_text_protocol and request.tools_in_prose is not None:
        # The caller's own description goes first, as a benchmark's prompt mode places it.
        system = "\n\n".join(s for s in (request.tools_in_prose.prompt, system) if s)
    elif plan.expect_text_protocol:
        listing = "\n".join(_tool_line(t) for t in request.tools)
        hint = family_hint(plan.protocol_family)
        system = "\n\n".join(s for s in (system, hint, f"Tools:\n{listing}") if s)
    # The tools stay on the request: their names decide which prose calls count.
    return dataclasses.replace(request, system=system, send_tools=False)


def _tool_line(tool: dict[str, Any]) -> str:
    """One tool described in prose, for models that only call tools in prose."""
    fn = tool.get("function") or {}
    params = compact_json(fn.get("parameters") or {})
    return f"- {fn.get('name', '?')}: {fn.get('description', '')} parameters: {params}"


@dataclass(slots=True, frozen=True)
class Attempt:
    """One candidate's request, planned, with everything the later steps need."""

    candidate: Candidate
    request: ChatRequest  # planned, not yet masked
    ctx: CallContext  # this attempt's context (its lane and deadline)
    secret: str | None  # only ever hashed into a capability scope
    masker: Masker | None  # set when this request leaves the machine and is to be masked
    cache_key: str | None  # set when the router has a cache
    carries_images: bool = False  # read once: the vision verdict needs it after the call
    # The request as it leaves the machine: masked once here, so the call and the log of
    # what was sent are the same object.
    sent: ChatRequest | None = None
    # In a replay, the same request planned the other ways this model could have been asked
    # (`replans`): tried in turn when the cassette does not hold the planned one.
    replans: tuple[ChatRequest, ...] = ()

    @property
    def provider(self) -> Provider:
        return self.candidate.provider

    @property
    def model(self) -> str:
        return self.candidate.model.id


async def prepare(
    settings: RouteSettings,
    cand: Candidate,
    request: ChatRequest,
    ctx: CallContext,
    masker: Masker | None,
) -> Attempt:
    """Plan the request for this candidate and key it for the cache."""
    if cand.extra:
        request = dataclasses.replace(request, extra={**request.extra, **cand.extra})
    images = messages_carry_images(request.messages)
    # The credential is only ever hashed into a capability scope: read it when there is one.
    secret = cand.provider.key(ctx) if request.tools or images else None
    replans: tuple[ChatRequest, ...] = ()
    if request.tools and ctx.tools_mode != "native":
        # The record, not just its verdict: a text request asks for the format it was seen in.
        record = await settings.observer.record(cand.provider.id, cand.model.id, secret)
        verdict: Verdict = "unobserved" if record is None else record.verdict
        family = None if record is None else record.protocol_family
        planned = plan_request(request, verdict, ctx.tools_mode, protocol_family=family)
        if _replaying(cand.provider):
            replans = _other_plans(request, planned, ctx.tools_mode)
        request = planned
    else:
        request = plan_request(request, "unobserved", ctx.tools_mode)
    masks = masker if masker is not None and leaves_the_machine(cand.provider) else None
    key = None
    if settings.cache is not None:
        key = cache_key(
            cand.provider.id,
            _origin(cand.provider, ctx),
            cand.model.id,
            request,
            repeat=ctx.repeat,
            masked=masks is not None,
        )
    sent = mask_request(masks, request) if masks is not None else request
    return Attempt(cand, request, ctx, secret, masks, key, images, sent, replans)


def _replaying(provider: Provider) -> bool:
    given = unwrap(provider)
    return (
        isinstance(given, HttpProvider)
        and given.cassette is not None
        and given.cassette.mode == "replay"
    )


def _other_plans(
    request: ChatRequest, planned: ChatRequest, tools_mode: ToolsMode
) -> tuple[ChatRequest, ...]:
    """Every other way a request with tools could have been planned for a model: sent as
    written, in prose in each format, without them. Which one a model gets follows what the
    run has observed of it so far, and under concurrency that follows timing: the recording
    may have asked this model, for this turn, before or after its first answer was read. A
    replay tries these when the cassette lacks the planned one, so the turn is answered the
    way it was recorded rather than by the next model."""
    verdicts: list[tuple[Verdict, str | None]] = [("native", None), ("none", None)]
    verdicts += [("text", family) for family in (None, *family_names())]
    found: list[ChatRequest] = [planned]
    for verdict, family in verdicts:
        other = plan_request(request, verdict, tools_mode, protocol_family=family)
        if other not in found:
            found.append(other)
    return tuple(found[1:])


def plans(attempt: Attempt) -> list[Attempt]:
    """The attempt, then (in a replay) the same attempt planned each other way (`replans`)."""
    masks = attempt.masker
    return [attempt] + [
        dataclasses.replace(
            attempt,
            request=other,
            sent=mask_request(masks, other) if masks is not None else other,
            replans=(),
        )
        for other in attempt.replans
    ]


def _origin(provider: Provider, ctx: CallContext) -> str:
    """What names the endpoint in the cache key: the provider's `cache_origin(ctx)` if it has
    one (a server started on a free port answers the same from a new URL every run), else its
    URL. Optional, so that a provider written without it is used as it is."""
    named = getattr(provider, "cache_origin", None)
    value = named(ctx) if callable(named) else named
    return value if isinstance(value, str) and value else provider.base_url(ctx)


def single(provider: Provider, model: str, request: ChatRequest, ctx: CallContext) -> Attempt:
    """An attempt outside any walk (the probe command): sent as written, unmasked, uncached,
    observed by the same steps as routed traffic."""
    spec = next((m for m in provider.models if m.id == model), None) or ModelSpec(model)
    images = messages_carry_images(request.messages)
    return Attempt(Candidate(provider, spec), request, ctx, provider.key(ctx), None, None, images)


# ------------------------------------------------------------------ cache
def cached(settings: RouteSettings, attempt: Attempt) -> Reply | None:
    if settings.cache is None or attempt.cache_key is None:
        return None
    hit = settings.cache.get(attempt.cache_key, now_ms())
    return reply_from_dict(hit) if hit is not None else None


def remember(settings: RouteSettings, attempt: Attempt, reply: Reply) -> None:
    if settings.cache is not None and attempt.cache_key is not None:
        settings.cache.put(
            attempt.cache_key,
            reply.provider,
            reply.model,
            reply_to_dict(reply),
            settings.cache_ttl_s,
        )


# ------------------------------------------------------------------ mask
def masked(attempt: Attempt) -> ChatRequest:
    """The request as it leaves the machine: masked only for a provider outside it."""
    if attempt.sent is not None:
        return attempt.sent
    if attempt.masker is None:
        return attempt.request
    return mask_request(attempt.masker, attempt.request)


# ------------------------------------------------------------------ observe
async def observe_reply(
    observer: CapabilityObserver, attempt: Attempt, reply: Reply
) -> list[Classification]:
    """What a successful attempt says of the model: native calls, calls in prose, or a plain
    answer (which proves nothing: a model may simply not need a tool)."""
    if not attempt.request.tools and not attempt.carries_images:
        return []  # nothing was offered to observe: most traffic ends here
    native = [c for c in reply.tool_calls if c.source == "native"]
    prose = [c for c in reply.tool_calls if c.source == "text"]
    return await _observe(
        observer,
        attempt,
        reply.raw_status,
        summary=_summary(native, reply.finish_reason),
        text_found=bool(prose),
        family=prose[0].family if prose else None,
        answer=reply.text,
    )


async def observe_failure(
    observer: CapabilityObserver, attempt: Attempt, exc: BaseException
) -> list[Classification]:
    """A refusal may say the model cannot use tools; an empty 200 is a plain non-answer.
    Transport failures carry no status and teach nothing."""
    if not isinstance(exc, ProviderError):
        return []
    if exc.status_code >= 400:
        return await _observe(observer, attempt, exc.status_code, body=exc.full_body)
    if exc.kind == "empty":
        return await _observe(
            observer,
            attempt,
            exc.status_code or 200,
            summary=_summary([], exc.finish_reason),
            answer="",
        )
    return []


async def _observe(
    observer: CapabilityObserver,
    attempt: Attempt,
    status: int,
    *,
    body: str = "",
    summary: dict[str, Any] | None = None,
    text_found: bool = False,
    family: str | None = None,
    answer: str | None = None,
) -> list[Classification]:
    request, ctx = attempt.request, attempt.ctx
    found: list[Classification] = []
    if request.tools:
        found.append(
            await observer.observe_tools(
                attempt.provider.id,
                attempt.model,
                attempt.secret,
                status=status,
                parsed=summary,
                body_text=body,
                text_protocol_found=text_found,
                protocol_family=family,
                sinks=ctx.sinks,
                offered_natively=request.send_tools,
            )
        )
    if attempt.carries_images:
        found.append(
            await observer.observe_vision(
                attempt.provider.id,
                attempt.model,
                attempt.secret,
                status=status,
                body_text=body,
                answer_text=answer,
                expected=ctx.expect_image,
                sinks=ctx.sinks,
            )
        )
    return found


def _summary(calls: list[ToolCall], finish: str | None) -> dict[str, Any]:
    """An OpenAI-shaped view of a reply, which is what `classify_tool_attempt` reads."""
    wire = [{"id": c.id, "function": {"name": c.name, "arguments": c.raw_arguments}} for c in calls]
    return {"choices": [{"message": {"tool_calls": wire}, "finish_reason": finish}]}


# ------------------------------------------------------------------ the call
async def _call(
    attempt: Attempt, request: ChatRequest, limit_s: float | None, signal: asyncio.Event | None
) -> Reply:
    """The call, bounded by the attempt deadline and raced against the caller's signal. The
    deadline is told to the HTTP edge (`ATTEMPT_DEADLINE`): a cancel before it is not ours."""
    call = attempt.provider.call(request, attempt.ctx, attempt.model)
    deadline = None if limit_s is None else time.monotonic() + limit_s
    if signal is None:
        token = ATTEMPT_DEADLINE.set(deadline)
        try:
            async with asyncio.timeout(limit_s):
                return await call
        except TimeoutError:
            raise _timeout(attempt, limit_s) from None
        finally:
            ATTEMPT_DEADLINE.reset(token)
    token = ATTEMPT_DEADLINE.set(deadline)
    try:
        task = asyncio.ensure_future(call)  # the task copies the deadline with the context
    finally:
        ATTEMPT_DEADLINE.reset(token)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait(
            {task, waiter}, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    if waiter in done:
        raise Cancelled
    raise _timeout(attempt, limit_s)


def _timeout(attempt: Attempt, timeout: float | None) -> ProviderError:
    return ProviderError(
        f"no response within {timeout} s — abandoned, trying the next model",
        kind="timeout",
        provider=attempt.provider.id,
        model=attempt.model,
    )


async def run(
    settings: RouteSettings,
    attempt: Attempt,
    signal: asyncio.Event | None,
    replanned: Callable[[Attempt], None] | None = None,
) -> Reply:
    """mask → call → unmask → observe → cache store, for an attempt the cache did not answer
    (`cached`, looked up first). Raises what the call raised (observed first); the walk does
    the bookkeeping. In a replay whose cassette lacks the planned request, the model's other
    plans are tried (`plans`), each one told to `replanned` before it is asked."""
    tried = plans(attempt)
    miss: CassetteError | None = None
    for planned in tried:
        if planned is not attempt and replanned is not None:
            replanned(planned)
        try:
            reply = await _call(planned, masked(planned), settings.attempt_timeout_s, signal)
        except CassetteError as exc:
            if exc.code != "REPLAY_MISS":
                raise
            miss = miss or exc
            continue
        except ProviderError as exc:
            await observe_failure(settings.observer, planned, exc)
            raise
        if planned.masker is not None:
            reply = unmask_reply(planned.masker, reply)
        reply.verdicts = await observe_reply(settings.observer, planned, reply)
        remember(settings, planned, reply)
        return reply
    raise _no_plan_recorded(miss, attempt, tried, replanned)


def _no_plan_recorded(
    miss: CassetteError | None,
    attempt: Attempt,
    tried: list[Attempt],
    replanned: Callable[[Attempt], None] | None,
) -> CassetteError:
    """The cassette holds none of the plans: the walk is told of the planned request again,
    and gets the first plan's miss, whose nearest recorded request is the one worth reading."""
    assert miss is not None
    if replanned is not None and len(tried) > 1:
        replanned(attempt)
    return miss


async def stream(
    settings: RouteSettings,
    attempt: Attempt,
    first_token_s: float | None,
    replanned: Callable[[Attempt], None] | None = None,
) -> AsyncGenerator[str | Reply]:
    """The same steps as `run`, for a stream: text deltas (unmasked as they come), then the
    Reply. (A cache hit is the walk's: its whole text as one delta.) The first item must come
    within `first_token_s` (None: no bound). A replay's miss comes before the first item, so
    the model's other plans are tried as `run` tries them."""
    tried = plans(attempt)
    miss: CassetteError | None = None
    for planned in tried:
        if planned is not attempt and replanned is not None:
            replanned(planned)
        source = planned.provider.stream(masked(planned), planned.ctx, planned.model)
        items = unmask_stream(planned.masker, source) if planned.masker is not None else source
        started = False
        try:
            async for item in _first_token_bounded(items, first_token_s):
                started = True
                if isinstance(item, Reply):
                    item.verdicts = await observe_reply(settings.observer, planned, item)
                    remember(settings, planned, item)
                yield item
        except CassetteError as exc:
            if started or exc.code != "REPLAY_MISS":
                raise
            miss = miss or exc
            continue
        except ProviderError as exc:
            await observe_failure(settings.observer, planned, exc)
            raise
        finally:
            await _aclose(items)
            if items is not source:
                await _aclose(source)
        return
    raise _no_plan_recorded(miss, attempt, tried, replanned)


async def _aclose(stream: AsyncIterator[Any]) -> None:
    """Close a stream now rather than when it is collected (a generator holds a connection)."""
    closer = getattr(stream, "aclose", None)  # a user's provider may return a plain iterator
    if closer is not None:
        await closer()


async def _first_token_bounded(
    stream: AsyncIterator[str | Reply], first_token_s: float | None
) -> AsyncGenerator[str | Reply]:
    """Pass a stream through, failing it if its first item takes longer than `first_token_s`."""
    iterator = aiter(stream)
    deadline = None if first_token_s is None else time.monotonic() + first_token_s
    token = ATTEMPT_DEADLINE.set(deadline)
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
    finally:
        ATTEMPT_DEADLINE.reset(token)
    yield first
    async for item in iterator:
        yield item
