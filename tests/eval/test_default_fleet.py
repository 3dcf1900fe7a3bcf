"""The default fleet: the simulator (and the local model when asked for and installed),
started for a block and stopped after it, now or when the command has finished."""

from __future__ import annotations

import threading
from contextlib import ExitStack

import httpx
import pytest

from workbench.errors import ConfigError
from workbench.eval.run.default_fleet import default_fleet
from workbench.sim import SimServer


def _serving(sim: SimServer) -> bool:
    try:
        httpx.get(sim.base_url + "/sim/requests", timeout=5).raise_for_status()
    except httpx.TransportError:
        return False
    return True


async def test_without_the_local_model_the_fleet_is_the_simulators_chain():
    async with default_fleet(local=False) as fleet:
        assert fleet.local is None
        assert [c.name for c in fleet.configs] == ["sim"]
        assert fleet.sim_chain is fleet.configs[0]
        assert [p.id for p in fleet.sim_chain.providers] == [
            "flaky",
            "groq",
            "google",
            "openrouter",
        ]
        assert _serving(fleet.sim)
    assert not _serving(fleet.sim)


async def test_a_bad_fleet_is_refused_with_its_code():
    with pytest.raises(ConfigError) as info:
        async with default_fleet("/no/such/fleet.toml", local=False):
            pass
    assert info.value.code == "FLEET_INVALID"


async def test_with_finishing_the_simulator_stops_when_finishing_closes(monkeypatch):
    """The command leaves the block, prints its summary, writes its report, and only then
    waits for the simulator: the block's exit must not wait for the stop."""
    release, stopped = threading.Event(), threading.Event()
    real_stop = SimServer.stop

    def held_stop(self: SimServer) -> None:
        release.wait(timeout=30)
        real_stop(self)
        stopped.set()

    monkeypatch.setattr(SimServer, "stop", held_stop)
    with ExitStack() as finishing:
        async with default_fleet(local=False, finishing=finishing) as fleet:
            pass
        assert not stopped.is_set()  # the block was left while the stop was still held
        release.set()
    assert stopped.is_set() and not _serving(fleet.sim)
