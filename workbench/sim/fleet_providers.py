"""The embedded default: providers that point at a running simulator.

Every persona speaks every surface; the personas that model Google (their rate limits are
Gemini's) are reached through the native Gemini adapter, the rest through the OpenAI-compatible
one, so both adapters are exercised by the default fleet. Nothing about vision is declared:
the probe and live traffic find out.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import workbench.sim as sim_package
from workbench.config.providers_file import ProvidersConfig
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
        providers[-1].batch = True  # the simulator serves OpenAI's Batch API (`--batch`)
    if gemini_models:
        providers.append(
            gemini_provider(
                _sim_key, id="sim-gemini", url=sim.gemini_url, models=gemini_models, **provider_kw
            )
        )
    return providers


# The embedded default chain, shaped like ai-kit's free chain and led by a flaky
# provider, so that a first run shows what the router is for: fallbacks, cooldowns, verdicts.
SIM_CHAIN: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("flaky", "openai", ("sim-flaky",)),
    ("groq", "openai", ("groq-gpt-oss", "qwen-prose")),
    ("google", "gemini", ("gemini-flash", "gemma-sys")),
    ("openrouter", "openai", ("openrouter-free", "hermes-prose")),
)


def sim_origin(sim: SimServer) -> str:
    """The simulator's name in a cache key. Its port is new every run and its answers are
    decided by the fleet (not where the file was read from) and by the simulator's own code:
    both are in the name, so an edited persona or simulator is asked again. This module is
    left out: it wires providers to the simulator and decides none of its answers."""
    digest = hashlib.sha256(repr(dataclasses.replace(sim.fleet, source="")).encode())
    for path in sorted(Path(sim_package.__file__).parent.glob("*.py")):
        if path.name != Path(__file__).name:
            digest.update(path.read_bytes())
    return f"workbench-sim:{digest.hexdigest()[:16]}"


def sim_chain_config(sim: SimServer, **provider_kw: Any) -> ProvidersConfig:
    """The default configuration of `workbench run`: the simulator, no keys, no network.
    The simulator answers in milliseconds, so a 2 s attempt deadline already means a hang."""
    providers: list[HttpProvider] = []
    provider_kw.setdefault("cache_origin", sim_origin(sim))
    for pid, surface, models in SIM_CHAIN:
        specs = [ModelSpec(m) for m in models]
        if surface == "gemini":
            providers.append(
                gemini_provider(_sim_key, id=pid, url=sim.gemini_url, models=specs, **provider_kw)
            )
        else:
            providers.append(
                openai_compatible_provider(pid, sim.openai_url, _sim_key, specs, **provider_kw)
            )
            providers[-1].batch = True  # the simulator serves OpenAI's Batch API (`--batch`)
    return ProvidersConfig("sim", providers, {"attempt_timeout_s": 2.0, "cooldown_s": 5.0})
