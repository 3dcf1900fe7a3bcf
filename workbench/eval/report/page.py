"""`workbench report RUN [RUN_B]`: a self-contained, interactive report that opens from disk.

A page is static HTML, one inline stylesheet and script (`assets/viewer.css`, `.js` beside
this module) and the run's data as inline JSON: no server, no CDN, so it opens from disk
offline. A small run's report is that one file (attachable to a ticket); a big run's is a
folder, the page and its data files beside it (`chunks.py`: the data format both sides
read). Python decides every word shown — times as ISO 8601 and durations, lists as text, why
the walk moved on at each attempt — and the script only sorts, filters and opens an item's
story, so what the page says is testable here.

The run's page is assembled here from `data.py` (what is shown of a run), `chunks.py` (its
table, a chunk at a time) and `parts.py` (the words, charts and tables it is drawn with); the
comparison's in `comparison.py`. The writers below choose each page's form and write it whole.
"""

from __future__ import annotations

import html
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.eval.analysis import row_spans, run_rows
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import resolve_run, resolve_runs
from workbench.eval.report import data as report_data
from workbench.eval.report.chunks import (
    FORMAT,
    RunTable,
    chunk_script,
    report_name,
    rows_file,
    stories_file,
)
from workbench.eval.report.comparison import render_comparison, stage_comparison
from workbench.eval.report.parts import bar, cards_html, iso, matrix, page_html, table, timeline
from workbench.output_files import staged, writable_dir

__all__ = [
    "render",
    "render_comparison",
    "report_name",
    "run_index_page",
    "write_comparison",
    "write_report",
]


# ------------------------------------------------------------------ the page
def render(wb: RunFrames, run_id: str) -> str:
    """The report of one run as one HTML string, every chunk of its table inline (the single
    file form, whatever the run's size: `write_report` chooses the form)."""
    table = RunTable(wb, run_id)
    head = _run_head(wb, run_id)
    first = table.rows_chunk(0)
    rows = [table.rows_chunk(k) for k in range(1, table.row_chunks)]
    stories = list(table.stories_chunks(0, table.story_chunks)) if table.rows else []
    return _run_page(head, table, first, rows, stories)


def run_index_page(wb: RunFrames, run_id: str, table: RunTable) -> str:
    """A big run's page (a folder's index.html, or what `workbench view` serves): the run's
    summary and its first rows chunk inline; every other chunk is read from data/."""
    return _run_page(_run_head(wb, run_id), table, table.rows_chunk(0), None, None)


def _run_page(
    head: tuple[str, dict[str, Any]],
    table: RunTable,
    first: dict[str, Any],
    rows: list[dict[str, Any]] | None,
    stories: list[dict[str, Any]] | None,
) -> str:
    """The page: inline (`rows` and `stories` given: every chunk but the first rows chunk,
    which is always inline) or the folder's index.html (None: read from data/ beside it)."""
    body, info = head
    data: dict[str, Any] = {"format": FORMAT, "kind": "run", "run": info, **table.head()}
    data["first"] = first
    data["inline"] = rows is not None
    if rows is not None:
        data["row_chunks"] = rows
        data["story_chunks"] = stories or []
    return page_html(f"workbench run {info['id']}", body, data)


