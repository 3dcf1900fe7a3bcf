"""BFCL's leaderboard row from graded BFCL items, every figure aggregated as BFCL does.

BFCL's summary scores are not one formula: the non-live AST summary is the *unweighted*
mean of its categories (Python, Java and JavaScript simple first averaged into "Simple
AST"), the live AST summary is weighted by each category's number of questions, irrelevance
is the unweighted mean of the non-live and live irrelevance scores, the multi-turn figure the
unweighted mean of its four categories, and the agentic one the unweighted mean of the web
search and memory summaries (each an unweighted mean too). "Overall Acc" weighs those five
figures 10 : 10 : 10 : 30 : 40 (`OVERALL_WEIGHTS`).

A category that was not run counts as 0 in an "Overall" figure (over the category's full
size for a weighted one) and makes a summary N/A (NaN here): BFCL's rule, so a partial run
never looks better than it is. `Not Run` says how many categories that 0 stands for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench.eval.suites.bfcl.case import ALL_CATEGORIES

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
    "multi_turn_base": "Multi Turn Base",
    "multi_turn_miss_func": "Multi Turn Miss Func",
    "multi_turn_miss_param": "Multi Turn Miss Param",
    "multi_turn_long_context": "Multi Turn Long Context",
    "web_search_base": "Web Search Base",
    "web_search_no_snippet": "Web Search No Snippet",
    "memory_kv": "Memory KV",
    "memory_vector": "Memory Vector",
    "memory_rec_sum": "Memory Recursive Summarization",
}
# The five figures "Overall Acc" weighs, and their weights (BFCL's generate_leaderboard_csv).
OVERALL_WEIGHTS: dict[str, int] = {
    "Non-Live Overall Acc": 10,
    "Live Overall Acc": 10,
    "Irrelevance Detection": 10,
    "Multi Turn Overall Acc": 30,
    "Agentic Overall Acc": 40,
}
SUMMARY_COLUMNS = (
    "Overall Acc",
    "Non-Live Overall Acc",
    "Non-Live AST Summary",
    "Simple AST",
    "Live Overall Acc",
    "Live AST Summary",
    "Irrelevance Detection",
    "Relevance Detection",
    "Multi Turn Overall Acc",
    "Agentic Overall Acc",
    "Web Search Summary",
    "Memory Summary",
)
# Which summary each category's figure feeds, in the order the leaderboard shows them.
SECTIONS: dict[str, tuple[str, ...]] = {
    "Non-Live Overall Acc": (
        "Non-Live AST Summary",
        "Simple AST",
        "Python Simple AST",
        "Java Simple AST",
        "JavaScript Simple AST",
        "Multiple AST",
        "Parallel AST",
        "Parallel Multiple AST",
    ),
    "Live Overall Acc": (
        "Live AST Summary",
        "Live Simple AST",
        "Live Multiple AST",
        "Live Parallel AST",
        "Live Parallel Multiple AST",
    ),
    "Irrelevance Detection": ("Irrelevance", "Live Irrelevance"),
    "Relevance Detection": ("Live Relevance",),
    "Multi Turn Overall Acc": (
        "Multi Turn Base",
        "Multi Turn Miss Func",
        "Multi Turn Miss Param",
        "Multi Turn Long Context",
    ),
    "Agentic Overall Acc": (
        "Web Search Summary",
        "Web Search Base",
        "Web Search No Snippet",
        "Memory Summary",
        "Memory KV",
        "Memory Vector",
        "Memory Recursive Summarization",
    ),
}


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


def _overall(parts: dict[str, _Score]) -> _Score:
    """BFCL's percentage-weighted mean: fixed weights, never the number of questions."""
    total = sum(OVERALL_WEIGHTS.values())
    return _Score(
        sum(parts[name].accuracy * (weight / total) for name, weight in OVERALL_WEIGHTS.items()),
        sum(parts[name].count for name in OVERALL_WEIGHTS),
    )


def bfcl_scores(results: pd.DataFrame, *, sizes: Mapping[str, int] | None = None) -> pd.DataFrame:
    """The leaderboard over `results`: one row per graded item with `category` (one of
    `ALL_CATEGORIES`) and `valid` (bool), grouped by whichever of `model` and `mode` are
    present. Accuracies are fractions; `Not Run` counts the categories BFCL counts as 0.

    `sizes` (questions per category, `category_sizes(source)`) weigh the categories a run
    left out, as BFCL weighs them; without it a weighted figure with a missing category (and
    so "Overall Acc") is NaN rather than a guess."""
    keys = [c for c in ("model", "mode") if c in results.columns]
    rows: list[dict[str, Any]] = []
    groups = results.groupby(keys, sort=True, dropna=False) if keys else [((), results)]
    for key, frame in groups:
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        rows.append(label | _leaderboard_row(frame, sizes or {}))
    columns = [*keys, "Items", "Not Run", *SUMMARY_COLUMNS, *CATEGORY_COLUMNS.values()]
    return pd.DataFrame(rows, columns=columns)


def _leaderboard_row(frame: pd.DataFrame, sizes: Mapping[str, int]) -> dict[str, Any]:
    valid = frame["valid"].astype(bool)
    run = {
        str(category): (float(got.mean()), float(len(got)))
        for category, got in valid.groupby(frame["category"])
    }
    score: dict[str, _Score] = {}
    for category in ALL_CATEGORIES:
        if category in run:
            score[category] = _Score(*run[category])
        else:  # not run: 0 in the overall figures, N/A on display (BFCL's rule)
            score[category] = _Score(0.0, float(sizes.get(category, float("nan"))), shown=False)
    simple = _unweighted([score[c] for c in ("simple_python", "simple_java", "simple_javascript")])
    non_live = [simple, score["multiple"], score["parallel"], score["parallel_multiple"]]
    live = [score[c] for c in ("live_simple", "live_multiple", "live_parallel")]
    live.append(score["live_parallel_multiple"])
    web_search = _unweighted([score["web_search_base"], score["web_search_no_snippet"]])
    memory = _unweighted([score[c] for c in ("memory_kv", "memory_vector", "memory_rec_sum")])
    multi_turn = [score[c] for c in CATEGORY_COLUMNS if c.startswith("multi_turn")]
    summaries = {
        "Non-Live Overall Acc": _unweighted(non_live, na_if_missing=False),
        "Non-Live AST Summary": _unweighted(non_live),
        "Simple AST": simple,
        "Live Overall Acc": _weighted(live, na_if_missing=False),
        "Live AST Summary": _weighted(live),
        "Irrelevance Detection": _unweighted([score["irrelevance"], score["live_irrelevance"]]),
        "Relevance Detection": score["live_relevance"],
        "Multi Turn Overall Acc": _unweighted(multi_turn, na_if_missing=False),
        "Agentic Overall Acc": _unweighted([web_search, memory], na_if_missing=False),
        "Web Search Summary": web_search,
        "Memory Summary": memory,
    }
    summaries["Overall Acc"] = _overall(summaries)
    row: dict[str, Any] = {
        "Items": len(frame),
        "Not Run": sum(c not in run for c in ALL_CATEGORIES),
    }
    row |= {name: summaries[name].display for name in SUMMARY_COLUMNS}
    row |= {CATEGORY_COLUMNS[c]: score[c].display for c in ALL_CATEGORIES}
    return row
