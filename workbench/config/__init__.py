"""Provider configuration read from files: the providers TOML (`providers_file`) and a LiteLLM
proxy `config.yaml` (`litellm`), both turned into one `ProvidersConfig`. Library code: an app
reads its fleet the same way the workbench does.

Each name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names

if TYPE_CHECKING:
    from workbench.config.litellm import LiteLLMConfig, from_litellm
    from workbench.config.providers_file import ProvidersConfig, load_config, load_providers

_HOMES: dict[str, str] = {
    "LiteLLMConfig": "litellm",
    "from_litellm": "litellm",
    "ProvidersConfig": "providers_file",
    "load_config": "providers_file",
    "load_providers": "providers_file",
}

__all__ = ["LiteLLMConfig", "ProvidersConfig", "from_litellm", "load_config", "load_providers"]

__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
