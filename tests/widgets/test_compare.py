"""CompareModel pages, filters and diffs outputs; CompareOutputs renders its current page."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import workbench.widgets.compare as compare
from workbench.errors import WorkbenchError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.store.database import Store
from workbench.widgets import CompareModel, CompareOutputs, diff_html

COLUMNS = ["run_id", "item_id", "repeat", "config", "key", "raw", "cleaned", "passed", "tags"]


def outputs(n: int = 45) -> pd.DataFrame:
    """n outputs: keys alternate p:m1 / q:m2; every third failed, every fifth ungraded;
    tags as DuckDB returns a JSON column (text)."""
    rows = []
    for i in range(n):
        passed = None if i % 5 == 0 else i % 3 != 0
        rows.append(
            {
                "run_id": "r1",
                "item_id": f"i{i:03d}",
                "repeat": 0,
                "config": "c",
                "key": "p:m1" if i % 2 == 0 else "q:m2",
                "raw": f"<think>hm</think> Answer {i} is here",
                "cleaned": f"Answer {i} is here",
                "passed": passed,
                "tags": json.dumps(["even" if i % 2 == 0 else "odd", "all"]),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


# ------------------------------------------------------------------ paging
def test_paging_honours_page_size() -> None:
    model = CompareModel(outputs(45), page_size=20)
    assert model.pages == 3 and model.count == 45
    sizes = [len(model.rows())]
    while model.next():
        sizes.append(len(model.rows()))
    assert sizes == [20, 20, 5]
    assert model.page == 2 and model.next() is False and model.page == 2
    assert model.prev() and model.page == 1
    assert model.rows()[0].item_id == "i020"
    model.page = 99
    assert model.page == 2
    assert model.prev() and model.prev() and model.prev() is False


def test_rows_diff_only_the_current_page(monkeypatch) -> None:
    calls = []
    real = compare.diff_parts
    monkeypatch.setattr(compare, "diff_parts", lambda a, b: calls.append(a) or real(a, b))
    model = CompareModel(outputs(500), page_size=7)
    assert len(model.rows()) == 7
    assert len(calls) == 7


def test_an_empty_frame_has_one_empty_page() -> None:
    model = CompareModel(outputs(0))
    assert (model.pages, model.rows(), model.next()) == (1, [], False)


def test_missing_columns_and_bad_page_size_are_refused() -> None:
    with pytest.raises(WorkbenchError) as err:
        CompareModel(outputs(3), right="nope")
    assert err.value.code == "COMPARE_INVALID"
    with pytest.raises(WorkbenchError):
        CompareModel(outputs(3), page_size=0)


# ------------------------------------------------------------------ filters
def test_filter_by_tag_model_and_grade() -> None:
    model = CompareModel(outputs(45), page_size=100)
    assert model.tags == ["all", "even", "odd"]
    assert model.model_names == ["p:m1", "q:m2"]

    model.tag = "odd"
    assert {r.item_id for r in model.rows()} == {f"i{i:03d}" for i in range(1, 45, 2)}
    assert all("odd" in r.tags for r in model.rows())
    model.tag = None
    model.model = "p:m1"
    assert model.count == 23 and {r.model for r in model.rows()} == {"p:m1"}
    model.model = None

    model.grade = "ungraded"
    assert [r.item_id for r in model.rows()] == [f"i{i:03d}" for i in range(0, 45, 5)]
    model.grade = "failed"
    expected = [i for i in range(45) if i % 5 != 0 and i % 3 == 0]
    assert [r.item_id for r in model.rows()] == [f"i{i:03d}" for i in expected]
    assert all(r.passed is False for r in model.rows())
    model.grade = "passed"
    assert model.count == 45 - 9 - len(expected)
    with pytest.raises(WorkbenchError):
        model.grade = "good"


def test_filters_combine_and_go_back_to_the_first_page() -> None:
    model = CompareModel(outputs(45), page_size=5)
    model.next()
    model.set_filters(tag="even", model="q:m2")
    assert model.page == 0 and model.count == 0 and model.rows() == []
    model.set_filters(tag="even", grade="passed")
    assert model.count > 0
    assert all(r.passed is True and "even" in r.tags for r in model.rows())


# ------------------------------------------------------------------ the diff
def test_diff_marks_deleted_and_inserted_words() -> None:
    out = diff_html("the cat sat on the mat", "the dog sat on the mat today")
    assert "<del>cat</del>" in out
    assert "<ins>dog</ins>" in out
    assert "<ins>today</ins>" in out or "<ins> today</ins>" in out
    assert out.startswith("the ")
    assert "<del>the" not in out and "sat on the mat" in out


def test_diff_escapes_html() -> None:
    out = diff_html("<script>alert(1)</script> ok", "ok & <b>bold</b>")
    assert "<script>" not in out and "<b>" not in out
    assert "&lt;script&gt;" in out and "&amp;" in out and "&lt;b&gt;bold&lt;/b&gt;" in out
    assert diff_html(None, "x") == "<ins>x</ins>"
    assert diff_html("same", "same") == "same"


def test_rows_carry_the_texts_and_their_diff() -> None:
    row = CompareModel(outputs(1)).rows()[0]
    assert row.left == "<think>hm</think> Answer 0 is here"
    assert row.right == "Answer 0 is here"
    assert "<del>&lt;think&gt;hm&lt;/think&gt; </del>Answer" in row.diff_html
    assert "<del>" in row.left_html and "<ins>" not in row.left_html
    assert (row.model, row.tags, row.passed) == ("p:m1", ("even", "all"), None)


# ------------------------------------------------------------------ pairings
def test_models_pairs_rows_by_item() -> None:
    df = pd.DataFrame(
        [
            {"item_id": "a", "repeat": 0, "key": "m1", "cleaned": "one two", "passed": True},
            {"item_id": "a", "repeat": 0, "key": "m2", "cleaned": "one three", "passed": False},
            {"item_id": "b", "repeat": 0, "key": "m2", "cleaned": "b from m2", "passed": True},
            {"item_id": "b", "repeat": 0, "key": "m1", "cleaned": "b from m1", "passed": True},
            {"item_id": "c", "repeat": 0, "key": "m1", "cleaned": "only m1", "passed": True},
        ]
    )
    model = CompareModel.models(df, "m1", "m2")
    rows = {r.item_id: r for r in model.rows()}
    assert set(rows) == {"a", "b"}  # c has no answer from m2
    assert (rows["a"].left, rows["a"].right) == ("one two", "one three")
    assert (rows["b"].left, rows["b"].right) == ("b from m1", "b from m2")
    assert "<del>two</del>" in rows["a"].diff_html and "<ins>three</ins>" in rows["a"].diff_html
    assert rows["a"].passed is False and rows["b"].passed is True
    assert (model.left_label, model.right_label) == ("m1", "m2")
    with pytest.raises(WorkbenchError):
        CompareModel.models(df, "m1", "m9")


def test_runs_pairs_the_same_item_and_model() -> None:
    a = outputs(4).assign(run_id="ra")
    b = outputs(4).assign(run_id="rb", cleaned=lambda d: d["cleaned"] + " now")
    model = CompareModel.runs(pd.concat([a, b]), "ra", "rb")
    rows = model.rows()
    assert [r.item_id for r in rows] == ["i000", "i001", "i002", "i003"]
    assert [r.model for r in rows] == ["p:m1", "q:m2", "p:m1", "q:m2"]
    assert all(r.right == r.left + " now" for r in rows)


# ------------------------------------------------------------------ the widget
def table_rows(widget: CompareOutputs) -> int:
    return widget.table.value.count("<tr class='wb-row'")


def test_widget_pages_with_its_buttons() -> None:
    widget = CompareOutputs(outputs(12), page_size=5)
    assert table_rows(widget) == 5
    assert widget.page_label.value.startswith("page 1 / 3")
    assert widget.prev_button.disabled and not widget.next_button.disabled
    assert "wb-prev" in widget.prev_button._dom_classes
    assert "wb-next" in widget.next_button._dom_classes
    assert (widget.prev_button.description, widget.next_button.description) == ("Prev", "Next")
    widget.next_button.click()
    widget.next_button.click()
    assert widget.page_label.value.startswith("page 3 / 3") and table_rows(widget) == 2
    assert widget.next_button.disabled
    widget.prev_button.click()
    assert widget.model.page == 1 and "i005" in widget.table.value


def test_widget_filters_with_its_dropdowns() -> None:
    widget = CompareOutputs(outputs(12), page_size=50)
    assert [v for _, v in widget.tag_filter.options] == [None, "all", "even", "odd"]
    widget.next_button.click()  # one page only: nothing moves
    widget.tag_filter.value = "odd"
    assert table_rows(widget) == 6 and "i000" not in widget.table.value
    widget.grade_filter.value = "ungraded"
    assert table_rows(widget) == 1 and "i005" in widget.table.value  # 5: odd and ungraded
    widget.model_filter.value = "p:m1"
    assert "No output matches" in widget.table.value
    assert table_rows(widget) == 0


def test_widget_table_is_side_by_side_and_escaped() -> None:
    widget = CompareOutputs(outputs(1))
    html = widget.table.value
    assert "<th>raw</th><th>cleaned</th>" in html
    assert "<del>&lt;think&gt;hm&lt;/think&gt; </del>Answer" in html
    assert "<think>" not in html


def test_widget_reads_a_run_with_its_item_tags(tmp_path: Path) -> None:
    path = tmp_path / "wb.duckdb"
    with Store.open(path) as s:
        run = s.start_run(name="r", dataset="d", dataset_sha="x", configs=["c"], settings={})
        s.add_items(run, [{"item_id": "i1", "tags": ["smoke"], "category": "x"}])
        s.add_items(run, [{"item_id": "i2", "tags": ["tools"], "category": "y"}])
        for item, key in (("i1", "p:m1"), ("i2", "p:m1"), ("i1", "q:m2"), ("i2", "q:m2")):
            s.add_output(
                {
                    "run_id": run,
                    "item_id": item,
                    "repeat": 0,
                    "config": key,
                    "key": key,
                    "raw": f"{item} raw {key}",
                    "cleaned": f"{item} said by {key}",
                    "passed": True,
                }
            )
        s.finish_run(run, "finished")
    with RunFrames.open(path) as wb:
        widget = CompareOutputs((wb, run))
        assert widget.model.tags == ["smoke", "tools"]
        widget.tag_filter.value = "tools"
        assert table_rows(widget) == 2 and "i1" not in widget.table.value
        pair = CompareOutputs(wb, run, model_a="p:m1", model_b="q:m2")
        assert table_rows(pair) == 2
        assert "<ins>q:m2</ins>" in pair.table.value and "<del>p:m1</del>" in pair.table.value


def test_widget_over_a_run_past_the_row_cap_reads_a_bounded_part_of_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.eval.store.synthetic import synthesize_run

    path = tmp_path / "big.duckdb"
    synthesize_run(path, 300, run_id="a")
    synthesize_run(path, 300, run_id="b", started_ms=1_790_000_000_000)
    monkeypatch.setattr(compare, "READ_AT_MOST", 40)
    with RunFrames.open(path) as wb:
        wb.max_rows = 100  # each run is past it: a whole read is FRAME_TOO_BIG
        one = CompareOutputs((wb, "a"))
        two = CompareOutputs(wb, "a", "b", limit=25)
        chosen = CompareOutputs(
            (wb, "a"), where="category = ? AND passed = ?", params=["math", False], limit=100
        )
        math_failed = wb.sql(
            "SELECT count(*) AS n FROM outputs o JOIN items i USING (run_id, item_id) "
            "WHERE o.run_id = 'a' AND i.category = 'math' AND NOT o.passed"
        )
    assert one.model.count == 40 and one.partial
    assert "the first 40 of each run" in one.page_label.value
    assert two.model.count == 25 and [r.item_id for r in two.model.rows()][:2] == [
        "item-000",
        "item-001",
    ]
    assert chosen.model.count == int(math_failed["n"][0]) > 0 and not chosen.partial
    assert chosen.model.model_names and "each run" not in chosen.page_label.value
