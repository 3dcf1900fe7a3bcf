"""What every browser test needs: Debian's chromium (never a browser Playwright downloads),
Playwright for Python, and the flags this machine's closed network asks for.

A test is skipped when chromium or playwright is missing, unless CI is set: CI must install
both."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest

# Without the background-networking flags chromium keeps trying (and failing) to reach
# Google's hosts. Playwright gives it a new empty profile.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def row_hash(index: int, item: str, repeat: int | str = 0, config: str = "default") -> str:
    """A row's address in its run's report, as the page writes it: the row's INDEX and its
    key (what JavaScript's encodeURIComponent leaves alone, left alone)."""
    return f"#row={index}&item={quote(f'{item}|{repeat}|{config}', safe=chr(39) + '-_.!~*()')}"


def need(ok: bool, why: str) -> None:
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must install it: {why}")
    pytest.skip(why)


@pytest.fixture
def chromium() -> str:
    """Debian's chromium and Playwright for Python, checked before anything is started."""
    path = shutil.which("chromium")
    need(path is not None, "Debian's chromium is not installed (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        need(False, "playwright is not installed (pip install -e '.[notebooks]')")
    assert path is not None
    return path


@dataclass
class PageErrors:
    """What went wrong in the page: script errors and failed requests. A test that makes a
    request fail on purpose names it in `allowed` (a part of its URL)."""

    seen: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)

    def unexpected(self) -> list[str]:
        return [e for e in self.seen if not any(a in e for a in self.allowed)]


@pytest.fixture
def page_errors() -> PageErrors:
    return PageErrors()


@pytest.fixture
def page(chromium: str, page_errors: PageErrors) -> Iterator[Any]:
    """A tab of a new headless chromium, failing the test on any error the page did not
    expect."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.on("pageerror", lambda e: page_errors.seen.append(str(e)))
            tab.on("requestfailed", lambda r: page_errors.seen.append(f"request {r.url}"))
            yield tab
            assert page_errors.unexpected() == [], page_errors.seen
        finally:
            browser.close()
