"""`workbench report RUN_ID`: one self-contained HTML file for one run.

It only renders what `analysis.Workbench` computes (display is separate from logic): latency
per model, the verdict matrix, fallback depth, the error taxonomy, grades. Plots are inline
SVG drawn by `_bar`, so the file opens anywhere, offline, with nothing beside it.
"""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from workbench.errors import ConfigError
from workbench.eval.analysis import Workbench

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:72rem;color:#1d2330;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2.2rem;border-bottom:1px solid #dde2ea;padding-bottom:.3rem}
.meta{color:#5b6577}table{border-collapse:collapse;margin:.6rem 0;font-size:13px}
th,td{padding:.3rem .6rem;border-bottom:1px solid #e7eaf0;text-align:left}th{background:#f4f6f9}
td.n{text-align:right;font-variant-numeric:tabular-nums}.cards{display:flex;gap:1rem;flex-wrap:wrap}
.card{background:#f4f6f9;border-radius:.5rem;padding:.7rem 1rem;min-width:9rem}.card b{display:block;font-size:1.4rem}
.empty{color:#8a93a3;font-style:italic}svg{max-width:100%;height:auto}
"""


_BAR_H = 18  # one bar's height, px
_ROW_H = 24  # one row: the bar and the space under it
_CHAR_W = 6.6  # the width of one character of the 12 px label font, roughly
_LABEL_MAX = 38  # characters of a label shown; the bar's tooltip has it whole


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
    """A horizontal bar chart as inline SVG, first label on top, each bar with its value.

    Drawn here rather than by matplotlib: importing and drawing with it cost a one-item run
    most of a second, for a chart that is a handful of rectangles."""
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
        'fill="#1d2330">'
        f'<text x="0" y="16" font-size="13">{html.escape(title)}</text>'
        f"{''.join(rows)}"
        f'<line x1="{label_w}" y1="{head - 4}" x2="{label_w}" y2="{axis_y}" stroke="#8a93a3"/>'
        f'<text x="{label_w + plot_w / 2:.0f}" y="{axis_y + 20}" text-anchor="middle" '
        f'fill="#5b6577">{html.escape(xlabel)}</text></svg>'
    )


def _table(df: pd.DataFrame) -> str:
    if df is None or df.empty:
        return '<p class="empty">nothing logged</p>'
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for record in df.itertuples(index=False):
        cells = []
        for value in record:
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            text = f"{value:,.1f}" if isinstance(value, float) else str(value)
            if value is None or (isinstance(value, float) and pd.isna(value)):
                text = ""
            cells.append(f'<td class="{"n" if numeric else ""}">{html.escape(text)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render(wb: Workbench, run_id: str) -> str:
    """The report of `run_id` as one HTML string."""
    run = wb.runs()
    run = run[run["run_id"] == run_id]
    if run.empty:
        raise ConfigError(f"no run {run_id!r} in {wb.path}", code="RUN_UNKNOWN")
    info = run.iloc[0]
    outputs = wb.outputs(run_id)
    latency = wb.latency(by="model", run_id=run_id)
    matrix = wb.verdict_matrix(run_id)
    fallbacks = wb.fallbacks(run_id)
    errors = wb.errors(run_id)
    grades = wb.grades(run_id)
    attempts = wb.attempts(run_id)
    usage = wb.usage(run_id)

    graded = outputs[outputs["passed"].notna()] if not outputs.empty else outputs
    pass_rate = f"{graded['passed'].mean():.0%}" if len(graded) else "n/a"
    routes = wb.con.execute(
        "SELECT fallback_depth, count(*) AS routes FROM routes WHERE run_id = ? "
        "GROUP BY ALL ORDER BY fallback_depth",
        [run_id],
    ).df()
    cards = [
        ("items", len(outputs)),
        (
            "provider calls",
            int((attempts["outcome"].isin(["ok", "error", "rejected", "partial"])).sum())
            if not attempts.empty
            else 0,
        ),
        ("pass rate", pass_rate),
        ("fallbacks", len(fallbacks)),
        ("errors", int(errors["count"].sum()) if not errors.empty else 0),
    ]
    parts = [
        f"<h1>Run {html.escape(run_id)}</h1>",
        f'<p class="meta">{html.escape(str(info.get("name") or ""))} · dataset '
        f"{html.escape(str(info['dataset']))} · status {html.escape(str(info['status']))} · "
        f"started {html.escape(str(info['started_at']))} · report written "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC</p>",
        '<div class="cards">'
        + "".join(
            f"<div class=card><b>{html.escape(str(v))}</b>{html.escape(k)}</div>" for k, v in cards
        )
        + "</div>",
        "<h2>Latency per model</h2>",
    ]
    if not latency.empty:
        labels = [str(x) for x in latency["model"]]
        parts.append(
            _bar(
                labels,
                list(latency["p50_ms"]),
                "median latency per successful call (cache hits excluded)",
                "ms",
            )
        )
    parts.append(_table(latency))
    parts += [
        "<h2>Capability verdicts (tools)</h2>",
        _table(matrix),
    ]
    parts.append("<h2>Fallback depth</h2>")
    if not routes.empty:
        parts.append(_bar([f"depth {d}" for d in routes["fallback_depth"]], list(routes["routes"]),
                          "routes by how far down the chain the answer came from", "routes"))  # fmt: skip
    parts.append(_table(fallbacks.head(50)))
    parts += ["<h2>Error taxonomy</h2>"]
    if not errors.empty:
        labels = [f"{r.model} · {r.error_code}" for r in errors.itertuples()]
        parts.append(
            _bar(labels, list(errors["count"]), "failed attempts by model and code", "attempts")
        )
    parts.append(_table(errors))
    parts += ["<h2>Grades</h2>"]
    if not grades.empty:
        labels = [" · ".join(str(x) for x in r[:2]) for r in grades.itertuples(index=False)]
        parts.append(_bar(labels, [100 * x for x in grades["pass_rate"]], "pass rate", "%"))
    parts.append(_table(grades))
    leaks = wb.con.execute(
        "SELECT item_id, model, path, count(*) AS hits FROM leaks WHERE run_id = ? GROUP BY ALL ORDER BY 1",
        [run_id],
    ).df()
    parts += ["<h2>Masking audit</h2>", f"<p>{len(leaks)} leak(s): sensitive values of the prompt set found in "
              "requests that left the machine (the simulator's request log). The expected count is 0.</p>",
              _table(leaks) if len(leaks) else ""]  # fmt: skip
    parts += ["<h2>Tokens</h2>", _table(usage)]
    body = "\n".join(parts)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>workbench run {html.escape(run_id)}</title><style>{_CSS}</style></head>"
        f"<body>{body}</body></html>"
    )


def write_report(
    db: str | Path | Workbench, run_id: str = "latest", out_dir: str | Path = "reports"
) -> Path:
    """Write `reports/<run_id>.html` and return its path. `run_id="latest"` picks the newest."""
    wb = db if isinstance(db, Workbench) else Workbench.open(db)
    try:
        if run_id == "latest":
            latest = wb.latest_run()
            if latest is None:
                raise ConfigError(f"no run in {wb.path} yet", code="RUN_UNKNOWN")
            run_id = latest
        page = render(wb, run_id)
    finally:
        if not isinstance(db, Workbench):
            wb.close()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{run_id}.html"
    path.write_text(page, encoding="utf-8")
    return path
