"""The fleet a run gets when it names no providers: the simulator on loopback, plus the
local SmolLM2 model when the `local` extra is installed.

One context manager for the command and the notebooks, so that both start the same servers
in the same order and stop them the same way. Its imports wait for a call: the simulator
brings starlette and uvicorn, which a run against a providers file never needs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.config.providers_file import ProvidersConfig
    from workbench.local.server import LocalModel
    from workbench.sim import SimServer


@dataclass(frozen=True, slots=True)
class DefaultFleet:
    """The running servers and the router configurations that reach them.

    `configs` is what `run_prompt_set` takes: the simulator's chain first, then the local
    model's when it runs. A run closes only its own loop's HTTP clients, so the same
    configurations serve one run after another."""

    sim: SimServer
    local: LocalModel | None
    configs: tuple[ProvidersConfig, ...]

    @property
    def sim_chain(self) -> ProvidersConfig:
        """The simulator's chain alone: flaky, groq, google, openrouter."""
        return self.configs[0]


@asynccontextmanager
async def default_fleet(
    fleet_path: str | Path | None = None,
    *,
    local: bool = True,
    finishing: ExitStack | None = None,
) -> AsyncIterator[DefaultFleet]:
    """`async with default_fleet() as fleet:` the simulator (the built-in fleet, or the fleet
    TOML at `fleet_path`) and, with `local` and the extra installed, the local model.

    With `finishing`, the simulator winds down in a background thread once the block is
    left, and `finishing` waits for it when it closes: uvicorn takes ~0.15 s to stop (it
    looks for the stop every 0.1 s, then waits 0.1 s for its connections), time the
    command's summary and report can use. Without it, leaving the block waits."""
    from workbench.local.provider_config import local_config
    from workbench.local.server import LocalModel, local_model_available
    from workbench.sim import SimServer
    from workbench.sim.fleet_providers import sim_chain_config

    sim = SimServer(fleet_path)  # a bad fleet is refused here, before anything starts
    await asyncio.to_thread(sim.start)
    try:
        async with AsyncExitStack() as stack:
            configs = [sim_chain_config(sim)]
            model = None
            if local and local_model_available():
                model = await stack.enter_async_context(LocalModel())
                configs.append(
                    local_config(model.base_url, model.model_id, cache_origin=model.cache_origin)
                )
            yield DefaultFleet(sim, model, tuple(configs))
    finally:
        if finishing is None:
            await asyncio.to_thread(sim.stop)
        else:
            stopping = threading.Thread(target=sim.stop, name="workbench-sim-stop")
            stopping.start()
            finishing.callback(stopping.join)
