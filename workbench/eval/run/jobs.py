"""The jobs of a run: one (item, repeat, configuration) each, made `concurrency` at a time and
logged as they are made.

`run_jobs` is the one loop of both engines (this process's and each Ray worker's); a job is
routed, its tools run against the demo catalogue (read tools answer, write tools only propose
pending actions), its output cleaned and graded, and every row goes to the job's `RunLog`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from workbench.capability import CapabilityObserver
from workbench.capability.store import CapabilityStore
from workbench.config.providers_file import ProvidersConfig
from workbench.errors import CassetteError, ConfigError, WorkbenchError
from workbench.eval.dataset.masking import masker_for
from workbench.eval.dataset.prompt_set import Item
from workbench.eval.run.holding import ItemHold, Unanswered
from workbench.eval.run.options import Cleaner, RunConfig
from workbench.eval.scoring.grading import Grade, grade
from workbench.eval.store.database import OutputRow
from workbench.providers.http import pool_for
from workbench.routing import Router, RouteResult
from workbench.routing.cache import ResponseCache, reply_from_dict, reply_to_dict
from workbench.routing.privacy import Masker
from workbench.tools.demo import demo_tools
from workbench.tools.pending import PendingActions
from workbench.tools.tool_loop import run_tool_loop, tool_caller
from workbench.types import CallContext, ChatRequest, Reply

if TYPE_CHECKING:
    from workbench.eval.suites.bfcl.case import BfclEntry
    from workbench.eval.suites.bfcl.memory import MemoryChains
    from workbench.eval.suites.bfcl.play import Sandboxes, Verdict


@dataclass(slots=True)
class Configuration:
    """One configuration of a run: its router, under the name its rows carry, and its prices
    (per model, from its providers file)."""

    name: str
    router: Router
    prices: dict[str, tuple[float, float]]


@dataclass(frozen=True, slots=True)
class Job:
    """One output to make: an item, a repeat, a configuration; what an interrupted run had
    already received for it (`saved`: its answered turns, replayed instead of asked again) and
    how many attempts it logged (`tries`: the next attempt's place, so no two share an id)."""

    item: Item
    repeat: int
    config: str
    saved: tuple[tuple[str, dict[str, Any]], ...] = ()
    tries: int = 0
    # Its tool-step rows already logged, per (step id, finished?): replayed turns run their
    # tools again, and those rows are not logged twice.
    steps: Mapping[tuple[str, bool], int] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.item.id, self.repeat, self.config)


@dataclass(frozen=True, slots=True)
class JobSettings:
    """How every job of a run is made, the same in every process that makes them: the run's
    settings, and the cleaner (a hook, resolved by then)."""

    run_id: str
    config: RunConfig
    clean: Cleaner | None
    # BFCL's memory scenarios: which conversation each memory item waits for (local engine).
    memory: MemoryChains | None = None
    # BFCL's backend workers, reused from entry to entry (made by `run_jobs`, per process).
    sandboxes: Sandboxes | None = None


class RunLog(Protocol):
    """Where a job's rows go: the DuckDB store in the local engine, a Ray worker's outbox
    (shipped to the driver's store) in the Ray engine. Same builders, same rows."""

    broken: WorkbenchError | None

    def sink(
        self,
        run_id: str,
        item_id: str | None = None,
        repeat: int = 0,
        config: str = "",
        *,
        tries: int = 0,
        steps: Mapping[tuple[str, bool], int] | None = None,
    ) -> Callable[[object], None]: ...

    def add_reply(
        self,
        run_id: str,
        item_id: str,
        repeat: int,
        config: str,
        turn: int,
        key: str,
        reply: dict[str, Any],
    ) -> None: ...

    def add_output(self, row: OutputRow) -> None: ...


