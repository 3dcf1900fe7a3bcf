"""`run_prompt_set`: every item of a prompt set, through one or more router configurations,
logged to DuckDB as it happens.

For each (item, repeat, config): route the item; the router's attempt pipeline plans the tools
for each model from what it was observed to do, answers from the response cache when the same
planned request was answered before, and classifies every attempt into the store's capability
records; for an item that offers tools, run the tool loop against the demo
catalogue (read tools answer, write tools only propose pending actions); clean the output,
grade it against `expect`, log. The store is the run's
memory: an interrupted run keeps everything logged so far, and `resume` skips what is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from workbench.capability import CapabilityObserver
from workbench.capability.store import CapabilityStore
from workbench.config.providers_file import ProvidersConfig
from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.dataset.masking import masker_for
from workbench.eval.dataset.prompt_set import Dataset, Item, open_dataset
from workbench.eval.scoring.grading import Grade, grade
from workbench.eval.store.database import OutputGrade, OutputRow, Store
from workbench.providers.http import pool_for
from workbench.routing import Router
from workbench.routing.cache import ResponseCache, reply_from_dict, reply_to_dict
from workbench.text.cleaner import ResponseCleaner, load_vocabulary
from workbench.tools.demo import demo_executors, demo_tools
from workbench.tools.pending import PendingActions
from workbench.tools.tool_loop import run_tool_loop, tool_caller
from workbench.types import CallContext, ChatRequest, Reply, ToolsMode

if TYPE_CHECKING:
    from workbench.eval.engines.ray.engine import RayEngine as Engine

# "probe" is accepted for "plan": the first call to an unknown model is its probe.
RunToolsMode = Literal["plan", "probe", "native", "text"]
Cleaner = Callable[[str, str | None], str]  # (text, language) → what a person reads


@dataclass(slots=True)
class RunSummary:
    run_id: str
    status: str
    done: int = 0
    skipped: int = 0
    errors: int = 0
    passed: int = 0
    graded: int = 0
    by_config: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0
    leaks: int | None = None  # the masking audit's count, when a request log was audited
    workers: list[dict[str, Any]] = field(default_factory=list)  # each Ray worker's stats()

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None


@dataclass(slots=True)
class _Config:
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
    """How every job of a run is made, the same in every process that makes them."""

    run_id: str
    tools_mode: ToolsMode
    clean: Cleaner | None
    mask: bool = True
    tool_loop: bool = True


class RunLog(Protocol):
    """Where a job's rows go: the DuckDB store in the local engine, a Ray worker's outbox
    (shipped to the driver's store) in the Ray engine. Same builders, same rows."""

    broken: WorkbenchError | None

    def sink(
        self, run_id: str, item_id: str | None = None, repeat: int = 0, config: str = "",
        *, tries: int = 0, steps: Mapping[tuple[str, bool], int] | None = None,
    ) -> Callable[[object], None]: ...  # fmt: skip

    def add_reply(
        self, run_id: str, item_id: str, repeat: int, config: str, turn: int, key: str,
        reply: dict[str, Any],
    ) -> None: ...  # fmt: skip

    def add_output(self, row: OutputRow) -> None: ...


def build_configs(
    entries: Sequence[Router | ProvidersConfig],
    capabilities: CapabilityStore,
    cache: ResponseCache | None,
    cache_ttl_s: float | None,
    concurrency: int,
    *,
    router_options: Mapping[str, Any] | None = None,
) -> list[_Config]:
    """Each configuration gets its own router; every router observes into `capabilities`, so
    the next run plans from what this one saw, and a providers config caches into `cache`.
    `router_options` override the file's (the Ray engine's shared Redis, its sinks)."""
    out: list[_Config] = []
    for n, entry in enumerate(entries):
        if isinstance(entry, Router):
            router, name, prices = entry, f"router{n}" if len(entries) > 1 else "router", {}
        elif isinstance(entry, ProvidersConfig):
            router = Router(entry.providers, **{**entry.router_options, **(router_options or {})})
            if cache_ttl_s and cache is not None:
                router.with_cache(cache, cache_ttl_s)
            name, prices = entry.name, entry.prices
        else:
            raise ConfigError(f"not a Router or a providers config: {entry!r}", code="RUN_INVALID")
        router.observer = CapabilityObserver(capabilities, sinks=router.observer.sinks)
        router.use_http(pool=pool_for(concurrency))  # a keep-alive connection per worker
        out.append(_Config(name, router, prices))
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"two configurations share a name: {names}", code="RUN_INVALID")
    return out


