"""workbench: route LLM traffic across providers under quotas, read every tool-call protocol,
observe what each model can really do, and measure it all.

The names a newcomer needs first are here; each concept lives in its own package
(`providers`, `capability`, `sim`, `local`, `eval`).
"""

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