def _run_head(wb: RunFrames, run_id: str) -> tuple[str, dict[str, Any]]:
    """The page's words above and beside the table, and the run's facts: every figure an
    aggregate read from DuckDB, never a list of every output."""
    info = report_data.run_info(wb, run_id)
    counts = row_spans.output_counts(wb, run_id)
    with wb.memory_limit("1GB"):  # a median keeps every latency: it cannot spill to disk
        latency = wb.latency(by="key", run_id=run_id)  # one model id may be served by several
    errors = wb.errors(run_id)
    # A NULL status (no response) made the column floats; 0 is no status either.
    status = errors["status"].astype("Int64")
    errors["status"] = status.mask(status == 0)
    usage = run_rows.tokens_by_model(wb, run_id)
    pass_by = run_rows.pass_by_category(wb, run_id)
    routes = run_rows.route_depths(wb, run_id)
    # Counted as the summary line counts them (`workbench.eval.analysis.outcomes`): answered
    # = no error code; the pass rate is passed / graded answers; what the provider kept from
    # the model (by reason) and what failed are beside it, never in it.
    held: dict[str, int] = counts["held"]
    # A route its caller stopped (AI_CANCELLED) was neither answered nor failed by a model.
    failed_routes = routes["failed"].astype(bool)
    stopped_routes = routes["stopped"].astype(bool)
    answered = routes[~failed_routes & ~stopped_routes]
    fell_back = int(answered.loc[answered["fallback_depth"] > 0, "routes"].sum())
    unanswered = int(routes.loc[failed_routes, "routes"].sum())
    stopped = int(routes.loc[stopped_routes, "routes"].sum())
    graded, passed = counts["graded"], counts["passed"]
    cards = [
        ("items × repeats × configs", counts["outputs"]),
        ("answered", counts["answered"]),
        (
            "unanswered",
            f"{sum(held.values())} ({', '.join(f'{n} {why}' for why, n in sorted(held.items()))})"
            if held
            else 0,
        ),
        ("failed (not held)", counts["failed"]),
        (
            "pass rate (of the graded answers)",
            f"{passed / graded:.0%}" if graded else "n/a",
        ),
        ("provider calls", row_spans.provider_calls(wb, run_id)),
        ("routes answered after a fallback", fell_back),
        ("routes nobody answered", unanswered),
        ("routes stopped by the caller", stopped),
        ("failed attempts", int(errors["count"].sum()) if not errors.empty else 0),
        ("run took", info["took"] or "—"),
    ]
    leaks = wb.store.leak_count(run_id)
    meta = " · ".join(
        x
        for x in (
            info["name"],
            f"dataset {info['dataset']}",
            f"status {info['status']}",
            f"started {info['started']}",
            f"finished {info['finished']}" if info["finished"] else "",
            f"workbench {info['version']}" if info["version"] else "",
        )
        if x
    )
    charts = []
    if not latency.empty:
        charts.append(
            bar(
                [str(x) for x in latency["key"]],
                list(latency["p50_ms"]),
                "median latency per successful call, ms (cache hits excluded)",
                "ms",
            )
        )
    if not routes.empty:
        charts.append(
            bar(
                list(routes["depth"]),
                list(routes["routes"]),
                "routes by how far down the chain the answer came from",
                "routes",
            )
        )
    if not errors.empty:
        charts.append(
            bar(
                [
                    " · ".join(
                        str(x)
                        for x in (r.model, r.error_code, r.status)
                        if x is not None and x is not pd.NA
                    )
                    for r in errors.itertuples()
                ],
                list(errors["count"]),
                "failed attempts by model and code",
                "attempts",
            )
        )
    rated = pass_by[pass_by["pass_rate"].notna()]
    if not rated.empty:
        labels = [
            f"{c} · {k or '(none)'}"
            for c, k in zip(rated["config"], rated["category"], strict=True)
        ]
        charts.append(
            bar(
                labels,
                [100 * x for x in rated["pass_rate"]],
                "pass rate per configuration and category, %",
                "%",
            )
        )
    pacing = _pacing_chart(wb, run_id)
    if pacing:
        charts.append(pacing)
    chains = report_data.chains(wb, run_id)
    body = "\n".join(
        [
            "<header><h1>Run <code>" + html.escape(run_id) + "</code></h1>",
            f'<p class="meta">{html.escape(meta)}</p></header>',
            cards_html(cards),
            '<nav class="tabs" role="tablist"><button role="tab" data-tab="items" aria-selected="true">'
            'Items</button><button role="tab" data-tab="summary">Charts and tables</button></nav>',
            '<section id="tab-items" class="tab"><div class="filters" id="filters"></div>'
            '<p class="count" id="count"></p><div class="scroll"><table id="items" class="items">'
            "</table></div></section>",
            '<section id="tab-summary" class="tab" hidden>',
            '<div class="charts">' + "".join(f"<figure>{c}</figure>" for c in charts) + "</div>",
            "<h2>Chains</h2>",
            "".join(
                f"<p><b>{html.escape(c['config'])}</b> ({c['routes']} route(s)): "
                + " → ".join(f"<code>{html.escape(str(k))}</code>" for k in c["candidates"])
                + "</p>"
                for c in chains
            )
            or '<p class="empty">no route logged</p>',
            "<h2>Latency per model</h2>",
            table(latency),
            "<h2>Capability verdicts (tools)</h2>",
            matrix(wb.verdict_matrix(run_id)),
            "<h2>Error taxonomy</h2>",
            table(errors),
            "<h2>Pass rate per configuration and category</h2>",
            table(pass_by),
            "<h2>Masking audit</h2>",
            f"<p>{leaks} leak(s): sensitive values of the prompt set found in "
            "requests that left the machine (the simulator's request log). The expected count is 0.</p>",
            "<h2>Tokens per model (every answered call; a batch's calls cost half)</h2>",
            table(usage),
            "</section>",
            '<dialog id="story" aria-labelledby="story-title"><form method="dialog" class="close">'
            '<button aria-label="close">×</button></form><div id="story-body"></div></dialog>',
            f"<footer>written {iso(datetime.now(UTC).timestamp() * 1000)} by workbench</footer>",
        ]
    )
    return body, info


