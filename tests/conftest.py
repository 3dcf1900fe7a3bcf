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


# --- redis-server (a real one, never a fake) --------------------------------------------
@pytest.fixture(scope="session")
def redis_server():
    """One redis-server on a free loopback port for the whole session."""
    import os

    from redis_server import RedisServer, redis_server_binary

    if redis_server_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install redis-server (scripts/test does, with apt)")
        pytest.skip("redis-server is not installed (scripts/test installs it)")
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def redis_url(redis_server) -> str:
    """The session server's URL, emptied before each test (and restarted if a test killed it)."""
    if not redis_server.alive:
        redis_server.restart()
    redis_server.flush()
    return redis_server.url
