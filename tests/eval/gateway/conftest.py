"""The gateway's fixtures: a real gateway on loopback (see gateway_server.py)."""

from __future__ import annotations

import pytest
from gateway_server import PROVIDER_KEY, Gateway, providers_toml


@pytest.fixture
def gateway(tmp_path, sim, monkeypatch):
    """`gateway(*models, max_body_bytes=...)` starts one; every one is stopped after the test."""
    monkeypatch.setenv("WB_TEST_GW_KEY", PROVIDER_KEY)
    started: list[Gateway] = []

    def start(*models: str, max_body_bytes: int = 1 << 20) -> Gateway:
        path = tmp_path / f"providers{len(started)}.toml"
        path.write_text(providers_toml(sim, *models))
        gw = Gateway(path, tmp_path / f"gw{len(started)}.duckdb", max_body_bytes)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()
