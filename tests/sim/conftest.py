"""Fixtures for the simulator's tests (the `sim` fixture itself lives in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest


@pytest.fixture
async def http(sim) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(base_url=sim.base_url, timeout=10) as client:
        yield client
