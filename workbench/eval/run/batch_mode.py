"""A run's batch mode (`workbench run --batch`): every request goes through its configuration's
first model's batch API, at half the price, for a run that can wait.

Each job runs as it would (`jobs.py`: the same tool loop, cleaning, grading and rows), except
that its turns are not routed: a turn is queued, and when every unfinished job is waiting for
an answer, the queued turns are submitted, one batch per configuration (a round). A batch
has no fallback: it goes to the chain's first model and nowhere else. An item with a tool loop
advances one turn per round: its next turn joins the next round's batch.

What a killed run must not do is pay twice. So a batch is journaled in the store (`batches`)
the moment its vendor gave it an id, with the custom ids of its requests, before it is polled;
`--resume` finds it, polls it and reads its answers instead of submitting the same requests
again. A custom id is the job's repeat, turn and item (the configuration is the batch's), so
the resumed run asks for exactly the ids it journaled.

Every answer is logged as an attempt like any other (same tables, its `batch_id` named), is
cached for `--cache`, observed into the capability records, and graded. A request the batch
did not answer (it expired, the batch failed, the vendor dropped it, or refused it for its own
reasons: 429 or 5xx) is sent once more in the next round; twice unanswered, its output carries
`BATCH_EXPIRED` or `BATCH_FAILED`. A line of a batch's output that names none of its requests
is logged once as a warning and otherwise ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import ConfigError, ProviderError, WorkbenchError
from workbench.eval.run.jobs import Ask, Configuration, Job, JobSettings, _run_item
from workbench.eval.store.database import OutputRow, Store
from workbench.eval.store.reads import BatchRecord
from workbench.events import AttemptEvent, emit, now_ms
from workbench.providers.batch_api import BatchAPI, BatchResults, BatchState, batch_client
from workbench.providers.interface import unwrap
from workbench.routing import RouteResult
from workbench.routing.attempt import (
    Attempt,
    cached,
    masked,
    observe_failure,
    observe_reply,
    prepare,
    remember,
)
from workbench.routing.candidates import Candidate, chain
from workbench.routing.privacy import Masker, unmask_reply
from workbench.tools.pending import PendingActions
from workbench.types import CallContext, ChatRequest, Reply

log = logging.getLogger("workbench.eval.run.batch_mode")

# Seconds between polls of an open batch: the first soon (a small batch may be done in
# seconds), then half as long again each time, up to a minute.
FIRST_POLL_S = 0.5
MAX_POLL_S = 60.0
MAX_REQUESTS = 50_000  # OpenAI's cap per batch; a larger round is cut into several
# A request is sent in at most this many batches before its output says it went unanswered.
SENDS = 2
# Refusals a next batch may not repeat: the vendor's own reasons, not the request's.
_RESEND_KINDS = ("rate_limit", "outage", "timeout", "network")


def batch_first_model(config: Configuration) -> Candidate:
    """The model a configuration's batches go to: its chain's first."""
    found = chain(config.router.providers, CallContext(purpose="eval"))
    if not found:
        raise ConfigError(
            f"--batch: configuration {config.name!r} has no model to send a batch to",
            code="BATCH_UNSUPPORTED",
        )
    return found[0]


def check_batchable(configs: Sequence[Configuration]) -> dict[str, BatchAPI]:
    """Each configuration's batch client, or BATCH_UNSUPPORTED naming the first that has
    none: refused before the run is recorded, so nothing is sent."""
    apis: dict[str, BatchAPI] = {}
    for config in configs:
        first = batch_first_model(config)
        api = batch_client(unwrap(first.provider), first.model.id)
        if api is None:
            raise ConfigError(
                f"--batch: configuration {config.name!r} starts with {first.key}, whose "
                "provider has no batch API we speak (OpenAI's, Groq's or Gemini's); a "
                "providers file that knows better says `batch = true`",
                code="BATCH_UNSUPPORTED",
            )
        apis[config.name] = api
    return apis


def custom_id(job: Job, turn: int) -> str:
    """A request's id in its batch: the job's repeat and turn, then its item (the batch names
    the configuration). The same in the resumed run, which is how it finds its answers."""
    return f"{job.repeat}:{turn}:{job.item.id}"


@dataclass(slots=True, eq=False)
class _Waiting:
    """One turn waiting for its batch's answer."""

    custom_id: str
    config: Configuration
    attempt: Attempt
    sinks: tuple[Callable[[Any], Any], ...]
    future: asyncio.Future[RouteResult]
    sends: int = 0  # batches it was sent in so far


