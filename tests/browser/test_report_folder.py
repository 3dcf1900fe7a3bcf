"""A big run's report, the folder form, as a person opens it: from disk (`file://`), in
Debian's chromium driven by Playwright. The run is synthesised straight into DuckDB, just big
enough for two rows chunks (the page's inline first rows and `data/rows-00001.js`) and thirty
stories chunks, so every test here reaches rows and stories that are NOT in the page itself:
filters, search and sort cover them, a story is read from a later chunk, the table's DOM stays a
few dozen rows, the first rows show while the other chunks are held back, and a chunk that
cannot be read says so on the page. The same page served by `workbench view`, and a comparison
too big for one file, whose links open each run's folder at the flipped row."""

from __future__ import annotations

import bisect
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.browser.conftest import PageErrors, row_hash
from workbench.eval.report.chunks import ROWS_PER_CHUNK, SINGLE_FILE_MAX
from workbench.eval.report.page import write_comparison, write_report
from workbench.eval.store.synthetic import synthesize_run

pytestmark = pytest.mark.browser

ITEMS = ROWS_PER_CHUNK + 5_000  # the second rows chunk holds the last 5,000 rows
RUN = "big"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("folder")
    db = root / "runs.duckdb"
    synthesize_run(db, ITEMS, run_id=RUN)
    page = write_report(db, RUN, root / "reports")
    assert page == root / "reports" / RUN / "index.html"
    return db, page


