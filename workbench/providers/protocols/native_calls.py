"""Native tool calls read off the wire, and the rule that joins them with prose calls."""

from __future__ import annotations

import json
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.types import ToolCall

__all__ = ["merge_tool_calls", "native_tool_call", "tool_names_from", "tool_schemas_from"]


def tool_names_from(tools: Any) -> list[str]:
    """The non-empty string `function.name` values of an OpenAI-shaped tools list."""
    return list(tool_schemas_from(tools))


def tool_schemas_from(tools: Any) -> dict[str, dict[str, Any]]:
    """name → `function.parameters` (an empty schema when absent) of an OpenAI-shaped list."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(tools, list):
        return out
    for t in tools:
        fn = t.get("function") if isinstance(t, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(name, str) and name:
            params = fn.get("parameters") if isinstance(fn, dict) else None
            out[name] = params if isinstance(params, dict) else {}
    return out


def native_tool_call(id: str, name: str, arguments: str | dict[str, Any] | None) -> ToolCall:
    """A native ToolCall from a wire value: a JSON string is parsed (kept as raw), an object is
    re-serialised compactly, empty/None means no arguments. Unreadable keeps the call, invalid."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return ToolCall(id=id, name=name, arguments={}, raw_arguments="{}")
    if isinstance(arguments, dict):
        return ToolCall(
            id=id, name=name, arguments=arguments, raw_arguments=compact_json(arguments)
        )
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            return ToolCall(id, name, {}, arguments, invalid=True, invalid_reason="not_json")
        if isinstance(value, dict):
            return ToolCall(id=id, name=name, arguments=value, raw_arguments=arguments)
        return ToolCall(id, name, {}, arguments, invalid=True, invalid_reason="not_object")
    return ToolCall(
        id, name, {}, compact_json(arguments), invalid=True, invalid_reason="not_object"
    )


def _dedupe_key(c: ToolCall) -> str:
    # Invalid calls all carry {}: their raw text is what tells two of them apart.
    return c.name + ("\x00" + c.raw_arguments if c.invalid else compact_json(c.arguments))


def merge_tool_calls(native: list[ToolCall], text: list[ToolCall]) -> list[ToolCall]:
    """Native first, then the prose calls not already seen. Native wins on a tie: a model that
    emits both the real call and a prose echo of it must not run the tool twice."""
    seen = {_dedupe_key(c) for c in native}
    merged = list(native)
    for c in text:
        key = _dedupe_key(c)
        if key not in seen:
            seen.add(key)
            merged.append(c)
    return merged
