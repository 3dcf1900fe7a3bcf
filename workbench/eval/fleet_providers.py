"""The embedded default: providers that point at a running simulator.

Every persona speaks every surface; the personas that model Google (their rate limits are
Gemini's) are reached through the native Gemini adapter, the rest through the OpenAI-compatible
one, so both adapters are exercised by the default fleet. Nothing about vision is declared:
the probe and live traffic find out.
"""

from __future__ import annotations

from typing import Any

from workbench.providers.base import HttpProvider
from workbench.providers.gemini import gemini_provider
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.providers.spec import ModelSpec
from workbench.sim import SimServer

SIM_KEY = "sim-key"


def _sim_key(_ctx: Any) -> str:
    return SIM_KEY


def sim_providers(sim: SimServer, **provider_kw: Any) -> list[HttpProvider]:
    """One provider per surface of the simulator: `sim` (OpenAI) then `sim-gemini` (native)."""
    openai_models = [
        ModelSpec(p.id) for p in sim.fleet.personas.values() if p.rate_limit_style != "gemini"
    ]
    gemini_models = [
        ModelSpec(p.id) for p in sim.fleet.personas.values() if p.rate_limit_style == "gemini"
    ]
    providers: list[HttpProvider] = []
    if openai_models:
        providers.append(
            openai_compatible_provider(
                "sim", sim.openai_url, _sim_key, openai_models, **provider_kw
            )
        )
    if gemini_models:
        providers.append(
            gemini_provider(
                _sim_key, id="sim-gemini", url=sim.gemini_url, models=gemini_models, **provider_kw
            )
        )
    return providers