@dataclass(slots=True, eq=False)
class _Open:
    """A batch submitted (or journaled by the run being resumed), not yet read."""

    record: BatchRecord
    api: BatchAPI
    waiting: dict[str, _Waiting] = field(default_factory=dict)
    state: BatchState | None = None
    results: BatchResults | None = None
    next_poll: float = 0.0
    pause_s: float = FIRST_POLL_S


class BatchRounds:
    """The rounds of one run: the queue of turns to submit, the batches open, and the loop
    that submits, polls and hands each answer to the turn that waits for it."""

    def __init__(
        self,
        configs: Sequence[Configuration],
        apis: Mapping[str, BatchAPI],
        store: Store,
        settings: JobSettings,
        journaled: Sequence[BatchRecord] = (),
    ) -> None:
        self._configs = {c.name: c for c in configs}
        self._apis = dict(apis)
        self._store = store
        self._settings = settings
        self._pending: dict[str, dict[str, _Waiting]] = {c.name: {} for c in configs}
        self._open: dict[str, _Open] = {}
        # Per configuration, the latest journaled batch of each custom id, and how many
        # batches carried it (a resumed run does not send an id more than `SENDS` times).
        self._journaled: dict[str, dict[str, _Open]] = {c.name: {} for c in configs}
        self._sent_before: Counter[tuple[str, str]] = Counter()
        for record in journaled:
            if record.config not in self._configs:
                continue
            opened = _Open(record, self._apis[record.config])
            self._open[record.batch_id] = opened
            for cid in record.requests:
                self._journaled[record.config][cid] = opened
                self._sent_before[(record.config, cid)] += 1
        self._round = max((r.round for r in journaled), default=0)
        self._waiting = 0
        self._live = 0
        self._changed = asyncio.Event()
        self._warned_unmatched = False
        self._answering: set[asyncio.Future[None]] = set()

    # -------------------------------------------------------------- a job's turns
    def asker(self, job: Job, config: Configuration) -> Ask:
        """The `ask` of one job (`jobs._run_item`): its turns go to the rounds."""

        async def ask(
            request: ChatRequest, ctx: CallContext, masker: Masker | None, turn: int
        ) -> RouteResult:
            return await self._ask(job, config, request, ctx, masker, turn)

        return ask

    async def _ask(
        self,
        job: Job,
        config: Configuration,
        request: ChatRequest,
        ctx: CallContext,
        masker: Masker | None,
        turn: int,
    ) -> RouteResult:
        settings = config.router.settings
        first = batch_first_model(config)
        attempt = await prepare(settings, first, request, ctx, masker)
        sinks = (*settings.sinks, *ctx.sinks)
        hit = cached(settings, attempt)
        if hit is not None:  # answered before: no batch, no cost
            await emit(sinks, _event(attempt, "ok", now_ms(), 0.0, cached=True))
            return RouteResult(hit, first.key)
        cid = custom_id(job, turn)
        future: asyncio.Future[RouteResult] = asyncio.get_running_loop().create_future()
        waiting = _Waiting(cid, config, attempt, sinks, future)
        waiting.sends = self._sent_before[(config.name, cid)]
        opened = self._journaled[config.name].pop(cid, None)
        if opened is not None:  # the interrupted run sent it: its batch answers it
            opened.waiting[cid] = waiting
            if opened.results is not None:
                # Read already, for the turns that waited then: read again (a GET, not a
                # request paid for) for this one, rather than take it for unanswered.
                opened.results, opened.state, opened.next_poll = None, None, 0.0
        else:
            self._pending[config.name][cid] = waiting
        self._waiting += 1
        self._changed.set()
        try:
            return await future
        finally:
            self._waiting -= 1
            self._changed.set()

    # -------------------------------------------------------------- the loop
    async def run(
        self,
        jobs: Sequence[Job],
        finished: Callable[[OutputRow], Any],
        actions: PendingActions | None,
    ) -> None:
        """Make every job's output, round after round, until none is left."""
        store, settings = self._store, self._settings

        async def one(job: Job) -> None:
            config = self._configs[job.config]
            try:
                row = await _run_item(
                    job, config, store, settings, actions, ask=self.asker(job, config)
                )
                store.add_output(row)
                if store.broken is not None:
                    raise store.broken
                finished(row)
            finally:
                self._live -= 1
                self._changed.set()

        def failed() -> None:
            for task in tasks:
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]

        self._live = len(jobs)
        tasks = [asyncio.ensure_future(one(job)) for job in jobs]
        try:
            while self._live > 0:
                failed()
                if self._waiting < self._live or not self._work():
                    # A job is still between turns (running its tools), or an answer is on
                    # its way to its turn: wait until every job waits on a batch again.
                    self._changed.clear()
                    await self._changed.wait()
                    continue
                await self._submit()
                await self._poll()
            failed()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for api in self._apis.values():
                with contextlib.suppress(Exception):
                    await api.aclose()

    def _work(self) -> bool:
        """Whether a turn is queued, or an open batch holds one, for the loop to act on."""
        return any(self._pending.values()) or any(
            b.waiting and b.results is None for b in self._open.values()
        )

    async def _submit(self) -> None:
        """Every queued turn, one batch per configuration (cut at MAX_REQUESTS), each journaled
        as soon as its vendor gave it an id."""
        if not any(self._pending.values()):
            return
        self._round += 1
        for name, queued in self._pending.items():
            if not queued:
                continue
            self._pending[name] = {}
            config, api = self._configs[name], self._apis[name]
            first = batch_first_model(config)
            items = list(queued.items())
            for start in range(0, len(items), MAX_REQUESTS):
                part = dict(items[start : start + MAX_REQUESTS])
                requests = {cid: masked(w.attempt) for cid, w in part.items()}
                label = f"{self._settings.run_id}:{name}:{self._round}"
                try:
                    batch_id = await api.submit(requests, label=label)
                except ProviderError as exc:  # nothing was made: every turn fails with it
                    for waiting in part.values():
                        await self._fail(waiting, exc, None)
                    continue
                at = now_ms()
                record = BatchRecord(
                    self._settings.run_id,
                    batch_id,
                    name,
                    first.provider.id,
                    first.model.id,
                    self._round,
                    tuple(part),
                    "submitted",
                    None,
                    at,
                    at,
                )
                self._store.journal_batch(record)  # before anything else can go wrong
                for waiting in part.values():
                    waiting.sends += 1
                self._open[batch_id] = _Open(record, api, dict(part), next_poll=time.monotonic())

    async def _poll(self) -> None:
        """Poll the open batches someone waits for, with backoff, until at least one is over;
        read it and hand out its answers."""
        while True:
            wanted = [b for b in self._open.values() if b.waiting and b.results is None]
            if not wanted:
                return
            now = time.monotonic()
            due = [b for b in wanted if b.next_poll <= now]
            if not due:
                await asyncio.sleep(min(b.next_poll for b in wanted) - now)
                continue
            over = False
            for opened in due:
                state: BatchState | None
                try:
                    state = await opened.api.poll(opened.record.batch_id)
                except ProviderError as exc:
                    state = _unreadable(opened.record.batch_id, exc)
                if state is None or not state.over:
                    opened.pause_s = min(opened.pause_s * 1.5, MAX_POLL_S)
                    opened.next_poll = time.monotonic() + opened.pause_s
                    continue
                await self._collect(opened, state)
                over = True
            if over:
                return

    async def _collect(self, opened: _Open, state: BatchState) -> None:
        record = opened.record
        requests = {cid: masked(w.attempt) for cid, w in opened.waiting.items()}
        try:
            results = await opened.api.results(state, requests) if requests else BatchResults()
        except ProviderError as exc:
            log.warning("reading batch %s failed: %s", record.batch_id, exc)
            results = BatchResults()
        strays = [cid for cid in results.unmatched if cid not in record.requests]
        if strays and not self._warned_unmatched:
            self._warned_unmatched = True  # once: a vendor's stray lines are not news twice
            log.warning(
                "batch %s returned %d line(s) that match no request it was sent (first: %r); "
                "they are ignored",
                record.batch_id,
                len(strays),
                strays[0],
            )
        opened.state, opened.results = state, results
        for waiting in list(opened.waiting.values()):
            self._settle(opened, waiting)
        status = "collected" if state.status == "completed" else state.status
        self._store.journal_batch(
            BatchRecord(
                record.run_id,
                record.batch_id,
                record.config,
                record.provider,
                record.model,
                record.round,
                record.requests,
                status,
                state.message or None,
                record.submitted_ms,
                now_ms(),
            )
        )

    def _settle(self, opened: _Open, waiting: _Waiting) -> None:
        """Hand one waiting turn its answer (a task: observing and logging are async)."""
        opened.waiting.pop(waiting.custom_id, None)
        task = asyncio.ensure_future(self._answer(opened, waiting))
        self._answering.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._answering.discard)

    async def _answer(self, opened: _Open, waiting: _Waiting) -> None:
        state, results = opened.state, opened.results
        assert state is not None and results is not None
        got = results.replies.get(waiting.custom_id)
        batch_id = opened.record.batch_id
        if isinstance(got, Reply):
            await self._succeed(waiting, got, batch_id, opened.record.submitted_ms)
            return
        if isinstance(got, ProviderError):
            if got.kind in _RESEND_KINDS and waiting.sends < SENDS:
                await self._again(waiting, got, batch_id)
            else:
                await self._fail(waiting, got, batch_id)
            return
        # Unanswered: the batch expired first, failed, or lost the request.
        why = state.message or f"the batch ended {state.raw_status or state.status}"
        text = f"batch {batch_id} did not answer the request ({why})"
        if state.status == "expired":
            error = WorkbenchError(text, code="BATCH_EXPIRED")
        else:
            error = WorkbenchError(text, code="BATCH_FAILED")
        if waiting.sends < SENDS:
            await self._again(waiting, error, batch_id)
        else:
            await self._fail(waiting, error, batch_id)

    async def _succeed(
        self, waiting: _Waiting, reply: Reply, batch_id: str, submitted_ms: int | None
    ) -> None:
        attempt, settings = waiting.attempt, waiting.config.router.settings
        if attempt.masker is not None:
            reply = unmask_reply(attempt.masker, reply)
        reply.verdicts = await observe_reply(settings.observer, attempt, reply)
        remember(settings, attempt, reply)
        start = submitted_ms or now_ms()
        await emit(
            waiting.sinks,
            _event(
                attempt,
                "ok",
                start,
                float(now_ms() - start),
                status=reply.raw_status,
                tokens=reply.usage.total_tokens,
                batch_id=batch_id,
            ),
        )
        if not waiting.future.done():
            waiting.future.set_result(RouteResult(reply, attempt.candidate.key))

    async def _again(self, waiting: _Waiting, error: WorkbenchError, batch_id: str) -> None:
        """Logged as the attempt it was, then queued for the next round."""
        await self._log_failure(waiting, error, batch_id)
        self._pending[waiting.config.name][waiting.custom_id] = waiting
        self._changed.set()

    async def _fail(self, waiting: _Waiting, error: WorkbenchError, batch_id: str | None) -> None:
        await self._log_failure(waiting, error, batch_id)
        if not waiting.future.done():
            waiting.future.set_exception(error)

    async def _log_failure(
        self, waiting: _Waiting, error: WorkbenchError, batch_id: str | None
    ) -> None:
        attempt = waiting.attempt
        if isinstance(error, ProviderError):
            await observe_failure(waiting.config.router.settings.observer, attempt, error)
        await emit(
            waiting.sinks,
            _event(
                attempt,
                "error",
                now_ms(),
                0.0,
                status=error.status_code if isinstance(error, ProviderError) else None,
                error=error,
                batch_id=batch_id,
            ),
        )