def _pacing_chart(wb: RunFrames, run_id: str) -> str:
    """Requests and 429s per second against the minute's limit the router learnt (quota
    headers), and below it, on its own axis, the concurrency it allowed (pacing rows): whether
    the run was paced to the provider's limit or ran into it. Requests per second and requests
    in flight are different units, so they never share an axis. Drawn when there is something
    to see (a 429, a limit, a pacing row)."""
    start, step, traffic = run_rows.traffic_per_second(wb, run_id)
    if start is None:
        return ""
    limits, concurrency = run_rows.pacing_history(wb, run_id, start, step)
    if not (traffic["refused"] > 0).any() and limits.empty and concurrency.empty:
        return ""
    seconds = [float(t) for t in traffic["second"]]
    bars = [
        ("requests", "#4c72b0", list(zip(seconds, map(float, traffic["requests"]), strict=True))),
        ("429s", "#c44e52", list(zip(seconds, map(float, traffic["refused"]), strict=True))),
    ]
    colours = iter(("#55a868", "#8172b2", "#ccb974", "#64b5cd", "#dd8452", "#937860"))
    rates = []
    for key, part in limits.groupby("key", sort=True):
        points = list(
            zip(part["second"].astype(float), part["per_second"].astype(float), strict=True)
        )
        rates.append((f"minute limit/s {key}", next(colours, "#55a868"), points))
    allowed = []
    for key, part in concurrency.groupby("key", sort=True):
        points = list(
            zip(part["second"].astype(float), part["concurrency"].astype(float), strict=True)
        )
        allowed.append((f"concurrency {key}", next(colours, "#8172b2"), points))
    every = [*seconds, *limits["second"].astype(float), *concurrency["second"].astype(float)]
    over = f" (a bar: {step} s, averaged)" if step > 1 else ""
    span = max([*every, 1.0]) + step
    chart = timeline(
        bars,
        rates,
        f"requests and 429s per second, the minute's limit learnt{over}",
        "per second",
        span_s=span,
        step_s=step,
    )
    if allowed:
        chart += timeline(
            [], allowed, "the concurrency the router allowed", "in flight", span_s=span
        )
    return chart


# ------------------------------------------------------------------ files
MEMORY_LIMIT = "48MB"
# What the writer reads of stories at once (`_write_folder`).
READ_BYTES = 16_000_000


def _write_run(stage: Callable[..., Path], wb: RunFrames, run_id: str) -> str:
    """Stage one run's report in the form its size asks for; the name written."""
    name = report_name(wb, run_id)
    if name.endswith("/index.html"):
        _write_folder(stage(run_id, folder=True), wb, run_id)
    else:
        stage(name).write_text(render(wb, run_id), encoding="utf-8")
    return name


