"""`workbench report RUN [RUN_B]`: one self-contained, interactive HTML file.

A page is static HTML, one inline stylesheet and script (`assets/viewer.css`, `.js` beside
this module) and the run's data as inline JSON: no server, no CDN, nothing beside it, so it
opens from disk offline and can be attached to a ticket. Python decides every word shown —
times as ISO 8601 and durations, lists as text, why the walk moved on at each attempt — and the
script only sorts, filters and opens an item's story, so what the page says is testable here.

The page is assembled here from `data.py` (what is shown of a run) and `parts.py`
(the words, charts and tables it is drawn with).
"""

from __future__ import annotations

import html
import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.eval.analysis import row_spans, run_rows
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import (
    Comparison,
    compare_runs,
    group_stats,
    paired_outputs,
    resolve_run,
    resolve_runs,
)
from workbench.eval.report import data as report_data
from workbench.eval.report.chunks import (
    COMPARE_COLUMNS,
    COMPARE_FILTERS,
    FORMAT,
    ROWS_PER_CHUNK,
    SINGLE_FILE_MAX,
    STORIES_PER_CHUNK,
    RunTable,
    chunk_script,
    rows_file,
    stories_file,
)
from workbench.eval.report.parts import bar, interval_chart, iso, matrix, table, text, timeline
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
def _asset(name: str) -> str:
    return files("workbench.eval.report").joinpath("assets", name).read_text(encoding="utf-8")


def _page(title: str, body: str, data: dict[str, Any]) -> str:
    # Inline JSON can neither end its <script> early nor open a comment in it: every "<" is
    # written as its JSON escape, so no model's text is ever markup here.
    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_asset('viewer.css')}</style>"
        f'</head><body>{body}<script type="application/json" id="data">{blob}</script>'
        f"<script>{_asset('viewer.js')}</script></body></html>"
    )


def _cards(cards: list[tuple[str, Any]]) -> str:
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><b>{html.escape(text(v))}</b>{html.escape(k)}</div>'
            for k, v in cards
        )
        + "</div>"
    )


def render(wb: RunFrames, run_id: str) -> str:
    """The report of one run as one HTML string, every chunk of its table inline (the single
    file form, whatever the run's size: `write_report` chooses the form)."""
    table = RunTable(wb, run_id)
    head = _run_head(wb, run_id)
    first = table.rows_chunk(0)
    rows = [first] + [table.rows_chunk(k) for k in range(1, table.row_chunks)]
    stories = [c for k in range(0, table.story_chunks, 1) for c in table.stories_chunks(k, 1)]
    return _run_page(head, table, first, rows[1:], stories)


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
    return _page(f"workbench run {info['id']}", body, data)


def _run_head(wb: RunFrames, run_id: str) -> tuple[str, dict[str, Any]]:
    """The page's words above and beside the table, and the run's facts: every figure an
    aggregate read from DuckDB, never a list of every output."""
    info = report_data.run_info(wb, run_id)
    counts = row_spans.output_counts(wb, run_id)
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
            _cards(cards),
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
    start, traffic = run_rows.traffic_per_second(wb, run_id)
    if start is None:
        return ""
    limits, concurrency = run_rows.pacing_history(wb, run_id, start)
    if not int(traffic["refused"].sum()) and limits.empty and concurrency.empty:
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
    span = max([*every, 1.0]) + 1
    chart = timeline(
        bars,
        rates,
        "requests and 429s per second, the minute's limit learnt",
        "per second",
        span_s=span,
    )
    if allowed:
        chart += timeline(
            [], allowed, "the concurrency the router allowed", "in flight", span_s=span
        )
    return chart


def render_comparison(wb: RunFrames, run_a: str, run_b: str) -> str:
    """Run B against run A: pass-rate differences with their intervals (overall, per
    configuration, per category), the exact test on the items, and every pair whose grade
    flipped, each linked to its story in both runs' reports (written beside this page). One
    page, every flip inline."""
    a, b, body, flips = _comparison(wb, run_a, run_b)
    return _compare_page((*body(""), a, b), flips, inline=True)


def _compare_page(
    page: tuple[str, dict[str, str], str, str], flips: dict[str, Any], *, inline: bool
) -> str:
    html_body, links, run_a, run_b = page
    chunks = _flip_chunks(flips)
    data: dict[str, Any] = {
        "format": FORMAT,
        "kind": "compare",
        "run_a": run_a,
        "run_b": run_b,
        "links": links,
        "rows": len(flips["item"]),
        "rows_per_chunk": ROWS_PER_CHUNK,
        "stories_per_chunk": STORIES_PER_CHUNK,
        "columns": COMPARE_COLUMNS,
        "filters": COMPARE_FILTERS,
        "dicts": flips["dicts"],
        "tag_values": [],
        "first": chunks[0],
        "inline": inline,
    }
    if inline:
        data["row_chunks"] = chunks[1:]
        data["story_chunks"] = []
    return _page(f"workbench {run_b} against {run_a}", html_body, data)


