"""The report viewer as a person uses it, in a real browser: Playwright drives Debian's
chromium over `file://` (no server: the page must stand alone). Two real runs of the tool-calling
set on the simulator, small enough for the single-file form (every chunk inline); the page is
filtered and sorted, an item that fell back is opened and its story's chain is checked against
DuckDB, and the comparison page leads to a flipped item's story. Screenshots are saved as
evidence under reports/ (`viewer-*.png`). The folder form of a big run: test_report_folder.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.browser.conftest import row_hash
from tests.report_runs import make_two_runs
from workbench.eval.report.page import write_comparison

pytestmark = pytest.mark.browser

REPORTS = Path(__file__).resolve().parents[2] / "reports"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    root = tmp_path_factory.mktemp("viewer")
    db = root / "runs.duckdb"
    a, b = make_two_runs(db)
    write_comparison(db, a, b, root / "reports")
    return db, root / "reports", a, b


def _rows(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "table#items tbody tr",
        "rows => rows.map(r => Object.fromEntries([...r.cells].map(c => [c.dataset.column, c.textContent])))",
    )


def con_index(db: Path, run: str, item: str, repeat: int, config: str) -> int:
    """A row's INDEX in its run's report: its place in the table's order."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT count(*) FROM outputs WHERE run_id = ? AND (item_id < ? OR item_id = ? "
            "AND (repeat < ? OR repeat = ? AND config < ?))",
            [run, item, item, repeat, repeat, config],
        ).fetchone()[0]
    finally:
        con.close()


def test_filter_sort_and_open_an_items_story(pages, page):
    from playwright.sync_api import expect

    db, reports, a, _ = pages
    page.goto((reports / f"{a}.html").as_uri())
    con = duckdb.connect(str(db), read_only=True)
    total, failed = con.execute(
        "SELECT count(*), count(*) FILTER (passed = false) FROM outputs WHERE run_id = ?", [a]
    ).fetchone()
    expect(page.locator("#count")).to_have_text(f"{total} of {total} item(s) shown")

    page.select_option("select[data-filter=grade]", "fail")
    expect(page.locator("#count")).to_have_text(f"{failed} of {total} item(s) shown")
    assert {r["grade"] for r in _rows(page)} == {"fail"}
    page.select_option("select[data-filter=grade]", "*")

    multiple = con.execute(
        "SELECT count(*) FROM outputs o JOIN items i USING (run_id, item_id) "
        "WHERE o.run_id = ? AND (i.category = 'multiple' OR o.item_id LIKE '%multiple%')",
        [a],
    ).fetchone()[0]
    page.fill("#search", "multiple")  # drawn once typing pauses
    expect(page.locator("#count")).to_have_text(f"{multiple} of {total} item(s) shown")
    assert all("multiple" in " ".join(r.values()) for r in _rows(page))
    page.fill("#search", "")
    expect(page.locator("#count")).to_have_text(f"{total} of {total} item(s) shown")

    page.click("th[data-column=latency] button")
    page.click("th[data-column=latency] button")  # descending: the slowest first
    expect(page.locator("th[data-column=latency]")).to_have_attribute("aria-sort", "descending")
    item, repeat, config = con.execute(
        "SELECT item_id, repeat, config FROM outputs WHERE run_id = ? "
        "ORDER BY latency_ms DESC LIMIT 1",
        [a],
    ).fetchone()
    assert _rows(page)[0]["item"] == item

    # An item that fell back, on whichever turn: that turn's chain lists every attempt, in
    # order. The story shows one chain per turn (routes by time), so the route is found with its
    # turn number; an item's first fallback is often on a later turn (a rate limit met mid-loop).
    item, repeat, config, route, turn, deepest = con.execute(
        "WITH r AS (SELECT *, row_number() OVER same AS turn, "
        "count(*) OVER (PARTITION BY item_id, repeat, config, at_ms) AS at_once, "
        "max(fallback_depth) FILTER (chosen IS NOT NULL) OVER (PARTITION BY item_id, repeat, "
        "config) AS deepest FROM routes WHERE run_id = ? "
        "WINDOW same AS (PARTITION BY item_id, repeat, config ORDER BY at_ms)) "
        "SELECT item_id, repeat, config, route_id, turn, deepest FROM r "
        "WHERE fallback_depth > 0 AND deepest > 0 AND at_once = 1 "
        "ORDER BY item_id, repeat, config, turn LIMIT 1",
        [a],
    ).fetchone()
    want = con.execute(
        "SELECT key, outcome, coalesce(error_code, '') FROM attempts WHERE route_id = ? "
        "ORDER BY seq",
        [route],
    ).fetchall()
    con.close()
    page.select_option("select[data-filter=depth]", str(deepest))
    page.fill("#search", item)
    # The search matches any id containing this one: the row is the one whose item is it.
    row = page.locator("table#items tbody tr").filter(
        has=page.locator("td[data-column=item]", has_text=re.compile(f"^{re.escape(item)}$"))
    )
    expect(row).to_have_count(1)
    row.click()
    story = page.locator("dialog#story")
    expect(story).to_be_visible()
    expect(story.locator("#story-title")).to_have_text(f"{item} · repeat {repeat} · {config}")
    chain = story.locator("table.chain").nth(turn - 1)
    assert chain.evaluate("t => t.previousElementSibling.textContent").startswith(f"turn {turn} ·")
    got = chain.evaluate(
        "t => [...t.tBodies[0].rows].map(r => [r.cells[1].textContent, r.cells[2].textContent,"
        " r.cells[6].textContent])"
    )
    assert [tuple(x) for x in got] == want
    assert chain.locator("td", has_text="moved on").count() >= 1
    for heading in (
        "Request as it left the machine",
        "Raw reply",
        "Cleaned text",
        "Verdicts",
        "Grade",
    ):
        expect(story.get_by_role("heading", name=heading).first).to_be_visible()
    REPORTS.mkdir(exist_ok=True)
    page.screenshot(path=str(REPORTS / "viewer-story.png"))
    index = con_index(db, a, item, repeat, config)
    assert page.url.endswith(row_hash(index, item, repeat, config))

    page.keyboard.press("Escape")
    expect(story).to_be_hidden()
    page.select_option("select[data-filter=depth]", "*")
    page.fill("#search", "")
    expect(page.locator("#count")).to_have_text(f"{total} of {total} item(s) shown")
    page.eval_on_selector(".viewport", "box => box.scrollTo(0, 0)")
    page.screenshot(path=str(REPORTS / "viewer-items.png"))


