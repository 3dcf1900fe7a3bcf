"""workbench: route LLM traffic across providers under quotas, read every tool-call protocol,
observe what each model can really do, and measure it all.

The names a newcomer needs first are here; each concept lives in its own package
(`providers`, `capability`, `sim`, `local`, `eval`).

Each name is imported from its module on first use: the provider factories bring httpx and
asyncio, which `workbench --help` (and any `import workbench.<module>`) need not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names

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

# public name → the module of this package that defines it
_HOMES: dict[str, str] = {
    "ConfigError": "errors",
    "NoVisionLinkError": "errors",
    "ProviderError": "errors",
    "StreamInterrupted": "errors",
    "WorkbenchError": "errors",
    "gemini_provider": "providers",
    "openai_compatible_provider": "providers",
    "CallContext": "types",
    "ChatRequest": "types",
    "Reply": "types",
    "ToolCall": "types",
    "Usage": "types",
    "image_part": "types",
    "user": "types",
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


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
