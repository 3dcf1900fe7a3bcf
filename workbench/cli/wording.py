"""What the command says on the terminal, in one place so that its wording stays stable.

Scripts and people read these lines: an error is one line, `error: CODE: message`, whose
code (from `workbench.errors`) is what a script should match; the run's progress and
whereabouts go to stderr, so that stdout carries only what a verb was asked for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.eval.run.summary import RunSummary
    from workbench.tools.pending import Action

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


def action_line(action: Action) -> str:
    """One pending action in `workbench actions list`: id, status, action, who proposed it,
    and the start of its payload."""
    payload = json.dumps(action.payload, ensure_ascii=False)[:80]
    return (
        f"{action.id}  {action.status:<9} {action.action:<14} by {action.proposed_by:<24} {payload}"
    )


def nothing_line(what: str) -> str:
    """A listing with nothing in it (`no runs yet`, `no pending actions`): said, never blank."""
    return f"no {what}"


def bfcl_data_line(path: Path | str) -> str:
    return f"BFCL data: {path}"


def bfcl_fetching_line(version: str, into: Path) -> str:
    return (
        f"BFCL's data is not here yet: downloading bfcl-eval=={version} into {into} "
        "(pip download --no-deps: read as a zip, nothing installed)"
    )


def bfcl_leaderboard_lines(
    row: Mapping[Any, Any],
    weights: dict[str, int],
    sections: dict[str, tuple[str, ...]],
    categories: Sequence[str],
) -> list[str]:
    """One model's BFCL leaderboard row (`bfcl_scores`), a figure a line: "Overall Acc" first
    with BFCL's weights and what it counts for the categories not run, then each figure it
    weighs with its summaries and categories indented under it. A category not run says what
    BFCL counts for it; a summary over one is N/A, as on BFCL's leaderboard."""
    title = " · ".join(str(row[k]) for k in ("model", "mode") if k in row)
    lines = [f"{title} · {row['Items']} item(s)" if title else f"{row['Items']} item(s)"]
    shares = ", ".join(f"{name.removesuffix(' Overall Acc')} {w}" for name, w in weights.items())
    overall = f"  {'Overall Acc':<34} {_percent(row['Overall Acc'])}   (weights: {shares}"
    not_run = int(row["Not Run"])
    if not_run:
        overall += f"; BFCL counts the {not_run} categories not run as 0"
    lines.append(overall + ")")
    for summary, parts in sections.items():
        lines.append(f"  {summary:<34} {_figure(row[summary], summary in categories)}")
        lines += [f"    {part:<32} {_figure(row[part], part in categories)}" for part in parts]
    return lines


def _percent(value: float) -> str:
    return "unknown (BFCL's data is not fetched)" if value != value else f"{value:6.1%}"


def _figure(value: float, category: bool) -> str:
    if value == value:  # not NaN
        return f"{value:6.1%}"
    return "not run (BFCL counts 0)" if category else "   N/A (a category not run)"


def bfcl_score_files_line(folder: Path | str, count: int) -> str:
    return f"BFCL score files: {count} file(s) in {Path(folder).resolve()}"


def spans_sent_line(count: int, where: str) -> str:
    return f"{count} span(s) → {where}"


def serving_local_line(base_url: str, native_tools: bool) -> str:
    native = " with native tool calls" if native_tools else ""
    return f"serving SmolLM2{native} at {base_url} (Ctrl-C to stop)"


def serving_gateway_line(url: str, run_id: str, db: str, keys: int) -> str:
    return (
        f"gateway at {url} ({keys} client key(s)); every attempt logged to {db}, run {run_id} "
        "(SIGTERM or Ctrl-C to stop)"
    )


def gateway_exposed_line(host: str) -> str:
    """A gateway bound beyond loopback: said, since its keys are then all that guards it."""
    return (
        f"warning: the gateway listens on {host}, beyond this machine: its client keys are "
        "all that stand between the network and your providers' quotas (use TLS in front)"
    )


def serving_view_line(url: str, run_id: str, db: str) -> str:
    return f"report of run {run_id} at {url}, read from {db} (Ctrl-C to stop)"