def test_the_comparison_leads_to_a_flipped_items_story(pages, page):
    from playwright.sync_api import expect

    db, reports, a, b = pages
    page.goto((reports / f"{a}_vs_{b}.html").as_uri())
    rows = _rows(page)
    assert rows and {r["change"] for r in rows} <= {"better", "worse"}
    page.screenshot(path=str(REPORTS / "viewer-compare.png"), full_page=True)
    first = rows[0]
    page.locator("table#items tbody tr").first.click()
    page.wait_for_url(f"**/{b}.html#row=*")
    story = page.locator("dialog#story")
    expect(story).to_be_visible()
    expect(story.locator("#story-title")).to_have_text(
        f"{first['item']} · repeat {first['repeat']} · {first['config']}"
    )
    want = "grade pass" if first["B"] == "pass" else "grade fail"
    expect(story.locator("p.meta").first).to_contain_text(want)
    key = (first["item"], int(first["repeat"]), first["config"])
    assert page.url.endswith(row_hash(con_index(db, b, *key), *key))

    # Its A cell leads to the same row in A's report, by the row's index there.
    page.goto((reports / f"{a}_vs_{b}.html").as_uri())
    link = page.locator("table#items tbody tr").first.locator("td[data-column=A] a")
    index = con_index(db, a, first["item"], int(first["repeat"]), first["config"])
    expect(link).to_have_attribute("href", f"{a}.html{row_hash(index, *key)}")
    link.click()
    page.wait_for_url(f"**/{a}.html{row_hash(index, *key)}")
    expect(story).to_be_visible()
    expect(story.locator("#story-title")).to_have_text(
        f"{first['item']} · repeat {first['repeat']} · {first['config']}"
    )
    want = "grade pass" if first["A"] == "pass" else "grade fail"
    expect(story.locator("p.meta").first).to_contain_text(want)


def test_the_tag_filter_matches_single_tags_even_those_holding_a_comma(tmp_path, page):
    """The table shows an item's tags joined by ", "; the filter must still tell the one tag
    "a, b" from the two tags "a" and "b"."""
    from playwright.sync_api import expect

    from workbench.eval.report.page import write_report
    from workbench.eval.store.synthetic import synthesize_run

    db = tmp_path / "tags.duckdb"
    synthesize_run(db, 10, run_id="tags")
    con = duckdb.connect(str(db))
    con.execute("UPDATE items SET tags = '[]'")
    for item, tags in (("item-0", '["a, b"]'), ("item-1", '["a", "b"]'), ("item-2", '["a"]')):
        con.execute("UPDATE items SET tags = ? WHERE item_id = ?", [tags, item])
    con.close()
    page.goto(write_report(db, "tags", tmp_path / "reports").as_uri())
    options = page.eval_on_selector_all(
        "select[data-filter=tag] option", "options => options.map(o => o.value)"
    )
    assert options == ["*", "a", "a, b", "b"]
    for tag, items in (("a, b", ["item-0"]), ("a", ["item-1", "item-2"]), ("b", ["item-1"])):
        page.select_option("select[data-filter=tag]", tag)
        expect(page.locator("#count")).to_have_text(f"{len(items)} of 10 item(s) shown")
        assert [row["item"] for row in _rows(page)] == items, tag
