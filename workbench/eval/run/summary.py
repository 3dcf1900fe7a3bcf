"""`RunSummary`: what a run did, counted as its outputs are logged, and the lines the terminal
shows for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class RunSummary:
    """A run's counts (`by_config`: the same per configuration; `by_model`: per model that
    answered, from each output's key), its status and its time.

    Counted as every table of the run counts them (`workbench.eval.analysis.outcomes`):
    *answered*, the model answered (no error code); *unanswered*, held for the provider's
    reasons and given up (per reason); *failed*, neither (see `failed`). The pass rate is passed
    / graded answers, with the unanswered and the failed beside it, never in it.
    `resume_at_ms`: when a day's quota stopped items, the earliest reset (when to resume)."""

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
    unanswered: dict[str, int] = field(default_factory=dict)  # reason → outputs
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    resume_at_ms: int | None = None
    # Items a day's quota stopped in an earlier pass, left waiting for its reset by a resume
    # (asking before it would only be refused again); counted in `unanswered` too.
    waiting: int = 0
    # The run's cassette: (its file, its mode, answers replayed, exchanges recorded, models
    # skipped as not recorded).
    cassette: tuple[str, str, int, int, int] | None = None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    @property
    def answered(self) -> int:
        """Outputs a model answered (graded or not): no error code."""
        return self.done - self.errors

    @property
    def failed(self) -> int:
        """Outputs that failed and were not held: the route failed for the caller's reasons (a
        400, a bad key, no hint to wait for), or the run lost the item (a batch's vendor-side
        ending, a lost Ray worker). Never in the pass rate."""
        return self.errors - sum(self.unanswered.values()) + self.waiting

    def add(
        self,
        config: str,
        error_code: str | None,
        passed: bool | None,
        *,
        key: str | None = None,
        unanswered: str | None = None,
        retry_at_ms: int | None = None,
    ) -> None:
        """One output counted, in the run's totals, its configuration's and, when answered,
        the answering model's (`key`: provider:model@lane)."""
        self.done += 1
        per = self.by_config.setdefault(
            config, {"done": 0, "errors": 0, "passed": 0, "graded": 0, "unanswered": 0}
        )
        per["done"] += 1
        if error_code:
            self.errors += 1
            per["errors"] += 1
        if unanswered:
            self.unanswered[unanswered] = self.unanswered.get(unanswered, 0) + 1
            per["unanswered"] += 1
            if unanswered == "daily_quota" and retry_at_ms is not None:
                self.resume_at_ms = min(self.resume_at_ms or retry_at_ms, retry_at_ms)
            return
        model = None if error_code or key is None else key.split("@", 1)[0]
        mine = (
            self.by_model.setdefault(model, {"answered": 0, "passed": 0, "graded": 0})
            if model
            else None
        )
        if mine is not None:
            mine["answered"] += 1
        if passed is not None and not error_code:  # a failure's verdict, if a row has one, is none
            self.graded += 1
            per["graded"] += 1
            if mine is not None:
                mine["graded"] += 1
            if passed:
                self.passed += 1
                per["passed"] += 1
                if mine is not None:
                    mine["passed"] += 1

    def still_waiting(self, count: int, reset_at_ms: int | None) -> None:
        """Items a resume leaves for after their daily quota's reset (see `waiting`)."""
        self.waiting += count
        self.unanswered["daily_quota"] = self.unanswered.get("daily_quota", 0) + count
        if reset_at_ms is not None:
            self.resume_at_ms = min(self.resume_at_ms or reset_at_ms, reset_at_ms)


__all__ = ["RunSummary"]