def view_exposed_line(host: str) -> str:
    """A report served beyond loopback: said, since anyone who reaches it reads the run."""
    return (
        f"warning: the report listens on {host}, beyond this machine: anyone who reaches it "
        "with its address (printed below) reads every prompt and answer of the run"
    )


def gateway_stopped_line(run_id: str, db: str) -> str:
    return f"gateway stopped: run {run_id} finished in {db}"


def run_summary_lines(summary: RunSummary, resume: str | None = None) -> Iterable[str]:
    """Lines for the terminal at the end of a run (or a regrade). The pass rate is over the
    answers; an item the provider kept unanswered is shown beside it, never as failed.
    `resume`: the command that resumes this run, said when a day's quota stopped items."""
    rate = f"{summary.pass_rate:.0%}" if summary.pass_rate is not None else "n/a"
    held = sum(summary.unanswered.values())
    yield (
        f"run {summary.run_id}: {summary.status}, {summary.done} done"
        f"{f', {summary.skipped} already done' if summary.skipped else ''}, "
        f"{summary.answered} answered, {_unanswered(summary.unanswered)}"
        f"{summary.failed} failed (not held), {summary.passed}/{summary.graded} passed ({rate}) "
        f"in {summary.seconds:.1f} s"
    )
    if summary.resume_at_ms is not None:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(summary.resume_at_ms / 1000))
        # "At the earliest": without the vendor's own word, a day is taken to end at midnight
        # UTC, and a provider's day may end later (Gemini's, midnight Pacific time).
        stopped = summary.unanswered.get("daily_quota", 0)
        yield f"  a daily quota stopped {stopped} item(s): it resets at {when} at the earliest"
        if resume:
            yield f"  then resume with: {resume}"
    elif held:
        yield f"  {held} unanswered item(s) are asked again by: {resume or '--resume ' + summary.run_id}"
    if summary.leaks is not None:
        yield f"  masking audit: {summary.leaks} sensitive value(s) left the machine"
    if summary.cassette is not None:
        yield cassette_line(*summary.cassette)
    if summary.workers:
        yield from _describe_workers(summary.workers)
    for name, per in summary.by_config.items():
        rate = f"{per['passed'] / per['graded']:.0%}" if per["graded"] else "n/a"
        unanswered = f", {per['unanswered']} unanswered" if per.get("unanswered") else ""
        yield (
            f"  {name}: {per['done']} done{unanswered}, {per['errors'] - per.get('unanswered', 0)} "
            f"failed, {per['passed']}/{per['graded']} passed ({rate})"
        )
    if len(summary.by_model) > 1:  # a fallback answered some: each model's own answers
        for model, mine in sorted(summary.by_model.items()):
            rate = f"{mine['passed'] / mine['graded']:.0%}" if mine["graded"] else "n/a"
            yield (
                f"    answered by {model}: {mine['answered']}, "
                f"{mine['passed']}/{mine['graded']} passed ({rate})"
            )


def resume_command(db: str, dataset: str, limit: int | None, run_id: str) -> str:
    """The command that carries a run on (after an interruption, or a daily quota's reset)."""
    limit_flag = f" --limit {limit}" if limit else ""
    return f"workbench run {dataset}{limit_flag} --db {db} --resume {run_id}"


def _unanswered(by_reason: dict[str, int]) -> str:
    """`3 unanswered (2 rate_limit, 1 daily_quota), ` or nothing when every item was answered."""
    total = sum(by_reason.values())
    if not total:
        return ""
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(by_reason.items()))
    return f"{total} unanswered ({reasons}), "


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


def cassette_line(file: str, mode: str, replayed: int, recorded: int, skipped: int = 0) -> str:
    """What a run's cassette did: in replay, that nothing was sent, and how many models the
    router skipped because the recording held no answer from them."""
    if mode == "replay":
        missed = f", {skipped} model(s) skipped as not recorded" if skipped else ""
        return f"  cassette {file}: {replayed} answer(s) replayed{missed}, nothing sent"
    if mode == "record":
        return f"  cassette {file}: {recorded} exchange(s) recorded"
    return f"  cassette {file}: {replayed} answer(s) replayed, {recorded} exchange(s) recorded"
