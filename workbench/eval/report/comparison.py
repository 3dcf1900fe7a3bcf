"""The comparison page: run B against run A — pass-rate differences with their intervals, the
exact test on the items, and every pair whose grade flipped, as rows of the same data format
as a run's table (flips as rows chunks, coded columns), each linked to its row in both runs'
reports (`#row=<index>`). One file, or a folder past `SINGLE_FILE_MAX` flips.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.eval.analysis import row_spans
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import Comparison, compare_runs, group_stats, paired_outputs
from workbench.eval.report.chunks import (
    COMPARE_COLUMNS,
    COMPARE_FILTERS,
    FORMAT,
    ROWS_PER_CHUNK,
    SINGLE_FILE_MAX,
    STORIES_PER_CHUNK,
    chunk_script,
    report_name,
    rows_file,
)
from workbench.eval.report.parts import cards_html, interval_chart, iso, page_html, table

__all__ = ["render_comparison", "stage_comparison"]


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
    return page_html(f"workbench {run_b} against {run_a}", html_body, data)


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
            cards_html(cards),
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


def stage_comparison(stage: Callable[..., Path], wb: RunFrames, run_a: str, run_b: str) -> str:
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