def build_configs(
    entries: Sequence[Router | ProvidersConfig],
    capabilities: CapabilityStore,
    cache: ResponseCache | None,
    cache_ttl_s: float | None,
    concurrency: int,
    *,
    router_options: Mapping[str, Any] | None = None,
) -> list[Configuration]:
    """Each configuration gets its own router; every router observes into `capabilities`, so
    the next run plans from what this one saw, and a providers config caches into `cache`.
    `router_options` override the file's (the Ray engine's shared Redis, its sinks). A
    providers config's router fails fast when every model is cooling (`when_all_cooling` is
    "fail" whatever the file says): the runner holds the item instead, within --max-wait. A
    `Router` given as it is keeps its own settings."""
    out: list[Configuration] = []
    for n, entry in enumerate(entries):
        if isinstance(entry, Router):
            router, name, prices = entry, f"router{n}" if len(entries) > 1 else "router", {}
        elif isinstance(entry, ProvidersConfig):
            # A run paces each provider:model by what the provider says (AIMD up to the run's
            # concurrency): the file may set its own ceiling, the engine's options come last.
            # A run's routes fail fast when every model is cooling: the item's hold does the
            # waiting, bounded by --max-wait (a route told to "wait" would sleep inside it
            # until a day's reset, hours away). The file's `when_all_cooling` is for apps.
            options = {
                "adaptive_concurrency": concurrency,
                **entry.router_options,
                "when_all_cooling": "fail",
            }
            router = Router(entry.providers, **{**options, **(router_options or {})})
            if cache_ttl_s and cache is not None:
                router.with_cache(cache, cache_ttl_s)
            name, prices = entry.name, entry.prices
        else:
            raise ConfigError(f"not a Router or a providers config: {entry!r}", code="RUN_INVALID")
        router.observer = CapabilityObserver(capabilities, sinks=router.observer.sinks)
        router.use_http(pool=pool_for(concurrency))  # a keep-alive connection per worker
        out.append(Configuration(name, router, prices))
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"two configurations share a name: {names}", code="RUN_INVALID")
    return out


async def run_jobs(
    next_job: Callable[[], Job | Awaitable[Job | None] | None],
    configs: Sequence[Configuration],
    log: RunLog,
    settings: JobSettings,
    finished: Callable[[OutputRow], Any],
    actions: PendingActions | None,
) -> None:
    """Make jobs' outputs, the run's `concurrency` at a time, each logged to `log` as it is
    made, until `next_job()` gives None. The one loop of both engines: the local engine's over its list
    (a plain call), each Ray worker's over its queue (awaited while the queue is empty)."""
    by_name = {c.name: c for c in configs}
    from workbench.eval.suites.bfcl.play import Sandboxes  # idle until a BFCL entry takes one

    sandboxes = Sandboxes()
    settings = dataclasses.replace(settings, sandboxes=sandboxes)

    async def worker() -> None:
        # `concurrency` workers pull from one source: a 100,000-item run holds 32 tasks, not
        # 100,000 waiting ones (taking a job has no await, so no two workers take the same).
        while True:
            job = next_job()
            if inspect.isawaitable(job):
                job = await job
            if job is None:
                return
            row = await _run_item(
                job,
                by_name[job.config],
                log,
                settings,
                actions if settings.config.tool_loop else None,
            )
            log.add_output(row)
            if log.broken is not None:  # the store cannot write (a full disk): stop the run
                raise log.broken
            finished(row)

    try:
        await _all_or_first_error([worker() for _ in range(settings.config.concurrency)])
    finally:
        await asyncio.to_thread(sandboxes.close)


