"""Native tools: the catalogue a native tool loop offers (the seed's "Outils natifs").

A tool is ``name, description, parameters (JSON Schema), kind, run`` plus ``summary(args)``
(the values of the UI's step line — the UI writes the sentence, the server writes none),
``perform`` for a ``confirm`` tool (what runs once a human confirms: nothing is written before)
and ``undo`` for a ``write`` tool. The catalogue is checked once, at start-up, so a broken
schema fails the deploy instead of a conversation.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from workbench.errors import ConfigError

__all__ = ["KINDS", "Tool", "tool_specs", "validate_native_tools"]

ToolKind = Literal["read", "write", "confirm"]
KINDS: tuple[str, ...] = ("read", "write", "confirm")
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what the OpenAI and Gemini APIs accept


@dataclass(slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # a JSON Schema of type object
    kind: ToolKind
    run: Callable[[dict[str, Any], Any], Awaitable[Any] | Any] = field(repr=False)
    summary: Callable[[dict[str, Any]], str] | None = field(default=None, repr=False)
    perform: Callable[..., Awaitable[Any] | Any] | None = field(default=None, repr=False)
    undo: Callable[..., Awaitable[Any] | Any] | None = field(default=None, repr=False)
    # A tool that sends its arguments off the machine (a web search, a SaaS API): with a
    # masker, it receives them masked (what leaves is masked as it leaves).
    external: bool = False


def _invalid(name: Any, problem: str) -> ConfigError:
    return ConfigError(
        f"tool {name!r}: {problem}",
        code="TOOL_INVALID",
        details={"tool": name, "problem": problem},
    )


def _as_tool(entry: Any) -> Tool:
    if isinstance(entry, Tool):
        return entry
    if isinstance(entry, Mapping):
        known = {f.name for f in fields(Tool)}
        unknown = sorted(set(entry) - known)
        name = entry.get("name")
        if unknown:
            raise _invalid(name, f"unknown field(s): {', '.join(unknown)}")
        missing = [
            k for k in ("name", "description", "parameters", "kind", "run") if k not in entry
        ]
        if missing:
            raise _invalid(name, f"missing field(s): {', '.join(missing)}")
        return Tool(**entry)
    raise _invalid(
        None, f"a catalogue entry must be a Tool or a mapping, not {type(entry).__name__}"
    )


def validate_native_tools(
    catalogue: Iterable[Tool | Mapping[str, Any]], require_summary: bool = False
) -> list[Tool]:
    """The catalogue as Tools, or a ConfigError code TOOL_INVALID naming the tool and the
    problem: a bad name, a duplicate, parameters that are not a JSON Schema of type object,
    an unknown kind, a `confirm` tool without `perform`, a missing `summary` when required."""
    tools: list[Tool] = []
    seen: set[str] = set()
    for entry in catalogue:
        tool = _as_tool(entry)
        name = tool.name
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise _invalid(name, "the name must match ^[a-zA-Z0-9_-]{1,64}$")
        if name in seen:
            raise _invalid(name, "duplicate name")
        seen.add(name)
        if not isinstance(tool.description, str):
            raise _invalid(name, "the description must be a string")
        if tool.kind not in KINDS:
            raise _invalid(name, f"kind must be one of {', '.join(KINDS)}, not {tool.kind!r}")
        if not callable(tool.run):
            raise _invalid(name, "run must be callable")
        _check_schema(name, tool.parameters)
        if tool.kind == "confirm" and not callable(tool.perform):
            # A confirm tool only prepares; without perform, a confirmation would do nothing.
            raise _invalid(name, "a confirm tool needs perform (what runs once a human confirms)")
        if tool.summary is not None and not callable(tool.summary):
            raise _invalid(name, "summary must be callable")
        if require_summary and tool.summary is None:
            raise _invalid(name, "summary is required (the values of the step line)")
        tools.append(tool)
    return tools


def _check_schema(name: str, schema: Any) -> None:
    if not isinstance(schema, dict):
        raise _invalid(name, "parameters must be a JSON Schema object")
    if schema.get("type") != "object":
        raise _invalid(name, 'parameters must be a JSON Schema of "type": "object"')
    # Imported here: jsonschema takes 0.1 s to import, 0.9 s beside the notebook extras
    # (their rfc3987-syntax builds a grammar on import), and a run whose items offer no
    # tools never checks a schema.
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise _invalid(name, f"parameters are not a valid JSON Schema: {exc.message}") from None


def tool_specs(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """OpenAI function-tool definitions, in catalogue order."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]
