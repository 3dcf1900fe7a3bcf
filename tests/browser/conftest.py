"""What every browser test needs: Debian's chromium (never a browser Playwright downloads),
Playwright for Python, and the flags this machine's closed network asks for.

A test is skipped when chromium or playwright is missing, unless CI is set: CI must install
both."""

from __future__ import annotations

import os
import shutil

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
