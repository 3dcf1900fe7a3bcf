"""The public names: each package's `__all__`, exactly; a name the docs show from a package is one.

Adding or removing a public name is a deliberate change: it changes a literal below, in review.
"""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_imports import doc_pages, python_imports

PUBLIC: dict[str, list[str]] = {
    "workbench": [
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
    ],
    "workbench.cassettes": [
        "Cassette",
        "CassetteMode",
        "Exchange",
        "FILE_NAME",
        "MODES",
        "VERSION",
        "cassette_file",
        "for_notebook",
        "notebook_mode",
    ],
    "workbench.capability": [
        "CapabilityKind",
        "CapabilityObserver",
        "CapabilityRecord",
        "CapabilityStore",
        "Classification",
        "DEFAULT_TTL_MS",
        "FailoverCapabilityStore",
        "MemoryCapabilityStore",
        "NoVisionLinkError",
        "Provenance",
        "RedisCapabilityStore",
        "Sight",
        "ToolPlan",
        "Verdict",
        "claimable_verdict",
        "classify_tool_attempt",
        "classify_vision_attempt",
        "current_verdict",
        "is_stale",
        "iso_ms",
        "link_id",
        "make_record",
        "messages_carry_images",
        "model_sees_images",
        "parse_iso_ms",
        "plan_tool_attempt",
        "require_seeing_links",
        "says_cannot_see",
        "says_images_unsupported",
        "says_tools_unsupported",
        "scope_key",
        "seeing_links",
        "should_replace",
    ],
    "workbench.cli": ["main"],
    "workbench.config": [
        "LiteLLMConfig",
        "ProvidersConfig",
        "from_litellm",
        "load_config",
        "load_providers",
    ],
    "workbench.eval": [
        "ChaosReport",
        "Dataset",
        "DefaultFleet",
        "Expect",
        "FACT_KINDS",
        "Fact",
        "Grade",
        "Item",
        "ProvidersConfig",
        "RunConfig",
        "RunFrames",
        "RunHooks",
        "RunSummary",
        "Store",
        "Verification",
        "Violation",
        "assign_fact_ids",
        "audit_leaks",
        "declared_fields",
        "default_fleet",
        "fact_ids",
        "grade",
        "load_catalogue",
        "load_config",
        "load_dataset",
        "load_providers",
        "local_config",
        "make_fact",
        "masker_for",
        "probe_models",
        "regrade",
        "render_facts",
        "run_chaos",
        "run_prompt_set",
        "sim_chain_config",
        "sim_providers",
        "unrecorded_fields",
        "verdict_table",
        "verify_answer",
        "write_report",
    ],
    "workbench.local": [
        "LocalModel",
        "MODEL_ID",
        "local_model_available",
    ],
    "workbench.providers": [
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
        "TEXT_TOOL_PROTOCOL_HINT",
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
    ],
    "workbench.routing": [
        "Admission",
        "AdmissionDenied",
        "Attempt",
        "BreakerOpen",
        "BreakerPool",
        "BudgetClassAdmission",
        "CircuitBreaker",
        "Cooldowns",
        "CoolingDecision",
        "FailoverQuota",
        "FairShareAdmission",
        "Health",
        "HealthTracker",
        "Limits",
        "MemoryQuota",
        "PolicyAdmission",
        "QuotaReading",
        "QuotaStore",
        "Refusal",
        "Reservation",
        "ResponseCache",
        "RouteResult",
        "RouteSettings",
        "Router",
        "RouterSettings",
        "RoutingState",
        "all_of",
        "answers_remaining",
        "cache_key",
        "classify_rate_limit",
        "cooldown_decision",
        "humanize_wait",
        "is_provider_outage",
        "names_model",
        "parse_reset_at",
        "plan_request",
        "rate_limit_message",
        "read_quota",
        "reading_from_refusal",
        "retry_after_seconds",
    ],
    "workbench.serve": [
        "AskLimit",
        "AskRefusal",
        "DeterministicFallback",
        "EventStream",
        "FallbackResult",
        "LivenessProbe",
        "LivenessResult",
        "SSE_HEADERS",
        "ai_health_handler",
        "event_stream",
        "sse_event",
    ],
    "workbench.sim": [
        "DEFAULT_FLEET_PATH",
        "FAILURE_KINDS",
        "FailureRule",
        "Fleet",
        "Persona",
        "SimApp",
        "SimServer",
        "TOOL_STYLES",
        "create_app",
        "decode_png",
        "dominant_colour",
        "encode_png",
        "load_fleet",
        "run_forever",
        "serve",
    ],
    "workbench.text": [
        "Detection",
        "FACT_KINDS",
        "Fact",
        "FormatInstructions",
        "LanguageDetector",
        "NOT_RECORDED",
        "ResponseCleaner",
        "ReversibleMasker",
        "SourceLedger",
        "Vocabulary",
        "assign_fact_ids",
        "build_passages_context",
        "declared_fields",
        "default_detector",
        "fact_ids",
        "find_contradiction",
        "load_vocabulary",
        "make_fact",
        "plain_text",
        "render_facts",
        "rerank_results",
        "same_language",
        "tidy_markdown",
        "unrecorded_fields",
        "used_sources",
        "verify_quotations",
        "whole_sentences",
    ],
    "workbench.tools": [
        "Action",
        "ActionStore",
        "AgentResult",
        "AgentStep",
        "MemoryActionStore",
        "PendingActions",
        "Tool",
        "ToolLoopResult",
        "ToolOutcome",
        "ToolRegistry",
        "run_agent_loop",
        "run_tool_loop",
        "tool_caller",
        "tool_specs",
        "validate_native_tools",
    ],
    "workbench.web": [
        "FetchTarget",
        "Page",
        "Readable",
        "Resolver",
        "SearchAttempt",
        "SearchOutcome",
        "SearchProvider",
        "WebError",
        "WebFailure",
        "WebFetchBlocked",
        "WebFetchError",
        "WebResult",
        "WebSearchError",
        "WebSearchOutcome",
        "brave_provider",
        "default_providers",
        "describe_attempts",
        "describe_empty_search",
        "extract_readable_text",
        "is_private_address",
        "page_evidence",
        "page_to_fact",
        "read_page",
        "results_evidence",
        "results_to_facts",
        "search_serper",
        "searxng_provider",
        "system_resolver",
        "tavily_provider",
        "validate_fetch_target",
        "web_search",
    ],
    "workbench.widgets": [
        "ApprovalModel",
        "ApprovalQueue",
        "CompareModel",
        "CompareOutputs",
        "GRADES",
        "Row",
        "diff_html",
        "outputs_with_tags",
        "schedule",
    ],
}


