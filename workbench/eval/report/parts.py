"""What a report page is drawn with: the words a person reads (ISO times, durations, lists
as text, never a repr), the charts (inline SVG) and the tables.

The charts are drawn here rather than by matplotlib: importing and drawing with it cost a
one-item run most of a second, for charts that are a handful of rectangles.
"""

from __future__ import annotations

import html
import json
import math
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "bar",
    "duration",
    "finite",
    "interval_chart",
    "iso",
    "matrix",
    "table",
    "text",
    "timeline",
]

_BAR_H = 18  # one bar's height, px
_ROW_H = 24  # one row: the bar and the space under it
_CHAR_W = 6.6  # the width of one character of the 12 px label font, roughly
_LABEL_MAX = 38  # characters of a label shown; the bar's tooltip has it whole


# ------------------------------------------------------------------ words
def iso(ms: Any) -> str:
    """Epoch milliseconds as ISO 8601 UTC to the millisecond; '' when there is no time."""
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return ""
    moment = datetime.fromtimestamp(int(ms) / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def duration(ms: Any) -> str:
    """A duration as a person reads it: 840 µs, 12 ms, 1.4 s, 2 min 5 s."""
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return ""
    ms = float(ms)
    if ms < 1:
        return f"{ms * 1000:.0f} µs"
    if ms < 1000:
        return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s"


def text(value: Any) -> str:
    """Any cell as words: lists joined, mappings as `k: v`, timestamps as ISO, no reprs."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        return f"{value:,.1f}"
    if isinstance(value, pd.Timestamp | datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return "; ".join(f"{k}: {text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | np.ndarray):
        return ", ".join(text(v) for v in value)
    return str(value)


# ------------------------------------------------------------------ charts
def finite(value: object) -> float:
    """`value` as a float to draw, 0 for a missing or undefined one (None, NaN, pd.NA)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _number(value: float) -> str:
    if value.is_integer():
        return f"{value:,.0f}"
    return f"{value:.2g}" if abs(value) < 1 else f"{value:,.1f}"  # a rare 429's rate: 0.017


def bar(labels: list[str], values: list[float], title: str, xlabel: str) -> str:
    """A horizontal bar chart as inline SVG, first label on top, each bar with its value."""
    clean = [finite(v) for v in values]
    top = max([*clean, 0.0]) or 1.0
    fit = min(_LABEL_MAX, max((len(x) for x in labels), default=0))  # a longer label is cut
    label_w = max(80, round(_CHAR_W * fit) + 12)
    plot_w = 640 - label_w - 70  # room on the right for the longest value
    head, height = 28, 28 + _ROW_H * len(labels) + 30
    rows = []
    for n, (label, value) in enumerate(zip(labels, clean, strict=True)):
        y = head + n * _ROW_H
        width = max(0.0, value) / top * plot_w
        shown = label if len(label) <= fit else label[: fit - 1] + "…"
        rows.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{html.escape(shown)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{width:.1f}" height="{_BAR_H}" fill="#4c72b0">'
            f"<title>{html.escape(label)}: {_number(value)}</title></rect>"
            f'<text x="{label_w + width + 4:.1f}" y="{y + 13}">{_number(value)}</text>'
        )
    axis_y = head + _ROW_H * len(labels)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="640" height="{height}" '
        f'viewBox="0 0 640 {height}" font-family="system-ui,sans-serif" font-size="12" '
        'fill="#1d2330" role="img">'
        f'<text x="0" y="16" font-size="13">{html.escape(title)}</text>'
        f"{''.join(rows)}"
        f'<line x1="{label_w}" y1="{head - 4}" x2="{label_w}" y2="{axis_y}" stroke="#8a93a3"/>'
        f'<text x="{label_w + plot_w / 2:.0f}" y="{axis_y + 20}" text-anchor="middle" '
        f'fill="#5b6577">{html.escape(xlabel)}</text></svg>'
    )


Series = tuple[str, str, list[tuple[float, float]]]  # label, colour, (second, value) points