def _entries(
    router_or_config: Router | ProvidersConfig | Sequence[Router | ProvidersConfig],
) -> list[Router | ProvidersConfig]:
    if isinstance(router_or_config, Sequence):
        return list(router_or_config)
    return [router_or_config]


async def run_prompt_set(
    dataset: Dataset | str | Path,
    router_or_config: Router | ProvidersConfig | Sequence[Router | ProvidersConfig],
    store: Store,
    concurrency: int = 8,
    repeats: int = 1,
    tools_mode: RunToolsMode = "plan",
    run_name: str | None = None,
    resume: str | None = None,
    *,
    cache_ttl_s: float | None = None,
    clean: Cleaner | None = None,
    progress: bool = True,
    on_item: Callable[[str, int, str], Any] | None = None,
    tool_loop: bool = True,
    on_start: Callable[[str, int], Any] | None = None,
    mask: bool = True,
    engine: Engine | None = None,
) -> RunSummary:
    """Run `dataset` through every configuration; see the module docstring. `engine` runs the
    jobs: None, this process (async, `concurrency` at a time); a `RayEngine`, Ray actors, each
    with `concurrency` of its own, every row still logged by this process's `store`."""
    mode: ToolsMode = "plan" if tools_mode == "probe" else tools_mode
    if mode not in ("plan", "native", "text"):
        raise ConfigError(
            f"tools_mode must be plan, native or text, not {tools_mode!r}", code="RUN_INVALID"
        )
    if concurrency < 1 or repeats < 1:
        raise ConfigError("concurrency and repeats must be at least 1", code="RUN_INVALID")
    if not isinstance(dataset, Dataset):
        dataset = open_dataset(dataset)  # validated whole before any request is sent
    _check_bfcl_readers(dataset, mode)
    entries = _entries(router_or_config)
    if clean is None:
        clean = default_cleaner(dataset.path).clean
    plan = _Plan(dataset, entries, mode, concurrency, repeats, run_name, resume, cache_ttl_s,
                 clean, progress, on_item, tool_loop, on_start, mask)  # fmt: skip
    if engine is None:
        configs = build_configs(entries, store.capabilities, store.cache, cache_ttl_s, concurrency)
        try:
            return await _run_set(plan, store, [c.name for c in configs], configs, None)
        finally:
            for config in configs:
                with contextlib.suppress(Exception):
                    await config.router.close()
    try:  # Ray joined or started, one Redis reachable: refused before the run is started
        names = await engine.prepare(entries, cache_ttl_s, concurrency)
        return await _run_set(plan, store, names, [], engine)
    finally:  # whatever ends the run (a bad --resume too): the workers, Ray, redis-server
        await engine.close()


@dataclass(frozen=True, slots=True)
class _Plan:
    """`run_prompt_set`'s arguments, checked."""

    dataset: Dataset
    entries: list[Router | ProvidersConfig]
    mode: ToolsMode
    concurrency: int
    repeats: int
    run_name: str | None
    resume: str | None
    cache_ttl_s: float | None
    clean: Cleaner
    progress: bool
    on_item: Callable[[str, int, str], Any] | None
    tool_loop: bool
    on_start: Callable[[str, int], Any] | None
    mask: bool


