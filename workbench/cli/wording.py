"""What the command says on the terminal, in one place so that its wording stays stable.

Scripts and people read these lines: an error is one line, `error: CODE: message`, whose
code (from `workbench.errors`) is what a script should match; the run's progress and
whereabouts go to stderr, so that stdout carries only what a verb was asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# Said when Ctrl-C ends a verb that has nothing to resume.
INTERRUPTED = "interrupted"


def error_line(exc: BaseException) -> str:
    """A refusal or a failed job: a `WorkbenchError` renders as `CODE: message` itself."""
    return f"error: {exc}"


def internal_error_line(exc: BaseException) -> str:
    """A bug of ours: still one line, so that a script reading stderr is not flooded; the
    traceback is one environment variable away."""
    message = " ".join(str(exc).split())[:300]
    return (
        f"error: INTERNAL: {type(exc).__name__}: {message} "
        "(set WORKBENCH_DEBUG=1 for the traceback)"
    )


def ignored_fields_line(path: str, ignored: Sequence[str]) -> str:
    """What a LiteLLM config holds that means nothing here, said once so no setting is
    dropped unseen."""
    return f"{path}: litellm config: ignored fields: {', '.join(ignored)}"


def recovered_line(rows: int) -> str:
    return f"recovered {rows} row(s) an interrupted run had journaled"


def run_started_line(run_id: str, jobs: int, db: str) -> str:
    return f"run {run_id}: {jobs} job(s) → {db}"


def run_interrupted(db: str, dataset: str, limit: int | None, run_id: str) -> str:
    """Ctrl-C during a run: everything finished is stored, so say how to carry on."""
    limit_flag = f" --limit {limit}" if limit else ""
    return (
        f"interrupted: everything so far is in {db}; resume with\n"
        f"  workbench run {dataset}{limit_flag} --resume {run_id}"
    )


def database_line(db: str) -> str:
    return f"DuckDB:  {Path(db).resolve()}"


def report_line(path: Path) -> str:
    return f"report:  {path.resolve()}"
