"""The leaderboard aggregates as BFCL does: unweighted non-live, weighted live, multi-turn
and agentic as unweighted means, "Overall Acc" weighed 10 : 10 : 10 : 30 : 40, a category
left out 0 in the overall figures and N/A (NaN) in the summaries; the score files and CSVs
read by BFCL's own leaderboard code give the same figures, byte for byte."""

from __future__ import annotations

import json
import math
import re
import types
from pathlib import Path

import pandas as pd
import pytest

from workbench.cli.verbs import main
from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.suites.bfcl.loader import category_sizes
from workbench.eval.suites.bfcl.score_files import CSV_LAYOUTS, write_bfcl_scores
from workbench.eval.suites.bfcl.scores import bfcl_scores

SMOKE = Path(__file__).resolve().parents[3] / "datasets" / "smoke.jsonl"


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


AGENTIC = dict(
    multi_turn_base=(5, 10),
    multi_turn_miss_func=(4, 10),
    multi_turn_miss_param=(3, 10),
    multi_turn_long_context=(2, 10),
    web_search_base=(1, 4),
    web_search_no_snippet=(3, 4),
    memory_kv=(1, 2),
    memory_vector=(0, 2),
    memory_rec_sum=(2, 2),
)


def test_overall_weighs_the_five_figures_10_10_10_30_40():
    row = bfcl_scores(results("m", "native", **FULL, **AGENTIC)).iloc[0]
    non_live, live, irrelevance = (0.5 + 0.6 + 0.4 + 0.3) / 4, 22 / 56, (0.7 + 0.5) / 2
    multi_turn = (0.5 + 0.4 + 0.3 + 0.2) / 4
    web_search, memory = (0.25 + 0.75) / 2, (0.5 + 0.0 + 1.0) / 3
    assert row["Multi Turn Overall Acc"] == pytest.approx(multi_turn)
    assert row["Web Search Summary"] == pytest.approx(web_search)
    assert row["Memory Summary"] == pytest.approx(memory)
    assert row["Agentic Overall Acc"] == pytest.approx((web_search + memory) / 2)
    overall = (
        0.1 * non_live
        + 0.1 * live
        + 0.1 * irrelevance
        + 0.3 * multi_turn
        + 0.4 * (web_search + memory) / 2
    )
    assert row["Overall Acc"] == pytest.approx(overall)
    assert row["Not Run"] == 0 and row["Memory Recursive Summarization"] == 1.0


def test_categories_not_run_count_zero_in_overall_and_are_counted():
    sizes = {"live_simple": 258, "live_multiple": 1053, "live_parallel": 16}
    sizes["live_parallel_multiple"] = 24
    part = results("m", "native", multi_turn_base=(10, 10), memory_kv=(2, 2))
    row = bfcl_scores(part, sizes=sizes).iloc[0]
    assert row["Not Run"] == 20
    assert math.isnan(row["Multi Turn Miss Func"]) and math.isnan(row["Memory Summary"])
    assert row["Multi Turn Overall Acc"] == pytest.approx(0.25)
    assert row["Agentic Overall Acc"] == pytest.approx((0 + 1 / 3) / 2)
    assert row["Live Overall Acc"] == 0.0
    assert row["Overall Acc"] == pytest.approx(0.3 * 0.25 + 0.4 * (1 / 3) / 2)
    # Without the live categories' sizes the weighted live figure, and so Overall, is unknown.
    assert math.isnan(bfcl_scores(part).iloc[0]["Overall Acc"])


def _graded(model: str, mode: str, **per_category: tuple[int, int]) -> pd.DataFrame:
    frame = results(model, mode, **per_category)
    frame["item_id"] = [f"{c}_{k}" for c, k in zip(frame.category, frame.index, strict=True)]
    frame["error_type"] = ["" if v else "multi_turn:instance_state_mismatch" for v in frame.valid]
    frame["reason"] = "state differs"
    return frame


def test_score_files_are_laid_out_and_headed_as_bfcl_writes_them(tmp_path):
    frame = _graded("sim:oracle", "native", multi_turn_base=(1, 3), memory_kv=(2, 2))
    written = write_bfcl_scores(frame, tmp_path, sizes={})
    model = tmp_path / "sim_oracle-FC"
    base = model / "multi_turn" / "BFCL_v4_multi_turn_base_score.json"
    kv = model / "agentic" / "memory" / "kv" / "BFCL_v4_memory_kv_score.json"
    assert written == [base, kv, *(tmp_path / f for f in CSV_LAYOUTS)]
    lines = [json.loads(line) for line in base.read_text().splitlines()]
    assert lines[0] == {"accuracy": 1 / 3, "correct_count": 1, "total_count": 3}
    assert [(x["id"], x["valid"], x["error"]["error_type"]) for x in lines[1:]] == [
        ("multi_turn_base_1", False, "multi_turn:instance_state_mismatch"),
        ("multi_turn_base_2", False, "multi_turn:instance_state_mismatch"),
    ]
    assert len(kv.read_text().splitlines()) == 1
    with pytest.raises(ConfigError, match="BFCL_SCORES_INVALID"):
        write_bfcl_scores(
            pd.concat([frame, _graded("b", "text", irrelevance=(1, 1))]), tmp_path, model_name="x"
        )


