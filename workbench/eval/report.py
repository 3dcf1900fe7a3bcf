"""`workbench report RUN [RUN_B]`: one self-contained, interactive HTML file.

A page is static HTML, one inline stylesheet and script (`report_viewer.css`, `.js` beside
this module) and the run's data as inline JSON: no server, no CDN, nothing beside it, so it
opens from disk offline and can be attached to a ticket. Python decides every word shown —
times as ISO 8601 and durations, lists as text, why the walk moved on at each attempt — and the
script only sorts, filters and opens an item's story, so what the page says is testable here.

The charts are inline SVG drawn by `_bar`: importing and drawing with matplotlib cost a
one-item run most of a second, for charts that are a handful of rectangles.
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.errors import ConfigError
from workbench.eval._rows import from_json
from workbench.eval.analysis import Workbench
from workbench.eval.gate import (
    compare_runs,
    group_stats,
    paired_outputs,
    resolve_run,
    resolve_runs,
)
from workbench.eval.output_files import staged, writable_dir

__all__ = ["render", "render_comparison", "write_comparison", "write_report"]

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


def _text(value: Any) -> str:
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
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | np.ndarray):
        return ", ".join(_text(v) for v in value)
    return str(value)


# ------------------------------------------------------------------ charts
def _finite(value: object) -> float:
    """`value` as a float to draw, 0 for a missing or undefined one (None, NaN, pd.NA)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _number(value: float) -> str:
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.1f}"


def _bar(labels: list[str], values: list[float], title: str, xlabel: str) -> str:
    """A horizontal bar chart as inline SVG, first label on top, each bar with its value."""
    clean = [_finite(v) for v in values]
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


def _interval_chart(rows: list[tuple[str, float, float, float]], title: str) -> str:
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


