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
reasons: 429 or 5xx) is sent once more in the next round; twice unanswered, its output is
*unanswered* (`provider_error`, or `rate_limit` for a 429; its code `BATCH_EXPIRED`,
`BATCH_FAILED` or the refusal's), never graded as failed, and `--resume` asks it again. A
request the batch never ran because someone cancelled the batch is unanswered at once. Only a
refusal for the request's own reasons (a 400) fails its item.

Nothing is waited on for ever: a batch is given up (its turns unanswered) once its vendor's
completion window and a margin have passed since it was submitted, or after
`MAX_FAILED_READS` polls or reads of its results failed in a row. A submit the vendor refused
for its own reasons is tried again after a pause, and a submit whose reply was lost first
looks for the batch it may have made (by its label), so nothing is paid for twice.
A line of a batch's output that names none of its requests is logged once as a warning and
otherwise ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import ConfigError, ProviderError, WorkbenchError
from workbench.eval.run.holding import Unanswered, UnansweredReason
from workbench.eval.run.jobs import Ask, Configuration, Job, JobSettings, _run_item
from workbench.eval.store.database import OutputRow, Store
from workbench.eval.store.reads import BatchRecord
from workbench.events import AttemptEvent, emit, now_ms
from workbench.providers.batch_api import (
    BatchAPI,
    BatchResults,
    BatchState,
    batch_client,
    batches_for,
    submit_label,
)
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
# A request is sent in at most this many batches (per run or resume) before its output says
# it went unanswered.
SENDS = 2
# A batch still not over this long after its vendor's completion window closed is given up.
WINDOW_MARGIN_S = 3600.0
# Polls of a batch (or reads of its results) that may fail in a row before it is given up.
MAX_FAILED_READS = 10
# A submit refused for the vendor's reasons (a 429, a 5xx, the network) is tried again after
# this pause, doubled each time, at most `SUBMIT_TRIES` times in all.
SUBMIT_PAUSE_S = 2.0
SUBMIT_TRIES = 4
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
    refused: int = 0  # submits of it the vendor refused for its own reasons


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
    failed_reads: int = 0  # polls or reads of its results that failed in a row


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
        # Per configuration, the latest journaled batch of each custom id: a resumed run reads
        # it first. What it did not answer is sent again (`SENDS` times in this run, as in the
        # first: a resume is asked for, so what came back unanswered is asked again).
        self._journaled: dict[str, dict[str, _Open]] = {c.name: {} for c in configs}
        for record in journaled:
            if record.config not in self._configs:
                continue
            opened = _Open(record, self._apis[record.config])
            self._open[record.batch_id] = opened
            for cid in record.requests:
                self._journaled[record.config][cid] = opened
        # Per configuration, when a submit the vendor refused may be tried again (monotonic).
        self._submit_after: dict[str, float] = {}
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
                await self._await_deferred()
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
        as soon as its vendor gave it an id. A configuration whose last submit the vendor
        refused waits out its pause first."""
        now = time.monotonic()
        due = [n for n, q in self._pending.items() if q and self._submit_after.get(n, 0) <= now]
        if not due:
            return
        self._round += 1
        for name in due:
            queued, self._pending[name] = self._pending[name], {}
            config, api = self._configs[name], self._apis[name]
            first = batch_first_model(config)
            asked = [(cid, masked(w.attempt)) for cid, w in queued.items()]
            for part_no, requests in enumerate(batches_for(asked, MAX_REQUESTS)):
                part = {cid: queued[cid] for cid in requests}
                label = submit_label(self._settings.run_id, name, self._round, part_no)
                made: str | None
                try:
                    made = await api.submit(requests, label=label)
                except ProviderError as exc:
                    made = await self._refused_submit(name, api, label, part, exc)
                if made is None:
                    continue
                batch_id = made
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

    async def _refused_submit(
        self, name: str, api: BatchAPI, label: str, part: dict[str, _Waiting], exc: ProviderError
    ) -> str | None:
        """A submit that raised: the batch it made after all (its reply was lost), or None with
        its turns queued again after a pause (the vendor's reasons), unanswered after
        `SUBMIT_TRIES`, or failed (the request's reasons: a 400, a bad key)."""
        if exc.kind not in _RESEND_KINDS:  # asking again would fail alike
            for waiting in part.values():
                await self._fail(waiting, exc, None)
            return None
        with contextlib.suppress(ProviderError):
            made = await api.find(label)
            if made is not None:
                log.warning("submitting batch %s failed (%s) but the vendor made it", label, exc)
                return made
        tries = max(w.refused for w in part.values()) + 1
        log.warning("submitting batch %s failed (try %d): %s", label, tries, exc)
        for waiting in part.values():
            waiting.refused += 1
            if waiting.refused >= SUBMIT_TRIES:
                await self._unanswered(waiting, exc, None, tries=waiting.refused)
            else:
                self._pending[name][waiting.custom_id] = waiting
        pause = SUBMIT_PAUSE_S * 2 ** (tries - 1)
        self._submit_after[name] = time.monotonic() + pause
        return None

    def _deferred_at(self) -> float | None:
        """When the earliest configuration whose submit was refused may submit again."""
        times = [self._submit_after.get(n, 0.0) for n, q in self._pending.items() if q]
        return min(times) if times else None

    async def _await_deferred(self) -> None:
        """With no batch left to poll, sleep until a refused submit may be tried again."""
        at = self._deferred_at()
        if at is not None and not any(b.waiting and b.results is None for b in self._open.values()):
            await asyncio.sleep(max(0.0, at - time.monotonic()))

    async def _poll(self) -> None:
        """Poll the open batches someone waits for, with backoff, until at least one is over
        (read it and hand out its answers) or given up, or a refused submit may be tried
        again."""
        while True:
            wanted = [b for b in self._open.values() if b.waiting and b.results is None]
            if not wanted:
                return
            now = time.monotonic()
            due = [b for b in wanted if b.next_poll <= now]
            if not due:
                wake = min(b.next_poll for b in wanted)
                deferred = self._deferred_at()
                if deferred is not None and deferred <= wake:
                    await asyncio.sleep(max(0.0, deferred - now))
                    return  # a refused submit's turns may go now: back to the loop
                await asyncio.sleep(wake - now)
                continue
            over = False
            for opened in due:
                state: BatchState | None
                try:
                    state = await opened.api.poll(opened.record.batch_id)
                except ProviderError as exc:
                    state = _unreadable(opened.record.batch_id, exc)
                    if state is None:  # the vendor's bad moment: polled again, counted
                        opened.failed_reads += 1
                else:
                    opened.failed_reads = 0
                if state is not None and state.over and await self._collect(opened, state):
                    over = True
                elif await self._give_up(opened):
                    over = True
                else:
                    opened.pause_s = min(opened.pause_s * 1.5, MAX_POLL_S)
                    opened.next_poll = time.monotonic() + opened.pause_s
            if over:
                return

    async def _give_up(self, opened: _Open) -> bool:
        """A batch waited on long enough: its vendor's window and a margin passed since it was
        submitted, or it could not be read `MAX_FAILED_READS` times in a row. Its turns are
        unanswered (a resume polls it again, in case it finished since)."""
        record = opened.record
        window_ms = (opened.api.window_s + WINDOW_MARGIN_S) * 1000
        if record.submitted_ms is not None and now_ms() - record.submitted_ms > window_ms:
            code, why = "BATCH_EXPIRED", "was not over within its vendor's completion window"
        elif opened.failed_reads >= MAX_FAILED_READS:
            code, why = "BATCH_FAILED", f"could not be read {opened.failed_reads} times in a row"
        else:
            return False
        error = WorkbenchError(f"batch {record.batch_id} {why}; given up", code=code)
        log.warning("%s", error.message)
        for waiting in list(opened.waiting.values()):
            opened.waiting.pop(waiting.custom_id, None)
            await self._unanswered(waiting, error, record.batch_id)
        self._journal(record, "given_up", error.message)
        return True

    async def _collect(self, opened: _Open, state: BatchState) -> bool:
        """Read a batch that is over and settle its turns; False when its results could not be
        read for the vendor's reasons (read again at the next poll: sending the batch again
        would pay for it twice)."""
        record = opened.record
        requests = {cid: masked(w.attempt) for cid, w in opened.waiting.items()}
        try:
            results = (
                await opened.api.results(state, requests, submitted=record.requests)
                if requests
                else BatchResults()
            )
        except ProviderError as exc:
            if exc.kind not in ("auth", "bad_request"):
                opened.failed_reads += 1
                log.warning(
                    "reading batch %s failed, reading again later: %s", record.batch_id, exc
                )
                return False
            # Refused for good (the key revoked, the files gone): its turns go unanswered.
            log.warning("reading batch %s failed: %s", record.batch_id, exc)
            results = BatchResults()
        opened.failed_reads = 0
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
        self._journal(record, status, state.message or None)
        return True

    def _journal(self, record: BatchRecord, status: str, message: str | None) -> None:
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
                message,
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
        cid = waiting.custom_id
        got = results.replies.get(cid)
        batch_id = opened.record.batch_id
        if isinstance(got, Reply):
            await self._succeed(waiting, got, batch_id, opened.record.submitted_ms)
            return
        if isinstance(got, ProviderError):
            if got.kind not in _RESEND_KINDS:  # the request's own fault: it fails
                await self._fail(waiting, got, batch_id)
            elif waiting.sends < SENDS:
                await self._again(waiting, got, batch_id)
            else:
                await self._unanswered(waiting, got, batch_id)
            return
        # Unanswered: the batch was cancelled, expired first, failed, or lost the request.
        why = state.message or f"the batch ended {state.raw_status or state.status}"
        if cid in results.cancelled or state.status == "cancelled":
            # Someone cancelled the batch: its requests are not sent again behind their back.
            text = f"batch {batch_id} was cancelled before it ran the request ({why})"
            await self._unanswered(waiting, WorkbenchError(text, code="BATCH_FAILED"), batch_id)
            return
        text = f"batch {batch_id} did not answer the request ({why})"
        if cid in results.expired or state.status == "expired":
            error = WorkbenchError(text, code="BATCH_EXPIRED")
        else:
            error = WorkbenchError(text, code="BATCH_FAILED")
        if waiting.sends < SENDS:
            await self._again(waiting, error, batch_id)
        else:
            await self._unanswered(waiting, error, batch_id)

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
        """Failed for the request's own reasons (a 400, a bad key): asking again would fail."""
        await self._log_failure(waiting, error, batch_id)
        if not waiting.future.done():
            waiting.future.set_exception(error)

    async def _unanswered(
        self,
        waiting: _Waiting,
        error: WorkbenchError,
        batch_id: str | None,
        *,
        tries: int | None = None,
    ) -> None:
        """Left unanswered for the vendor's reasons: the item's output says so, with the
        error's code, is never graded as failed, and `--resume` asks it again."""
        await self._log_failure(waiting, error, batch_id)
        kind = error.kind if isinstance(error, ProviderError) else None
        reason: UnansweredReason = "rate_limit" if kind == "rate_limit" else "provider_error"
        held = Unanswered(reason, now_ms(), error, tries or max(1, waiting.sends))
        if not waiting.future.done():
            waiting.future.set_exception(held)

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
    "MAX_FAILED_READS",
    "MAX_POLL_S",
    "SUBMIT_PAUSE_S",
    "SUBMIT_TRIES",
    "WINDOW_MARGIN_S",
    "BatchRounds",
    "batch_first_model",
    "check_batchable",
    "custom_id",
    "run_batched",
]
