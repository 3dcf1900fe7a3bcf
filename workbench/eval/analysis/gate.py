"""Is run B worse than run A? The regression gate a CI job runs after a prompt set.

Items are paired by (item, repeat, configuration name): the same question asked the same way
in both runs, so a pair differs only by what changed between them. The pairs of one item (its
repeats, its configurations) are not independent — an item the change broke tends to fail in
every repeat — so both statistics count items, not pairs:

- an exact sign test on the items whose pass count changed (B passed more of the item's
  pairs, or fewer): is the change more than the coin-flip noise of the discordant items? With
  one pair per item it is McNemar's exact test on the flipped pairs. (Items that did not
  change carry no information about the difference; the exact binomial form is right for the
  few a prompt set has.)
- a bootstrap of the pass-rate difference B − A that resamples items, each with all its
  pairs: how big is it? Items with the same pairs, passes of A and passes of B are
  interchangeable in a resample, so it draws how many of each such kind (a multinomial on
  their counts, a block of resamples at a time) rather than every item: the same distribution
  as drawing items, in memory that does not grow with the run. The counts are aggregated in
  DuckDB (`pair_kinds`), so a comparison of two million-item runs never reads their pairs
  into pandas; its flipped pairs are read a chunk at a time (`flipped_pairs`).

B fails the gate when both say so: the drop in pass rate is larger than the allowed margin
and the test's p is below `alpha`. A drop within noise, or smaller than the margin, passes.
Comparing a run with itself is refused: it would always pass.

The pairs are graded answers on both sides, counted as the summary counts them (see
`outcomes`), so the gate's pass rates are the runs' own. A pair either side of which the
provider kept unanswered (refused past --max-wait, a day's quota spent) is left out and
counted beside the verdict: the model was never asked, so a rate limit makes no run better or
worse. So is a pair either side of which failed (the route failed for the caller's reasons: a
400, a bad key), and an answer with nothing to grade. But B fails the gate whenever it failed
more outputs than A, whatever the pass rates: a change that breaks requests is a regression,
and leaving its items out must not make B look as good.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.errors import ConfigError
from workbench.eval.analysis import outcomes
from workbench.eval.analysis.row_spans import span_starts

if TYPE_CHECKING:
    from workbench.eval.analysis.frames import RunFrames

__all__ = [
    "SHOWN_FLIPS",
    "Comparison",
    "Flip",
    "Paired",
    "compare_runs",
    "describe",
    "failed_outputs",
    "flipped_pairs",
    "group_stats",
    "grouped_stats",
    "mcnemar_exact",
    "pair_kinds",
    "paired_outputs",
    "paired_stats",
    "resolve_run",
    "resolve_runs",
    "unanswered_outputs",
]

METRICS = ("pass",)


@dataclass(frozen=True, slots=True)
class Flip:
    """One pair whose outcome changed between the runs."""

    item_id: str
    repeat: int
    config: str
    passed_a: bool
    passed_b: bool


@dataclass(frozen=True, slots=True)
class Comparison:
    run_a: str
    run_b: str
    metric: str
    pairs: int
    pass_rate_a: float
    pass_rate_b: float
    diff: float  # B − A
    diff_lo: float  # 95 % paired bootstrap interval
    diff_hi: float
    a_only: int  # pairs A passed and B failed
    b_only: int  # pairs B passed and A failed
    p_value: float  # the exact sign test on the items, two-sided (McNemar's, one pair per item)
    margin: float
    alpha: float
    unpaired_a: int
    unpaired_b: int
    flips: list[Flip] = field(default_factory=list)
    items: int = 0  # distinct items among the pairs
    items_worse: int = 0  # items whose pairs B passed fewer of than A
    items_better: int = 0
    # Outputs the provider kept unanswered, left out of the pairs: neither better nor worse.
    unanswered_a: int = 0
    unanswered_b: int = 0
    # Outputs that failed (not held: the caller's side), left out of the pairs.
    failed_a: int = 0
    failed_b: int = 0

    @property
    def worse(self) -> bool:
        """B is worse than A by more than the margin, and not by chance; or B failed more
        outputs than A (see the module docstring)."""
        return (self.diff < -self.margin and self.p_value < self.alpha) or (
            self.failed_b > self.failed_a
        )


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p: the chance, if flips went either way with probability ½,
    of a split at least this uneven; 1.0 when nothing flipped. Exact rational arithmetic up to
    `_EXACT_UP_TO` flips (no float underflow); past it the same binomial tail summed in logs
    (exact integers grow with the flips: 16,000 took 9 s, a million-item run's would never
    end), to float precision."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    if n <= _EXACT_UP_TO:
        tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
        return float(min(Fraction(1), 2 * tail))
    # log C(n, i) for i = 0..k, each from the one before: C(n, i) = C(n, i-1)·(n-i+1)/i.
    i = np.arange(1, k + 1, dtype=float)
    logs = np.concatenate([[0.0], np.cumsum(np.log(n - i + 1) - np.log(i))])
    top = float(logs.max())
    log_tail = top + math.log(float(np.exp(logs - top).sum())) - n * math.log(2)
    return min(1.0, 2 * math.exp(log_tail))


# Flips up to which the sign test's tail is summed in exact integers (a few ms).
_EXACT_UP_TO = 2_000


def resolve_run(wb: RunFrames, ref: str) -> str:
    """A run id from what a CI script knows: the id, the run's `--name` (its newest run), or
    `latest` (the run started last)."""
    if ref == "latest":
        run = wb.latest_run()
        if run is None:
            raise ConfigError(f"no run in {wb.path} yet", code="RUN_UNKNOWN")
        return run
    rows = wb.con.execute(
        "SELECT run_id FROM runs WHERE run_id = ? OR name = ? "
        "ORDER BY run_id = ? DESC, started_at DESC, run_id DESC LIMIT 1",
        [ref, ref, ref],
    ).fetchall()
    if not rows:
        raise ConfigError(f"no run {ref!r} (id or name) in {wb.path}", code="RUN_UNKNOWN")
    return str(rows[0][0])


def paired_outputs(wb: RunFrames, run_a: str, run_b: str) -> tuple[pd.DataFrame, int, int]:
    """The outputs of two runs paired by (item, repeat, configuration) — item_id, repeat,
    config, category, passed_a, passed_b — and how many outputs of each run found no partner.
    Only graded answers are paired: a pair either side of which the provider kept unanswered
    (`unanswered_outputs` counts them), failed, or has no verdict is left out."""
    both, unpaired_a, unpaired_b = _pairs(wb, run_a, run_b)
    return both, unpaired_a, unpaired_b


def unanswered_outputs(wb: RunFrames, run_a: str, run_b: str) -> tuple[int, int]:
    """Outputs of A and of B the provider kept unanswered (left out of the pairs)."""
    return _counts(wb, run_a, run_b)[2]


def failed_outputs(wb: RunFrames, run_a: str, run_b: str) -> tuple[int, int]:
    """Outputs of A and of B that failed, not held (left out of the pairs)."""
    return _counts(wb, run_a, run_b)[3]


def _pairs(wb: RunFrames, run_a: str, run_b: str) -> tuple[pd.DataFrame, int, int]:
    rows = wb.sql(
        f"SELECT o.run_id, o.item_id, o.repeat, o.config, {outcomes.passed('o.')} AS passed, "
        f"{outcomes.unanswered('o.')} AS held, {outcomes.failed('o.')} AS failed, "
        f"{outcomes.graded('o.')} AS graded, i.category FROM outputs o "
        "LEFT JOIN items i USING (run_id, item_id) "
        "WHERE o.run_id IN (?, ?) ORDER BY o.item_id, o.repeat, o.config",
        [run_a, run_b],
    )
    a = rows[rows["run_id"] == run_a].drop(columns="run_id")
    b = rows[rows["run_id"] == run_b].drop(columns=["run_id", "category"])
    both = a.merge(b, on=["item_id", "repeat", "config"], suffixes=("_a", "_b"))
    unpaired_a, unpaired_b = len(a) - len(both), len(b) - len(both)
    flags = [f"{flag}_{side}" for flag in ("held", "failed", "graded") for side in "ab"]
    both = both[both["graded_a"] & both["graded_b"]].drop(columns=flags)
    if both.empty:
        _no_pairs(run_a, run_b)
    return both.reset_index(drop=True), unpaired_a, unpaired_b


def _no_pairs(run_a: str, run_b: str) -> None:
    raise ConfigError(
        f"runs {run_a} and {run_b} share no graded answer of one (item, repeat, configuration): "
        "nothing to pair",
        code="GATE_NO_PAIRS",
    )


def _side(run: str, indexed: bool, within: str = "") -> str:
    """One run's outputs, flagged as the pairs count them; `indexed`: with each output's
    INDEX, its place in the run's `ORDER BY item_id, repeat, config` (where its report shows
    it)."""
    index = ", row_number() OVER (ORDER BY item_id, repeat, config) - 1 AS idx" if indexed else ""
    return (
        f"SELECT item_id, repeat, config, {outcomes.passed()} AS passed, "
        f"{outcomes.graded()} AS graded{index} FROM outputs WHERE run_id = {run}{within}"
    )


def _pairs_sql(indexed: bool = False, within: str = "") -> str:
    """The graded pairs of runs $1 (A) and $2 (B): item_id, repeat, config, category (A's
    item's; "" for none), pa, pb; `indexed`: and each output's INDEX in its run's report
    (a_index, b_index)."""
    index = ", a.idx AS a_index, b.idx AS b_index" if indexed else ""
    return (
        "SELECT a.item_id, a.repeat, a.config, coalesce(i.category, '') AS category, "
        f"a.passed AS pa, b.passed AS pb{index} "
        f"FROM ({_side('$1', indexed, within)}) a JOIN ({_side('$2', indexed, within)}) b "
        "ON a.item_id = b.item_id AND a.repeat = b.repeat AND a.config = b.config "
        "LEFT JOIN items i ON i.run_id = $1 AND i.item_id = a.item_id "
        "WHERE a.graded AND b.graded"
    )


# Items of A a join of both runs reads at once (its outputs, and B's of the same items): what
# stays within a report's tight DuckDB cap, where a join of two million-item runs does not.
_ITEMS_AT_ONCE = 100_000


def _item_spans(wb: RunFrames, run: str) -> Iterator[tuple[str, list[Any]]]:
    """The run's items a span at a time (`_ITEMS_AT_ONCE` outputs or so, whole items): a SQL
    condition on item_id (after " AND ") and its parameters, from $3 on."""
    items = sorted({first[0] for first in span_starts(wb, run, _ITEMS_AT_ONCE)})
    for n, lo in enumerate(items):
        if n + 1 < len(items):
            yield " AND item_id >= $3 AND item_id < $4", [lo, items[n + 1]]
        else:
            yield " AND item_id >= $3", [lo]


def _paired(wb: RunFrames, run_a: str, run_b: str) -> int:
    """How many outputs of A have a partner in B (graded or not), a span of items at a time."""
    paired = 0
    for within, params in _item_spans(wb, run_a):
        row = wb.con.execute(
            f"SELECT count(*) FROM (SELECT item_id, repeat, config FROM outputs "
            f"WHERE run_id = $1{within}) a JOIN (SELECT item_id, repeat, config FROM outputs "
            f"WHERE run_id = $2{within}) b "
            "ON a.item_id = b.item_id AND a.repeat = b.repeat AND a.config = b.config",
            [run_a, run_b, *params],
        ).fetchone()
        paired += int(row[0]) if row else 0
    return paired


def _counts(
    wb: RunFrames, run_a: str, run_b: str
) -> tuple[int, int, tuple[int, int], tuple[int, int]]:
    """How many outputs of A and of B found no partner, were held (unanswered) and failed."""
    found = wb.con.execute(
        "SELECT count(*) FILTER (run_id = $1), count(*) FILTER (run_id = $2), "
        f"count(*) FILTER (run_id = $1 AND {outcomes.unanswered()}), "
        f"count(*) FILTER (run_id = $2 AND {outcomes.unanswered()}), "
        f"count(*) FILTER (run_id = $1 AND {outcomes.failed()}), "
        f"count(*) FILTER (run_id = $2 AND {outcomes.failed()}) "
        "FROM outputs WHERE run_id IN ($1, $2)",
        [run_a, run_b],
    ).fetchone()
    n_a, n_b, held_a, held_b, failed_a, failed_b = (int(x or 0) for x in found or (0,) * 6)
    paired = wb.with_room(lambda: _paired(wb, run_a, run_b))
    return n_a - paired, n_b - paired, (held_a, held_b), (failed_a, failed_b)


def pair_kinds(
    wb: RunFrames, run_a: str, run_b: str, by: str | None = None
) -> dict[str, pd.DataFrame]:
    """The graded pairs of two runs counted per item and then per kind of item, in DuckDB:
    for each value of `by` ("config", "category"; None: every pair, under ""), one row per
    kind — `pairs` (of one item), `passed_a`, `passed_b` (of those), `items` (of that kind),
    `a_only` and `b_only` (pairs only A passed, only B passed, summed over those items). All
    `paired_stats` needs, a few rows whatever the run's size."""
    group = "''" if by is None else {"config": "config", "category": "category"}[by]
    parts = []
    for within, params in _item_spans(wb, run_a):  # whole items: an item is never split
        parts.append(
            wb.sql(
                "SELECT g, pairs, passed_a, passed_b, count(*) AS items, sum(a_only) AS a_only, "
                "sum(b_only) AS b_only FROM ("
                f"SELECT {group} AS g, item_id, count(*) AS pairs, "
                "count(*) FILTER (pa) AS passed_a, count(*) FILTER (pb) AS passed_b, "
                "count(*) FILTER (pa AND NOT pb) AS a_only, count(*) FILTER (pb AND NOT pa) "
                f"AS b_only FROM ({_pairs_sql(within=within)}) GROUP BY ALL) GROUP BY ALL",
                [run_a, run_b, *params],
            )
        )
    kinds = pd.concat(parts) if parts else pd.DataFrame(columns=["g"])
    if kinds.empty:
        return {}
    kinds = (
        kinds.groupby(["g", "pairs", "passed_a", "passed_b"], sort=True)[
            ["items", "a_only", "b_only"]
        ]
        .sum()
        .reset_index()
    )
    return {
        str(g): part.drop(columns="g").reset_index(drop=True)
        for g, part in kinds.groupby("g", sort=True)
    }


def grouped_stats(
    wb: RunFrames, run_a: str, run_b: str, by: str, *, n_boot: int = 5000, seed: int = 0
) -> list[tuple[str, Paired]]:
    """`paired_stats` of each value of `by` (config, category), counted in DuckDB: what
    `group_stats` says of `paired_outputs`, without reading the pairs."""
    return [
        (value, _kind_stats(kinds, n_boot=n_boot, seed=seed))
        for value, kinds in pair_kinds(wb, run_a, run_b, by).items()
    ]


def flipped_pairs(
    wb: RunFrames, run_a: str, run_b: str, *, size: int = 25_000
) -> Iterator[list[tuple[str, int, str, str, bool, bool, int, int]]]:
    """The pairs whose outcome changed, in (item, repeat, configuration) order, `size` at a
    time: item_id, repeat, config, category, passed_a, passed_b, and each output's INDEX in its
    run's report (its place in the run's outputs in that order). Read a span of A's outputs
    at a time (`row_spans`' keys), B's INDEX counted from where the span starts in B: no query
    numbers or holds every pair, so a comparison of two big runs stays within a report's
    tight DuckDB cap."""
    starts = span_starts(wb, run_a, size)
    pending: list[tuple[str, int, str, str, bool, bool, int, int]] = []
    for n, first in enumerate(starts):
        stop = starts[n + 1] if n + 1 < len(starts) else None
        pending += wb.with_room(partial(_flips_in, wb, run_a, run_b, n * size, first, stop))
        while len(pending) >= size:
            yield pending[:size]
            pending = pending[size:]
    if pending:
        yield pending


def _flips_in(
    wb: RunFrames, run_a: str, run_b: str, start: int, first: tuple[str, int, str], stop: Any
) -> list[tuple[str, int, str, str, bool, bool, int, int]]:
    """The flips among A's outputs from key `first` (A's row `start`) up to `stop` (None: the
    end), with their INDEX in both runs."""
    key = "(item_id, repeat, config)"
    span = f"item_id >= $3 AND {key} >= ($3, $4, $5)"
    params: list[Any] = [run_a, run_b, *first]
    if stop is not None:
        span += f" AND item_id <= $6 AND {key} < ($6, $7, $8)"
        params += list(stop)
    side = (
        f"SELECT item_id, repeat, config, {outcomes.passed()} AS passed, {outcomes.graded()} "
        "AS graded, row_number() OVER (ORDER BY item_id, repeat, config) - 1 AS idx "
        f"FROM outputs WHERE run_id = {{run}} AND {span}"
    )
    rows = wb.con.execute(
        "SELECT a.item_id, a.repeat, a.config, coalesce(i.category, ''), a.passed, b.passed, "
        f"a.idx, b.idx + (SELECT count(*) FROM outputs WHERE run_id = $2 AND {key} < ($3, $4, $5)) "
        f"FROM ({side.format(run='$1')}) a JOIN ({side.format(run='$2')}) b "
        "ON a.item_id = b.item_id AND a.repeat = b.repeat AND a.config = b.config "
        "LEFT JOIN items i ON i.run_id = $1 AND i.item_id = a.item_id "
        "WHERE a.graded AND b.graded AND a.passed <> b.passed ORDER BY a.item_id, a.repeat, a.config",
        params,
    ).fetchall()
    return [
        (str(i), int(r), str(c), str(g), bool(pa), bool(pb), start + int(ia), int(ib))
        for i, r, c, g, pa, pb, ia, ib in rows
    ]


@dataclass(frozen=True, slots=True)
class Paired:
    """The statistics of a set of pairs, clustered by item (see the module docstring)."""

    pairs: int
    items: int
    rate_a: float
    rate_b: float
    diff: float  # B − A
    lo: float  # 95 % bootstrap interval, items resampled
    hi: float
    a_only: int  # pairs A passed and B failed
    b_only: int
    items_worse: int
    items_better: int
    p_value: float

    @property
    def flipped(self) -> bool:
        return bool(self.a_only or self.b_only)


def paired_stats(
    item_ids: Sequence[str] | np.ndarray,
    pa: np.ndarray,
    pb: np.ndarray,
    *,
    n_boot: int = 5000,
    seed: int = 0,
) -> Paired:
    """Pass rates, their difference with a 95 % bootstrap interval resampling items (each with
    all its pairs), and the exact sign test on the items whose pass count changed."""
    codes, uniques = pd.factorize(np.asarray(item_ids))
    k = len(uniques)
    per_item = np.stack(
        [
            np.bincount(codes, minlength=k),
            np.bincount(codes, weights=pa.astype(float), minlength=k).astype(np.int64),
            np.bincount(codes, weights=pb.astype(float), minlength=k).astype(np.int64),
        ],
        axis=1,
    )
    kinds, items = np.unique(per_item, axis=0, return_counts=True)
    frame = pd.DataFrame(kinds, columns=["pairs", "passed_a", "passed_b"])
    frame["items"] = items
    frame["a_only"] = 0
    frame["b_only"] = 0
    frame.loc[0, ["a_only", "b_only"]] = [int((pa & ~pb).sum()), int((pb & ~pa).sum())]
    return _kind_stats(frame, n_boot=n_boot, seed=seed)


# The most numbers one block of resamples draws (resamples × kinds): about 16 MB of them.
_BLOCK = 2_000_000


def _kind_stats(kinds: pd.DataFrame, *, n_boot: int, seed: int) -> Paired:
    """`paired_stats` from the pairs counted per kind of item (`pair_kinds`). A resample of
    the items is a draw of how many items of each kind (multinomial on their counts): the
    same distribution, drawn a block of resamples at a time."""
    n = kinds["pairs"].to_numpy(np.int64)
    a = kinds["passed_a"].to_numpy(np.int64)
    b = kinds["passed_b"].to_numpy(np.int64)
    count = kinds["items"].to_numpy(np.int64)
    k, pairs = int(count.sum()), int((count * n).sum())
    passed_a, passed_b = int((count * a).sum()), int((count * b).sum())
    rng = np.random.default_rng(seed)
    share = count / k
    block = max(1, _BLOCK // len(count))
    boots = np.empty(n_boot)
    for start in range(0, n_boot, block):
        drawn = rng.multinomial(k, share, size=min(block, n_boot - start))
        boots[start : start + len(drawn)] = (drawn @ (b - a)) / (drawn @ n)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    worse, better = int(count[b < a].sum()), int(count[b > a].sum())
    return Paired(
        pairs=pairs,
        items=k,
        rate_a=passed_a / pairs,
        rate_b=passed_b / pairs,
        diff=(passed_b - passed_a) / pairs,
        lo=float(lo),
        hi=float(hi),
        a_only=int(kinds["a_only"].sum()),
        b_only=int(kinds["b_only"].sum()),
        items_worse=worse,
        items_better=better,
        p_value=mcnemar_exact(worse, better),
    )


def group_stats(both: pd.DataFrame, column: str, **kw: int) -> list[tuple[str, Paired]]:
    """`paired_stats` of each value of `column` (config, category) of `paired_outputs`."""
    out = []
    for value, part in both.groupby(both[column].fillna(""), sort=True):
        pa, pb = part["passed_a"].to_numpy(bool), part["passed_b"].to_numpy(bool)
        out.append((str(value), paired_stats(part["item_id"].to_numpy(), pa, pb, **kw)))
    return out


def compare_runs(
    wb: RunFrames,
    run_a: str,
    run_b: str,
    *,
    metric: str = "pass",
    margin: float = 0.0,
    alpha: float = 0.05,
    n_boot: int = 5000,
    seed: int = 0,
    max_flips: int | None = None,
) -> Comparison:
    """Compare two runs of one store (each an id, a run name or `latest`). See the module
    docstring. `flips` lists the first `max_flips` flipped pairs (None: every one; 0: none),
    while `a_only + b_only` count them all: a terminal shows twenty, and a page of a big
    comparison reads them a chunk at a time (`flipped_pairs`)."""
    if metric not in METRICS:
        raise ConfigError(
            f"unknown metric {metric!r} (one of: {', '.join(METRICS)})", code="GATE_INVALID"
        )
    if not (0.0 <= margin <= 1.0) or not (0.0 < alpha < 1.0):
        raise ConfigError(
            f"--fail-if-worse-by must be within 0..1 and alpha within (0, 1), not {margin}, {alpha}",
            code="GATE_INVALID",
        )
    run_a, run_b = resolve_runs(wb, run_a, run_b)
    unpaired_a, unpaired_b, (unanswered_a, unanswered_b), (failed_a, failed_b) = wb.with_room(
        lambda: _counts(wb, run_a, run_b)
    )
    kinds = wb.with_room(lambda: pair_kinds(wb, run_a, run_b))
    if not kinds:
        _no_pairs(run_a, run_b)
    stats = _kind_stats(kinds[""], n_boot=n_boot, seed=seed)
    flips: list[Flip] = []
    if max_flips != 0:
        for batch in flipped_pairs(wb, run_a, run_b):
            flips += [Flip(item, rep, config, a, b) for item, rep, config, _, a, b, _, _ in batch]
            if max_flips is not None and len(flips) >= max_flips:
                del flips[max_flips:]
                break
    return Comparison(
        run_a=run_a,
        run_b=run_b,
        metric=metric,
        pairs=stats.pairs,
        pass_rate_a=stats.rate_a,
        pass_rate_b=stats.rate_b,
        diff=stats.diff,
        diff_lo=stats.lo,
        diff_hi=stats.hi,
        a_only=stats.a_only,
        b_only=stats.b_only,
        p_value=stats.p_value,
        margin=margin,
        alpha=alpha,
        unpaired_a=unpaired_a,
        unpaired_b=unpaired_b,
        flips=flips,
        items=stats.items,
        items_worse=stats.items_worse,
        items_better=stats.items_better,
        unanswered_a=unanswered_a,
        unanswered_b=unanswered_b,
        failed_a=failed_a,
        failed_b=failed_b,
    )


def resolve_runs(wb: RunFrames, run_a: str, run_b: str) -> tuple[str, str]:
    """Both runs' ids; the same run twice is refused (a comparison of it would always pass:
    `latest latest`, or a name that names the newest run)."""
    a, b = resolve_run(wb, run_a), resolve_run(wb, run_b)
    if a == b:
        raise ConfigError(
            f"{run_a!r} and {run_b!r} are the same run ({a}): compare two runs", code="GATE_INVALID"
        )
    return a, b


# How many flipped items a terminal is shown (the rest counted).
SHOWN_FLIPS = 20


def describe(c: Comparison, *, most: int = SHOWN_FLIPS) -> list[str]:
    """The comparison for a terminal: the verdict, the figures, the flipped items."""
    verdict = "WORSE" if c.worse else "not worse"
    lines = [
        f"{c.run_b} vs {c.run_a}: {verdict} (margin {c.margin:.1%}, alpha {c.alpha:g})",
        f"  pairs: {c.pairs} (item, repeat, configuration); unpaired: {c.unpaired_a} only in A, "
        f"{c.unpaired_b} only in B",
        f"  pass rate: A {c.pass_rate_a:.1%}, B {c.pass_rate_b:.1%}, B − A {c.diff:+.1%} "
        f"[95% CI {c.diff_lo:+.1%} .. {c.diff_hi:+.1%}]",
        f"  flips: {c.a_only} pair(s) passed in A only, {c.b_only} in B only; over {c.items} "
        f"item(s), {c.items_worse} worse and {c.items_better} better: exact p = {c.p_value:.4g}",
    ]
    if c.unanswered_a or c.unanswered_b:
        lines.append(
            f"  unanswered: {c.unanswered_a} output(s) of A, {c.unanswered_b} of B, left out of "
            "the pairs (the provider kept them from the model: neither better nor worse)"
        )
    if c.failed_a or c.failed_b:
        more = " (B failed more: WORSE)" if c.failed_b > c.failed_a else ""
        lines.append(
            f"  failed: {c.failed_a} output(s) of A, {c.failed_b} of B, left out of the pairs{more}"
        )
    for f in c.flips[:most]:
        arrow = "pass → fail" if f.passed_a else "fail → pass"
        lines.append(f"    {f.item_id} (repeat {f.repeat}, {f.config}): {arrow}")
    if c.a_only + c.b_only > most:
        lines.append(f"    … and {c.a_only + c.b_only - most} more")
    return lines
