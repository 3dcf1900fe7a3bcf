"""The comparison page: run B against run A — pass-rate differences with their intervals, the
exact test on the items, and every pair whose grade flipped, as rows of the same data format
as a run's table (flips as rows chunks, coded columns), each linked to its row in both runs'
reports (`#row=<index>`). One file, or a folder past `SINGLE_FILE_MAX` flips.

Every figure is an aggregate DuckDB counts (`gate.pair_kinds`) and the flips are read a
rows chunk at a time (`gate.flipped_pairs`) and written as they are read: a comparison of two
million-item runs holds a chunk of flips, never the runs' pairs.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import Comparison, compare_runs, flipped_pairs, grouped_stats
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
    c = _comparison(wb, run_a, run_b)
    return _compare_page(c, list(c.chunks()), up="", inline=True)


def _compare_page(c: _Compared, chunks: list[dict[str, Any]], *, up: str, inline: bool) -> str:
    """The page, given its flips' chunks: all of them (`inline`) or the first (a folder's
    index.html, every other chunk read from data/); `up` is the way from the page up to the
    runs' folder."""
    html_body, links = c.body(up)
    data: dict[str, Any] = {
        "format": FORMAT,
        "kind": "compare",
        "run_a": c.run_a,
        "run_b": c.run_b,
        "links": links,
        "rows": c.flips,
        "rows_per_chunk": ROWS_PER_CHUNK,
        "stories_per_chunk": STORIES_PER_CHUNK,
        "columns": COMPARE_COLUMNS,
        "filters": COMPARE_FILTERS,
        "dicts": c.dicts,
        "tag_values": [],
        "tag_sets": [],
        "first": chunks[0],
        "inline": inline,
    }
    if inline:
        data["row_chunks"] = chunks[1:]
        data["story_chunks"] = []
    return page_html(f"workbench {c.run_b} against {c.run_a}", html_body, data)


@dataclass(frozen=True, slots=True)
class _Compared:
    """A comparison as its page shows it: its words (given the way up to the runs' folder),
    how many pairs flipped, the dictionaries their coded columns index, and their rows chunks,
    read from DuckDB one chunk at a time."""

    wb: RunFrames
    run_a: str
    run_b: str
    body: Callable[[str], tuple[str, dict[str, str]]]
    flips: int
    dicts: dict[str, list[str]]

    def chunks(self) -> Iterator[dict[str, Any]]:
        """The flips as rows chunks (at least one, maybe empty), in (item, repeat,
        configuration) order, each with where the flip is in both runs' reports."""
        codes = {f: {x: n for n, x in enumerate(vs)} for f, vs in self.dicts.items()}
        batches = flipped_pairs(self.wb, self.run_a, self.run_b, size=ROWS_PER_CHUNK)
        start = 0
        for k, batch in enumerate(itertools.chain(batches, [[]] if not self.flips else [])):
            yield {
                "kind": "rows",
                "index": k,
                "start": start,
                "count": len(batch),
                "item": [f[0] for f in batch],
                "repeat": [f[1] for f in batch],
                "config": [codes["config"][f[2]] for f in batch],
                "category": [codes["category"][f[3]] for f in batch],
                "A": [codes["A"]["pass" if f[4] else "fail"] for f in batch],
                "B": [codes["B"]["pass" if f[5] else "fail"] for f in batch],
                "change": [codes["change"]["worse" if f[4] else "better"] for f in batch],
                # Where each flip is in each run's report: its link opens `<page>#row=<index>`.
                "a_index": [f[6] for f in batch],
                "b_index": [f[7] for f in batch],
            }
            start += len(batch)


def _comparison(wb: RunFrames, run_a: str, run_b: str) -> _Compared:
    """The comparison's figures, every one an aggregate read from DuckDB (the pairs are never
    read into pandas), and its flips to be read a chunk at a time."""
    c = compare_runs(wb, run_a, run_b, max_flips=0)
    groups: list[tuple[str, float, float, float]] = []
    per_group = []
    # The values the flips' coded columns take: the groups with a flip, the ways they flipped.
    dicts: dict[str, list[str]] = {"config": [], "category": []}
    for column in ("config", "category"):
        for value, g in wb.with_room(partial(grouped_stats, wb, c.run_a, c.run_b, column)):
            if g.flipped:
                dicts[column].append(value)
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
    dicts["A"] = [x for x, n in (("fail", c.b_only), ("pass", c.a_only)) if n]
    dicts["B"] = [x for x, n in (("fail", c.a_only), ("pass", c.b_only)) if n]
    dicts["change"] = [x for x, n in (("better", c.b_only), ("worse", c.a_only)) if n]
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

    return _Compared(wb, c.run_a, c.run_b, body, c.a_only + c.b_only, dicts)


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
    keeps (its flips' chunks in data/ as a run's rows are, each written as it is read); the
    name written."""
    name = f"{run_a}_vs_{run_b}"
    c = _comparison(wb, run_a, run_b)
    if c.flips <= SINGLE_FILE_MAX:
        page = _compare_page(c, list(c.chunks()), up="", inline=True)
        stage(f"{name}.html").write_text(page, encoding="utf-8")
        return f"{name}.html"
    folder = stage(name, folder=True)
    (folder / "data").mkdir()
    first: dict[str, Any] = {}
    for chunk in c.chunks():
        first = first or chunk
        (folder / rows_file(chunk["index"])).write_text(chunk_script(chunk), encoding="utf-8")
    page = _compare_page(c, [first], up="../", inline=False)
    (folder / "index.html").write_text(page, encoding="utf-8")
    return f"{name}/index.html"