def _sql(db: Path, query: str, *args: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(query, list(args)).fetchall()
    finally:
        con.close()


def _page_data(index: Path) -> dict[str, Any]:
    """The page's inline data (its summary, dictionaries and where each chunk starts)."""
    text = index.read_text(encoding="utf-8")
    tag = '<script type="application/json" id="data">'
    start = text.index(tag) + len(tag)
    return json.loads(text[start : text.index("</script>", start)])


def _all_loaded(page: Any) -> None:
    from playwright.sync_api import expect

    expect(page.locator("#loaded")).to_have_text(f"loaded {ITEMS} of {ITEMS} rows")


def _shown(page: Any, column: str) -> list[str]:
    return page.eval_on_selector_all(
        f"table#items tbody td[data-column={column}]", "cells => cells.map(c => c.textContent)"
    )


def test_the_folder_opens_from_disk_and_loads_every_row(folder, page):
    from playwright.sync_api import expect

    _, index = folder
    assert (index.parent / "data" / "rows-00001.js").is_file()
    assert not (index.parent / "data" / "rows-00002.js").exists()
    page.goto(index.as_uri())
    _all_loaded(page)
    expect(page.locator("#count")).to_have_text(f"{ITEMS} of {ITEMS} item(s) shown")
    assert _shown(page, "item")[0] == "item-00000"


def test_the_first_rows_show_before_any_other_file_loads(folder, page):
    from playwright.sync_api import expect

    _, index = folder
    held: list[Any] = []
    page.route("**/data/rows-00001.js", lambda route: held.append(route))  # answered later
    page.goto(index.as_uri(), wait_until="domcontentloaded")  # "load" waits for the chunk
    expect(page.locator("table#items tbody tr").first).to_be_visible()
    assert _shown(page, "item")[:2] == ["item-00000", "item-00001"]
    expect(page.locator("#loaded")).to_have_text(f"loaded {ROWS_PER_CHUNK} of {ITEMS} rows")
    expect(page.locator("#count")).to_have_text(f"{ROWS_PER_CHUNK} of {ITEMS} item(s) shown")

    # A search while rows are loading says what it covers, and is counted again at the end.
    page.fill("#search", "item-29")
    expect(page.locator("#count")).to_contain_text(
        f"0 of {ITEMS} item(s) shown (of the {ROWS_PER_CHUNK} rows loaded so far"
    )
    assert len(held) == 1
    held[0].continue_()
    _all_loaded(page)
    expect(page.locator("#count")).to_have_text(f"1000 of {ITEMS} item(s) shown")


def test_the_table_holds_only_the_rows_in_sight(folder, page):
    _, index = folder
    page.goto(index.as_uri())
    _all_loaded(page)
    drawn = page.locator("table#items tbody tr").count()
    assert 10 <= drawn <= 200
    # The scroll bar spans every row: at its end, the last row is drawn, still only a few.
    page.eval_on_selector(".viewport", "box => box.scrollTo(0, box.scrollHeight)")
    page.wait_for_function(
        "() => [...document.querySelectorAll('table#items tbody td[data-column=item]')]"
        f".some(c => c.textContent === 'item-{ITEMS - 1}')"
    )
    assert page.locator("table#items tbody tr").count() <= 200
    assert page.locator("table#items tr").count() <= 210  # with its header and spacers


def test_filter_search_and_sort_cover_rows_past_the_first_chunk(folder, page):
    from playwright.sync_api import expect

    db, index = folder
    page.goto(index.as_uri())
    _all_loaded(page)
    failed = "passed = false AND error_code IS NULL AND unanswered IS NULL"
    (want,) = _sql(db, f"SELECT count(*) FROM outputs WHERE {failed}")[0]
    page.select_option("select[data-filter=grade]", "fail")
    expect(page.locator("#count")).to_have_text(f"{want} of {ITEMS} item(s) shown")
    assert set(_shown(page, "grade")) == {"fail"}

    # Only rows of the second chunk match this search: item-25000 … item-29999.
    late = f"item-{ROWS_PER_CHUNK // 1000 + 1}"  # "item-26": item-26000 … item-26999
    (want,) = _sql(
        db, f"SELECT count(*) FROM outputs WHERE {failed} AND item_id LIKE ?", f"{late}%"
    )[0]
    page.fill("#search", late)
    expect(page.locator("#count")).to_have_text(f"{want} of {ITEMS} item(s) shown")
    assert want > 0 and all(i.startswith(late) for i in _shown(page, "item"))

    page.click("th[data-column=latency] button")
    page.click("th[data-column=latency] button")  # descending: the slowest first
    expect(page.locator("th[data-column=latency]")).to_have_attribute("aria-sort", "descending")
    slowest = [
        i
        for (i,) in _sql(
            db,
            f"SELECT item_id FROM outputs WHERE {failed} AND item_id LIKE ? "
            "ORDER BY latency_ms DESC, item_id LIMIT 5",
            f"{late}%",
        )
    ]
    assert _shown(page, "item")[:5] == slowest

    # Sorted by item, descending, with no filter: the run's last row (in the last chunk) first.
    page.select_option("select[data-filter=grade]", "*")
    page.fill("#search", "")
    page.click("th[data-column=item] button")
    page.click("th[data-column=item] button")
    expect(page.locator("#count")).to_have_text(f"{ITEMS} of {ITEMS} item(s) shown")
    assert _shown(page, "item")[:2] == [f"item-{ITEMS - 1}", f"item-{ITEMS - 2}"]


def _close(page, story) -> None:  # type: ignore[no-untyped-def]
    """Close the story and wait for the page to take the row out of its address: the dialog's
    close event comes after the key press, and would otherwise clear the next link's hash."""
    from playwright.sync_api import expect

    # The story told, not only its title: a stories file still loading when the next step
    # reloads the page would be a failed request.
    expect(story.locator("#story-loading")).to_have_count(0)
    page.keyboard.press("Escape")
    expect(story).to_be_hidden()
    expect(page).not_to_have_url(re.compile("#"))


def test_a_story_is_read_from_a_later_chunk(folder, page):
    from playwright.sync_api import expect

    db, index = folder
    # The last item whose route fell back: its story is in the last stories chunk or near it.
    item, route, depth = _sql(
        db,
        "SELECT item_id, route_id, fallback_depth FROM routes WHERE fallback_depth > 0 "
        "ORDER BY item_id DESC LIMIT 1",
    )[0]
    row = int(item.removeprefix("item-"))  # one repeat, one configuration: INDEX = item number
    assert row > ROWS_PER_CHUNK  # past the rows the page itself holds
    # The stories chunk holding the row: the page lists where each starts (cut by bytes).
    starts = _page_data(index)["story_starts"]
    holder = bisect.bisect_right(starts, row) - 1
    want = _sql(
        db,
        "SELECT key, outcome, coalesce(error_code, '') FROM attempts WHERE route_id = ? "
        "ORDER BY seq",
        route,
    )
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url.rsplit("/", 1)[-1]))
    page.goto(index.as_uri())
    _all_loaded(page)
    assert not [a for a in asked if a.startswith("stories-")]  # none read before one is opened
    page.fill("#search", item)
    row_of_item = page.locator("table#items tbody tr").filter(
        has=page.locator("td[data-column=item]", has_text=re.compile(f"^{item}$"))
    )
    expect(row_of_item).to_have_count(1)
    row_of_item.press("Enter")  # rows are focusable; Enter opens
    story = page.locator("dialog#story")
    expect(story).to_be_visible()
    expect(story.locator("#story-title")).to_have_text(f"{item} · repeat 0 · default")
    chain = story.locator("table.chain").first
    expect(chain).to_be_visible()
    got = chain.evaluate(
        "t => [...t.tBodies[0].rows].map(r => [r.cells[1].textContent, r.cells[2].textContent,"
        " r.cells[6].textContent])"
    )
    assert [tuple(x) for x in got] == want
    assert f"fallback depth {depth}" in chain.evaluate("t => t.previousElementSibling.textContent")
    assert [a for a in asked if a.startswith("stories-")] == [f"stories-{holder:05d}.js"]
    assert page.url.endswith(row_hash(row, item))

    # The same row from a link: the page opens #row=<index> by itself.
    _close(page, story)
    page.goto(f"{index.as_uri()}#row=0")
    page.reload()
    expect(story.locator("#story-title")).to_have_text("item-00000 · repeat 0 · default")

    # A link whose INDEX is no longer its key's row (the report written again after a
    # resume added rows before it): the key's row, once every row is here.
    _close(page, story)
    page.goto(f"{index.as_uri()}{row_hash(0, 'item-00007')}")
    page.reload()
    expect(story.locator("#story-title")).to_have_text("item-00007 · repeat 0 · default")

    # An older link names the row by its key: opened once every row is here.
    _close(page, story)
    page.goto(f"{index.as_uri()}#item={item}%7C0%7Cdefault")
    page.reload()
    expect(story.locator("#story-title")).to_have_text(f"{item} · repeat 0 · default")

    # A mangled address (a cut escape) opens nothing and breaks nothing: every row still
    # loads, and the fixture fails the test on any script error.
    _close(page, story)
    page.goto(f"{index.as_uri()}#row=3&item=%E0%A4%A")
    page.reload()
    _all_loaded(page)
    expect(story).to_be_hidden()