async def _run_set(
    plan: _Plan, store: Store, names: list[str], configs: list[_Config], engine: Engine | None
) -> RunSummary:
    dataset, resume = plan.dataset, plan.resume
    if resume:
        run = store.get_run(resume)
        if run["dataset_sha"] != dataset.sha256:
            raise ConfigError(
                f"run {resume} was made with another version of {run['dataset']}",
                code="RUN_INVALID",
            )
        run_id = resume
        store.mark_running(run_id)
    else:
        run_id = store.start_run(
            name=plan.run_name, dataset=str(dataset.path), dataset_sha=dataset.sha256,
            configs=names,
            settings={"concurrency": plan.concurrency, "repeats": plan.repeats,
                      "tools_mode": plan.mode, "cache_ttl_s": plan.cache_ttl_s,
                      "dataset_name": dataset.name,
                      "engine": "local" if engine is None else engine.describe()},
        )  # fmt: skip
    store.add_items(run_id, [_item_row(item) for item in dataset.items])
    done = store.done(run_id) if resume else set()
    # The answers an interrupted run already received (journaled as they came): its unfinished
    # items replay them, turn by turn, instead of paying for the same calls again.
    answered = store.replies(run_id) if resume else {}
    tries, steps = store.logged(run_id) if resume else ({}, {})
    jobs = [
        Job(item, r, name, tuple(answered.get((item.id, r, name), ())),
            tries.get((item.id, r, name), 0), steps.get((item.id, r, name), {}))
        for item in dataset.items
        for r in range(plan.repeats)
        for name in names
        if (item.id, r, name) not in done
    ]  # fmt: skip
    summary = RunSummary(run_id, "running", skipped=len(done))
    if plan.on_start is not None:
        plan.on_start(run_id, len(jobs))
    bar = _progress(len(jobs), plan.progress, run_id)
    started = time.perf_counter()
    settings = JobSettings(run_id, plan.mode, plan.clean, plan.mask, plan.tool_loop)
    on_item = plan.on_item

    def finished(row: OutputRow) -> None:
        _count(summary, row.config, row.error_code, row.passed)
        bar.update(1)
        if on_item is not None:
            on_item(row.item_id, row.repeat, row.config)

    status = "failed"
    try:
        if engine is None:
            actions = PendingActions(store.actions, demo_executors(), run_id=run_id)
            pending = iter(jobs)
            await run_jobs(lambda: next(pending, None), configs, store, settings,
                           plan.concurrency, finished, actions)  # fmt: skip
        else:
            summary.workers = await engine.run(jobs, plan.entries, store, settings,
                                               plan.concurrency, finished)  # fmt: skip
        status = "finished"
    except (asyncio.CancelledError, KeyboardInterrupt):
        status = "interrupted"  # everything logged so far stays; `resume` picks up the rest
        raise
    finally:
        bar.close()
        summary.status = status
        summary.seconds = time.perf_counter() - started
        with contextlib.suppress(Exception):
            store.finish_run(run_id, status)
            store.flush()
    return summary


async def run_jobs(
    next_job: Callable[[], Job | Awaitable[Job | None] | None],
    configs: Sequence[_Config],
    log: RunLog,
    settings: JobSettings,
    concurrency: int,
    finished: Callable[[OutputRow], Any],
    actions: PendingActions | None,
) -> None:
    """Make jobs' outputs, `concurrency` at a time, each logged to `log` as it is made, until
    `next_job()` gives None. The one loop of both engines: the local engine's over its list
    (a plain call), each Ray worker's over its queue (awaited while the queue is empty)."""
    by_name = {c.name: c for c in configs}

    async def worker() -> None:
        # `concurrency` workers pull from one source: a 100,000-item run holds 32 tasks, not
        # 100,000 waiting ones (taking a job has no await, so no two workers take the same).
        while True:
            job = next_job()
            if inspect.isawaitable(job):
                job = await job
            if job is None:
                return
            row = await _run_item(job, by_name[job.config], log, settings,
                                  actions if settings.tool_loop else None)  # fmt: skip
            log.add_output(row)
            if log.broken is not None:  # the store cannot write (a full disk): stop the run
                raise log.broken
            finished(row)

    await _all_or_first_error([worker() for _ in range(max(1, concurrency))])


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


