"""workbench: route LLM traffic across providers under quotas, read every tool-call protocol,
observe what each model can really do, and measure it all.

The names a newcomer needs first are here; each concept lives in its own package
(`providers`, `capability`, `sim`, `local`, `eval`).

Each name is imported from its module on first use: the provider factories bring httpx and
asyncio, which `workbench --help` (and any `import workbench.<module>`) need not pay for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.errors import (
        ConfigError,
        NoVisionLinkError,
        ProviderError,
        StreamInterrupted,
        WorkbenchError,
    )
    from workbench.providers import gemini_provider, openai_compatible_provider
    from workbench.types import CallContext, ChatRequest, Reply, ToolCall, Usage, image_part, user

__version__ = "0.1.0"

# public name → the module that defines it
_HOMES: dict[str, str] = {
    "ConfigError": "workbench.errors",
    "NoVisionLinkError": "workbench.errors",
    "ProviderError": "workbench.errors",
    "StreamInterrupted": "workbench.errors",
    "WorkbenchError": "workbench.errors",
    "gemini_provider": "workbench.providers",
    "openai_compatible_provider": "workbench.providers",
    "CallContext": "workbench.types",
    "ChatRequest": "workbench.types",
    "Reply": "workbench.types",
    "ToolCall": "workbench.types",
    "Usage": "workbench.types",
    "image_part": "workbench.types",
    "user": "workbench.types",
}

__all__ = [
    "CallContext",
    "ChatRequest",
    "ConfigError",
    "NoVisionLinkError",
    "ProviderError",
    "Reply",
    "StreamInterrupted",
    "ToolCall",
    "Usage",
    "WorkbenchError",
    "gemini_provider",
    "image_part",
    "openai_compatible_provider",
    "user",
]


def __getattr__(name: str) -> Any:
    """`from workbench import ChatRequest` imports `workbench.types` then, not before."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
