"""What Inspect tells the `workbench` model API through its hooks: a sample's score (written
over its output's grade, so the report's pass rates are Inspect's) and the end of a task or of
an eval (its run finished, its file closed).

Inspect 0.3.285 never closes a model that `eval()` made (models are memoized for the process):
the end of the task is the only moment its run is known to be over.

The hooks are registered when the first `workbench/...` model is made, not when the entry
point is loaded: Inspect announces every registered hook at start-up, and an eval of any other
model must look as it did before the extra was installed. They are enabled only while a run is
open.
"""

from __future__ import annotations

import json

from inspect_ai.hooks import Hooks, RunEnd, SampleEnd, TaskEnd, hooks
from inspect_ai.log import EvalSample
from inspect_ai.scorer import value_to_float

from workbench.eval.inspect_model.provider import OPEN, RUN_STATUS
from workbench.eval.store.schema import OutputGrade

_as_float = value_to_float()


class WorkbenchRuns(Hooks):
    def enabled(self) -> bool:
        return any(model.open_runs() or model.cassette_open() for model in OPEN)

    async def on_sample_end(self, data: SampleEnd) -> None:
        sample = data.sample
        for model in OPEN:
            model.sample_ended(data.eval_id, str(sample.id), max(0, sample.epoch - 1))
            logged = model.logged(data.eval_id)
            grade = sample_grade(sample, logged.config.name) if logged else None
            if grade is not None:
                model.graded(data.eval_id, grade)

    async def on_task_end(self, data: TaskEnd) -> None:
        status = RUN_STATUS.get(data.log.status, "interrupted")
        for model in list(OPEN):
            await model.finish(data.eval_id, status)

    async def on_run_end(self, data: RunEnd) -> None:
        # A task that never reached its end (an error before it, an interrupted eval).
        status = "failed" if data.exception is not None else "interrupted"
        for model in list(OPEN):
            for eval_id in model.open_runs(inspect_run=data.run_id):
                await model.finish(eval_id, status)
            if not model.open_runs():
                model.close_cassette()


_registered = False


def register_hooks() -> None:
    """Register `WorkbenchRuns` with Inspect, once per process."""
    global _registered
    if not _registered:
        hooks(name="workbench_runs", description="Finishes the workbench run of each task.")(
            WorkbenchRuns
        )
        _registered = True


def sample_grade(sample: EvalSample, config: str) -> OutputGrade | None:
    """A sample's first score as its output's grade: the score as a float (Inspect's own
    reading: C is 1, I is 0, P is 0.5), passed when full marks; None when it has no score."""
    if not sample.scores:
        return None
    scorer, score = next(iter(sample.scores.items()))
    value = _as_float(score.value) if isinstance(score.value, str | int | float | bool) else None
    return OutputGrade(
        item_id=str(sample.id),
        repeat=max(0, sample.epoch - 1),
        config=config,
        passed=None if value is None else value >= 1.0,
        score=value,
        grade=json.dumps(
            {
                "checks": {scorer: score.value},
                "reason": score.explanation or f"scored by Inspect's {scorer}",
            },
            default=str,
        ),
    )


__all__ = ["WorkbenchRuns", "register_hooks", "sample_grade"]