def _write_folder(folder: Path, wb: RunFrames, run_id: str) -> None:
    """A big run's folder: every chunk read, turned into text and written one at a time (the
    run is never in memory), then the page, which carries the first rows chunk."""
    table = RunTable(wb, run_id)
    head = _run_head(wb, run_id)
    (folder / "data").mkdir()
    first = table.rows_chunk(0)
    (folder / rows_file(0)).write_text(chunk_script(first), encoding="utf-8")
    for k in range(1, table.row_chunks):
        (folder / rows_file(k)).write_text(chunk_script(table.rows_chunk(k)), encoding="utf-8")
    # Several stories chunks read at once (one bounded read per table for them all), as many
    # as make about READ_BYTES: five of short stories, one of long ones.
    for k, count in table.story_reads(READ_BYTES):
        for chunk in table.stories_chunks(k, count):
            text = chunk_script(chunk)
            (folder / stories_file(chunk["index"])).write_text(text, encoding="utf-8")
    (folder / "index.html").write_text(_run_page(head, table, first, None, None), encoding="utf-8")


def _other_form(folder: Path, name: str) -> None:
    """A run's report is one file or one folder: writing one form removes the other."""
    if name.endswith("/index.html"):
        other = folder / f"{name.removesuffix('/index.html')}.html"
    else:
        other = folder / name.removesuffix(".html")
    if other.is_dir() and (other / "index.html").exists():
        shutil.rmtree(other, ignore_errors=True)
    elif other.is_file():
        other.unlink(missing_ok=True)


def _with(db: str | Path | RunFrames) -> tuple[RunFrames, bool]:
    if isinstance(db, RunFrames):
        return db, False
    # Read-only (a copy only while another process writes), and DuckDB's share of the write's
    # memory capped: its sorts and hashes of a million outputs spill rather than grow.
    return RunFrames.open(db, memory_limit=MEMORY_LIMIT), True


def write_report(
    db: str | Path | RunFrames, run_id: str = "latest", out_dir: str | Path = "reports"
) -> Path:
    """Write the run's report and return the path of its page: `<out_dir>/<run_id>.html` for
    a small run (at most `SINGLE_FILE_MAX` rows and `SINGLE_FILE_BYTES` of stories: long
    prompts and answers make a folder of a few hundred rows), else the folder
    `<out_dir>/<run_id>/` (`index.html` and its `data/`), replacing any earlier report of the run whole. The run is
    an id, a run name (its newest run) or `latest`. DuckDB running out of memory even given
    room is `REPORT_OUT_OF_MEMORY`, and nothing is left half-written."""
    folder = writable_dir(out_dir)  # refused before any work
    wb, owned = _with(db)
    try:
        with wb.out_of_memory_said():  # REPORT_OUT_OF_MEMORY
            run_id = resolve_run(wb, run_id)
            with staged(folder) as stage:
                name = _write_run(stage, wb, run_id)
    finally:
        if owned:
            wb.close()
    _other_form(folder, name)
    return folder / name


def write_comparison(
    db: str | Path | RunFrames, run_a: str, run_b: str, out_dir: str | Path = "reports"
) -> Path:
    """Write both runs' reports and the comparison linking to them (`<out_dir>/<A>_vs_<B>.html`,
    or a folder of that name for more than `SINGLE_FILE_MAX` flips); return its page's path."""
    folder = writable_dir(out_dir)  # refused before any work
    wb, owned = _with(db)
    try:
        with wb.out_of_memory_said():  # REPORT_OUT_OF_MEMORY
            run_a, run_b = resolve_runs(wb, run_a, run_b)
            with staged(folder) as stage:
                names = [_write_run(stage, wb, run) for run in (run_a, run_b)]
                name = stage_comparison(stage, wb, run_a, run_b)
    finally:
        if owned:
            wb.close()
    for written in names:
        _other_form(folder, written)
    _other_form(folder, name)
    return folder / name