async def _all_or_first_error(coros: list[Any]) -> None:
    """Run the workers together; the first to fail stops the others (`gather` would leave
    them asking models while the error travels up, e.g. past a full disk). A worker whose
    task was cancelled from inside (by a tool or a library, not by the run) failed too: its
    job would otherwise be missing from a run that says it finished."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    pending = set(tasks)
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:  # a real error first: it says more than a cancellation
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()
            if any(task.cancelled() for task in done):
                raise RuntimeError("a job was cancelled from inside the run")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# How a job's turn is asked when not through its router's walk: (request, its context, its
# masker, the turn's index) → what `Router.route` returns (the run's batch mode, `batch_mode.py`).
Ask = Callable[[ChatRequest, CallContext, Masker | None, int], Awaitable[RouteResult]]


async def _run_item(
    job: Job,
    config: Configuration,
    log: RunLog,
    settings: JobSettings,
    actions: PendingActions | None,
    ask: Ask | None = None,
) -> OutputRow:
    item, repeat, saved, run_id = job.item, job.repeat, job.saved, settings.run_id
    tools_mode, clean = settings.config.mode, settings.clean
    request = item.request()  # the router plans the tools per model (see routing/attempt.py)
    ctx = CallContext(
        sinks=(log.sink(run_id, item.id, repeat, config.name, tries=job.tries, steps=job.steps),),
        complexity=item.complexity,
        intent=item.intent,
        purpose="eval",
        tools_mode=tools_mode,
        repeat=repeat,
    )
    base: dict[str, Any] = {
        "run_id": run_id,
        "item_id": item.id,
        "repeat": repeat,
        "config": config.name,
    }
    started = time.perf_counter()
    if item.messages and item.messages[-1].get("role") == "assistant":
        return _replay(item, base, clean, started)
    replies: list[tuple[str, Reply]] = []
    # One masker per conversation: a name learnt once is masked everywhere after.
    # BFCL's questions are public benchmark text, sent as BFCL sends them: masking would rewrite
    # them (a date read as a phone number, a name and its closing quote) and the model would
    # answer another benchmark.
    bfcl = item.expect is not None and item.expect.bfcl is not None
    masker = masker_for(item) if settings.config.mask and not bfcl else None
    # The provider's refusals hold the item and ask again (see holding.py), within the run's
    # limits: a benchmark measures the model, never the rate limiter.
    hold = ItemHold(settings.config.max_wait_s, settings.config.max_tries)

    async def turn(asked: ChatRequest) -> Reply:
        n = len(replies)
        if n < len(saved):  # answered before the run was interrupted: never asked twice
            key, data = saved[n]
            replies.append((key, reply_from_dict(data, cached=bool(data.get("cached")))))
            return replies[-1][1]
        # The loop decides messages and whether tools are offered; the item decides the rest.
        routed = dataclasses.replace(
            request, messages=asked.messages, system=asked.system, tools=asked.tools
        )
        if ask is not None:
            result = await ask(routed, ctx, masker, n)
        else:
            result = await hold.ask(lambda: config.router.route(routed, ctx=ctx, masker=masker))
        replies.append((result.key, result.value))
        answer = reply_to_dict(result.value) | {"cached": result.value.cached}
        log.add_reply(run_id, item.id, repeat, config.name, n, result.key, answer)
        return result.value

    entry = _bfcl_entry(item)
    # A multi-turn entry's text answers end a BFCL turn, not the entry: it always plays again,
    # its journaled replies answering the turns they answered (the backends' state rebuilt).
    final = None if entry is not None else _final_answer(saved)
    played: Verdict | None = None
    passed_on: dict[str, Any] = {}  # a memory conversation's snapshot, even when it failed
    try:
        if entry is not None:
            played = await _play_entry(entry, job, config.name, settings, turn, ctx, passed_on)
            text = played.played.text
        elif final is not None:
            # The interrupted run had already received the item's last answer: it is graded
            # from the journaled turns, and no model is asked and no tool run again.
            replies.extend(final)
            text = final[-1][1].text
        elif item.tools and actions is not None and not _graded_on_first_answer(item):
            # Read tools answer; write tools only PROPOSE (whatever protocol asked for them).
            tools = demo_tools(item.tools, actions, proposed_by=f"{config.name}:{item.id}")
            loop = await run_tool_loop(
                request.system,
                list(request.messages),
                list(item.tools),
                turn,
                tool_caller(tools, timeout_s=10, sinks=ctx.sinks, masker=masker),
                max_turns=4,
                # 60 s for the model and the tools; an item's holds come on top (at most
                # max_wait_s): time the provider made it wait must not end its loop. A batch
                # round takes minutes to a day: batch mode's loop is bounded by its turns.
                max_s=60 + settings.config.max_wait_s if ask is None else math.inf,
            )
            text = loop.text
        else:
            text = (await turn(request)).text
    except Unanswered as held:  # the provider's refusals: unanswered, never graded as wrong
        return OutputRow(
            **base,
            key=replies[-1][0] if replies else None,
            tool_calls=_calls_json(replies),
            latency_ms=(time.perf_counter() - started) * 1000,
            cached=False,
            error_code=held.code,
            error_message=held.message[:500],
            at_ms=int(time.time() * 1000),
            unanswered=held.reason,
            retry_at_ms=held.retry_at_ms,
            grade=json.dumps(passed_on) if passed_on else None,
        )
    except WorkbenchError as exc:  # the route failed: a logged outcome, not a crashed run
        if exc.code.startswith("STORE_"):  # the store failed, not the item: the run stops
            raise
        if isinstance(exc, CassetteError):  # REPLAY_MISS: every later item meets it too
            raise
        return OutputRow(
            **base,
            key=replies[-1][0] if replies else None,
            tool_calls=_calls_json(replies),
            # No answer, no verdict: the pass rate is over the graded answers, and a failure
            # is counted beside it (see `workbench.eval.analysis.outcomes`).
            passed=None,
            score=None,
            latency_ms=(time.perf_counter() - started) * 1000,
            cached=False,
            error_code=exc.code,
            error_message=str(exc)[:500],
            at_ms=int(time.time() * 1000),
            grade=json.dumps(passed_on) if passed_on else None,
        )
    if played is not None:
        return _entry_output(base, played, replies, started)
    calls = [c for _, reply in replies for c in reply.tool_calls]
    first = replies[0][1]
    if _graded_on_first_answer(item) and first.content is not None:
        text = first.content  # prompting mode decodes the reply as written, calls and all
    cleaned = clean(text, item.language) if clean else text.strip()
    verdict = grade(item, cleaned, calls, raw=text, tools_mode=tools_mode)
    return OutputRow(
        **base,
        key=replies[-1][0],
        raw=text,
        cleaned=cleaned,
        tool_calls=_calls_json(replies),
        # How the model answered the tools offered: its first turn says (later turns read results).
        protocol=first.protocol,
        passed=verdict.passed if verdict else None,
        score=verdict.score if verdict else None,
        grade=grade_json(verdict),
        latency_ms=(time.perf_counter() - started) * 1000,
        tokens_in=_total(r.usage.prompt_tokens for _, r in replies),
        tokens_out=_total(r.usage.completion_tokens for _, r in replies),
        cached=all(r.cached for _, r in replies),
        at_ms=int(time.time() * 1000),
    )


async def _play_entry(
    entry: BfclEntry,
    job: Job,
    config: str,
    settings: JobSettings,
    turn: Callable[[ChatRequest], Awaitable[Reply]],
    ctx: CallContext,
    passed_on: dict[str, Any],
) -> Verdict:
    """A BFCL multi-turn or agentic entry, played and graded. A memory entry starts from the
    memory its scenario's conversation before it left, and a prerequisite conversation hands
    on what it leaves — or, if it failed, what it started from, so no question waits forever;
    if the provider kept it unanswered (or the one before it), the links after it are too."""
    from workbench.eval.suites.bfcl.memory import ChainWaiting
    from workbench.eval.suites.bfcl.play import play_and_grade  # BFCL runs only

    chains = settings.memory
    if entry.scenario is None or chains is None:
        return await play_and_grade(
            entry,
            mode=settings.config.mode,
            ask=turn,
            sinks=ctx.sinks,
            web=settings.config.bfcl_web,
            sandboxes=settings.sandboxes,
        )
    left: dict[str, Any] = {}
    held: Exception | None = None
    try:
        try:
            memory = left = await chains.before(job.item.id, job.repeat, config)
        except ChainWaiting as waiting:
            from workbench.errors import RoutingError

            raise Unanswered("daily_quota", waiting.at_ms, RoutingError(str(waiting)), 0) from None
        verdict = await play_and_grade(
            entry,
            mode=settings.config.mode,
            ask=turn,
            sinks=ctx.sinks,
            memory=memory,
            sandboxes=settings.sandboxes,
        )
        if verdict.memory is not None:
            left = verdict.memory
        return verdict
    except Unanswered as unanswered:
        held = unanswered
        raise
    finally:
        if entry.prerequisite:
            chains.after(job.item.id, job.repeat, config, left, held)
            # A conversation that failed still says what it passed on: a resumed run starts
            # the next one from it (its output row keeps it, as a finished one's does).
            passed_on["memory"] = left


def _bfcl_entry(item: Item) -> BfclEntry | None:
    """The BFCL multi-turn entry an item is, if it is one (only BFCL runs load its module)."""
    bfcl = item.expect.bfcl if item.expect is not None else None
    if bfcl is None or not hasattr(bfcl, "turns"):
        return None
    return cast("BfclEntry", bfcl)


def _entry_output(
    base: dict[str, Any], verdict: Verdict, replies: list[tuple[str, Reply]], started: float
) -> OutputRow:
    """A played entry's row: its last answer, every call of every turn, BFCL's verdict."""
    text = verdict.played.text
    return OutputRow(
        **base,
        key=replies[-1][0] if replies else None,
        raw=text,
        cleaned=text.strip(),
        tool_calls=_calls_json(replies),
        protocol=replies[0][1].protocol if replies else None,
        passed=verdict.valid,
        score=None if verdict.valid is None else 1.0 if verdict.valid else 0.0,
        grade=verdict.grade_json(),
        latency_ms=(time.perf_counter() - started) * 1000,
        tokens_in=_total(r.usage.prompt_tokens for _, r in replies),
        tokens_out=_total(r.usage.completion_tokens for _, r in replies),
        cached=bool(replies) and all(r.cached for _, r in replies),
        at_ms=int(time.time() * 1000),
    )


def _graded_on_first_answer(item: Item) -> bool:
    """A BFCL question grades the calls of the model's first answer: nothing runs them."""
    return item.expect is not None and item.expect.bfcl is not None