def timeline(
    bars: list[Series],
    lines: list[Series],
    title: str,
    ylabel: str,
    *,
    span_s: float | None = None,
    step_s: float = 1.0,
) -> str:
    """Counts per second over a run as inline SVG: `bars` side by side in each second (requests,
    429s), `lines` as steps across it (a limit learnt, the concurrency allowed), one y axis,
    a legend under the plot. `span_s`: the seconds the x axis spans (panels of one run share
    it, so their seconds line up); None: up to the last point. `step_s`: the seconds one bar
    stands for (a long run's bars each cover several)."""
    label_w, plot_w, head, plot_h = 44, 580, 28, 180
    every = [p for _, _, pts in (*bars, *lines) for p in pts]
    span = span_s if span_s is not None else max([t for t, _ in every] + [1.0]) + 1
    top = max([finite(v) for _, v in every] + [1.0])

    def x(t: float) -> float:
        return label_w + finite(t) / span * plot_w

    def y(v: float) -> float:
        return head + plot_h - max(0.0, finite(v)) / top * plot_h

    marks = []
    width = plot_w * step_s / span / max(1, len(bars))
    for n, (label, colour, pts) in enumerate(bars):
        for t, v in pts:
            marks.append(
                f'<rect x="{x(t) + n * width:.1f}" y="{y(v):.1f}" width="{max(width, 0.5):.1f}" '
                f'height="{head + plot_h - y(v):.1f}" fill="{colour}">'
                f"<title>{html.escape(label)} at {t:.0f} s: {_number(finite(v))}</title></rect>"
            )
    for label, colour, pts in lines:
        if not pts:
            continue
        steps = []
        for k, (t, v) in enumerate(pts):
            end = pts[k + 1][0] if k + 1 < len(pts) else span
            steps.append(f"{x(t):.1f},{y(v):.1f} {x(end):.1f},{y(v):.1f}")
        marks.append(
            f'<polyline points="{" ".join(steps)}" fill="none" stroke="{colour}" '
            f'stroke-width="2"><title>{html.escape(label)}</title></polyline>'
        )
    axis = head + plot_h
    legend = "".join(
        f'<rect x="{label_w + 150 * n}" y="{axis + 30}" width="10" height="10" fill="{c}"/>'
        f'<text x="{label_w + 150 * n + 14}" y="{axis + 39}">{html.escape(label)}</text>'
        for n, (label, c, _) in enumerate((*bars, *lines))
    )
    height = axis + 50
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="640" height="{height}" '
        f'viewBox="0 0 640 {height}" font-family="system-ui,sans-serif" font-size="12" '
        'fill="#1d2330" role="img">'
        f'<text x="0" y="16" font-size="13">{html.escape(title)}</text>{"".join(marks)}'
        f'<line x1="{label_w}" y1="{axis}" x2="{label_w + plot_w}" y2="{axis}" stroke="#8a93a3"/>'
        f'<line x1="{label_w}" y1="{head}" x2="{label_w}" y2="{axis}" stroke="#8a93a3"/>'
        f'<text x="{label_w - 4}" y="{head + 4}" text-anchor="end">{_number(top)}</text>'
        f'<text x="{label_w - 4}" y="{axis}" text-anchor="end">0</text>'
        f'<text x="{label_w + plot_w}" y="{axis + 16}" text-anchor="end" fill="#5b6577">'
        f"{_number(float(span))} s</text>"
        f'<text x="{label_w}" y="{axis + 16}" fill="#5b6577">{html.escape(ylabel)}</text>'
        f"{legend}</svg>"
    )