def test_every_package_is_listed():
    """A new subpackage gets its own `__all__` literal here, like the others."""
    root = Path(importlib.import_module("workbench").__file__).parent
    packages = {
        "workbench." + p.parent.name
        for p in root.glob("*/__init__.py")
        if not p.parent.name.startswith("_")
    }
    assert packages | {"workbench"} == set(PUBLIC)


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_all_is_exactly_the_reviewed_list(package):
    names = importlib.import_module(package).__all__
    assert len(names) == len(set(names)), f"{package}.__all__ repeats a name"
    assert sorted(names) == PUBLIC[package]


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_every_name_in_all_resolves(package):
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    assert set(module.__all__) <= set(namespace)


def test_doc_names_from_a_package_are_public():
    """A name the README or a docs page imports from a package (not one of its modules) is in
    its `__all__`; that each one resolves is tests/test_docs.py's."""
    private = [
        f"{page.name}: {module}.{name}"
        for page in doc_pages()
        for module, name in python_imports(page)
        if module in PUBLIC and name not in PUBLIC[module]
    ]
    assert private == []


def test_eval_imports_its_modules_on_first_use():
    """`workbench.eval` re-exports lazily: reading a prompt set loads no pandas or DuckDB."""
    code = (
        "import sys\n"
        "import workbench.eval\n"
        "from workbench.eval import load_dataset\n"
        "print(sorted({'pandas', 'duckdb', 'matplotlib'} & set(sys.modules)))\n"
        "from workbench.eval import RunFrames\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split("\n")
    assert out[:2] == ["[]", "True"]


def test_eval_unknown_name_is_an_attribute_error():
    import workbench.eval

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = workbench.eval.nope
    assert "Store" in dir(workbench.eval)