def _table(df: pd.DataFrame | None, *, numbers: tuple[str, ...] = ()) -> str:
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
            text = _text(value)
            if column.endswith("_ms") and text:
                text = duration(value)
            if column.endswith("rate") and isinstance(value, float) and not math.isnan(value):
                text = f"{value:.0%}"
            cells.append(f'<td class="{"n" if numeric else ""}">{html.escape(text)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _matrix(df: pd.DataFrame) -> str:
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


# ------------------------------------------------------------------ the run's data
def _why(attempt: dict[str, Any], last: bool, route: dict[str, Any]) -> tuple[str, str]:
    """Why the walk moved on from (or stopped at) one attempt, and which of the two it did."""
    outcome = attempt["outcome"]
    because = attempt.get("reason") or attempt.get("error_message") or ""
    if outcome == "ok":
        return ("from the cache" if attempt.get("cached") else ""), "answered"
    if outcome == "partial":
        because = "a partial answer, kept in case nobody finishes"
    elif outcome == "rejected":
        because = because or "the caller's check of the answer refused it"
    elif outcome.startswith("skipped"):
        because = because or outcome.replace("_", " ")
    if not last:
        return because, "moved on"
    ended = route.get("error_code") or ("no candidate left" if not route.get("chosen") else "")
    return because, f"stopped: {ended}" if ended else "stopped"


def _attempt_rows(wb: Workbench, run_id: str) -> dict[str, list[dict[str, Any]]]:
    rows = wb.con.execute(
        "SELECT route_id, position, seq, key, outcome, status, error_kind, error_code, error_message, "
        "reason, latency_ms, start_ms, cached, tokens, request FROM attempts WHERE run_id = ? "
        "ORDER BY seq, start_ms, position",
        [run_id],
    ).fetchall()
    by_route: dict[str, list[dict[str, Any]]] = defaultdict(list)
    names = ("route_id", "position", "seq", "key", "outcome", "status", "error_kind", "error_code",
             "error_message", "reason", "latency_ms", "start_ms", "cached", "tokens", "request")  # fmt: skip
    for row in rows:
        a = dict(zip(names, row, strict=True))
        by_route[a["route_id"]].append(a)
    for attempts in by_route.values():
        attempts.sort(key=lambda a: (a["seq"] or 0, a["start_ms"], a["position"]))
    return by_route


def _outputs(wb: Workbench, run_id: str) -> list[dict[str, Any]]:
    """The run's outputs as plain rows: NULL stays None (a DataFrame would make a column of
    NULLs NaN, which is neither a grade nor a text)."""
    cursor = wb.con.execute(
        "SELECT * FROM outputs WHERE run_id = ? ORDER BY item_id, repeat, config", [run_id]
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _interned(request: Any, texts: dict[str, int]) -> Any:
    """A request with its system prompt replaced by its number in `texts`: the text protocol's
    tool listing is the same long prompt on every attempt, and is written into the page once."""
    if isinstance(request, dict) and isinstance(request.get("system"), str):
        request["system"] = texts.setdefault(request["system"], len(texts))
    return request


def _stories(
    wb: Workbench, run_id: str, outputs: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """Every item's story, keyed like the item table's rows: its turns (one route each), with
    every attempt of the chain in order, then what came back, how it was read and graded; and
    the system prompts the stories' requests refer to by number."""
    texts: dict[str, int] = {}
    attempts = _attempt_rows(wb, run_id)
    routes: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for r in wb.con.execute(
        "SELECT item_id, repeat, config, route_id, candidates, chosen, fallback_depth, partial, "
        "error_code, at_ms FROM routes WHERE run_id = ? ORDER BY at_ms",
        [run_id],
    ).fetchall():
        routes[(r[0], r[1], r[2])].append(
            dict(
                zip(
                    (
                        "route_id",
                        "candidates",
                        "chosen",
                        "fallback_depth",
                        "partial",
                        "error_code",
                        "at_ms",
                    ),
                    r[3:],
                    strict=True,
                )
            )
        )
    verdicts: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for v in wb.con.execute(
        "SELECT item_id, repeat, config, provider, model, capability, verdict, protocol_family, "
        "recorded, evidence, via, at_ms FROM verdicts WHERE run_id = ? ORDER BY at_ms",
        [run_id],
    ).fetchall():
        verdicts[(v[0], v[1], v[2])].append({
            "model": f"{v[3]}:{v[4]}", "capability": v[5], "verdict": v[6], "family": v[7] or "",
            "recorded": "recorded" if v[8] else "not recorded", "evidence": v[9] or "",
            "via": v[10] or "", "at": iso(v[11]),
        })  # fmt: skip
    steps: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    # A step logs its start (ok NULL) and its end: one row per step, its result and duration.
    for s in wb.con.execute(
        "SELECT item_id, repeat, config, any_value(tool), any_value(params), "
        "bool_or(ok) FILTER (ok IS NOT NULL), count(ok), min(at_ms), max(at_ms) "
        "FROM tool_steps WHERE run_id = ? GROUP BY item_id, repeat, config, step_id "
        "ORDER BY min(at_ms)",
        [run_id],
    ).fetchall():
        result = "never finished" if not s[6] else "ok" if s[5] else "failed"
        steps[(s[0], s[1], s[2])].append({
            "tool": s[3], "arguments": s[4] or "", "result": result, "at": iso(s[7]),
            "took": duration(s[8] - s[7]) if s[6] else "",
        })  # fmt: skip
    replies: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for r in wb.con.execute(
        "SELECT item_id, repeat, config, reply FROM replies WHERE run_id = ? ORDER BY turn",
        [run_id],
    ).fetchall():
        replies[(r[0], r[1], r[2])].append(_reply(from_json(r[3]) or {}))
    stories: dict[str, Any] = {}
    for o in outputs:
        key3 = (o["item_id"], int(o["repeat"]), o["config"])
        turns = []
        answers = replies.get(key3, [])
        for n, route in enumerate(routes.get(key3, [])):
            chain = attempts.get(route["route_id"], [])
            shown = []
            for i, a in enumerate(chain):
                because, then = _why(a, i == len(chain) - 1, route)
                shown.append({
                    "position": a["position"], "key": a["key"], "outcome": a["outcome"],
                    "status": a["status"], "latency": duration(a["latency_ms"]) if
                    a["outcome"] in ("ok", "error", "partial", "rejected") else "",
                    "start": iso(a["start_ms"]), "error_code": a["error_code"] or "",
                    "why": because, "then": then, "cached": bool(a["cached"]),
                    "request": _interned(from_json(a["request"]), texts),
                })  # fmt: skip
            turns.append({
                "turn": n + 1, "at": iso(route["at_ms"]), "chosen": route["chosen"] or "",
                "fallback_depth": route["fallback_depth"], "error_code": route["error_code"] or "",
                "candidates": len(from_json(route["candidates"]) or []), "attempts": shown,
                # The answer of this turn (a turn whose route failed has none).
                "reply": answers[n] if n < len(answers) and route["chosen"] else None,
            })  # fmt: skip
        calls = from_json(o["tool_calls"]) or []
        grade = from_json(o["grade"]) or {}
        stories[_row_key(o)] = {
            "turns": turns,
            "raw": o["raw"] or "",
            "cleaned": o["cleaned"] or "",
            "protocol": o["protocol"] or "",
            "tool_calls": [_call(c) for c in calls if isinstance(c, dict)],
            "tool_steps": steps.get(key3, []),
            "verdicts": verdicts.get(key3, []),
            "grade": {
                "result": _grade_word(o["passed"]),
                "score": "" if o["score"] is None else f"{o['score']:.2f}",
                "checks": [
                    [k, "pass" if ok else "fail"] for k, ok in (grade.get("checks") or {}).items()
                ],
                "reason": grade.get("reason") or "",
            },
            "error": f"{o['error_code']}: {o['error_message'] or ''}" if o["error_code"] else "",
        }
    return stories, list(texts)


def _call(c: dict[str, Any]) -> dict[str, str]:
    """A tool call as the story shows it: its arguments as JSON (or as written, when they
    could not be read), how it came (native or in the text) and the text's family."""
    invalid = bool(c.get("invalid"))
    return {
        "name": str(c.get("name") or ""),
        "arguments": str(c.get("raw_arguments") or "") if invalid
        else json.dumps(c.get("arguments"), ensure_ascii=False),
        "protocol": str(c.get("source") or ""),
        "family": str(c.get("family") or ""),
        "invalid": str(c.get("invalid_reason") or "") if invalid else "",
    }  # fmt: skip


def _reply(r: dict[str, Any]) -> dict[str, Any]:
    """One turn's answer (a `replies` row): what the model wrote, the calls read from it."""
    usage = r.get("usage") or {}
    tokens = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
    return {
        "text": r["content"] if isinstance(r.get("content"), str) else r.get("text") or "",
        "protocol": r.get("protocol") or "",
        "finish": r.get("finish_reason") or "",
        "tokens": " in, ".join(str(t) for t in tokens) + " out" if None not in tokens else "",
        "calls": [_call(c) for c in r.get("tool_calls") or () if isinstance(c, dict)],
        "cached": bool(r.get("cached")),
    }


def _row_key(o: dict[str, Any]) -> str:
    return f"{o['item_id']}|{int(o['repeat'])}|{o['config']}"


def _grade_word(passed: bool | None) -> str:
    return "ungraded" if passed is None else "pass" if passed else "fail"


def _item_rows(wb: Workbench, run_id: str, outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per item × repeat × configuration, each column a filterable word or number."""
    meta = {
        r[0]: (r[1] or "", from_json(r[2]) or [])
        for r in wb.con.execute(
            "SELECT item_id, category, tags FROM items WHERE run_id = ?", [run_id]
        ).fetchall()
    }
    depth = {
        (r[0], r[1], r[2]): (r[3], r[4])
        for r in wb.con.execute(
            "SELECT item_id, repeat, config, max(fallback_depth) FILTER (chosen IS NOT NULL), "
            "count(*) FROM routes "
            "WHERE run_id = ? GROUP BY ALL",
            [run_id],
        ).fetchall()
    }
    rows = []
    for o in outputs:
        category, tags = meta.get(o["item_id"], ("", []))
        deepest, turns = depth.get((o["item_id"], int(o["repeat"]), o["config"]), (None, 0))
        rows.append({
            "key": _row_key(o), "item": o["item_id"], "repeat": int(o["repeat"]),
            "config": o["config"], "model": o["key"] or "", "grade": _grade_word(o["passed"]),
            "category": category, "tags": ", ".join(tags), "error": o["error_code"] or "",
            "depth": "" if deepest is None else int(deepest), "turns": int(turns),
            "cached": "yes" if o["cached"] else "no", "latency": duration(o["latency_ms"]),
            "latency_ms": _finite(o["latency_ms"]),
        })  # fmt: skip
    return rows


def _chains(wb: Workbench, run_id: str) -> list[dict[str, Any]]:
    """Each configuration's candidate chain, said once (not on every route)."""
    rows = wb.con.execute(
        "SELECT config, candidates, count(*) FROM routes WHERE run_id = ? GROUP BY ALL "
        "ORDER BY config, count(*) DESC",
        [run_id],
    ).fetchall()
    return [{"config": c, "candidates": from_json(cands) or [], "routes": n} for c, cands, n in rows]


def _run_info(wb: Workbench, run_id: str) -> dict[str, Any]:
    rows = wb.con.execute(
        "SELECT name, dataset, status, started_at, finished_at, version, settings FROM runs "
        "WHERE run_id = ?",
        [run_id],
    ).fetchall()
    if not rows:
        raise ConfigError(f"no run {run_id!r} in {wb.path}", code="RUN_UNKNOWN")
    name, dataset, status, started, finished, version, settings = rows[0]
    took = (finished - started).total_seconds() * 1000 if started and finished else None
    return {
        "id": run_id, "name": name or "", "dataset": dataset or "", "status": status or "",
        "started": iso(started.replace(tzinfo=UTC).timestamp() * 1000) if started else "",
        "finished": iso(finished.replace(tzinfo=UTC).timestamp() * 1000) if finished else "",
        "took": duration(took), "version": version or "", "settings": from_json(settings) or {},
    }  # fmt: skip


# ------------------------------------------------------------------ the page
def _asset(name: str) -> str:
    return files("workbench.eval").joinpath(name).read_text(encoding="utf-8")


def _page(title: str, body: str, data: dict[str, Any]) -> str:
    # Inline JSON can neither end its <script> early nor open a comment in it: every "<" is
    # written as its JSON escape, so no model's text is ever markup here.
    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_asset('report_viewer.css')}</style>"
        f'</head><body>{body}<script type="application/json" id="data">{blob}</script>'
        f"<script>{_asset('report_viewer.js')}</script></body></html>"
    )


def _cards(cards: list[tuple[str, Any]]) -> str:
    return '<div class="cards">' + "".join(
        f'<div class="card"><b>{html.escape(_text(v))}</b>{html.escape(k)}</div>' for k, v in cards
    ) + "</div>"  # fmt: skip


def _pass_by(wb: Workbench, run_id: str) -> pd.DataFrame:
    return wb.sql(
        "SELECT o.config, coalesce(i.category, '') AS category, count(*) AS n, "
        "count(*) FILTER (o.passed) AS passed, count(*) FILTER (o.passed) / "
        "nullif(count(o.passed), 0) AS pass_rate FROM outputs o "
        "LEFT JOIN items i USING (run_id, item_id) WHERE o.run_id = ? GROUP BY ALL "
        "ORDER BY o.config, category",
        [run_id],
    )


def render(wb: Workbench, run_id: str) -> str:
    """The report of one run as one HTML string."""
    info = _run_info(wb, run_id)
    outputs = _outputs(wb, run_id)
    attempts = wb.attempts(run_id)
    latency = wb.latency(by="key", run_id=run_id)  # one model id may be served by several
    errors = wb.errors(run_id)
    # A NULL status (no response) made the column floats; 0 is no status either.
    status = errors["status"].astype("Int64")
    errors["status"] = status.mask(status == 0)
    usage = wb.sql(
        "SELECT key, count(*) AS answered_calls, sum(tokens) AS tokens FROM attempts "
        "WHERE run_id = ? AND outcome IN ('ok', 'partial', 'rejected') AND NOT cached "
        "GROUP BY key ORDER BY key",
        [run_id],
    )
    pass_by = _pass_by(wb, run_id)
    routes = wb.sql(
        "SELECT CASE WHEN chosen IS NULL THEN 'no answer' ELSE 'depth ' || fallback_depth "
        "END AS depth, count(*) AS routes, chosen IS NULL AS failed, fallback_depth "
        "FROM routes WHERE run_id = ? GROUP BY ALL ORDER BY failed, fallback_depth",
        [run_id],
    )
    graded = [o["passed"] for o in outputs if o["passed"] is not None]
    called = attempts["outcome"].isin(["ok", "error", "rejected", "partial"]) & ~attempts["cached"].fillna(False).astype(bool)  # fmt: skip
    answered = routes[~routes["failed"].astype(bool)] if len(routes) else routes
    fell_back = int(answered.loc[answered["fallback_depth"] > 0, "routes"].sum()) if len(answered) else 0
    unanswered = int(routes.loc[routes["failed"].astype(bool), "routes"].sum()) if len(routes) else 0
    cards = [
        ("items × repeats × configs", len(outputs)),
        ("pass rate", f"{sum(graded) / len(graded):.0%}" if graded else "n/a"),
        ("provider calls", int(called.sum())),
        ("routes answered after a fallback", fell_back),
        ("routes nobody answered", unanswered),
        ("failed attempts", int(errors["count"].sum()) if not errors.empty else 0),
        ("run took", info["took"] or "—"),
    ]
    leaks = wb.con.execute("SELECT count(*) FROM leaks WHERE run_id = ?", [run_id]).fetchone()
    meta = " · ".join(
        x for x in (
            info["name"], f"dataset {info['dataset']}", f"status {info['status']}",
            f"started {info['started']}", f"finished {info['finished']}" if info["finished"] else "",
            f"workbench {info['version']}" if info["version"] else "",
        ) if x
    )  # fmt: skip
    charts = []
    if not latency.empty:
        charts.append(_bar([str(x) for x in latency["key"]], list(latency["p50_ms"]),
                           "median latency per successful call, ms (cache hits excluded)", "ms"))  # fmt: skip
    if not routes.empty:
        charts.append(_bar(list(routes["depth"]), list(routes["routes"]),
                           "routes by how far down the chain the answer came from", "routes"))  # fmt: skip
    if not errors.empty:
        charts.append(_bar([" · ".join(str(x) for x in (r.model, r.error_code, r.status)
                                     if x is not None and x is not pd.NA)
                            for r in errors.itertuples()],
                           list(errors["count"]), "failed attempts by model and code", "attempts"))  # fmt: skip
    rated = pass_by[pass_by["pass_rate"].notna()]
    if not rated.empty:
        labels = [
            f"{c} · {k or '(none)'}"
            for c, k in zip(rated["config"], rated["category"], strict=True)
        ]
        charts.append(_bar(labels, [100 * x for x in rated["pass_rate"]],
                           "pass rate per configuration and category, %", "%"))  # fmt: skip
    chains = _chains(wb, run_id)
    body = "\n".join([
        '<header><h1>Run <code>' + html.escape(run_id) + "</code></h1>",
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
            + " → ".join(f"<code>{html.escape(str(k))}</code>" for k in c["candidates"]) + "</p>"
            for c in chains
        ) or '<p class="empty">no route logged</p>',
        "<h2>Latency per model</h2>", _table(latency),
        "<h2>Capability verdicts (tools)</h2>", _matrix(wb.verdict_matrix(run_id)),
        "<h2>Error taxonomy</h2>", _table(errors),
        "<h2>Pass rate per configuration and category</h2>", _table(pass_by),
        "<h2>Masking audit</h2>",
        f"<p>{leaks[0] if leaks else 0} leak(s): sensitive values of the prompt set found in "
        "requests that left the machine (the simulator's request log). The expected count is 0.</p>",
        "<h2>Tokens per model (every answered call)</h2>", _table(usage),
        "</section>",
        '<dialog id="story" aria-labelledby="story-title"><form method="dialog" class="close">'
        '<button aria-label="close">×</button></form><div id="story-body"></div></dialog>',
        f'<footer>written {iso(datetime.now(UTC).timestamp() * 1000)} by workbench</footer>',
    ])  # fmt: skip
    stories, texts = _stories(wb, run_id, outputs)
    data = {
        "kind": "run",
        "run": info,
        "items": _item_rows(wb, run_id, outputs),
        "stories": stories,
        "texts": texts,
    }
    return _page(f"workbench run {run_id}", body, data)


def render_comparison(wb: Workbench, run_a: str, run_b: str) -> str:
    """Run B against run A: pass-rate differences with their intervals (overall, per
    configuration, per category), the exact test on the items, and every pair whose grade
    flipped, each linked to its story in both runs' reports (written beside this page)."""
    c = compare_runs(wb, run_a, run_b)
    both, _, _ = paired_outputs(wb, c.run_a, c.run_b)
    groups: list[tuple[str, float, float, float]] = []
    table = []
    for column in ("config", "category"):
        for value, g in group_stats(both, column):
            label = f"{column} {value or '(none)'}"
            if g.flipped:  # without a flip the bootstrap has nothing to vary: no interval
                groups.append((label, g.diff, g.lo, g.hi))
            table.append({
                "group": label, "pairs": g.pairs, "items": g.items,
                "pass rate A": f"{g.rate_a:.0%}", "pass rate B": f"{g.rate_b:.0%}",
                "B − A": f"{100 * g.diff:+.1f} points",
                "95 % interval": f"[{100 * g.lo:+.1f}, {100 * g.hi:+.1f}]" if g.flipped
                else "no flips",
                "pairs A only passed": g.a_only, "pairs B only passed": g.b_only,
                "items worse / better": f"{g.items_worse} / {g.items_better}",
                "p": f"{g.p_value:.3g}",
            })  # fmt: skip
    cards = [
        ("pairs (items)", f"{c.pairs} ({c.items})"),
        ("pass rate A", f"{c.pass_rate_a:.0%}"),
        ("pass rate B", f"{c.pass_rate_b:.0%}"),
        ("B − A", f"{100 * c.diff:+.1f} points [{100 * c.diff_lo:+.1f}, {100 * c.diff_hi:+.1f}]"),
        ("exact p (items)", f"{c.p_value:.3g}"),
        ("pairs flipped", f"{c.a_only} ↓ · {c.b_only} ↑"),
    ]
    category = {(r.item_id, r.repeat, r.config): r.category or "" for r in both.itertuples()}
    flips = [{
        "key": f"{f.item_id}|{f.repeat}|{f.config}", "item": f.item_id, "repeat": f.repeat,
        "config": f.config, "category": category.get((f.item_id, f.repeat, f.config), ""),
        "A": "pass" if f.passed_a else "fail", "B": "pass" if f.passed_b else "fail",
        "change": "worse" if f.passed_a else "better",
    } for f in c.flips]  # fmt: skip
    unpaired = (f" · {c.unpaired_a} output(s) of A and {c.unpaired_b} of B had no partner"
                if c.unpaired_a or c.unpaired_b else "")  # fmt: skip
    body = "\n".join([
        f"<header><h1>Run <code>{html.escape(c.run_b)}</code> against "
        f"<code>{html.escape(c.run_a)}</code></h1>",
        f'<p class="meta">pairs by item, repeat and configuration{html.escape(unpaired)} · '
        f'<a href="{html.escape(c.run_a)}.html">report of A</a> · '
        f'<a href="{html.escape(c.run_b)}.html">report of B</a></p></header>',
        _cards(cards),
        f"<figure>{_interval_chart(groups, 'pass rate B − A, 95 % interval (items resampled)')}</figure>"
        if groups else "",
        "<h2>Per configuration and category</h2>", _table(pd.DataFrame(table)),
        "<h2>Flipped items</h2>",
        '<div class="filters" id="filters"></div><p class="count" id="count"></p>'
        '<div class="scroll"><table id="items" class="items"></table></div>',
        f'<footer>written {iso(datetime.now(UTC).timestamp() * 1000)} by workbench</footer>',
    ])  # fmt: skip
    data = {"kind": "compare", "run_a": c.run_a, "run_b": c.run_b, "items": flips}
    return _page(f"workbench {c.run_b} against {c.run_a}", body, data)


# ------------------------------------------------------------------ files
def _write(folder: Path, pages: dict[str, str]) -> dict[str, Path]:
    """Write every page or none: each beside its final name, moved into place together."""
    with staged(folder) as stage:
        for name, page in pages.items():
            stage(name).write_text(page, encoding="utf-8")
    return {name: folder / name for name in pages}


def _with(db: str | Path | Workbench) -> tuple[Workbench, bool]:
    if isinstance(db, Workbench):
        return db, False
    return Workbench.open(db), True  # read-only; a copy only while another process writes


def write_report(
    db: str | Path | Workbench, run_id: str = "latest", out_dir: str | Path = "reports"
) -> Path:
    """Write `<out_dir>/<run_id>.html` and return its path. The run is an id, a run name (its
    newest run) or `latest`."""
    folder = writable_dir(out_dir)  # refused before any work
    wb, owned = _with(db)
    try:
        run_id = resolve_run(wb, run_id)
        page = render(wb, run_id)
    finally:
        if owned:
            wb.close()
    name = f"{run_id}.html"
    return _write(folder, {name: page})[name]


def write_comparison(
    db: str | Path | Workbench, run_a: str, run_b: str, out_dir: str | Path = "reports"
) -> Path:
    """Write both runs' reports and `<out_dir>/<A>_vs_<B>.html` (the comparison, linking to
    them); return the comparison's path."""
    folder = writable_dir(out_dir)  # refused before any work
    wb, owned = _with(db)
    try:
        run_a, run_b = resolve_runs(wb, run_a, run_b)
        page = render_comparison(wb, run_a, run_b)
        pages = {f"{run}.html": render(wb, run) for run in (run_a, run_b)}
    finally:
        if owned:
            wb.close()
    name = f"{run_a}_vs_{run_b}.html"
    return _write(folder, {**pages, name: page})[name]