def interval_chart(rows: list[tuple[str, float, float, float]], title: str) -> str:
    """Differences with their intervals on one axis from −100 to +100 points, zero marked."""
    label_w, plot_w, head = 220, 380, 28
    height = head + _ROW_H * len(rows) + 30
    x0 = label_w + plot_w / 2

    def x(v: float) -> float:
        return x0 + max(-1.0, min(1.0, v)) * plot_w / 2

    marks = []
    for n, (label, diff, lo, hi) in enumerate(rows):
        y = head + n * _ROW_H + 9
        colour = "#c44e52" if hi < 0 else "#55a868" if lo > 0 else "#4c72b0"
        shown = label if len(label) <= 32 else label[:31] + "…"
        marks.append(
            f'<text x="{label_w - 8}" y="{y + 4}" text-anchor="end">{html.escape(shown)}</text>'
            f'<line x1="{x(lo):.1f}" y1="{y}" x2="{x(hi):.1f}" y2="{y}" stroke="{colour}" '
            f'stroke-width="3"/><circle cx="{x(diff):.1f}" cy="{y}" r="4.5" fill="{colour}">'
            f"<title>{html.escape(label)}: {100 * diff:+.1f} points "
            f"[{100 * lo:+.1f}, {100 * hi:+.1f}]</title></circle>"
        )
    axis = head + _ROW_H * len(rows)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="640" height="{height}" '
        f'viewBox="0 0 640 {height}" font-family="system-ui,sans-serif" font-size="12" '
        'fill="#1d2330" role="img">'
        f'<text x="0" y="16" font-size="13">{html.escape(title)}</text>{"".join(marks)}'
        f'<line x1="{x0}" y1="{head - 4}" x2="{x0}" y2="{axis}" stroke="#8a93a3" '
        'stroke-dasharray="3 3"/>'
        f'<text x="{label_w}" y="{axis + 18}" fill="#5b6577">−100</text>'
        f'<text x="{x0}" y="{axis + 18}" text-anchor="middle" fill="#5b6577">0</text>'
        f'<text x="{label_w + plot_w}" y="{axis + 18}" text-anchor="end" fill="#5b6577">'
        "+100 points (B − A)</text></svg>"
    )


def table(df: pd.DataFrame | None, *, numbers: tuple[str, ...] = ()) -> str:
    """A DataFrame as an HTML table: every cell as words, `_ms` columns as durations, `rate`
    columns as percentages."""
    if df is None or df.empty:
        return '<p class="empty">nothing logged</p>'
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for record in df.itertuples(index=False):
        cells = []
        for column, value in zip(df.columns, record, strict=True):
            numeric = column in numbers or (
                isinstance(value, int | float | np.integer | np.floating)
                and not isinstance(value, bool | np.bool_)
            )
            shown = text(value)
            if column.endswith("_ms") and shown:
                shown = duration(value)
            if column.endswith("rate") and isinstance(value, float) and not math.isnan(value):
                shown = f"{value:.0%}"
            cells.append(f'<td class="{"n" if numeric else ""}">{html.escape(shown)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def matrix(df: pd.DataFrame) -> str:
    """The verdict matrix as a heat grid: each cell shaded by its share of the model's row."""
    if df.empty:
        return '<p class="empty">no tool verdict in this run</p>'
    verdicts = [c for c in df.columns if c not in ("provider", "model", "total")]
    head = "".join(f"<th>{html.escape(v)}</th>" for v in ["model", *verdicts, "total"])
    rows = []
    for r in df.to_dict("records"):
        total = max(int(r["total"]), 1)
        cells = []
        for v in verdicts:
            share = int(r[v]) / total
            cells.append(
                f'<td class="n heat" style="--share:{share:.2f}" '
                f'title="{share:.0%} {html.escape(str(v))}">'
                f"{int(r[v]) or ''}</td>"
            )
        name = html.escape(f"{r['provider']}:{r['model']}")
        rows.append(f"<tr><td>{name}</td>{''.join(cells)}<td class=n>{int(r['total'])}</td></tr>")
    return f'<table class="matrix"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


# ------------------------------------------------------------------ the page around them
def _asset(name: str) -> str:
    return files("workbench.eval.report").joinpath("assets", name).read_text(encoding="utf-8")


def page_html(title: str, body: str, data: dict[str, Any]) -> str:
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


def cards_html(cards: list[tuple[str, Any]]) -> str:
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><b>{html.escape(text(v))}</b>{html.escape(k)}</div>'
            for k, v in cards
        )
        + "</div>"
    )