async def _run_item(
    job: Job,
    config: _Config,
    log: RunLog,
    settings: JobSettings,
    actions: PendingActions | None,
) -> OutputRow:
    item, repeat, saved, run_id = job.item, job.repeat, job.saved, settings.run_id
    tools_mode, clean = settings.tools_mode, settings.clean
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
    masker = masker_for(item) if settings.mask else None

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
        result = await config.router.route(routed, ctx=ctx, masker=masker)
        replies.append((result.key, result.value))
        answer = reply_to_dict(result.value) | {"cached": result.value.cached}
        log.add_reply(run_id, item.id, repeat, config.name, n, result.key, answer)
        return result.value

    final = _final_answer(saved)
    try:
        if final is not None:
            # The interrupted run had already received the item's last answer: it is graded
            # from the journaled turns, and no model is asked and no tool run again.
            replies.extend(final)
            text = final[-1][1].text
        elif item.tools and actions is not None and not _graded_on_first_answer(item):
            # Read tools answer; write tools only PROPOSE (whatever protocol asked for them).
            tools = demo_tools(item.tools, actions, proposed_by=f"{config.name}:{item.id}")
            loop = await run_tool_loop(
                request.system, list(request.messages), list(item.tools), turn,
                tool_caller(tools, timeout_s=10, sinks=ctx.sinks, masker=masker), max_turns=4,
                max_s=60,
            )  # fmt: skip
            text = loop.text
        else:
            text = (await turn(request)).text
    except WorkbenchError as exc:  # the route failed: a logged outcome, not a crashed run
        if exc.code.startswith("STORE_"):  # the store failed, not the item: the run stops
            raise
        return OutputRow(
            **base, key=replies[-1][0] if replies else None, tool_calls=_calls_json(replies),
            passed=False if item.expect else None, score=0.0,
            latency_ms=(time.perf_counter() - started) * 1000, cached=False,
            error_code=exc.code, error_message=str(exc)[:500], at_ms=int(time.time() * 1000),
        )  # fmt: skip
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
        grade=_grade_json(verdict),
        latency_ms=(time.perf_counter() - started) * 1000,
        tokens_in=_total(r.usage.prompt_tokens for _, r in replies),
        tokens_out=_total(r.usage.completion_tokens for _, r in replies),
        cached=all(r.cached for _, r in replies),
        at_ms=int(time.time() * 1000),
    )


def _check_bfcl_readers(dataset: Dataset, mode: ToolsMode) -> None:
    """Java and JavaScript prompting-mode replies are read with tree-sitter, as BFCL reads
    them: without it the run would grade them all wrong, so it does not start."""
    if mode == "native":
        return
    if any(
        i.expect is not None and i.expect.bfcl is not None and i.expect.bfcl.language != "python"
        for i in dataset.items
    ):
        from workbench.eval.suites.bfcl.tree_calls import parser

        parser("java")  # BFCL_PARSER_MISSING names the extra to install


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


def default_cleaner(dataset_path: Path) -> ResponseCleaner:
    """The cleaner a run uses: the vocabulary beside the prompt set (`cleaning_vocabulary.json`,
    the package ships no words), else structural cleaning only (think blocks, JSON, spaces)."""
    vocabulary = Path(dataset_path).parent / "cleaning_vocabulary.json"
    if vocabulary.exists():
        return ResponseCleaner(**load_vocabulary(vocabulary))
    return ResponseCleaner()


def _replay(item: Item, base: dict[str, Any], clean: Cleaner | None, started: float) -> OutputRow:
    """An item that already holds the model's output (its last message): clean and grade it,
    with no model call — the cleaning benchmark measures the cleaner, not a provider."""
    raw = str(item.messages[-1].get("content") or "")
    cleaned = clean(raw, item.language) if clean else raw.strip()
    verdict = grade(item, cleaned, [], raw=raw)
    return OutputRow(
        **base, raw=raw, cleaned=cleaned, tool_calls="[]",
        passed=verdict.passed if verdict else None, score=verdict.score if verdict else None,
        grade=_grade_json(verdict), latency_ms=(time.perf_counter() - started) * 1000,
        cached=False, at_ms=int(time.time() * 1000),
    )  # fmt: skip


def _grade_json(verdict: Grade | None) -> str | None:
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