def _flip_chunks(flips: dict[str, Any]) -> list[dict[str, Any]]:
    """The flips as rows chunks (at least one, maybe empty)."""
    n = len(flips["item"])
    chunks = []
    for k, start in enumerate(range(0, max(n, 1), ROWS_PER_CHUNK)):
        stop = min(start + ROWS_PER_CHUNK, n)
        part = {f: v[start:stop] for f, v in flips.items() if f != "dicts"}
        chunks.append({"kind": "rows", "index": k, "start": start, "count": stop - start, **part})
    return chunks


def _comparison(
    wb: RunFrames, run_a: str, run_b: str
) -> tuple[str, str, Callable[[str], tuple[str, dict[str, str]]], dict[str, Any]]:
    """Both run ids, the comparison page's words with the links to both runs' pages (given
    the way from the page up to the runs' folder), and its flips column by column (with
    their dictionaries)."""
    c = compare_runs(wb, run_a, run_b)
    both, _, _ = paired_outputs(wb, c.run_a, c.run_b)
    groups: list[tuple[str, float, float, float]] = []
    per_group = []
    for column in ("config", "category"):
        for value, g in group_stats(both, column):
            label = f"{column} {value or '(none)'}"
            # Without a flip, or with one item, the bootstrap has nothing to vary: no interval.
            varied = g.flipped and g.items > 1
            if varied:
                groups.append((label, g.diff, g.lo, g.hi))
            per_group.append(
                {
                    "group": label,
                    "pairs": g.pairs,
                    "items": g.items,
                    "pass rate A": f"{g.rate_a:.0%}",
                    "pass rate B": f"{g.rate_b:.0%}",
                    "B − A": f"{100 * g.diff:+.1f} points",
                    "95 % interval": f"[{100 * g.lo:+.1f}, {100 * g.hi:+.1f}]"
                    if varied
                    else "one item"
                    if g.flipped
                    else "no flips",
                    "pairs A only passed": g.a_only,
                    "pairs B only passed": g.b_only,
                    "items worse / better": f"{g.items_worse} / {g.items_better}",
                    "p": f"{g.p_value:.3g}",
                }
            )
    cards = [
        ("pairs (items)", f"{c.pairs} ({c.items})"),
        ("pass rate A", f"{c.pass_rate_a:.0%}"),
        ("pass rate B", f"{c.pass_rate_b:.0%}"),
        ("B − A", f"{100 * c.diff:+.1f} points [{100 * c.diff_lo:+.1f}, {100 * c.diff_hi:+.1f}]"),
        ("exact p (items)", f"{c.p_value:.3g}"),
        ("pairs flipped", f"{c.a_only} ↓ · {c.b_only} ↑"),
    ]
    category = {(r.item_id, r.repeat, r.config): str(r.category or "") for r in both.itertuples()}
    keys = pd.DataFrame(
        [(f.item_id, f.repeat, f.config) for f in c.flips], columns=["item_id", "repeat", "config"]
    )
    words: dict[str, list[str]] = {
        "config": [f.config for f in c.flips],
        "category": [category.get((f.item_id, f.repeat, f.config), "") for f in c.flips],
        "A": ["pass" if f.passed_a else "fail" for f in c.flips],
        "B": ["pass" if f.passed_b else "fail" for f in c.flips],
        "change": ["worse" if f.passed_a else "better" for f in c.flips],
    }
    dicts = {f: sorted(set(v)) for f, v in words.items()}
    codes = {f: {x: n for n, x in enumerate(vs)} for f, vs in dicts.items()}
    flips: dict[str, Any] = {
        "item": [f.item_id for f in c.flips],
        "repeat": [int(f.repeat) for f in c.flips],
        **{f: [codes[f][x] for x in v] for f, v in words.items()},
        # Where each flip is in each run's report: its link opens `<page>#row=<index>`.
        "a_index": row_spans.row_indexes(wb, c.run_a, keys),
        "b_index": row_spans.row_indexes(wb, c.run_b, keys),
        "dicts": dicts,
    }
    names = {"a": report_name(wb, c.run_a), "b": report_name(wb, c.run_b)}
    unpaired = (
        f" · {c.unpaired_a} output(s) of A and {c.unpaired_b} of B had no partner"
        if c.unpaired_a or c.unpaired_b
        else ""
    )
    if c.unanswered_a or c.unanswered_b:  # the provider's refusals: neither better nor worse
        unpaired += (
            f" · {c.unanswered_a} output(s) of A and {c.unanswered_b} of B unanswered, left out"
        )

    def body(up: str) -> tuple[str, dict[str, str]]:
        links = {side: up + name for side, name in names.items()}
        return _comparison_body(c, unpaired, links, cards, groups, per_group), links

    return c.run_a, c.run_b, body, flips