def _final_answer(saved: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, Reply]] | None:
    """The journaled turns of an item, if the last one is a final answer (text, no tool call):
    a resumed run grades them as they are. Otherwise None: the item runs (a loop cut between
    turns replays its answered turns and runs their tools again to go on)."""
    if not saved:
        return None
    last = saved[-1][1]
    if last.get("tool_calls") or not str(last.get("text") or "").strip():
        return None
    return [(key, reply_from_dict(d, cached=bool(d.get("cached")))) for key, d in saved]


def _replay(item: Item, base: dict[str, Any], clean: Cleaner | None, started: float) -> OutputRow:
    """An item that already holds the model's output (its last message): clean and grade it,
    with no model call — the cleaning benchmark measures the cleaner, not a provider."""
    raw = str(item.messages[-1].get("content") or "")
    cleaned = clean(raw, item.language) if clean else raw.strip()
    verdict = grade(item, cleaned, [], raw=raw)
    return OutputRow(
        **base,
        raw=raw,
        cleaned=cleaned,
        tool_calls="[]",
        passed=verdict.passed if verdict else None,
        score=verdict.score if verdict else None,
        grade=grade_json(verdict),
        latency_ms=(time.perf_counter() - started) * 1000,
        cached=False,
        at_ms=int(time.time() * 1000),
    )


def grade_json(verdict: Grade | None) -> str | None:
    """The `grade` column: the checks and the reason, or None when nothing was expected."""
    if not verdict:
        return None
    fields: dict[str, Any] = {"checks": verdict.checks, "reason": verdict.reason}
    if verdict.error_type is not None:
        fields["error_type"] = verdict.error_type
    return json.dumps(fields)


def _calls_json(replies: list[tuple[str, Reply]]) -> str:
    calls = [asdict(c) for _, reply in replies for c in reply.tool_calls]
    return json.dumps(calls, ensure_ascii=False)


def _total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


__all__ = [
    "Configuration",
    "Job",
    "JobSettings",
    "RunLog",
    "build_configs",
    "grade_json",
    "run_jobs",
]
