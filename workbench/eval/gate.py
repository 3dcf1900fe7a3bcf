"""Is run B worse than run A? The regression gate a CI job runs after a prompt set.

Items are paired by (item, repeat, configuration name): the same question asked the same way
in both runs, so a pair differs only by what changed between them. Two statistics, because
they answer different questions:

- McNemar's exact test on the pairs whose pass/fail flipped: is the change in pass rate more
  than the coin-flip noise of the discordant pairs? (Concordant pairs carry no information
  about the difference; the exact binomial form is right for the few flips a prompt set has.)
- a paired bootstrap of the pass-rate difference B − A, resampling pairs: how big is it?

B fails the gate when both say so: the drop in pass rate is larger than the allowed margin
and McNemar's p is below `alpha`. A drop within noise, or smaller than the margin, passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from workbench.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from workbench.eval.analysis import Workbench

__all__ = [
    "Comparison", "Flip", "compare_runs", "describe", "mcnemar_exact", "paired_interval",
    "paired_outputs", "resolve_run",
]  # fmt: skip

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
    p_value: float  # McNemar's exact, two-sided
    margin: float
    alpha: float
    unpaired_a: int
    unpaired_b: int
    flips: list[Flip] = field(default_factory=list)

    @property
    def worse(self) -> bool:
        """B is worse than A by more than the margin, and not by chance."""
        return self.diff < -self.margin and self.p_value < self.alpha


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p: the chance, if flips went either way with probability ½,
    of a split at least this uneven. Exact rational arithmetic (no float underflow for many
    flips); 1.0 when nothing flipped."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def resolve_run(wb: Workbench, ref: str) -> str:
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


def paired_outputs(wb: Workbench, run_a: str, run_b: str) -> tuple[pd.DataFrame, int, int]:
    """The outputs of two runs paired by (item, repeat, configuration) — item_id, repeat,
    config, category, passed_a, passed_b (a missing grade is a fail) — and how many outputs
    of each run found no partner."""
    rows = wb.sql(
        "SELECT o.run_id, o.item_id, o.repeat, o.config, coalesce(o.passed, false) AS passed, "
        "i.category FROM outputs o LEFT JOIN items i USING (run_id, item_id) "
        "WHERE o.run_id IN (?, ?) ORDER BY o.item_id, o.repeat, o.config",
        [run_a, run_b],
    )
    a = rows[rows["run_id"] == run_a].drop(columns="run_id")
    b = rows[rows["run_id"] == run_b].drop(columns=["run_id", "category"])
    both = a.merge(b, on=["item_id", "repeat", "config"], suffixes=("_a", "_b"))
    if both.empty:
        raise ConfigError(
            f"runs {run_a} and {run_b} share no (item, repeat, configuration): nothing to pair",
            code="GATE_NO_PAIRS",
        )
    return both, len(a) - len(both), len(b) - len(both)


def paired_interval(
    pa: np.ndarray, pb: np.ndarray, *, n_boot: int = 5000, seed: int = 0
) -> tuple[float, float]:
    """The 95 % paired bootstrap interval of mean(pb) − mean(pa): pairs resampled whole."""
    n = len(pa)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    boots = pb[idx].mean(axis=1) - pa[idx].mean(axis=1)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return float(lo), float(hi)


def compare_runs(
    wb: Workbench,
    run_a: str,
    run_b: str,
    *,
    metric: str = "pass",
    margin: float = 0.0,
    alpha: float = 0.05,
    n_boot: int = 5000,
    seed: int = 0,
) -> Comparison:
    """Compare two runs of one store (each an id, a run name or `latest`). See the module
    docstring."""
    if metric not in METRICS:
        raise ConfigError(
            f"unknown metric {metric!r} (one of: {', '.join(METRICS)})", code="GATE_INVALID"
        )
    if not (0.0 <= margin <= 1.0) or not (0.0 < alpha < 1.0):
        raise ConfigError(
            f"--fail-if-worse-by must be within 0..1 and alpha within (0, 1), not {margin}, {alpha}",
            code="GATE_INVALID",
        )
    run_a, run_b = resolve_run(wb, run_a), resolve_run(wb, run_b)
    both, unpaired_a, unpaired_b = paired_outputs(wb, run_a, run_b)
    pa = both["passed_a"].to_numpy(bool)
    pb = both["passed_b"].to_numpy(bool)
    n = len(both)
    lo, hi = paired_interval(pa, pb, n_boot=n_boot, seed=seed)
    a_only, b_only = int((pa & ~pb).sum()), int((pb & ~pa).sum())
    flipped = both[pa != pb]
    flips = [
        Flip(str(r.item_id), int(r.repeat), str(r.config), bool(r.passed_a), bool(r.passed_b))
        for r in flipped.itertuples(index=False)
    ]
    return Comparison(
        run_a=run_a,
        run_b=run_b,
        metric=metric,
        pairs=n,
        pass_rate_a=float(pa.mean()),
        pass_rate_b=float(pb.mean()),
        diff=float(pb.mean() - pa.mean()),
        diff_lo=lo,
        diff_hi=hi,
        a_only=a_only,
        b_only=b_only,
        p_value=mcnemar_exact(a_only, b_only),
        margin=margin,
        alpha=alpha,
        unpaired_a=unpaired_a,
        unpaired_b=unpaired_b,
        flips=flips,
    )


def describe(c: Comparison, *, most: int = 20) -> list[str]:
    """The comparison for a terminal: the verdict, the figures, the flipped items."""
    verdict = "WORSE" if c.worse else "not worse"
    lines = [
        f"{c.run_b} vs {c.run_a}: {verdict} (margin {c.margin:.1%}, alpha {c.alpha:g})",
        f"  pairs: {c.pairs} (item, repeat, configuration); unpaired: {c.unpaired_a} only in A, "
        f"{c.unpaired_b} only in B",
        f"  pass rate: A {c.pass_rate_a:.1%}, B {c.pass_rate_b:.1%}, B − A {c.diff:+.1%} "
        f"[95% CI {c.diff_lo:+.1%} .. {c.diff_hi:+.1%}]",
        f"  flips: {c.a_only} passed in A only, {c.b_only} in B only; McNemar exact p = {c.p_value:.4g}",
    ]
    for f in c.flips[:most]:
        arrow = "pass → fail" if f.passed_a else "fail → pass"
        lines.append(f"    {f.item_id} (repeat {f.repeat}, {f.config}): {arrow}")
    if len(c.flips) > most:
        lines.append(f"    … and {len(c.flips) - most} more")
    return lines
