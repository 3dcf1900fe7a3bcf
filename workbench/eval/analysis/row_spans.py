"""A run's outputs read a span at a time, for a report of any size.

A report's table has one row per output in `ORDER BY item_id, repeat, config`, and a row's
INDEX is its place in that order. A big run's report is written (and `workbench view` serves
it) a chunk of rows at a time, so no read here ever returns more than one span's rows: the
span's first key is found once (`span_starts`, one key per chunk), and every read of the
span's outputs, routes, attempts, replies, verdicts and tool steps is bounded by its keys.
The item id's range is said on its own beside the full key: DuckDB skips the row groups
outside it (its min/max per row group), so a span of a run written in item order reads its
own rows, not the run's.

The report's cards and charts are aggregates here too (`output_counts`, `provider_calls`,
`coded_values`): nothing builds a Python list of every output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench.eval.analysis import outcomes
from workbench.eval.analysis.frames import RunFrames

__all__ = [
    "GRADE",
    "ChunkStart",
    "OutputKey",
    "Span",
    "coded_values",
    "output_counts",
    "outputs_in",
    "provider_calls",
    "row_count",
    "row_indexes",
    "span_starts",
    "story_sizes",
]

OutputKey = tuple[str, int, str]  # item_id, repeat, config: one row of the report's table

# An output's grade as the report's filter shows it: held by the provider ("unanswered"),
# failed and not held ("error": no answer, so no verdict, whatever an older row's `passed`
# says), else the verdict.
GRADE = (
    "CASE WHEN coalesce({a}unanswered, '') <> '' THEN 'unanswered' "
    "WHEN coalesce({a}error_code, '') <> '' THEN 'error' "
    "WHEN {a}passed IS NULL THEN 'ungraded' WHEN {a}passed THEN 'pass' ELSE 'fail' END"
)


@dataclass(frozen=True, slots=True)
class Span:
    """The rows from `first` (at index `start`) up to, not including, `stop` (None: to the
    end of the run)."""

    start: int
    first: OutputKey
    stop: OutputKey | None

    def where(self, alias: str = "") -> tuple[str, list[Any]]:
        """The span as a SQL condition on a table with item_id, repeat and config."""
        a = alias
        key = f"({a}item_id, {a}repeat, {a}config)"
        clause = f"{a}item_id >= ? AND {key} >= (?, ?, ?)"
        params: list[Any] = [self.first[0], *self.first]
        if self.stop is not None:
            clause += f" AND {a}item_id <= ? AND {key} < (?, ?, ?)"
            params += [self.stop[0], *self.stop]
        return clause, params


def row_count(wb: RunFrames, run_id: str) -> int:
    row = wb.con.execute("SELECT count(*) FROM outputs WHERE run_id = ?", [run_id]).fetchone()
    return int(row[0]) if row else 0


def span_starts(wb: RunFrames, run_id: str, every: int) -> list[OutputKey]:
    """The key of rows 0, every, 2·every, …: the first key of each chunk of `every` rows
    (ceil(rows / every) keys)."""
    rows = wb.con.execute(
        "SELECT item_id, repeat, config FROM outputs WHERE run_id = ? "
        "QUALIFY (row_number() OVER (ORDER BY item_id, repeat, config) - 1) % ? = 0 "
        "ORDER BY item_id, repeat, config",
        [run_id, every],
    ).fetchall()
    return [(str(r[0]), int(r[1]), str(r[2])) for r in rows]


@dataclass(frozen=True, slots=True)
class ChunkStart:
    """Where a stories chunk starts: its first row's INDEX and key, and the bytes of story
    before it in the run (the next start's `before` less this one's: the chunk's bytes)."""

    row: int
    key: OutputKey
    before: int


# One output's story, in bytes (about: its texts, calls, grade and error, every request its
# attempts sent, every reply), from `outputs o` and per-output sums `a` (requests) and `r`.
_STORY_BYTES = (
    "length(coalesce(o.raw, '')) + length(coalesce(o.cleaned, '')) "
    "+ length(coalesce(CAST(o.tool_calls AS VARCHAR), '')) "
    "+ length(coalesce(CAST(o.grade AS VARCHAR), '')) "
    "+ length(coalesce(o.error_message, '')) + coalesce(a.n, 0) + coalesce(r.n, 0)"
)


def story_sizes(wb: RunFrames, run_id: str, span: Span) -> list[tuple[OutputKey, int]]:
    """Each output of the span in row order, with about how many bytes its story carries:
    what cuts the stories chunks by their stories' own sizes (long items sit together in a
    prompt set: a chunk cut by the run's average would weigh ten times the rest there). One
    bounded read per span, like every other."""
    where, params = span.where()
    out_where, out_params = span.where("o.")
    rows = wb.con.execute(
        "WITH a AS (SELECT item_id, repeat, config, sum(length(CAST(request AS VARCHAR))) AS n "
        f"  FROM attempts WHERE run_id = ? AND {where} GROUP BY ALL), "
        "r AS (SELECT item_id, repeat, config, sum(length(CAST(reply AS VARCHAR))) AS n "
        f"  FROM replies WHERE run_id = ? AND {where} GROUP BY ALL) "
        f"SELECT o.item_id, o.repeat, o.config, {_STORY_BYTES} FROM outputs o "
        "LEFT JOIN a USING (item_id, repeat, config) LEFT JOIN r USING (item_id, repeat, config) "
        f"WHERE o.run_id = ? AND {out_where} ORDER BY o.item_id, o.repeat, o.config",
        [run_id, *params, run_id, *params, run_id, *out_params],
    ).fetchall()
    return [((str(i), int(rep), str(c)), int(n or 0)) for i, rep, c, n in rows]


# What the table's row shows of an output; a story reads every column.
_ROW = "o.item_id, o.repeat, o.config, o.key, o.unanswered, o.error_code, o.cached, o.latency_ms"


def story_bytes(wb: RunFrames, run_id: str) -> float:
    """About how many bytes one output's story carries, on average over the run: its texts,
    calls and grade, every request its attempts sent and every reply. A run of long prompts
    and answers gets smaller stories chunks than a run of short ones, so that a chunk (read
    at once, and loaded whole when one story is opened) stays a few megabytes either way."""
    found = wb.con.execute(
        "SELECT (SELECT count(*) FROM outputs WHERE run_id = $1), "
        "(SELECT sum(length(coalesce(raw, '')) + length(coalesce(cleaned, '')) "
        "+ length(coalesce(CAST(tool_calls AS VARCHAR), '')) "
        "+ length(coalesce(CAST(grade AS VARCHAR), '')) "
        "+ length(coalesce(error_message, ''))) FROM outputs WHERE run_id = $1), "
        "(SELECT sum(length(CAST(request AS VARCHAR))) FROM attempts WHERE run_id = $1), "
        "(SELECT sum(length(CAST(reply AS VARCHAR))) FROM replies WHERE run_id = $1)",
        [run_id],
    ).fetchone()
    rows, *sizes = found if found is not None else (0,)
    return sum(int(n or 0) for n in sizes) / rows if rows else 0.0


def outputs_in(
    wb: RunFrames, run_id: str, span: Span, *, every_column: bool = False
) -> list[dict[str, Any]]:
    """The span's outputs in row order (the columns the table shows; `every_column` for a
    story), with the item's `category` and `tags` (JSON text), the output's `grade` word,
    its deepest answered fallback `depth` (None: no turn was answered) and its `turns`
    (routes)."""
    where, params = span.where("o.")
    columns = "o.*" if every_column else _ROW
    route_where, route_params = span.where()
    cursor = wb.con.execute(
        f"SELECT {columns}, i.category AS category, i.tags AS tags, {GRADE.format(a='o.')} AS grade, "
        "r.depth AS depth, coalesce(r.turns, 0) AS turns FROM outputs o "
        "LEFT JOIN items i ON i.run_id = o.run_id AND i.item_id = o.item_id "
        "LEFT JOIN (SELECT item_id, repeat, config, "
        "max(fallback_depth) FILTER (chosen IS NOT NULL) AS depth, count(*) AS turns "
        f"FROM routes WHERE run_id = ? AND {route_where} GROUP BY ALL) r "
        "ON r.item_id = o.item_id AND r.repeat = o.repeat AND r.config = o.config "
        f"WHERE o.run_id = ? AND {where} ORDER BY o.item_id, o.repeat, o.config",
        [run_id, *route_params, run_id, *params],
    )
    names = [d[0] for d in cursor.description or []]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def coded_values(wb: RunFrames, run_id: str) -> dict[str, list[str]]:
    """Every value each coded column of the report's table takes in the run, sorted: the
    dictionaries a row's codes index. `tags` are the items' tags as JSON text (the caller
    says them as words). One DISTINCT per column, not one wide aggregate: a million
    outputs take a few values, and hashing them a column at a time stays small."""
    of_outputs = {
        "config": "config",
        "model": "coalesce(key, '')",
        "grade": GRADE.format(a=""),
        "unanswered": "coalesce(unanswered, '')",
        "error": "coalesce(error_code, '')",
        "cached": "CASE WHEN cached THEN 'yes' ELSE 'no' END",
    }
    # An item's category and tags are the item's (one row per item, not per output).
    of_items = {"category": "coalesce(category, '')", "tags": "coalesce(CAST(tags AS VARCHAR), '')"}
    values: dict[str, list[str]] = {}
    for table, fields in (("outputs", of_outputs), ("items", of_items)):
        for name, sql in fields.items():
            rows = wb.con.execute(
                f"SELECT DISTINCT {sql} AS v FROM {table} WHERE run_id = ? ORDER BY v", [run_id]
            ).fetchall()
            values[name] = [str(r[0]) for r in rows]
    # An output whose item has no row shows no category and no tags: "" is always a value.
    for name in of_items:
        values[name] = sorted({"", *values[name]})
    return {name: values[name] for name in (*of_outputs, *of_items)}


def output_counts(wb: RunFrames, run_id: str) -> dict[str, Any]:
    """The summary's counts of outputs, as the summary line counts them (`outcomes`):
    `outputs`, `answered` (no error code), `held` ({reason: outputs the provider kept from
    the model}), `failed` (not held), `graded` and `passed` (of the graded answers)."""
    row = wb.con.execute(
        "SELECT count(*), count(*) FILTER (coalesce(error_code, '') = ''), "
        "count(*) FILTER (coalesce(error_code, '') <> '' AND coalesce(unanswered, '') = ''), "
        "count(*) FILTER (coalesce(error_code, '') = '' AND passed IS NOT NULL), "
        "count(*) FILTER (coalesce(error_code, '') = '' AND passed) FROM outputs WHERE run_id = ?",
        [run_id],
    ).fetchone()
    n, answered, failed, graded, passed = (int(x or 0) for x in (row or (0,) * 5))
    held = dict(
        (str(why), int(k))
        for why, k in wb.con.execute(
            "SELECT unanswered, count(*) FROM outputs WHERE run_id = ? "
            "AND coalesce(unanswered, '') <> '' GROUP BY ALL ORDER BY ALL",
            [run_id],
        ).fetchall()
    )
    return {
        "outputs": n,
        "answered": answered,
        "held": held,
        "failed": failed,
        "graded": graded,
        "passed": passed,
    }


def provider_calls(wb: RunFrames, run_id: str) -> int:
    """Requests that left the machine (sent, not answered from the cache)."""
    row = wb.con.execute(
        f"SELECT count(*) FROM attempts WHERE run_id = ? AND {outcomes.sent()}", [run_id]
    ).fetchone()
    return int(row[0]) if row else 0


def row_indexes(wb: RunFrames, run_id: str, keys: pd.DataFrame) -> list[int | None]:
    """Each key's INDEX in the run's report (None: not an output of the run), for `keys`
    (columns item_id, repeat, config) in their order: where a comparison's link opens."""
    if keys.empty:
        return []
    wanted = keys[["item_id", "repeat", "config"]].reset_index(drop=True)
    wanted["k"] = range(len(wanted))
    name = "workbench_wanted_rows"
    wb.con.register(name, wanted)
    try:
        rows = wb.con.execute(
            "SELECT w.k, n.idx FROM "
            f"{name} w LEFT JOIN (SELECT item_id, repeat, config, "
            "row_number() OVER (ORDER BY item_id, repeat, config) - 1 AS idx "
            "FROM outputs WHERE run_id = ?) n "
            "ON n.item_id = w.item_id AND n.repeat = w.repeat AND n.config = w.config",
            [run_id],
        ).fetchall()
    finally:
        wb.con.unregister(name)
    found: list[int | None] = [None] * len(wanted)
    for k, idx in rows:
        found[int(k)] = (
            None if idx is None or (isinstance(idx, float) and math.isnan(idx)) else int(idx)
        )
    return found
