"""Batch jobs on the simulator: the clock, the answers and the files both vendors' batch APIs
share (`openai_batch.py` and `gemini_batch.py` only speak their wire formats over this).

A job's lines are answered when it is submitted, in line order, each by the same code the
synchronous endpoint runs (`respond.py`) with the persona's own count of batch lines as its
ordinal: the n-th batch line of a persona gets the answer the n-th synchronous request of a
freshly reset simulator gets. When each answer becomes visible is the clock's business:

    validating ─0.1·delay─▶ in_progress ─0.9·delay─▶ finalizing ─delay─▶ completed
        │                      │  line i of n is done at 0.1·delay + 0.8·delay·(i+1)/n
        └─▶ failed             ├─▶ expired     at expire_after_s, lines done by then kept
        (a line was invalid)   └─▶ cancelling ─grace─▶ cancelled   lines done by the cancel kept

Batch lines never touch the per-minute rate limits nor the personas' synchronous failure
schedules (a batch absorbs both); `[batch.failures]` in the fleet says which lines fail.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from starlette.responses import Response

from workbench.sim import respond
from workbench.sim.failures import FailureSchedule
from workbench.sim.fleet import Fleet
from workbench.sim.vendor_errors import SimError, context_length, server_error, unknown_model

#: the neutral states (OpenAI's words; `gemini_batch.py` maps them to BATCH_STATE_*)
TERMINAL = frozenset({"failed", "completed", "expired", "cancelled"})


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body, ensure_ascii=False),
        status_code=status,
        headers=headers or {},
        media_type="application/json",
    )


def iso(epoch: float) -> str:
    """Google's timestamp format, from epoch seconds."""
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    )


def new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


@dataclass(frozen=True, slots=True)
class LineRequest:
    """One request of a batch: its key (OpenAI's custom_id, Gemini's key), model and body."""

    key: str
    model: str
    body: Any


@dataclass(frozen=True, slots=True)
class LineOutcome:
    """What the synchronous endpoint would have answered: a status and its JSON body."""

    key: str
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return self.status == 200


@dataclass(slots=True)
class StoredFile:
    """An uploaded or generated file. `name` is OpenAI's `file-…` id or Google's `files/…`."""

    name: str
    vendor: str
    data: bytes
    created: float
    filename: str = ""
    purpose: str = ""
    mime: str = "application/jsonl"
    generated: bool = False


@dataclass(slots=True)
class BatchJob:
    """A submitted batch and its clock. Times are epoch seconds."""

    id: str
    vendor: str
    model: str
    keys: tuple[str, ...]
    outcomes: tuple[LineOutcome, ...]
    problems: tuple[dict[str, Any], ...]
    created: float
    delay_s: float
    expire_after_s: float
    info: dict[str, Any] = field(default_factory=dict)
    cancelled_at: float | None = None
    #: how long `cancelling` lasts (OpenAI's batches linger in it; Gemini's do not)
    cancel_grace_s: float = 0.0
    #: output/error files written when the job ended (names, by role)
    files: dict[str, str] = field(default_factory=dict)

    # -- the clock

    @property
    def started_at(self) -> float:
        return self.created + 0.1 * self.delay_s

    @property
    def finalizing_at(self) -> float:
        return self.created + 0.9 * self.delay_s

    @property
    def completed_at(self) -> float:
        return self.created + self.delay_s

    @property
    def expires_at(self) -> float | None:
        """When an unfinished job expires; None when it never does (the vendor's window)."""
        return self.created + self.expire_after_s if self.expire_after_s > 0 else None

    @property
    def expiring(self) -> bool:
        """Whether the job expires before it completes (unless cancelled first)."""
        at = self.expires_at
        return at is not None and at < self.completed_at and not self.cancelled_before(at)

    def cancelled_before(self, at: float) -> bool:
        return self.cancelled_at is not None and self.cancelled_at < at

    @property
    def cancelling_until(self) -> float:
        assert self.cancelled_at is not None
        return self.cancelled_at + self.cancel_grace_s

    def line_done_at(self, index: int) -> float:
        n = max(1, len(self.outcomes))
        return self.started_at + 0.8 * self.delay_s * (index + 1) / n

    def state(self, now: float) -> str:
        if self.problems:
            return "validating" if now < self.started_at else "failed"
        if self.cancelled_at is not None:
            return "cancelling" if now < self.cancelling_until else "cancelled"
        if self.expiring and now >= (self.expires_at or 0):
            return "expired"
        if now < self.started_at:
            return "validating"
        if now < self.finalizing_at:
            return "in_progress"
        if now < self.completed_at:
            return "finalizing"
        return "completed"

    def ended_at(self, now: float) -> float | None:
        """When the job reached its terminal state, or None while it runs."""
        state = self.state(now)
        if state == "failed":
            return self.started_at
        if state == "cancelled":
            return self.cancelling_until
        if state == "expired":
            return self.expires_at
        if state == "completed":
            return self.completed_at
        return None

    def stop_at(self) -> float:
        """The moment lines stop running: a cancel, an expiry, or never."""
        stops = [float("inf")]
        if self.cancelled_at is not None:
            stops.append(self.cancelled_at)
        if self.expiring and self.expires_at is not None:
            stops.append(self.expires_at)
        return min(stops)

    def done(self, now: float) -> list[int]:
        """The indices of the lines that have run by `now`."""
        until = min(now, self.stop_at())
        return [i for i in range(len(self.outcomes)) if self.line_done_at(i) <= until]

    def counts(self, now: float) -> dict[str, int]:
        """total / completed / failed lines; at the end, a line that never ran has failed."""
        done = self.done(now)
        ok = sum(1 for i in done if self.outcomes[i].ok)
        failed = len(done) - ok
        if self.state(now) in TERMINAL:
            failed = len(self.outcomes) - ok
        return {"total": len(self.outcomes), "completed": ok, "failed": failed}