def _item_row(item: Item) -> dict[str, Any]:
    return {
        "item_id": item.id,
        "category": item.category,
        "tags": json.dumps(list(item.tags)),
        "prompt": item.prompt,
        "expect": json.dumps(asdict(item.expect), ensure_ascii=False) if item.expect else None,
    }


def _count(summary: RunSummary, config: str, error_code: str | None, passed: bool | None) -> None:
    summary.done += 1
    per = summary.by_config.setdefault(config, {"done": 0, "errors": 0, "passed": 0, "graded": 0})
    per["done"] += 1
    if error_code:
        summary.errors += 1
        per["errors"] += 1
    if passed is not None:
        summary.graded += 1
        per["graded"] += 1
        if passed:
            summary.passed += 1
            per["passed"] += 1


def _progress(total: int, enabled: bool, run_id: str) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=run_id, unit="item", leave=False)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


async def regrade(store: Store, run_id: str, dataset: Dataset | str | Path) -> RunSummary:
    """Grade a run's logged outputs again, with the expectations of `dataset`: no model call."""
    if not isinstance(dataset, Dataset):
        dataset = open_dataset(dataset)
    mode = (store.get_run(run_id)["settings"] or {}).get("tools_mode")
    _check_bfcl_readers(dataset, mode or "plan")
    items = {item.id: item for item in dataset.items}
    summary = RunSummary(run_id, "regraded")
    from workbench.types import ToolCall

    grades = []
    for out in store.outputs_for(run_id):
        item = items.get(out.item_id)
        if item is None or out.error_code:
            continue
        calls = [ToolCall(**c) for c in json.loads(out.tool_calls or "[]")]
        verdict = grade(item, out.cleaned or "", calls, raw=out.raw, tools_mode=mode)
        passed = verdict.passed if verdict else None
        _count(summary, out.config, None, passed)
        grades.append(OutputGrade(
            out.item_id, out.repeat, out.config, passed,
            verdict.score if verdict else None, _grade_json(verdict),
        ))  # fmt: skip
    store.set_grades(run_id, grades)
    summary.status = "finished"
    return summary


def describe(summary: RunSummary) -> Iterable[str]:
    """Lines for the terminal at the end of a run."""
    rate = f"{summary.pass_rate:.0%}" if summary.pass_rate is not None else "n/a"
    yield (
        f"run {summary.run_id}: {summary.status}, {summary.done} done"
        f"{f', {summary.skipped} already done' if summary.skipped else ''}, "
        f"{summary.errors} failed to route, {summary.passed}/{summary.graded} passed ({rate}) "
        f"in {summary.seconds:.1f} s"
    )
    if summary.leaks is not None:
        yield f"  masking audit: {summary.leaks} sensitive value(s) left the machine"
    if summary.workers:
        yield from _describe_workers(summary.workers)
    for name, per in summary.by_config.items():
        rate = f"{per['passed'] / per['graded']:.0%}" if per["graded"] else "n/a"
        yield f"  {name}: {per['done']} done, {per['errors']} errors, {per['passed']}/{per['graded']} passed ({rate})"


def _describe_workers(workers: list[dict[str, Any]]) -> Iterable[str]:
    """The Ray workers' `stats()`, summed, and every window in which a worker's quotas were
    its own (Redis down): the run's quotas were not shared then."""
    outputs = sum(w["outputs"] for w in workers)
    attempts = sum(w["attempts"] for w in workers)
    nodes = sorted({str(w["node"]) for w in workers})
    each = ", ".join(
        f"worker {w['worker']}: {w['outputs']}{' (lost)' if w.get('lost') else ''}" for w in workers
    )
    yield (
        f"  ray: {len(workers)} worker(s) on {len(nodes)} node(s): {outputs} outputs, "
        f"{attempts} attempts ({each})"
    )
    for w in workers:
        for start, end, reason in w["memory_windows"]:
            until = "the end of the run" if end is None else _clock(end)
            yield (
                f"  worker {w['worker']}: quotas per worker, not shared, from {_clock(start)} to "
                f"{until} (Redis: {reason})"
            )


def _clock(at_ms: int) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at_ms / 1000))
