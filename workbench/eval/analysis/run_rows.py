"""One run's rows as the report and the exports read them: the tables and counts a report
page draws, and the routes, attempts, verdicts, tool steps and replies each item's story is
told from.

The report wants plain rows (NULL stays None: a DataFrame would make a column of NULLs NaN,
which is neither a grade nor a text) and a few small DataFrames for its tables; the exports
want whole tables of the run. Every read takes an open `RunFrames` (read-only, or a
snapshot) and one run id; what is shown of the rows is the caller's. A story's reads take a
`Span` too (`row_spans`): only the rows of one chunk of the report's table.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

from workbench.eval.analysis import outcomes
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.row_spans import Span

__all__ = [
    "TIMELINE_BARS",
    "attempts_by_route",
    "chains",
    "item_table",
    "pacing_history",
    "pass_by_category",
    "replies_by_output",
    "route_depths",
    "route_table",
    "routes_by_output",
    "tokens_by_model",
    "tool_step_events",
    "tool_steps_by_output",
    "traffic_per_second",
    "verdicts_by_output",
]

OutputKey = tuple[str, int, str]  # item_id, repeat, config: one row of the report's table


def _within(span: Span | None, params: list[Any]) -> tuple[str, list[Any]]:
    """` AND <the span's keys>` (nothing for the whole run) and the parameters after it."""
    if span is None:
        return "", params
    clause, more = span.where()
    return f" AND {clause}", [*params, *more]


# ------------------------------------------------------------------ a report's tables
def pass_by_category(wb: RunFrames, run_id: str) -> pd.DataFrame:
    """Outputs, unanswered, failed, passed and pass rate (passed / graded answers: an
    unanswered or failed output is neither passed nor failed by the model; see `outcomes`)
    per configuration and item category."""
    return wb.sql(
        "SELECT o.config, coalesce(i.category, '') AS category, count(*) AS n, "
        f"count(*) FILTER {outcomes.unanswered('o.')} AS unanswered, "
        f"count(*) FILTER {outcomes.failed('o.')} AS failed, "
        f"count(*) FILTER {outcomes.passed('o.')} AS passed, "
        f"count(*) FILTER {outcomes.passed('o.')} / "
        f"nullif(count(*) FILTER {outcomes.graded('o.')}, 0) AS pass_rate FROM outputs o "
        "LEFT JOIN items i USING (run_id, item_id) WHERE o.run_id = ? GROUP BY ALL "
        "ORDER BY o.config, category",
        [run_id],
    )


def tokens_by_model(wb: RunFrames, run_id: str) -> pd.DataFrame:
    """Answered provider calls and their tokens per model key; cache hits cost nothing.
    `in_batches`: the calls a vendor's batch answered (`--batch`), billed at half price."""
    return wb.sql(
        "SELECT key, count(*) AS answered_calls, sum(tokens) AS tokens, "
        "count(batch_id) AS in_batches FROM attempts "
        f"WHERE run_id = ? AND {outcomes.answered_calls()} "
        "GROUP BY key ORDER BY key",
        [run_id],
    )


# The pacing chart is 580 px wide: past this many seconds, one bar stands for several.
TIMELINE_BARS = 600