def _unreadable(batch_id: str, exc: ProviderError) -> BatchState | None:
    """A poll that failed: the vendor's bad moment (a 5xx, a 429, the network) is polled again
    later; a refusal that will not change (the key revoked, the batch unknown: 401, 403,
    404) ends the batch as failed, so its requests are sent again or logged, never waited on
    for ever."""
    if exc.kind in ("auth", "bad_request"):
        return BatchState(batch_id, "failed", f"HTTP {exc.status_code}", exc.message[:300])
    log.warning("polling batch %s failed, polling again later: %s", batch_id, exc)
    return None


def _event(
    attempt: Attempt,
    outcome: str,
    start_ms: int,
    latency_ms: float,
    *,
    cached: bool = False,
    status: int | None = None,
    tokens: int | None = None,
    error: WorkbenchError | None = None,
    batch_id: str | None = None,
) -> AttemptEvent:
    cand = attempt.candidate
    return AttemptEvent(
        key=cand.key,
        lane=cand.lane,
        outcome=outcome,
        start_ms=start_ms,
        latency_ms=latency_ms,
        status=status,
        error_kind=error.kind if isinstance(error, ProviderError) else None,
        tokens=tokens,
        provider=cand.provider.id,
        model=cand.model.id,
        error_code=error.code if error is not None else None,
        error_message=error.message[:300] if error is not None else None,
        cached=cached,
        batch_id=batch_id,
    )


async def run_batched(
    jobs: Sequence[Job],
    configs: Sequence[Configuration],
    store: Store,
    settings: JobSettings,
    finished: Callable[[OutputRow], Any],
    actions: PendingActions | None,
) -> None:
    """The batch mode of `run_prompt_set`: every job through its configuration's batches; a
    resumed run first polls the batches it journaled."""
    apis = check_batchable(configs)
    rounds = BatchRounds(configs, apis, store, settings, store.batches(settings.run_id))
    await rounds.run(jobs, finished, actions if settings.config.tool_loop else None)


__all__ = [
    "FIRST_POLL_S",
    "MAX_POLL_S",
    "BatchRounds",
    "batch_first_model",
    "check_batchable",
    "custom_id",
    "run_batched",
]
