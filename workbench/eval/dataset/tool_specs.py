"""The tool catalogue: the OpenAI function specs a prompt set names by name.

`datasets/tools.json` is a JSON list of `{"type": "function", "function": {...}}` specs (or
`{"tools": [...]}`); an item writes `"tools": ["get_weather"]` instead of repeating the spec.
A catalogue is checked whole when it is read, so a bad spec is refused once, with its index,
rather than at the first request that happens to carry it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

# OpenAI's own rule for function names: what every OpenAI-compatible endpoint accepts.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def shown_path(path: str | Path) -> str:
    """A path as a user reads it in an error: relative to the working directory when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(p)


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a usable JSON schema (jsonschema's `check_schema`), or None."""
    if not isinstance(schema, dict):
        return "must be a JSON schema object"
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except Exception as exc:  # SchemaError, and whatever an odd `$schema` value provokes
        message = str(getattr(exc, "message", None) or exc)
        first = message.splitlines()[0] if message.strip() else type(exc).__name__
        return f"is not a valid JSON schema: {first}"
    return None


def tool_spec_problem(spec: Any) -> tuple[str, str] | None:
    """(field suffix, reason) when `spec` is not an OpenAI function spec we can send, else None."""
    if not isinstance(spec, dict):
        return "", 'must be {"type": "function", "function": {...}}'
    if spec.get("type", "function") != "function":
        return ".type", 'must be "function"'
    unknown = sorted(set(spec) - {"type", "function"})
    if unknown:
        return f".{unknown[0]}", "unknown field"
    function = spec.get("function")
    if not isinstance(function, dict):
        return ".function", "required: an object with a name"
    name = function.get("name")
    if name is None:
        return ".function.name", "required"
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        return ".function.name", "must match [A-Za-z0-9_-]{1,64}"
    unknown = sorted(set(function) - {"name", "description", "parameters", "strict"})
    if unknown:
        return f".function.{unknown[0]}", "unknown field"
    if "description" in function and not isinstance(function["description"], str):
        return ".function.description", "must be a string"
    if "parameters" in function:
        params = function["parameters"]
        problem = schema_problem(params)
        if problem:
            return ".function.parameters", problem
        if params.get("type", "object") != "object":
            return ".function.parameters", 'must be a schema of "type": "object"'
    return None


def _invalid(file: str, field: str, reason: str) -> ConfigError:
    return ConfigError(
        f"{file}: {field}: {reason}",
        code="CATALOGUE_INVALID",
        details={"file": file, "field": field, "reason": reason},
    )


def catalogue_from(specs: Any, *, file: str = "<catalogue>") -> dict[str, dict[str, Any]]:
    """Validate a list of specs (or a `{name: spec}` mapping) into `{name: spec}`."""
    if isinstance(specs, Mapping) and "tools" in specs and len(specs) == 1:
        specs = specs["tools"]
    if isinstance(specs, Mapping):
        items = list(specs.items())
    elif isinstance(specs, list):
        items = [(None, s) for s in specs]
    else:
        raise _invalid(file, "tools", "a catalogue is a JSON list of function specs")
    out: dict[str, dict[str, Any]] = {}
    for i, (key, spec) in enumerate(items):
        where = f"tools[{i}]" if key is None else f"tools.{key}"
        problem = tool_spec_problem(spec)
        if problem:
            raise _invalid(file, where + problem[0], problem[1])
        name = spec["function"]["name"]
        if key is not None and key != name:
            raise _invalid(file, where + ".function.name", f'"{name}" differs from its key')
        if name in out:
            raise _invalid(file, where + ".function.name", f'duplicate tool "{name}"')
        out[name] = {"type": "function", "function": spec["function"]}
    return out


def load_catalogue(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read and validate a tool catalogue file: `{name: OpenAI function spec}`, in file order."""
    file = shown_path(path)
    try:
        raw = Path(path).read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise _invalid(file, "file", f"cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise _invalid(file, "file", "is not UTF-8 text") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        line = getattr(exc, "lineno", 0)
        raise _invalid(file, "json", f"line {line}: {getattr(exc, 'msg', exc)}") from None
    return catalogue_from(data, file=file)


__all__ = ["TOOL_NAME", "catalogue_from", "load_catalogue", "schema_problem", "tool_spec_problem"]
