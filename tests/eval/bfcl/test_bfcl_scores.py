"""The leaderboard aggregates as BFCL does: unweighted non-live, weighted live, a category
left out is 0 in the overall figures and N/A (NaN) in the summaries."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from workbench.eval.suites.bfcl.scores import bfcl_scores


def results(model: str, mode: str, **per_category: tuple[int, int]) -> pd.DataFrame:
    """`category=(right, total)` → one row per item."""
    rows = []
    for category, (right, total) in per_category.items():
        rows += [
            {"model": model, "mode": mode, "category": category, "valid": k < right}
            for k in range(total)
        ]
    return pd.DataFrame(rows)


FULL = dict(
    simple_python=(8, 10),
    simple_java=(5, 10),
    simple_javascript=(2, 10),
    multiple=(6, 10),
    parallel=(4, 10),
    parallel_multiple=(3, 10),
    live_simple=(9, 10),
    live_multiple=(10, 40),
    live_parallel=(1, 2),
    live_parallel_multiple=(2, 4),
    irrelevance=(7, 10),
    live_irrelevance=(5, 10),
    live_relevance=(3, 4),
)


def test_summaries_are_bfcls_formulas():
    row = bfcl_scores(results("m", "native", **FULL)).iloc[0]
    simple = (0.8 + 0.5 + 0.2) / 3
    assert row["Simple AST"] == pytest.approx(simple)
    assert row["Non-Live AST Summary"] == pytest.approx((simple + 0.6 + 0.4 + 0.3) / 4)
    assert row["Non-Live Overall Acc"] == pytest.approx(row["Non-Live AST Summary"])
    live = (9 + 10 + 1 + 2) / (10 + 40 + 2 + 4)  # weighted by questions, not averaged
    assert row["Live AST Summary"] == pytest.approx(live)
    assert row["Live AST Summary"] != pytest.approx((0.9 + 0.25 + 0.5 + 0.5) / 4)
    assert row["Irrelevance Detection"] == pytest.approx((0.7 + 0.5) / 2)
    assert row["Relevance Detection"] == pytest.approx(0.75)
    assert row["Items"] == 140


def test_a_category_left_out_is_zero_in_overall_figures_and_na_in_summaries():
    partial = {k: v for k, v in FULL.items() if k not in ("simple_java", "live_multiple")}
    row = bfcl_scores(results("m", "text", **partial), sizes={"live_multiple": 1053}).iloc[0]
    assert math.isnan(row["Java Simple AST"]) and math.isnan(row["Simple AST"])
    assert math.isnan(row["Non-Live AST Summary"]) and math.isnan(row["Live AST Summary"])
    simple = (0.8 + 0 + 0.2) / 3
    assert row["Non-Live Overall Acc"] == pytest.approx((simple + 0.6 + 0.4 + 0.3) / 4)
    assert row["Live Overall Acc"] == pytest.approx((9 + 1 + 2) / (10 + 1053 + 2 + 4))
    # Without the category's size, a weighted figure with a gap is unknown, not a guess.
    assert math.isnan(bfcl_scores(results("m", "text", **partial)).iloc[0]["Live Overall Acc"])


def test_one_row_per_model_and_mode():
    both = pd.concat(
        [
            results("a", "native", simple_python=(1, 2)),
            results("a", "text", simple_python=(2, 2)),
            results("b", "native", simple_python=(0, 2)),
        ]
    )
    table = bfcl_scores(both)
    assert list(zip(table["model"], table["mode"], table["Python Simple AST"], strict=True)) == [
        ("a", "native", 0.5),
        ("a", "text", 1.0),
        ("b", "native", 0.0),
    ]
