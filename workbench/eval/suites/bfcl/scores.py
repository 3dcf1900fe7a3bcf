"""A leaderboard table from graded BFCL items, its summaries aggregated as BFCL does.

BFCL's summary scores are not one formula: the non-live AST summary is the *unweighted*
mean of its categories (Python, Java and JavaScript simple first averaged into "Simple
AST"), the live AST summary is weighted by each category's number of questions, and
irrelevance is the unweighted mean of the non-live and live irrelevance scores. A category
that was not run counts as 0 in an "Overall" figure (over the category's full size for a
weighted one) and makes a summary N/A (NaN here); that is BFCL's rule too, so a partial run
never looks better than it is. BFCL's headline "Overall Acc" also needs its multi-turn and
agentic categories, which are not single-turn: it is not computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench.eval.suites.bfcl.case import CATEGORIES

CATEGORY_COLUMNS: dict[str, str] = {
    "simple_python": "Python Simple AST",
    "simple_java": "Java Simple AST",
    "simple_javascript": "JavaScript Simple AST",
    "multiple": "Multiple AST",
    "parallel": "Parallel AST",
    "parallel_multiple": "Parallel Multiple AST",
    "irrelevance": "Irrelevance",
    "live_simple": "Live Simple AST",
    "live_multiple": "Live Multiple AST",
    "live_parallel": "Live Parallel AST",
    "live_parallel_multiple": "Live Parallel Multiple AST",
    "live_irrelevance": "Live Irrelevance",
    "live_relevance": "Live Relevance",
}
SUMMARY_COLUMNS = (
    "Non-Live Overall Acc",
    "Non-Live AST Summary",
    "Simple AST",
    "Live Overall Acc",
    "Live AST Summary",
    "Irrelevance Detection",
    "Relevance Detection",
)


@dataclass(frozen=True, slots=True)
class _Score:
    """One accuracy as BFCL carries it: the value used in sums, how many questions it
    covers, and whether it is shown (False = "N/A": the category was not run)."""

    accuracy: float
    count: float
    shown: bool = True

    @property
    def display(self) -> float:
        return self.accuracy if self.shown else float("nan")


def _unweighted(scores: list[_Score], *, na_if_missing: bool = True) -> _Score:
    return _Score(
        sum(s.accuracy for s in scores) / len(scores),
        sum(s.count for s in scores),
        shown=not na_if_missing or all(s.shown for s in scores),
    )


def _weighted(scores: list[_Score], *, na_if_missing: bool = True) -> _Score:
    total = sum(s.count for s in scores)
    accuracy = sum(s.accuracy * s.count for s in scores) / total if total else float("nan")
    return _Score(accuracy, total, shown=not na_if_missing or all(s.shown for s in scores))


def bfcl_scores(results: pd.DataFrame, *, sizes: Mapping[str, int] | None = None) -> pd.DataFrame:
    """The leaderboard over `results`: one row per graded item with `category` and `valid`
    (bool), grouped by whichever of `model` and `mode` are present. Accuracies are fractions.

    `sizes` (questions per category, `category_sizes(source)`) weigh the categories a run
    left out, as BFCL weighs them; without it a weighted figure with a missing category is
    NaN rather than a guess."""
    keys = [c for c in ("model", "mode") if c in results.columns]
    rows: list[dict[str, Any]] = []
    groups = results.groupby(keys, sort=True, dropna=False) if keys else [((), results)]
    for key, frame in groups:
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        rows.append(label | _leaderboard_row(frame, sizes or {}))
    columns = [*keys, "Items", *SUMMARY_COLUMNS, *CATEGORY_COLUMNS.values()]
    return pd.DataFrame(rows, columns=columns)


def _leaderboard_row(frame: pd.DataFrame, sizes: Mapping[str, int]) -> dict[str, Any]:
    valid = frame["valid"].astype(bool)
    run = {
        str(category): (float(got.mean()), float(len(got)))
        for category, got in valid.groupby(frame["category"])
    }
    score: dict[str, _Score] = {}
    for category in CATEGORIES:
        if category in run:
            score[category] = _Score(*run[category])
        else:  # not run: 0 in the overall figures, N/A on display (BFCL's rule)
            score[category] = _Score(0.0, float(sizes.get(category, float("nan"))), shown=False)
    simple = _unweighted([score[c] for c in ("simple_python", "simple_java", "simple_javascript")])
    non_live = [simple, score["multiple"], score["parallel"], score["parallel_multiple"]]
    live = [score[c] for c in ("live_simple", "live_multiple", "live_parallel")]
    live.append(score["live_parallel_multiple"])
    irrelevance = _unweighted([score["irrelevance"], score["live_irrelevance"]])
    summaries = {
        "Non-Live Overall Acc": _unweighted(non_live, na_if_missing=False),
        "Non-Live AST Summary": _unweighted(non_live),
        "Simple AST": simple,
        "Live Overall Acc": _weighted(live, na_if_missing=False),
        "Live AST Summary": _weighted(live),
        "Irrelevance Detection": irrelevance,
        "Relevance Detection": score["live_relevance"],
    }
    row: dict[str, Any] = {"Items": len(frame)}
    row |= {name: s.display for name, s in summaries.items()}
    row |= {CATEGORY_COLUMNS[c]: score[c].display for c in CATEGORIES}
    return row