class BatchBook:
    """Both vendors' files and batch jobs, the batch log, and each persona's batch ordinals."""

    def __init__(self, fleet: Fleet, clock: Callable[[], float] = time.time) -> None:
        self.fleet = fleet
        self.clock = clock
        self.lock = threading.Lock()
        self.schedules = {
            pid: FailureSchedule(replace(p, failures=fleet.batch.failures.get(pid, ())), fleet.seed)
            for pid, p in fleet.personas.items()
        }
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.files: dict[str, StoredFile] = {}
            self.jobs: dict[str, BatchJob] = {}
            self.log: list[dict[str, Any]] = []
            self.ordinals: Counter[str] = Counter()
            self.uploads: dict[str, tuple[dict[str, Any], bytearray]] = {}

    # -- files

    def add_file(self, file: StoredFile) -> StoredFile:
        with self.lock:
            self.files[file.name] = file
        return file

    def file(self, name: str, vendor: str) -> StoredFile | None:
        with self.lock:
            found = self.files.get(name)
        return found if found is not None and found.vendor == vendor else None

    def delete_file(self, name: str, vendor: str) -> bool:
        with self.lock:
            found = self.files.get(name)
            if found is None or found.vendor != vendor:
                return False
            del self.files[name]
            return True

    def list_files(self, vendor: str) -> list[StoredFile]:
        with self.lock:
            return [f for f in self.files.values() if f.vendor == vendor]

    # -- jobs

    def submit(
        self,
        job_id: str,
        vendor: str,
        model: str,
        lines: list[LineRequest],
        problems: list[dict[str, Any]],
        info: dict[str, Any],
    ) -> BatchJob:
        """Answer every line now (unless the batch failed validation) and start its clock."""
        surface = "gemini" if vendor == "gemini" else "openai"
        with self.lock:
            outcomes = (
                tuple(self._run(job_id, surface, line, i) for i, line in enumerate(lines))
                if not problems
                else ()
            )
            now = self.clock()
            job = BatchJob(
                id=job_id,
                vendor=vendor,
                model=model,
                keys=tuple(line.key for line in lines),
                outcomes=outcomes,
                problems=tuple(problems),
                created=now,
                delay_s=self.fleet.batch.delay_s,
                expire_after_s=self.fleet.batch.expire_after_s,
                info=info,
            )
            self.jobs[job_id] = job
            self.log.append(
                {
                    "id": job_id,
                    "vendor": vendor,
                    "model": model,
                    "keys": list(job.keys),
                    "lines": len(lines),
                    "valid": not problems,
                    "time": iso(now),
                }
            )
        return job

    def job(self, job_id: str, vendor: str) -> BatchJob | None:
        with self.lock:
            found = self.jobs.get(job_id)
        return found if found is not None and found.vendor == vendor else None

    def list_jobs(self, vendor: str) -> list[BatchJob]:
        """Newest first, as both vendors list them."""
        with self.lock:
            jobs = [j for j in self.jobs.values() if j.vendor == vendor]
        return sorted(jobs, key=lambda j: j.created, reverse=True)

    def delete_job(self, job_id: str, vendor: str) -> bool:
        with self.lock:
            found = self.jobs.get(job_id)
            if found is None or found.vendor != vendor:
                return False
            del self.jobs[job_id]
            return True

    def cancel(self, job: BatchJob, grace: float = 0.1) -> bool:
        """Start cancelling `job` for `grace` of its delay (again is a no-op); False when it
        has ended some other way."""
        with self.lock:
            if job.cancelled_at is not None:
                return True
            if job.state(self.clock()) in TERMINAL:
                return False
            job.cancelled_at = self.clock()
            job.cancel_grace_s = grace * job.delay_s
            return True

    # -- resumable uploads (Gemini's Files API)

    def begin_upload(self, upload_id: str, meta: dict[str, Any]) -> None:
        with self.lock:
            self.uploads[upload_id] = (meta, bytearray())

    def add_upload_chunk(self, upload_id: str, offset: int, chunk: bytes) -> str | None:
        """Append a chunk; a message when the upload is unknown or the offset is wrong."""
        with self.lock:
            found = self.uploads.get(upload_id)
            if found is None:
                return f"No upload session {upload_id!r}."
            if offset != len(found[1]):
                return f"The upload offset is {offset}; {len(found[1])} bytes were received."
            found[1].extend(chunk)
            return None

    def finish_upload(self, upload_id: str) -> tuple[dict[str, Any], bytes]:
        with self.lock:
            meta, data = self.uploads.pop(upload_id)
            return meta, bytes(data)

    def settle(
        self, job: BatchJob, now: float, write: Callable[[BatchJob, float], dict[str, StoredFile]]
    ) -> dict[str, str]:
        """The job's output files, written once by `write` when the job has ended by `now`
        (the moment the caller describes the job at, so its state and its files agree)."""
        with self.lock:
            if job.files or job.state(now) not in TERMINAL:
                return dict(job.files)
            for role, stored in write(job, now).items():
                self.files[stored.name] = stored
                job.files[role] = stored.name
            return dict(job.files)

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            loaded: list[dict[str, Any]] = json.loads(json.dumps(self.log))
            return loaded

    # -- one line

    def _run(self, job_id: str, surface: str, line: LineRequest, index: int) -> LineOutcome:
        """What the synchronous endpoint answers this request with, minus rate limits."""
        persona = self.fleet.get(line.model)
        try:
            if persona is None:
                raise unknown_model(line.model, surface)
            self.ordinals[persona.id] += 1
            ordinal = self.ordinals[persona.id]
            conv = respond.parse(surface, line.body)
            failure = self.schedules[persona.id].kind_for(ordinal)
            if failure in ("500", "502", "503", "408"):
                raise server_error(int(failure))
            if failure == "context_length":
                tokens = conv.prompt_tokens
                raise context_length(
                    persona.context_window, max(tokens, persona.context_window + 1), surface
                )
            respond.refuse(persona, surface, line.model, line.body, conv)
            ans = respond.shaped_answer(persona, conv, self.fleet.seed, ordinal, failure)
            body = respond.render(surface, ans, conv, line.model, ordinal)
        except SimError as err:
            status, error_body, _ = err.render(surface)
            return LineOutcome(line.key, status, error_body)
        # The ids the synchronous endpoint numbers by its request log name the batch line.
        if surface == "gemini":
            body["responseId"] = f"sim-{job_id}-{index + 1}"
        else:
            body["id"] = f"chatcmpl-sim-{job_id}-{index + 1}"
        return LineOutcome(line.key, 200, body)
