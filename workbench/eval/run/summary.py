"""`RunSummary`: what a run did, counted as its outputs are logged, and the lines the terminal
shows for it."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class RunSummary:
    """A run's counts (`by_config`: the same per configuration), its status and its time."""

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

    def add(self, config: str, error_code: str | None, passed: bool | None) -> None:
        """One output counted, in the run's totals and in its configuration's."""
        self.done += 1
        per = self.by_config.setdefault(config, {"done": 0, "errors": 0, "passed": 0, "graded": 0})
        per["done"] += 1
        if error_code:
            self.errors += 1
            per["errors"] += 1
        if passed is not None:
            self.graded += 1
            per["graded"] += 1
            if passed:
                self.passed += 1
                per["passed"] += 1


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


__all__ = ["RunSummary", "describe"]