def traffic_per_second(
    wb: RunFrames, run_id: str, *, bars: int = TIMELINE_BARS
) -> tuple[int | None, int, pd.DataFrame]:
    """The run's first request (epoch ms, None when none was sent), the seconds one bar
    stands for (`step`: 1, or as many as keep a long run to about `bars` bars — a free tier's
    day-long run would otherwise draw 86,400 of them), and per bar the requests sent per
    second (cache hits are none) and those refused with a 429, averaged over its seconds:
    `second` (where the bar starts), `requests`, `refused`."""
    sent = outcomes.sent()
    row = wb.con.execute(
        f"SELECT min(start_ms), max(start_ms) FROM attempts WHERE run_id = ? AND {sent}",
        [run_id],
    ).fetchone()
    if row is None or row[0] is None:
        return None, 1, pd.DataFrame({"second": [], "requests": [], "refused": []})
    start = int(row[0])
    step = max(1, -(-(int(row[1]) - start) // 1000 // bars))
    df = wb.sql(
        "SELECT (start_ms - $1) // 1000 // $2 * $2 AS second, count(*) / $2 AS requests, "
        "count(*) FILTER (status = 429) / $2 AS refused "
        f"FROM attempts WHERE run_id = $3 AND {sent} GROUP BY ALL ORDER BY second",
        [start, step, run_id],
    )
    return start, step, df


def pacing_history(
    wb: RunFrames, run_id: str, start_ms: int, step_s: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the router learnt while the run went, per bar of `step_s` seconds since
    `start_ms` (as `traffic_per_second` counts the requests): the requests limit per second
    each model's quota headers named for a minute (`second`, `key`, `per_second`: the highest
    read in that bar), and each model's adaptive concurrency (`second`, `key`, `concurrency`:
    the value it held at the end of that bar, which the chart's step draws until the next).
    Read a bar at a time in DuckDB, not a row per reading: every reply of a million-item run
    carries quota headers, and the chart holds one point per key and bar, not a million.
    A day's limit is left out: spread over 86,400 s it is no rate a run could keep to in a
    burst (Groq's request headers count the day: 14,400 a day reads 0.17/s beside a run
    sending 0.5/s within its minute's limit)."""
    limits = wb.sql(
        "SELECT (observed_at_ms - $1) // 1000 // $3 * $3 AS second, key, "
        'max("limit") / 60.0 AS per_second '
        "FROM quota WHERE run_id = $2 AND scope = 'requests' AND \"limit\" IS NOT NULL "
        "AND \"window\" = 'minute' GROUP BY ALL ORDER BY second, key",
        [start_ms, run_id, step_s],
    )
    concurrency = wb.sql(
        "SELECT (at_ms - $1) // 1000 // $3 * $3 AS second, key, "
        "arg_max(concurrency, at_ms) AS concurrency FROM pacing "
        "WHERE run_id = $2 GROUP BY ALL ORDER BY second, key",
        [start_ms, run_id, step_s],
    )
    return limits, concurrency


def route_depths(wb: RunFrames, run_id: str) -> pd.DataFrame:
    """Routes per depth of the candidate that answered (`depth 0` is the first), the routes
    nobody answered, and those their caller stopped (`AI_CANCELLED`: a Ctrl-C, a client that
    hung up; no model failed them, so they are not counted as unanswered): `depth`, `routes`,
    `failed`, `stopped`, `fallback_depth`."""
    return wb.sql(
        f"SELECT CASE WHEN {_STOPPED} THEN 'stopped by the caller' "
        "WHEN chosen IS NULL THEN 'no answer' ELSE 'depth ' || fallback_depth "
        f"END AS depth, count(*) AS routes, chosen IS NULL AND NOT {_STOPPED} AS failed, "
        f"{_STOPPED} AS stopped, fallback_depth "
        "FROM routes WHERE run_id = ? GROUP BY ALL ORDER BY stopped, failed, fallback_depth",
        [run_id],
    )


# A route its caller stopped: no model chosen, and not because none could answer.
_STOPPED = "(chosen IS NULL AND coalesce(error_code = 'AI_CANCELLED', false))"


def chains(wb: RunFrames, run_id: str) -> list[tuple[str, Any, int]]:
    """(configuration, its candidates as JSON text, routes): each chain once, the most
    walked first."""
    rows = wb.con.execute(
        "SELECT config, candidates, count(*) FROM routes WHERE run_id = ? GROUP BY ALL "
        "ORDER BY config, count(*) DESC",
        [run_id],
    ).fetchall()
    return [(str(c), cands, int(n)) for c, cands, n in rows]


# ------------------------------------------------------------------ an item's story
_ATTEMPT = (
    "route_id",
    "position",
    "seq",
    "key",
    "outcome",
    "status",
    "error_kind",
    "error_code",
    "error_message",
    "reason",
    "latency_ms",
    "start_ms",
    "cached",
    "tokens",
    "request",
)
_ROUTE = ("route_id", "candidates", "chosen", "fallback_depth", "partial", "error_code", "at_ms")
_VERDICT = (
    "provider",
    "model",
    "capability",
    "verdict",
    "protocol_family",
    "recorded",
    "evidence",
    "via",
    "at_ms",
)


def attempts_by_route(
    wb: RunFrames, run_id: str, span: Span | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each route's attempts in the order they were made (`seq`, then start, then position)."""
    within, params = _within(span, [run_id])
    rows = wb.con.execute(
        f"SELECT {', '.join(_ATTEMPT)} FROM attempts WHERE run_id = ?{within} "
        "ORDER BY seq, start_ms, position",
        params,
    ).fetchall()
    by_route: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        a = dict(zip(_ATTEMPT, row, strict=True))
        by_route[a["route_id"]].append(a)
    for attempts in by_route.values():
        attempts.sort(key=lambda a: (a["seq"] or 0, a["start_ms"], a["position"]))
    return by_route


def routes_by_output(
    wb: RunFrames, run_id: str, span: Span | None = None
) -> dict[OutputKey, list[dict[str, Any]]]:
    """Each output's routes (one per turn), in time order."""
    within, params = _within(span, [run_id])
    out: dict[OutputKey, list[dict[str, Any]]] = defaultdict(list)
    for r in wb.con.execute(
        f"SELECT item_id, repeat, config, {', '.join(_ROUTE)} FROM routes WHERE run_id = ?{within} "
        "ORDER BY at_ms",
        params,
    ).fetchall():
        out[(r[0], r[1], r[2])].append(dict(zip(_ROUTE, r[3:], strict=True)))
    return out


def verdicts_by_output(
    wb: RunFrames, run_id: str, span: Span | None = None
) -> dict[OutputKey, list[dict[str, Any]]]:
    """Each output's capability classifications, recorded or not, in time order."""
    within, params = _within(span, [run_id])
    out: dict[OutputKey, list[dict[str, Any]]] = defaultdict(list)
    for v in wb.con.execute(
        f"SELECT item_id, repeat, config, {', '.join(_VERDICT)} FROM verdicts WHERE run_id = ?{within} "
        "ORDER BY at_ms",
        params,
    ).fetchall():
        out[(v[0], v[1], v[2])].append(dict(zip(_VERDICT, v[3:], strict=True)))
    return out


def tool_steps_by_output(
    wb: RunFrames, run_id: str, span: Span | None = None
) -> dict[OutputKey, list[dict[str, Any]]]:
    """Each output's tool steps, one per step in the order they started (steps started in one
    millisecond in the order they were logged): `tool`, `params`,
    `ok` (None while it never ended), `ends` (0 or 1), `start_ms`, `end_ms`. A step logs its
    start (ok NULL) and its end, two rows of one step id."""
    within, params = _within(span, [run_id])
    out: dict[OutputKey, list[dict[str, Any]]] = defaultdict(list)
    for s in wb.con.execute(
        "SELECT item_id, repeat, config, any_value(tool), any_value(params), "
        "bool_or(ok) FILTER (ok IS NOT NULL), count(ok), min(at_ms), max(at_ms) "
        f"FROM tool_steps WHERE run_id = ?{within} GROUP BY item_id, repeat, config, step_id "
        "ORDER BY min(at_ms), min(rowid)",
        params,
    ).fetchall():
        out[(s[0], s[1], s[2])].append(
            {
                "tool": s[3],
                "params": s[4],
                "ok": s[5],
                "ends": s[6],
                "start_ms": s[7],
                "end_ms": s[8],
            }
        )
    return out


def replies_by_output(
    wb: RunFrames, run_id: str, span: Span | None = None
) -> dict[OutputKey, list[Any]]:
    """Each output's answers (the `replies` column, JSON text), in turn order."""
    within, params = _within(span, [run_id])
    out: dict[OutputKey, list[Any]] = defaultdict(list)
    for r in wb.con.execute(
        f"SELECT item_id, repeat, config, reply FROM replies WHERE run_id = ?{within} "
        "ORDER BY turn",
        params,
    ).fetchall():
        out[(r[0], r[1], r[2])].append(r[3])
    return out


# ------------------------------------------------------------------ whole tables, for exports
def item_table(wb: RunFrames, run_id: str) -> pd.DataFrame:
    """The run's `items` rows, every column."""
    return wb.sql("SELECT * FROM items WHERE run_id = ?", [run_id])


def route_table(wb: RunFrames, run_id: str) -> pd.DataFrame:
    """The run's `routes` rows, every column, in time order."""
    return wb.sql("SELECT * FROM routes WHERE run_id = ? ORDER BY at_ms", [run_id])


def tool_step_events(wb: RunFrames, run_id: str) -> pd.DataFrame:
    """The run's `tool_steps` rows (a start, ok NULL, and an end per step) in time order; in
    one millisecond, starts first, then in the order they were logged."""
    return wb.sql(
        "SELECT item_id, repeat, config, step_id, tool, params, ok, at_ms FROM tool_steps "
        "WHERE run_id = ? ORDER BY at_ms, ok IS NOT NULL, rowid",
        [run_id],
    )
