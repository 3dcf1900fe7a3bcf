"""The issue's proof: a run of a million items, synthesised straight into a DuckDB file (no
run), its report written, then opened from disk in Debian's chromium through Playwright —
scrolled to its very end, sorted, filtered, searched for its last item, and that item's story
opened. Asserted as a person would see it; how long each step takes is measured by
benchmarks/report_open.py, never here."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.browser.conftest import row_hash
from workbench.eval.report.page import write_report
from workbench.eval.store.synthetic import synthesize_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ITEMS = 1_000_000
LAST = f"item-{ITEMS - 1}"  # item-999999


def test_a_million_item_report_opens_filters_sorts_searches_and_tells_a_story(tmp_path: Path, page):
    from playwright.sync_api import expect

    db = tmp_path / "million.duckdb"
    synthesize_run(db, ITEMS, run_id="million")
    index = write_report(db, "million", tmp_path / "reports")
    assert index == tmp_path / "reports" / "million" / "index.html"
    con = duckdb.connect(str(db), read_only=True)
    failed, latency_ms = con.execute(
        "SELECT count(*) FILTER (passed = false AND error_code IS NULL AND unanswered IS NULL), "
        "max(latency_ms) FROM outputs"
    ).fetchone()
    slowest = con.execute(
        "SELECT item_id FROM outputs WHERE passed = false AND error_code IS NULL "
        "AND unanswered IS NULL ORDER BY latency_ms DESC, item_id LIMIT 1"
    ).fetchone()[0]
    last_model, last_raw = con.execute(
        "SELECT coalesce(key, ''), coalesce(raw, '') FROM outputs WHERE item_id = ?", [LAST]
    ).fetchone()
    # The last item's chain as its own rows say it: a story shown for another row (the title and
    # "answered by" come from the row's columns, the story from its stories file) differs here.
    last_chain = con.execute(
        "SELECT key, outcome, coalesce(error_code, '') FROM attempts WHERE route_id = "
        "(SELECT route_id FROM routes WHERE run_id = 'million' AND item_id = ?) "
        "AND run_id = 'million' ORDER BY seq",
        [LAST],
    ).fetchall()
    con.close()

    page.goto(index.as_uri())
    expect(page.locator("table#items tbody tr").first).to_be_visible()
    loaded = page.locator("#loaded")
    expect(loaded).to_have_text(f"loaded {ITEMS} of {ITEMS} rows", timeout=120_000)
    assert page.locator("table#items tbody tr").count() <= 200

    # The scroll bar of a million rows is scaled (no box is that tall): its very end is the
    # last row, drawn and in sight.
    rows = page.locator("table#items tbody tr")
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")  # the table's foot
    page.locator("table#items").evaluate(
        "t => { const s = t.parentElement; s.scrollTop = s.scrollHeight; }"
    )
    expect(rows.last.locator("td[data-column=item]")).to_have_text(LAST)
    expect(rows.last).to_be_in_viewport()
    assert rows.count() <= 200
    # Sorted by item, descending: the last item first.
    page.click("th[data-column=item] button")
    if page.locator("th[data-column=item]").get_attribute("aria-sort") != "descending":
        page.click("th[data-column=item] button")
    expect(page.locator("th[data-column=item]")).to_have_attribute("aria-sort", "descending")
    expect(rows.first.locator("td[data-column=item]")).to_have_text(LAST)
    expect(rows.first).to_be_in_viewport()

    page.select_option("select[data-filter=grade]", "fail")
    expect(page.locator("#count")).to_have_text(f"{failed} of {ITEMS} item(s) shown")
    page.click("th[data-column=latency] button")
    page.click("th[data-column=latency] button")  # descending: the slowest first
    expect(page.locator("th[data-column=latency]")).to_have_attribute("aria-sort", "descending")
    first = page.locator("table#items tbody tr").first
    expect(first.locator("td[data-column=item]")).to_have_text(slowest)
    assert latency_ms > 0

    page.select_option("select[data-filter=grade]", "*")
    page.fill("#search", LAST)
    expect(page.locator("#count")).to_have_text(f"1 of {ITEMS} item(s) shown")
    expect(first.locator("td[data-column=item]")).to_have_text(LAST)
    first.click()
    story = page.locator("dialog#story")
    expect(story.locator("#story-title")).to_have_text(f"{LAST} · repeat 0 · default")
    raw = story.get_by_role("heading", name="Raw reply").first.locator(
        "xpath=following-sibling::*[1]"
    )
    expect(raw).to_have_text(last_raw or "empty")
    chain = story.locator("table.chain").first
    expect(chain).to_be_visible()
    shown = chain.evaluate(
        "t => [...t.tBodies[0].rows].map(r => [r.cells[1].textContent, r.cells[2].textContent,"
        " r.cells[6].textContent])"
    )
    assert last_chain and [tuple(x) for x in shown] == last_chain
    if last_model:
        expect(story.locator("p.meta").first).to_contain_text(f"answered by {last_model}")
    assert page.url.endswith(row_hash(ITEMS - 1, LAST))
