"""`RunSummary`: what a run did, counted as its outputs are logged, and the lines the terminal
shows for it."""

from __future__ import annotations

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


__all__ = ["RunSummary"]
