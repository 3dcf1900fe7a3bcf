"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


# --- provider simulator (workbench.sim) -------------------------------------------------
@pytest.fixture(scope="session")
def _sim_session() -> Iterator[object]:
    """One loopback simulator (default fleet) for the whole session, in a background thread."""
    from workbench.sim import SimServer

    server = SimServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sim(_sim_session):  # type: ignore[no-untyped-def]
    """The shared simulator, reset (log, ordinals, rate-limit windows) before each test."""
    _sim_session.reset()
    return _sim_session
