"""The Ray driver's side of the rows: every row a worker sends logged once, through the one
`Store`; what is done; what each worker made (its tally, kept when it is lost).

A row may arrive twice (a batch sent again); an attempt is known by its derived id, an output
by its (item, repeat, config). A batch is applied in the order the local engine logs: a turn's
attempts, then its answer, then its tool steps, and the outputs last, so a driver killed
half-way through one leaves a journal a resume can replay exactly.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import WorkbenchError
from workbench.eval.engines.ray.worker import from_batch
from workbench.eval.run.jobs import Job
from workbench.eval.store.database import Store
from workbench.eval.store.schema import COLUMNS, OutputRow

_ATTEMPT_ID = list(COLUMNS["attempts"]).index("attempt_id")
_STEP_ID = list(COLUMNS["tool_steps"]).index("step_id")
_STEP_OK = list(COLUMNS["tool_steps"]).index("ok")
_OUTPUT_NAMES = list(COLUMNS["outputs"])
_APPLY_ORDER = {"attempts": 0, "routes": 1, "verdicts": 2, "replies": 3, "tool_steps": 9}
_REPLY_NAMES = list(COLUMNS["replies"])


@dataclass(slots=True)
class WorkerTally:
    """The driver's view of one actor: its jobs, how far it was taken, what it made."""

    index: int
    handle: Any
    info: dict[str, Any] = field(default_factory=dict)  # node, pid (from `ready`)
    jobs: list[Job] = field(default_factory=list)
    acked: int = 0
    alive: bool = True
    outputs: int = 0
    attempts: int = 0
    on_memory: set[str] = field(default_factory=set)  # configs whose quota is in its memory
    making: set[tuple[str, int, str]] = field(default_factory=set)  # its jobs in flight, as said
    windows: list[list[Any]] = field(default_factory=list)  # [from_ms, to_ms | None, reason]

    def backend(self, config: str, degraded: bool, at_ms: int, reason: str) -> None:
        """A window is open while any of this worker's quotas is on memory."""
        was = bool(self.on_memory)
        (self.on_memory.add if degraded else self.on_memory.discard)(config)
        if self.on_memory and not was:
            self.windows.append([at_ms, None, reason])
        elif was and not self.on_memory and self.windows:
            self.windows[-1][1] = at_ms

    def summary(self) -> dict[str, Any]:
        return {
            "worker": self.index,
            "node": self.info.get("node"),
            "pid": self.info.get("pid"),
            "outputs": self.outputs,
            "attempts": self.attempts,
            "lost": not self.alive,
            "memory_windows": [list(w) for w in self.windows],
        }