def test_a_story_opens_while_a_rows_file_is_still_loading(folder, page):
    """A stories file is not queued behind the rows files: with the second rows file held
    back (a slow disk, a busy `workbench view`), the first row's story still opens."""
    from playwright.sync_api import expect

    _, index = folder
    held: list[Any] = []
    page.route("**/data/rows-00001.js", lambda route: held.append(route))
    page.goto(index.as_uri(), wait_until="domcontentloaded")  # "load" waits for the chunk
    expect(page.locator("table#items tbody tr").first).to_be_visible()
    page.locator("table#items tbody tr").first.click()
    story = page.locator("dialog#story")
    expect(story.locator("#story-title")).to_have_text("item-00000 · repeat 0 · default")
    expect(story.get_by_role("heading", name="Raw reply").first).to_be_visible()
    assert held, "the rows file was never asked for"
    expect(page.locator("#loaded")).not_to_have_text(f"loaded {ITEMS} of {ITEMS} rows")
    held[0].continue_()
    _all_loaded(page)


def test_a_story_closed_while_it_is_read_stays_closed(folder, page):
    """Escape while a story's file is still coming: the dialog closes, and the file that
    arrives after does not open it again."""
    from playwright.sync_api import expect

    _, index = folder
    held: list[Any] = []
    page.route("**/data/stories-00000.js", lambda route: held.append(route))
    page.goto(index.as_uri(), wait_until="domcontentloaded")
    page.locator("table#items tbody tr").first.click()
    story = page.locator("dialog#story")
    expect(story.locator("#story-loading")).to_have_text("reading the story…")
    page.keyboard.press("Escape")
    expect(story).to_be_hidden()
    assert held, "the stories file was never asked for"
    held[0].continue_()
    page.wait_for_function("() => document.querySelectorAll('script[src]').length === 0")
    expect(story).to_be_hidden()
    page.locator("table#items tbody tr").nth(1).click()  # the chunk is here: at once
    expect(story.locator("#story-title")).to_have_text("item-00001 · repeat 0 · default")


def test_a_chunk_that_cannot_be_read_says_so(folder, page, page_errors: PageErrors):
    from playwright.sync_api import expect

    _, index = folder
    page_errors.allowed.append("data/rows-00001.js")
    page.route("**/data/rows-00001.js", lambda route: route.abort())
    page.goto(index.as_uri())
    line = page.locator("#loaded")
    expect(line).to_have_text(
        f"could not load data/rows-00001.js: the table covers the {ROWS_PER_CHUNK} of {ITEMS} "
        "rows loaded before it (reload the page to try again)"
    )
    expect(line).to_have_class(re.compile(r"\berror\b"))
    expect(page.locator("#count")).to_have_text(f"{ROWS_PER_CHUNK} of {ITEMS} item(s) shown")
    expect(page.locator("table#items tbody tr").first).to_be_visible()

    # A stories chunk the same, in the story's dialog.
    page_errors.allowed.append("data/stories-00003.js")
    page.route("**/data/stories-00003.js", lambda route: route.abort())
    page.goto(f"{index.as_uri()}#row=3500")
    page.reload()
    story = page.locator("dialog#story")
    expect(story.locator("p.error")).to_have_text(
        "could not load data/stories-00003.js: the story cannot be shown "
        "(reload the page to try again)"
    )


