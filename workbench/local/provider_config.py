"""The local model as a providers configuration: SmolLM2 served by llama.cpp on loopback."""

from __future__ import annotations

from workbench.config.providers_file import ProvidersConfig
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.providers.spec import ModelSpec


def local_config(
    base_url: str, model_id: str, *, tools: bool = False, cache_origin: str | None = None
) -> ProvidersConfig:
    """SmolLM2 served by llama.cpp: one model, never external, slow enough to need time.

    `tools=True` is for a server started with `LocalModel(tools=True)` (native tool calls): it
    is named `local-tools`, so its capability verdicts are kept apart from the plain server's,
    which the same model earns differently. `cache_origin` names the server in cache keys
    (`LocalModel.cache_origin`: its port is new every run); None keys on its URL."""
    name = "local-tools" if tools else "local"
    provider = openai_compatible_provider(
        name,
        base_url,
        None,
        [ModelSpec(model_id, vision=False)],
        external=False,
        cache_origin=cache_origin,
    )
    return ProvidersConfig(name, [provider], {"attempt_timeout_s": 120.0})
