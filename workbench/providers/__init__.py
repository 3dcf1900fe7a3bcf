"""Provider adapters: one `ChatRequest` in, one `Reply` out, whatever the vendor.

`openai_compatible_provider` speaks to any OpenAI-compatible endpoint; `gemini_provider` to
Google's native API. Both read native tool calls and calls written in prose, drop reasoning,
and refuse a 200 that says nothing. `Provider` is what the router needs of any provider:
adapters speak to their vendor only (the router plans, caches, masks and observes).
`check_catalog` asks each vendor's model list whether the ids a configuration pins still exist.
`batch_client` gives a provider's batch client (OpenAI's and Groq's Batch API, Gemini's batch
mode), whose answers are read as the synchronous call reads them (`has_batch_api` says which).
`ScriptedProvider` and `FunctionProvider` stand in for a vendor in tests (their script's steps,
`Fail`, `Hang` and `Stream`, are in `workbench.providers.testing`).
"""

from workbench.providers.base import HttpProvider
from workbench.providers.batch_api import (
    BatchAPI,
    BatchResults,
    BatchState,
    batch_client,
    has_batch_api,
)
from workbench.providers.catalog import (
    CatalogCheck,
    ModelRecord,
    catalog_facts,
    catalog_report,
    catalog_summary,
    check_catalog,
    dead_providers,
    has_rot,
)
from workbench.providers.gemini import GeminiProvider, gemini_provider
from workbench.providers.interface import Provider, ProviderLike, as_provider
from workbench.providers.meter import QuotaReading, read_quota, retry_after_s
from workbench.providers.openai_compat import OpenAICompatibleProvider, openai_compatible_provider
from workbench.providers.protocols import (
    TEXT_TOOL_PROTOCOL_HINT,
    compact_json,
    merge_tool_calls,
    parse_text_tool_calls,
    read_text_tool_calls,
    safe_json_object,
    strip_tool_call_lines,
    tool_names_from,
)
from workbench.providers.reasoning import strip_reasoning
from workbench.providers.spec import ModelSpec, from_env
from workbench.providers.streamed_calls import ToolSlots, split_json_objects, sse_frames
from workbench.providers.testing import FunctionProvider, ScriptedProvider

__all__ = [
    "TEXT_TOOL_PROTOCOL_HINT",
    "BatchAPI",
    "BatchResults",
    "BatchState",
    "CatalogCheck",
    "FunctionProvider",
    "GeminiProvider",
    "HttpProvider",
    "ModelRecord",
    "ModelSpec",
    "OpenAICompatibleProvider",
    "Provider",
    "ProviderLike",
    "QuotaReading",
    "ScriptedProvider",
    "ToolSlots",
    "as_provider",
    "batch_client",
    "catalog_facts",
    "catalog_report",
    "catalog_summary",
    "check_catalog",
    "compact_json",
    "dead_providers",
    "from_env",
    "gemini_provider",
    "has_batch_api",
    "has_rot",
    "merge_tool_calls",
    "openai_compatible_provider",
    "parse_text_tool_calls",
    "read_quota",
    "read_text_tool_calls",
    "retry_after_s",
    "safe_json_object",
    "split_json_objects",
    "sse_frames",
    "strip_reasoning",
    "strip_tool_call_lines",
    "tool_names_from",
]