def test_bfcls_own_leaderboard_code_reads_our_score_files_to_the_same_csvs(
    bfcl_package, bfcl_wheel, tmp_path, monkeypatch
):
    from bfcl_eval.eval_checker import eval_runner_helper as helper  # type: ignore[import-not-found]

    sizes = category_sizes(bfcl_wheel)
    partial = {k: v for k, v in FULL.items() if k not in ("simple_java", "live_multiple")}
    frame = pd.concat(
        [
            _graded("sim:fc", "native", **FULL, **AGENTIC),
            _graded("sim:prose", "text", **partial, multi_turn_base=(9, 10), memory_kv=(1, 2)),
        ]
    )
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    write_bfcl_scores(frame, ours, sizes=sizes)
    models = {
        "sim/fc-FC": "sim:fc (FC)",
        "sim/prose": "sim:prose (Prompt)",
    }
    monkeypatch.setattr(
        helper,
        "MODEL_CONFIG_MAPPING",
        {
            key: types.SimpleNamespace(
                display_name=name,
                url="N/A",
                org="N/A",
                license="N/A",
                input_price=None,
                output_price=None,
            )
            for key, name in models.items()
        },
    )
    table: dict = {}
    helper.update_leaderboard_table_with_local_score_file(table, ours)
    theirs.mkdir()
    helper.generate_leaderboard_csv(table, theirs)
    for file in CSV_LAYOUTS:
        assert (ours / file).read_text() == (theirs / file).read_text(), file
    overall = pd.read_csv(theirs / "data_overall.csv").set_index("Model")["Overall Acc"]
    mine = bfcl_scores(frame, sizes=sizes).set_index("model")["Overall Acc"]
    assert overall["sim:fc (FC)"] == f"{mine['sim:fc'] * 100:.2f}%"
    assert overall["sim:prose (Prompt)"] == f"{mine['sim:prose'] * 100:.2f}%"


def test_the_cli_prints_the_leaderboard_row_and_writes_bfcls_files(bfcl_wheel, tmp_path, capsys):
    db, out = str(tmp_path / "s.duckdb"), tmp_path / "score"
    common = ["--db", db, "--no-local", "--no-report", "--quiet"]
    # A multi-turn category too: its rows are BFCL rows like any (expect.bfcl is an entry).
    bfcl = ["run", "bfcl:simple_python,multi_turn_base", "--limit", "2"]
    bfcl += ["--bfcl-source", str(bfcl_wheel)]
    assert main([*bfcl, "--tools-mode", "native", *common]) == 0
    assert main(["run", str(SMOKE), "--limit", "1", *common]) == 0
    with RunFrames.open(db) as wb:
        runs = list(wb.sql("SELECT run_id FROM runs ORDER BY started_at")["run_id"])
    capsys.readouterr()
    scores = ["bfcl", "scores", runs[0], "--db", db, "--bfcl-source", str(bfcl_wheel)]
    assert main([*scores, "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "native" in lines[0]
    assert lines[1].split()[:2] == ["Overall", "Acc"]
    assert "Multi Turn 30" in lines[1] and "Agentic 40" in lines[1]
    # 20 not run, or 21 for a model the route used for one of the two categories only.
    assert re.search(r"; BFCL counts the 2[01] categories not run as 0\)$", lines[1])
    assert any(line.split()[:3] == ["Python", "Simple", "AST"] for line in lines)
    assert any(
        "Multi Turn Miss Func" in line and "not run (BFCL counts 0)" in line for line in lines
    )
    assert any("Multi Turn Base" in line and "%" in line for line in lines)
    files = len(list(out.rglob("BFCL_v4_*_score.json"))) + len(CSV_LAYOUTS)
    assert lines[-1] == f"BFCL score files: {files} file(s) in {out.resolve()}"
    assert next(out.glob("*/non_live/BFCL_v4_simple_python_score.json"))
    assert next(out.glob("*/multi_turn/BFCL_v4_multi_turn_base_score.json"))
    assert (out / "data_overall.csv").read_text().startswith("Rank,Overall Acc,Model")
    # Bad input: one line with its code, exit 2.
    for run, code in (("no-such-run", "RUN_UNKNOWN"), (runs[1], "BFCL_RUN_NOT_BFCL")):
        assert main(["bfcl", "scores", run, "--db", db]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and code in err