@pytest.fixture
def served(folder) -> Iterator[str]:
    """The same run served by `workbench view`'s app (uvicorn on loopback, in a thread), at
    the address it prints: its path holds the launch's token, so that no other site's page
    can load a chunk as a script."""
    import uvicorn

    from workbench.eval.report.server import ViewAddress, ViewedRun, create_app

    db, _ = folder
    viewed = ViewedRun.open(db, RUN)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    address = ViewAddress.of(sock, "127.0.0.1")
    config = uvicorn.Config(create_app(viewed, address), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        assert server.started
        yield address.url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        viewed.close()


def test_the_same_page_served_by_workbench_view(folder, served, page):
    """One script for the three sources: what the folder shows from disk, the server shows
    from DuckDB — every row, a search in the last chunk, a story of a later stories chunk."""
    from playwright.sync_api import expect

    db, _ = folder
    page.goto(served)
    _all_loaded(page)
    last = f"item-{ITEMS - 1}"
    page.fill("#search", last)
    expect(page.locator("#count")).to_have_text(f"1 of {ITEMS} item(s) shown")
    page.locator("table#items tbody tr").first.click()
    story = page.locator("dialog#story")
    expect(story.locator("#story-title")).to_have_text(f"{last} · repeat 0 · default")
    (raw,) = _sql(db, "SELECT coalesce(raw, '') FROM outputs WHERE item_id = ?", last)[0]
    want = story.get_by_role("heading", name="Raw reply").locator("xpath=following-sibling::*[1]")
    expect(want).to_have_text(raw or "empty")
    assert page.url == f"{served}{row_hash(ITEMS - 1, last)}"


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two synthetic runs of the same items, B's graded answers the opposite of A's: more
    flips than one file keeps, so the comparison is a folder beside both runs' folders."""
    root = tmp_path_factory.mktemp("compared")
    db = root / "runs.duckdb"
    items = SINGLE_FILE_MAX + 2_000
    for run in ("a", "b"):
        synthesize_run(db, items, run_id=run)
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE outputs SET passed = NOT passed WHERE run_id = 'b' AND passed IS NOT NULL "
        "AND error_code IS NULL AND unanswered IS NULL"
    )
    con.close()
    page = write_comparison(db, "a", "b", root / "reports")
    assert page == root / "reports" / "a_vs_b" / "index.html"
    return db, page


def test_the_comparison_folder_leads_to_each_runs_row(compared, page):
    from playwright.sync_api import expect

    db, index = compared
    flips, worse = _sql(
        db,
        "SELECT count(*), count(*) FILTER (a.passed) FROM outputs a JOIN outputs b "
        "USING (item_id, repeat, config) WHERE a.run_id = 'a' AND b.run_id = 'b' "
        "AND a.passed <> b.passed",
    )[0]
    assert flips > SINGLE_FILE_MAX
    page.goto(index.as_uri())
    expect(page.locator("#count")).to_have_text(f"{flips} of {flips} flip(s) shown")
    page.select_option("select[data-filter=change]", "worse")
    expect(page.locator("#count")).to_have_text(f"{worse} of {flips} flip(s) shown")
    page.select_option("select[data-filter=change]", "*")

    (item,) = _sql(
        db,
        "SELECT a.item_id FROM outputs a JOIN outputs b USING (item_id, repeat, config) "
        "WHERE a.run_id = 'a' AND b.run_id = 'b' AND a.passed <> b.passed "
        "ORDER BY a.item_id DESC LIMIT 1",
    )[0]
    row = int(item.removeprefix("item-"))  # its INDEX in each run's report
    page.fill("#search", item)
    expect(page.locator("#count")).to_have_text(f"1 of {flips} flip(s) shown")
    flip = page.locator("table#items tbody tr").first
    grade_a = flip.locator("td[data-column=A]").text_content()
    link = flip.locator("td[data-column=A] a")
    expect(link).to_have_attribute("href", f"../a/index.html{row_hash(row, item)}")
    link.click()
    page.wait_for_url(f"**/a/index.html{row_hash(row, item)}")
    story = page.locator("dialog#story")
    expect(story.locator("#story-title")).to_have_text(f"{item} · repeat 0 · default")
    expect(story.locator("p.meta").first).to_contain_text(f"grade {grade_a}")

    page.go_back()
    page.fill("#search", item)
    expect(page.locator("#count")).to_have_text(f"1 of {flips} flip(s) shown")
    page.locator("table#items tbody tr").first.click()  # the row itself: B's story
    page.wait_for_url(f"**/b/index.html{row_hash(row, item)}")
    expect(story.locator("#story-title")).to_have_text(f"{item} · repeat 0 · default")
    grade_b = "pass" if grade_a == "fail" else "fail"
    expect(story.locator("p.meta").first).to_contain_text(f"grade {grade_b}")
