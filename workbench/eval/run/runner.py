"""`run_prompt_set`: every item of a prompt set, through one or more router configurations,
logged to DuckDB as it happens; `regrade`: a logged run graded again.

For each (item, repeat, config), a job (`jobs.py`): route the item; the router's attempt
pipeline plans the tools for each model from what it was observed to do, answers from the
response cache when the same planned request was answered before, and classifies every attempt
into the store's capability records; for an item that offers tools, run the tool loop against
the demo catalogue (read tools answer, write tools only propose pending actions); clean the
output, grade it against `expect`, log. Here: the run opened (its whole `RunConfig` in its
row), its jobs listed and handed to an engine, the run closed. The store is the run's memory:
an interrupted run keeps everything logged so far, and `resume` skips what is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.config.providers_file import ProvidersConfig
from workbench.errors import CassetteError, ConfigError, WorkbenchError
from workbench.eval.dataset.prompt_set import Dataset, Item, open_dataset
from workbench.eval.engines import Engine
from workbench.eval.engines.local import LocalEngine
from workbench.eval.run.jobs import Job, JobSettings, grade_json
from workbench.eval.run.options import DEFAULT_CONFIG, RunConfig, RunHooks, settle
from workbench.eval.run.summary import RunSummary
from workbench.eval.scoring.grading import grade
from workbench.eval.store.database import OutputGrade, OutputRow, Store
from workbench.providers.base import HttpProvider
from workbench.providers.interface import unwrap
from workbench.routing import Router
from workbench.text.cleaner import ResponseCleaner, load_vocabulary
from workbench.types import ToolsMode

if TYPE_CHECKING:
    from workbench.cassettes import Cassette
    from workbench.eval.suites.bfcl.memory import MemoryChains

Configs = Router | ProvidersConfig | Sequence[Router | ProvidersConfig]


async def run_prompt_set(
    dataset: Dataset | str | Path,
    configs: Configs,
    store: Store,
    *,
    config: RunConfig = DEFAULT_CONFIG,
    hooks: RunHooks | None = None,
    engine: Engine | None = None,
    **overrides: Any,
) -> RunSummary:
    """Run `dataset` through every configuration; see the module docstring. `config` holds
    every setting of the run (the run's row records it whole); `overrides` are its fields,
    or the hooks' (`progress`, `on_item`, `on_start`, `clean`), by name. `engine` runs the
    jobs: None, this process (async, `concurrency` at a time); a `RayEngine`, Ray actors, each
    with `concurrency` of its own, every row still logged by this process's `store`."""
    config, hooks = settle(config, hooks, overrides)
    if isinstance(dataset, Dataset):
        # Opened already (the command opens it to refuse a bad one first): its limit is the run's.
        if config.limit is None:
            config = config.replace(limit=dataset.limit)
        elif config.limit != dataset.limit:
            raise ConfigError(
                f"the prompt set was opened with limit {dataset.limit}, the run asks for "
                f"{config.limit}: pass its path, or open it with that limit",
                code="RUN_INVALID",
            )
    else:
        dataset = open_dataset(dataset, limit=config.limit)  # checked whole before any request
    _check_bfcl_readers(dataset, config.mode)
    entries = _entries(configs)
    if hooks.clean is None:
        hooks = dataclasses.replace(hooks, clean=default_cleaner(dataset.path).clean)
    if (
        config.resume
        and not config.batch
        and RunConfig.from_row(store.get_run(config.resume)).batch
    ):
        # A batch run resumes as one: its journaled batches are polled, never sent again.
        config = config.replace(batch=True)
    plan = _Plan(dataset, entries, config, hooks)
    if config.batch and engine is not None and not isinstance(engine, LocalEngine):
        raise batch_engine_refused()
    _check_bfcl_entries(dataset, config, engine)
    cassette = _cassette(config, entries, engine)
    engine = LocalEngine(store) if engine is None else engine
    summary: RunSummary | None = None
    try:  # everything that can refuse the run refuses here, before the run is recorded
        names = await engine.prepare(entries, config)
        summary = await _run_set(plan, store, names, engine)
        return summary
    finally:  # whatever ends the run (a bad resume too): the routers, Ray's workers
        await engine.close()
        if cassette is not None:  # rewritten in its stable order; the providers let go of it
            _use_cassette(entries, None)
            cassette.close()
            if summary is not None:
                tally = (
                    str(cassette.file),
                    cassette.mode,
                    cassette.replayed,
                    cassette.recorded,
                    cassette.skipped,
                )
                summary.cassette = tally


def _cassette(
    config: RunConfig, entries: list[Router | ProvidersConfig], engine: Engine | None
) -> Cassette | None:
    """The run's cassette, opened (a file of another version or a broken line refuses the
    run before anything is sent) and set on every configuration's HTTP providers."""
    if config.cassette is None:
        return None
    if engine is not None and not isinstance(engine, LocalEngine):
        raise CassetteError(
            "a cassette is one file this process writes and reads: --record and --replay run "
            "on the local engine — leave out --engine ray",
            code="CASSETTE_UNSUPPORTED",
        )
    if config.cassette_mode == "record" and config.cache_ttl_s is not None:
        raise ConfigError(
            f"--record {config.cassette} with --cache: a cassette records what is sent, and "
            "the cache would answer from the DuckDB file instead (a replay on a fresh file "
            "would miss those answers) — leave out --cache to record",
            code="CASSETTE_CONFLICT",
        )
    from workbench.cassettes import Cassette

    mode = config.cassette_mode
    if config.resume and mode == "record":
        # A resumed recording keeps what the interrupted one recorded (its items are not
        # asked again): it adds to the cassette, as record-missing does.
        mode = "record_missing"
    cassette = Cassette(config.cassette, mode)
    _use_cassette(entries, cassette)
    return cassette


def _use_cassette(entries: list[Router | ProvidersConfig], cassette: Cassette | None) -> None:
    for entry in entries:
        if isinstance(entry, Router):
            entry.use_cassette(cassette)
            continue
        for provider in entry.providers:
            given = unwrap(provider)
            if isinstance(given, HttpProvider):
                given.use_cassette(cassette)


@dataclass(frozen=True, slots=True)
class _Plan:
    """`run_prompt_set`'s arguments, checked (the cleaner resolved)."""

    dataset: Dataset
    entries: list[Router | ProvidersConfig]
    config: RunConfig
    hooks: RunHooks


async def _run_set(plan: _Plan, store: Store, names: list[str], engine: Engine) -> RunSummary:
    dataset, config = plan.dataset, plan.config
    resume = config.resume
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
        # What readers of runs logged before the row kept the whole config read (and the
        # dataset's name and the engine, which are no settings).
        kept = {
            "concurrency": config.concurrency,
            "repeats": config.repeats,
            "tools_mode": config.mode,
            "cache_ttl_s": config.cache_ttl_s,
            "dataset_name": dataset.name,
            "engine": engine.describe(),
        }
        run_id = store.start_run(
            name=config.run_name,
            dataset=str(dataset.path),
            dataset_sha=dataset.sha256,
            configs=names,
            settings=kept,
            config=config.to_json(),
        )
    store.add_items(run_id, [_item_row(item) for item in dataset.items])
    done = store.done(run_id) if resume else set()
    # A resume asks the unanswered items again, except those a day's quota stopped whose reset
    # has not come: asked now they would only be refused again (and spend requests of a quota
    # that may be someone's), so they stay unanswered and the summary says when to resume.
    waiting: dict[tuple[str, int, str], int] = {}
    if resume:
        now = int(time.time() * 1000)
        for key, (why, at_ms) in store.unanswered(run_id).items():
            if why == "daily_quota" and at_ms is not None and at_ms > now:
                waiting[key] = at_ms
            else:
                done.discard(key)
    # The answers an interrupted run already received (journaled as they came): its unfinished
    # items replay them, turn by turn, instead of paying for the same calls again.
    answered = store.replies(run_id) if resume else {}
    tries, steps = store.logged(run_id) if resume else ({}, {})
    jobs = [
        Job(
            item,
            r,
            name,
            tuple(answered.get((item.id, r, name), ())),
            tries.get((item.id, r, name), 0),
            steps.get((item.id, r, name), {}),
        )
        for item in dataset.items
        for r in range(config.repeats)
        for name in names
        if (item.id, r, name) not in done
    ]
    summary = RunSummary(run_id, "running", skipped=len(done) - len(waiting))
    if waiting:
        summary.still_waiting(len(waiting), min(waiting.values()))
    hooks = plan.hooks
    if hooks.on_start is not None:
        hooks.on_start(run_id, len(jobs))
    bar = _progress(len(jobs), hooks.progress, run_id)
    started = time.perf_counter()
    chains = _memory_chains(dataset, store, run_id, [j.key for j in jobs], waiting)
    settings = JobSettings(run_id, config, hooks.clean, chains)
    on_item = hooks.on_item

    def finished(row: OutputRow) -> None:
        summary.add(
            row.config,
            row.error_code,
            row.passed,
            key=row.key,
            unanswered=row.unanswered,
            retry_at_ms=row.retry_at_ms,
        )
        bar.update(1)
        if on_item is not None:
            on_item(row.item_id, row.repeat, row.config)

    status = "failed"
    try:
        summary.workers = await engine.run(jobs, plan.entries, store, settings, finished)
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


def _check_bfcl_entries(dataset: Dataset, config: RunConfig, engine: Engine | None) -> None:
    """BFCL's multi-turn and agentic entries need each answer before their next step (no
    batch), and a memory question waits for its scenario's conversations, in one process."""
    entries = [i for i in dataset.items if i.expect is not None and hasattr(i.expect.bfcl, "turns")]
    if not entries:
        return
    if config.batch:
        raise ConfigError(
            "--batch sends single-turn items: BFCL's multi-turn and agentic entries need each "
            "answer before their next step",
            code="BATCH_UNSUPPORTED",
        )
    categories = {i.category for i in entries}
    if any(c and c.startswith("web_search") for c in categories):
        from workbench.eval.suites.bfcl.web_search import search_engine

        search_engine(config.bfcl_web)  # no key and no simulator: refused before the run
    if "memory_vector" in categories:
        from workbench.eval.suites.bfcl.memory import vector_available

        vector_available()
    backends = [c for c in categories if c and not c.startswith("web_search")]
    if backends:
        import importlib.util

        needed = ["mpmath"] + (
            ["rank_bm25", "overrides"] if any("memory" in c for c in backends) else []
        )
        missing = [m for m in needed if importlib.util.find_spec(m) is None]
        if missing:
            raise WorkbenchError(
                f"BFCL's backends import {', '.join(missing)}, which this environment lacks: "
                "pip install 'workbench[bfcl]'",
                code="BFCL_BACKEND_FAILED",
            )
    memory = any(getattr(i.expect.bfcl, "scenario", None) for i in entries if i.expect)
    if memory and engine is not None and not isinstance(engine, LocalEngine):
        raise ConfigError(
            "BFCL's memory categories run on the local engine: each question waits for its "
            "scenario's conversations, which one process plays in order",
            code="RAY_INVALID",
        )


def _memory_chains(
    dataset: Dataset,
    store: Store,
    run_id: str,
    running: list[tuple[str, int, str]],
    waiting: dict[tuple[str, int, str], int],
) -> MemoryChains | None:
    """The order BFCL's memory items wait in, with the snapshots a resumed run already made,
    the jobs this run makes and the conversations a day's quota still holds."""
    if not any(i.category and i.category.startswith("memory_") for i in dataset.items):
        return None
    from workbench.eval.suites.bfcl.memory import MemoryChains

    chains = MemoryChains(dataset.items, store.memory_snapshots(run_id), running)
    return chains.waiting(waiting) if chains else None


def batch_engine_refused() -> ConfigError:
    """`--batch` with another engine than this process's."""
    return ConfigError(
        "--batch runs in this process: a batch is one submission per configuration that the "
        "run journals and polls, and workers elsewhere would add nothing to it; leave out "
        "--engine ray",
        code="BATCH_ENGINE",
    )


def _entries(
    configs: Router | ProvidersConfig | Sequence[Router | ProvidersConfig],
) -> list[Router | ProvidersConfig]:
    if isinstance(configs, Sequence):
        return list(configs)
    return [configs]


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


def default_cleaner(dataset_path: Path) -> ResponseCleaner:
    """The cleaner a run uses: the vocabulary beside the prompt set (`cleaning_vocabulary.json`,
    the package ships no words), else structural cleaning only (think blocks, JSON, spaces)."""
    vocabulary = Path(dataset_path).parent / "cleaning_vocabulary.json"
    if vocabulary.exists():
        return ResponseCleaner(**load_vocabulary(vocabulary))
    return ResponseCleaner()


def _item_row(item: Item) -> dict[str, Any]:
    return {
        "item_id": item.id,
        "category": item.category,
        "tags": json.dumps(list(item.tags)),
        "prompt": item.prompt,
        "expect": json.dumps(asdict(item.expect), ensure_ascii=False) if item.expect else None,
    }


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
        summary.add(out.config, None, passed)
        grades.append(
            OutputGrade(
                out.item_id,
                out.repeat,
                out.config,
                passed,
                verdict.score if verdict else None,
                grade_json(verdict),
            )
        )
    store.set_grades(run_id, grades)
    summary.status = "finished"
    return summary


__all__ = ["default_cleaner", "regrade", "run_prompt_set"]