class Collector:
    """The driver's side: rows into the store, each logged once; what is done so far."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        jobs: list[Job],
        finished: Callable[[OutputRow], Any],
        say: Callable[[str], Any],
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.total = len(jobs)
        self.jobs = {j.key: j for j in jobs}
        self.finished = finished
        self.say = say
        self.done: set[tuple[str, int, str]] = set()
        self.attempt_ids: set[str] = set()
        self.tries: dict[tuple[str, int, str], int] = {j.key: j.tries for j in jobs}
        self.steps: dict[tuple[str, int, str], Counter[tuple[str, bool]]] = {
            j.key: Counter(j.steps) for j in jobs
        }
        self.replies: dict[tuple[str, int, str], dict[int, tuple[str, dict[str, Any]]]] = {}
        self.losses: Counter[tuple[str, int, str]] = Counter()

    @property
    def complete(self) -> bool:
        return len(self.done) >= self.total

    def resumed(self, job: Job) -> Job:
        """The job as a new worker should make it: the answers received, the tries and tool
        steps logged."""
        turns = self.replies.get(job.key, {})
        saved = job.saved + tuple(turns[t] for t in sorted(turns) if t >= len(job.saved))
        return Job(
            job.item,
            job.repeat,
            job.config,
            saved,
            self.tries.get(job.key, job.tries),
            dict(self.steps.get(job.key, job.steps)),
        )

    def give_up(self, job: Job, worker: int) -> None:
        """A job whose worker was lost twice while making it: its output is that error, so the
        run ends (and a resume tries it again), rather than killing every worker in turn."""
        row = OutputRow(
            run_id=self.run_id,
            item_id=job.item.id,
            repeat=job.repeat,
            config=job.config,
            passed=False if job.item.expect else None,
            score=0.0,
            cached=False,
            error_code="RAY_WORKER_LOST",
            error_message=f"its Ray worker was lost twice while making it (last: worker {worker})",
            at_ms=int(time.time() * 1000),
        )
        self.say(
            f"ray: {job.item.id} (repeat {job.repeat}, {job.config}) lost two workers: "
            "logged as RAY_WORKER_LOST"
        )
        self.done.add(job.key)
        self.store.add_output(row)
        self.finished(row)

    def apply(
        self, worker: WorkerTally, tables: dict[str, Any], other: list[tuple[str, Any]]
    ) -> None:
        rows_of = {table: from_batch(batch) for table, batch in tables.items()}
        for kind, row in other:  # action proposals and moves; rows Arrow would not type
            if kind == "proposal":
                with contextlib.suppress(WorkbenchError):  # sent again: already held
                    self.store.insert_action(row)
            elif kind == "actions":
                tags, move = row
                self.store.add_rows("actions", [(tuple(tags), move)])
            else:
                rows_of.setdefault(kind, []).append(tuple(row))
        outputs = self._new_outputs(rows_of.pop("outputs", []))
        # In the order the local engine logs them: a turn's attempts, then its answer, then
        # what followed it (its tool steps). A driver killed half-way through a batch leaves a
        # journal from which a resume replays exactly what it holds.
        for table, rows in sorted(rows_of.items(), key=lambda t: _APPLY_ORDER.get(t[0], 5)):
            if table == "attempts":
                rows = self._new_attempts(rows)
                worker.attempts += len(rows)
            elif table == "replies":
                self._note_replies(rows)
            elif table == "tool_steps":
                for row in rows:
                    key = (row[1], row[2], row[3])
                    step = (row[_STEP_ID], row[_STEP_OK] is not None)
                    self.steps.setdefault(key, Counter())[step] += 1
            elif table == "events":
                self._notices(worker, rows)
            if rows:
                self.store.add_rows(table, rows)
        if outputs:  # last: a job's output lands after every row it made
            self.store.add_rows("outputs", outputs)
            worker.outputs += len(outputs)
            for row in outputs:
                self.finished(OutputRow(**dict(zip(_OUTPUT_NAMES, row, strict=True))))

    def _new_attempts(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        fresh = []
        for row in rows:
            attempt = row[_ATTEMPT_ID]
            if attempt in self.attempt_ids:
                continue
            self.attempt_ids.add(attempt)
            key = (row[1], row[2], row[3])
            self.tries[key] = self.tries.get(key, 0) + 1
            fresh.append(row)
        return fresh

    def _new_outputs(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        fresh = []
        for row in rows:
            key = (row[1], row[2], row[3])
            if key in self.done or key not in self.jobs:
                continue
            self.done.add(key)
            fresh.append(row)
        return fresh

    def _note_replies(self, rows: list[tuple[Any, ...]]) -> None:
        for row in rows:
            r = dict(zip(_REPLY_NAMES, row, strict=True))
            key = (r["item_id"], r["repeat"], r["config"])
            self.replies.setdefault(key, {})[r["turn"]] = (r["key"], json.loads(r["reply"]))

    def _notices(self, worker: WorkerTally, rows: list[tuple[Any, ...]]) -> None:
        for row in rows:
            if row[2] != "QuotaBackendEvent":
                continue
            data = json.loads(row[4])
            degraded = data.get("state") == "degraded"
            worker.backend(str(data.get("config")), degraded, int(row[3]), str(data.get("reason")))
            if degraded:
                self.say(
                    f"ray: worker {worker.index} ({data.get('config')}): Redis failed "
                    f"({data.get('reason')}); its quotas are its own (per worker, not "
                    "shared) until Redis answers"
                )
            else:
                self.say(
                    f"ray: worker {worker.index} ({data.get('config')}): Redis answers "
                    "again; quotas shared"
                )