def _comparison_body(
    c: Comparison,
    unpaired: str,
    links: dict[str, str],
    cards: list[tuple[str, Any]],
    groups: list[tuple[str, float, float, float]],
    per_group: list[dict[str, Any]],
) -> str:
    return "\n".join(
        [
            f"<header><h1>Run <code>{html.escape(c.run_b)}</code> against "
            f"<code>{html.escape(c.run_a)}</code></h1>",
            f'<p class="meta">pairs by item, repeat and configuration{html.escape(unpaired)} · '
            f'<a href="{html.escape(links["a"])}">report of A</a> · '
            f'<a href="{html.escape(links["b"])}">report of B</a></p></header>',
            _cards(cards),
            f"<figure>{interval_chart(groups, 'pass rate B − A, 95 % interval (items resampled)')}</figure>"
            if groups
            else "",
            "<h2>Per configuration and category</h2>",
            table(pd.DataFrame(per_group)),
            "<h2>Flipped items</h2>",
            '<div class="filters" id="filters"></div><p class="count" id="count"></p>'
            '<div class="scroll"><table id="items" class="items"></table></div>',
            f"<footer>written {iso(datetime.now(UTC).timestamp() * 1000)} by workbench</footer>",
        ]
    )


def _write_comparison(stage: Callable[..., Path], wb: RunFrames, run_a: str, run_b: str) -> str:
    """Stage the comparison: one file, or a folder when it has more flips than one file
    keeps (its flips' chunks in data/ as a run's rows are); the name written."""
    name = f"{run_a}_vs_{run_b}"
    a, b, body, flips = _comparison(wb, run_a, run_b)
    if len(flips["item"]) <= SINGLE_FILE_MAX:
        page = _compare_page((*body(""), a, b), flips, inline=True)
        stage(f"{name}.html").write_text(page, encoding="utf-8")
        return f"{name}.html"
    folder = stage(name, folder=True)
    (folder / "data").mkdir()
    for chunk in _flip_chunks(flips):
        (folder / rows_file(chunk["index"])).write_text(chunk_script(chunk), encoding="utf-8")
    (folder / "index.html").write_text(
        _compare_page((*body("../"), a, b), flips, inline=False), encoding="utf-8"
    )
    return f"{name}/index.html"


# ------------------------------------------------------------------ files
MEMORY_LIMIT = "64MB"


def report_name(wb: RunFrames, run_id: str) -> str:
    """Where a run's page is, relative to the folder its report is written into: the single
    file `RUN.html` for a small run, the folder's `RUN/index.html` for a big one."""
    small = row_spans.row_count(wb, run_id) <= SINGLE_FILE_MAX
    return f"{run_id}.html" if small else f"{run_id}/index.html"


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
    # 5,000 rows' stories read at once: one bounded read per table for five files.
    together = max(1, 5_000 // table.stories_per_chunk)
    for k in range(0, table.story_chunks, together):
        for chunk in table.stories_chunks(k, together):
            text = chunk_script(chunk)
            (folder / stories_file(chunk["index"])).write_text(text, encoding="utf-8")
    (folder / "index.html").write_text(_run_page(head, table, first, None, None), encoding="utf-8")


def _other_form(folder: Path, name: str) -> None:
    """A run's report is one file or one folder: writing one form removes the other."""
    run = name.removesuffix(".html").removesuffix("/index")
    other = folder / (run if name.endswith(".html") and "/" not in name else f"{run}.html")
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
    a small run (at most `SINGLE_FILE_MAX` rows), else the folder `<out_dir>/<run_id>/`
    (`index.html` and its `data/`), replacing any earlier report of the run whole. The run is
    an id, a run name (its newest run) or `latest`."""
    folder = writable_dir(out_dir)  # refused before any work
    wb, owned = _with(db)
    try:
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
        run_a, run_b = resolve_runs(wb, run_a, run_b)
        with staged(folder) as stage:
            names = [_write_run(stage, wb, run) for run in (run_a, run_b)]
            name = _write_comparison(stage, wb, run_a, run_b)
    finally:
        if owned:
            wb.close()
    for written in names:
        _other_form(folder, written)
    _other_form(folder, name)
    return folder / name
