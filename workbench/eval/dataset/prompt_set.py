"""Prompt sets: JSONL or YAML files of items, checked whole before any request.

    {"id": "w1", "prompt": "Weather in Paris?", "tools": ["get_weather"],
     "expect": {"tool": "get_weather", "args": {"city": "Paris"}}}

A bad file is refused with `FILE:LINE: FIELD: reason` (ConfigError `DATASET_INVALID`, the
first error only): a run that would die at item 40 after paying for 39 calls is worse than
one that never starts. Tool names resolve against a catalogue (`tools.json` beside the file
by default, see `tool_specs.py`), so `expect.tool` can be checked against what the item
actually offers.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.eval.dataset.tool_specs import (
    catalogue_from,
    load_catalogue,
    schema_problem,
    shown_path,
    tool_spec_problem,
)
from workbench.providers.protocols import compact_json
from workbench.types import ChatRequest, ToolsInProse

if TYPE_CHECKING:
    from workbench.eval.suites.bfcl.case import BfclCase, BfclEntry

ROLES = ("user", "assistant", "tool", "system")
ITEM_FIELDS = frozenset(
    {
        "id",
        "prompt",
        "messages",
        "system",
        "tools",
        "expect",
        "tags",
        "category",
        "complexity",
        "intent",
        "surface",
        "language",
        "sensitive",
        "sources",
    }
)
EXPECT_FIELDS = frozenset(
    {
        "tool",
        "args",
        "calls",
        "no_tool",
        "contains",
        "regex",
        "json_schema",
        "language",
        "grounded",
        "cleaned",
    }
)
_TEXT_FIELDS = ("category", "complexity", "intent", "surface", "language")


@dataclass(frozen=True, slots=True)
class Expect:
    """What a right answer looks like. Every field set is one graded check (`grading.py`)."""

    tool: str | None = None  # a call to this tool must exist...
    args: dict[str, Any] | None = None  # ...whose arguments contain these (a subset)
    calls: tuple[dict[str, Any], ...] = ()  # parallel: each {"tool", "args"} matched, any order
    no_tool: bool = False  # the right answer calls no tool
    contains: tuple[str, ...] = ()  # case-insensitive substrings, all required
    regex: str | None = None  # re.search with DOTALL
    json_schema: dict[str, Any] | None = None  # the text (or its first ```json block) validates
    language: str | None = None  # the answer's language, by the language detector
    grounded: bool = False  # verify_answer against the item's sources finds nothing novel
    cleaned: str | None = None  # the exact text the response cleaner must produce
    bfcl: BfclCase | BfclEntry | None = None  # a BFCL question or multi-turn entry: BFCL grades it


@dataclass(frozen=True, slots=True)
class Item:
    id: str
    messages: tuple[dict[str, Any], ...]
    system: str | None = None
    tools: tuple[dict[str, Any], ...] = ()  # OpenAI function specs, catalogue names resolved
    expect: Expect | None = None
    tags: tuple[str, ...] = ()
    category: str | None = None
    complexity: str | None = None
    intent: str | None = None
    surface: str | None = None
    language: str | None = None
    sensitive: tuple[str, ...] = ()  # names that must never leave the machine (masking audits)
    sources: tuple[dict[str, Any], ...] = ()  # {"id", "text", "url"?, "title"?} for grounding
    line: int = 0
    tools_in_prose: ToolsInProse | None = None  # the item's own words for its tools in prose
    temperature: float | None = None  # the item's own sampling temperature (BFCL's 0.001)

    def request(self, **kw: Any) -> ChatRequest:
        """The item as a ChatRequest; keyword arguments (max_tokens, temperature, ...) win.

        Copies, so a tool loop that appends to the conversation never changes the item.
        System messages written inside `messages` join `system` (not every API takes them
        inline: Gemini wants a separate system instruction)."""
        systems = [self.system] if self.system else []
        messages = []
        for m in self.messages:
            if m.get("role") == "system":
                systems.append(_content_text(m.get("content")))
            else:
                messages.append(copy.deepcopy(m))
        fields: dict[str, Any] = {
            "messages": messages,
            "system": "\n\n".join(systems) if systems else None,
            "tools": [copy.deepcopy(t) for t in self.tools] or None,
            "tools_in_prose": self.tools_in_prose,
            "temperature": self.temperature,
        }
        fields.update(kw)
        return ChatRequest(**fields)

    @property
    def prompt(self) -> str:
        """The last user message's text, for logs and for grounding's evidence."""
        for m in reversed(self.messages):
            if m.get("role") == "user":
                return _content_text(m.get("content"))
        return ""

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t["function"]["name"] for t in self.tools)


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    path: Path
    items: tuple[Item, ...]
    sha256: str  # of the file's bytes: a run records exactly which prompt set it ran
    limit: int | None = None  # the first N items were kept (`open_dataset`): a run records it

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def get(self, item_id: str) -> Item | None:
        return next((i for i in self.items if i.id == item_id), None)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


# ------------------------------------------------------------------ errors


class _Invalid(Exception):
    """Raised inside one item's checks; `_Loader` adds the file and line."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason


def _error(file: str, line: int, field: str, reason: str) -> ConfigError:
    return ConfigError(
        f"{file}:{line}: {field}: {reason}",
        code="DATASET_INVALID",
        details={"file": file, "line": line, "field": field, "reason": reason},
    )


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _str(value: Any, where: str, *, optional: bool = True, blank: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _Invalid(where, f"must be a string, not {_kind(value)}")
    if not blank and not value.strip():
        raise _Invalid(where, "must not be empty")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    """A list of strings; a lone string is a list of one."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise _Invalid(where, f"must be a list of strings, not {_kind(value)}")
    for i, v in enumerate(value):
        if not isinstance(v, str) or not v.strip():
            raise _Invalid(f"{where}[{i}]", "must be a non-empty string")
    return tuple(value)


def _bool(value: Any, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _Invalid(where, f"must be true or false, not {_kind(value)}")
    return value


# ------------------------------------------------------------------ one item


def _messages(value: Any) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or not value:
        raise _Invalid("messages", "must be a non-empty list of messages")
    out = []
    for i, m in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise _Invalid(where, f"must be an object, not {_kind(m)}")
        role = m.get("role")
        if role not in ROLES:
            raise _Invalid(f"{where}.role", f"must be one of {', '.join(ROLES)}")
        m = dict(m)
        content = m.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if not isinstance(part, dict) or part.get("type") not in ("text", "image_url"):
                    raise _Invalid(f"{where}.content[{j}]", "must be a text or image_url part")
        elif content is not None and not isinstance(content, str):
            raise _Invalid(f"{where}.content", "must be a string or a list of parts")
        calls = m.get("tool_calls")
        if calls is not None:
            if role != "assistant":
                raise _Invalid(f"{where}.tool_calls", "only an assistant message carries calls")
            m["tool_calls"] = _wire_calls(calls, f"{where}.tool_calls")
        if content is None and not m.get("tool_calls"):
            raise _Invalid(f"{where}.content", "required")
        if role == "tool":
            _str(m.get("tool_call_id"), f"{where}.tool_call_id", optional=False, blank=False)
        out.append(m)
    if not any(m["role"] == "user" for m in out):
        raise _Invalid("messages", "needs at least one user message")
    return tuple(out)


def _wire_calls(calls: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(calls, list) or not calls:
        raise _Invalid(where, "must be a non-empty list of calls")
    out = []
    for k, c in enumerate(calls):
        here = f"{where}[{k}]"
        function = c.get("function") if isinstance(c, dict) else None
        if not isinstance(function, dict):
            raise _Invalid(
                here, 'must be {"id", "type": "function", "function": {name, arguments}}'
            )
        _str(c.get("id"), f"{here}.id", optional=False, blank=False)
        _str(function.get("name"), f"{here}.function.name", optional=False, blank=False)
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, dict):
            # A dataset may write arguments as an object; the wire wants a JSON string.
            arguments = compact_json(arguments)
        elif not isinstance(arguments, str):
            raise _Invalid(f"{here}.function.arguments", "must be a JSON string or an object")
        out.append({**c, "type": "function", "function": {**function, "arguments": arguments}})
    return out


def _tools(value: Any, catalogue: dict[str, dict[str, Any]] | None, cat_name: str) -> tuple:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Invalid("tools", f"must be a list of tool names or specs, not {_kind(value)}")
    out: list[dict[str, Any]] = []
    for i, t in enumerate(value):
        where = f"tools[{i}]"
        if isinstance(t, str):
            if catalogue is None:
                raise _Invalid(where, f'"{t}" names a tool, but there is no tool catalogue')
            if t not in catalogue:
                raise _Invalid(where, f'"{t}" is not in the tool catalogue ({cat_name})')
            spec = copy.deepcopy(catalogue[t])
        else:
            problem = tool_spec_problem(t)
            if problem:
                raise _Invalid(where + problem[0], problem[1])
            spec = {"type": "function", "function": copy.deepcopy(t["function"])}
        name = spec["function"]["name"]
        if any(o["function"]["name"] == name for o in out):
            raise _Invalid(where, f'"{name}" is offered twice')
        out.append(spec)
    return tuple(out)


def _call_expectation(
    tool: Any, args: Any, where: str, tools: dict[str, dict[str, Any]]
) -> tuple[str, dict[str, Any] | None]:
    name = _str(tool, f"{where}.tool", optional=False, blank=False)
    assert name is not None
    if name not in tools:
        offered = ", ".join(tools) or "none"
        raise _Invalid(f"{where}.tool", f'"{name}" is not one of the item\'s tools ({offered})')
    if args is None:
        return name, None
    if not isinstance(args, dict):
        raise _Invalid(f"{where}.args", f"must be an object, not {_kind(args)}")
    params = (tools[name].get("parameters") or {}).get("properties")
    if isinstance(params, dict) and params:
        for key in args:
            if key not in params:
                raise _Invalid(f"{where}.args.{key}", f"is not a parameter of {name}")
    return name, args


def _expect(value: Any, tools: tuple[dict[str, Any], ...], sources: tuple) -> Expect | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Invalid("expect", f"must be an object, not {_kind(value)}")
    unknown = sorted(set(value) - EXPECT_FIELDS, key=str)
    if unknown:
        raise _Invalid(f"expect.{unknown[0]}", "unknown field")
    if not value:
        raise _Invalid("expect", "names no check")
    offered = {t["function"]["name"]: t["function"] for t in tools}
    tool, args = None, None
    if value.get("tool") is not None:
        tool, args = _call_expectation(value["tool"], value.get("args"), "expect", offered)
    elif value.get("args") is not None:
        raise _Invalid("expect.args", "needs expect.tool")
    calls: list[dict[str, Any]] = []
    raw_calls = value.get("calls")
    if raw_calls is not None:
        if not isinstance(raw_calls, list) or not raw_calls:
            raise _Invalid("expect.calls", 'must be a non-empty list of {"tool", "args"}')
        for i, c in enumerate(raw_calls):
            where = f"expect.calls[{i}]"
            if not isinstance(c, dict):
                raise _Invalid(where, f"must be an object, not {_kind(c)}")
            extra = sorted(set(c) - {"tool", "args"}, key=str)
            if extra:
                raise _Invalid(f"{where}.{extra[0]}", "unknown field")
            name, call_args = _call_expectation(c.get("tool"), c.get("args"), where, offered)
            calls.append({"tool": name, "args": call_args or {}})
    no_tool = _bool(value.get("no_tool"), "expect.no_tool")
    if no_tool and (tool or calls):
        raise _Invalid("expect.no_tool", "contradicts expect.tool / expect.calls")
    regex = _str(value.get("regex"), "expect.regex", blank=False)
    if regex is not None:
        try:
            re.compile(regex)
        except (re.error, OverflowError, RecursionError) as exc:
            raise _Invalid("expect.regex", f"does not compile: {exc}") from None
    schema = value.get("json_schema")
    if schema is not None:
        problem = schema_problem(schema)
        if problem:
            raise _Invalid("expect.json_schema", problem)
    grounded = _bool(value.get("grounded"), "expect.grounded")
    if grounded and not sources:
        raise _Invalid("expect.grounded", "needs the item's sources")
    return Expect(
        tool=tool,
        args=args,
        calls=tuple(calls),
        no_tool=no_tool,
        contains=_strings(value.get("contains"), "expect.contains"),
        regex=regex,
        json_schema=schema,
        language=_str(value.get("language"), "expect.language", blank=False),
        grounded=grounded,
        cleaned=_str(value.get("cleaned"), "expect.cleaned", blank=True),
    )


def _sources(value: Any) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Invalid("sources", f"must be a list of sources, not {_kind(value)}")
    seen: set[str] = set()
    for i, s in enumerate(value):
        where = f"sources[{i}]"
        if not isinstance(s, dict):
            raise _Invalid(where, 'must be {"id", "text", "url"?, "title"?}')
        extra = sorted(set(s) - {"id", "text", "url", "title"}, key=str)
        if extra:
            raise _Invalid(f"{where}.{extra[0]}", "unknown field")
        sid = _str(s.get("id"), f"{where}.id", optional=False, blank=False)
        _str(s.get("text"), f"{where}.text", optional=False, blank=False)
        _str(s.get("url"), f"{where}.url")
        _str(s.get("title"), f"{where}.title")
        if sid in seen:
            raise _Invalid(f"{where}.id", f'duplicate source id "{sid}"')
        seen.add(sid)  # type: ignore[arg-type]
    return tuple(dict(s) for s in value)


def _item(raw: Any, line: int, catalogue: dict[str, dict[str, Any]] | None, cat_name: str) -> Item:
    if not isinstance(raw, dict):
        raise _Invalid("item", f"must be an object, not {_kind(raw)}")
    unknown = sorted(set(raw) - ITEM_FIELDS, key=str)
    if unknown:
        raise _Invalid(str(unknown[0]), "unknown field")
    if "id" not in raw or raw["id"] is None:
        raise _Invalid("id", "required")
    item_id = _str(raw["id"], "id", optional=False, blank=False)
    has_prompt, has_messages = raw.get("prompt") is not None, raw.get("messages") is not None
    if has_prompt and has_messages:
        raise _Invalid("prompt", "give prompt or messages, not both")
    if not has_prompt and not has_messages:
        raise _Invalid("prompt", "required (or messages)")
    if has_prompt:
        prompt = _str(raw["prompt"], "prompt", optional=False, blank=False)
        messages: tuple[dict[str, Any], ...] = ({"role": "user", "content": prompt},)
    else:
        messages = _messages(raw["messages"])
    tools = _tools(raw.get("tools"), catalogue, cat_name)
    names = {t["function"]["name"] for t in tools}
    for i, m in enumerate(messages):
        for k, c in enumerate(m.get("tool_calls") or []):
            if c["function"]["name"] not in names:
                raise _Invalid(
                    f"messages[{i}].tool_calls[{k}].function.name",
                    f'"{c["function"]["name"]}" is not one of the item\'s tools',
                )
    sources = _sources(raw.get("sources"))
    texts: dict[str, Any] = {f: _str(raw.get(f), f, blank=False) for f in _TEXT_FIELDS}
    return Item(
        id=item_id,  # type: ignore[arg-type]
        messages=messages,
        system=_str(raw.get("system"), "system"),
        tools=tools,
        expect=_expect(raw.get("expect"), tools, sources),
        tags=_strings(raw.get("tags"), "tags"),
        sensitive=_strings(raw.get("sensitive"), "sensitive"),
        sources=sources,
        line=line,
        **texts,
    )


# ------------------------------------------------------------------ files


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _jsonl_records(file: str, text: str) -> Iterator[tuple[int, Any]]:
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            yield n, json.loads(stripped, object_pairs_hook=_no_duplicate_keys)
        except _DuplicateKey as exc:
            raise _error(file, n, str(exc.key), "duplicate key") from None
        except json.JSONDecodeError as exc:
            raise _error(file, n, "json", f"not JSON ({exc.msg}, column {exc.colno})") from None
        except (RecursionError, ValueError) as exc:
            raise _error(file, n, "json", f"not JSON ({type(exc).__name__})") from None


def _yaml_records(file: str, text: str) -> list[tuple[int, Any]]:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _error(file, line, "yaml", f"not YAML ({problem})") from None
    except (RecursionError, ValueError, TypeError) as exc:
        raise _error(file, 1, "yaml", f"not YAML ({type(exc).__name__})") from None
    if root is None or data is None:
        return []
    seq = root
    if isinstance(data, dict):
        extra = sorted((str(k) for k in data if k != "items"), key=str)
        if extra or "items" not in data:
            bad = extra[0] if extra else "items"
            reason = "a YAML prompt set is a list of items or {items: [...]}"
            raise _error(file, root.start_mark.line + 1, bad, reason)
        data = data["items"]
        seq = next((v for k, v in root.value if getattr(k, "value", None) == "items"), root)
    if data is None:
        return []
    if not isinstance(data, list) or not isinstance(seq, yaml.SequenceNode):
        raise _error(file, seq.start_mark.line + 1, "items", "must be a list of items")
    # safe_load and compose walk the same document: the n-th node is the n-th item.
    lines = [node.start_mark.line + 1 for node in seq.value]
    if len(lines) != len(data):  # never seen; a line number is not worth a crash
        lines = [seq.start_mark.line + 1] * len(data)
    return list(zip(lines, data, strict=True))


def _resolve_catalogue(
    path: Path, catalogue: str | Path | dict[str, Any] | None
) -> tuple[dict[str, dict[str, Any]] | None, str]:
    if isinstance(catalogue, dict):
        return catalogue_from(catalogue), "the catalogue given"
    if catalogue is not None:
        return load_catalogue(catalogue), shown_path(catalogue)
    beside = path.parent / "tools.json"
    if beside.is_file() and beside.resolve() != path.resolve():
        return load_catalogue(beside), shown_path(beside)
    return None, "none"


def load_dataset(
    path: str | Path, *, catalogue: str | Path | dict[str, Any] | None = None
) -> Dataset:
    """Read and validate a whole prompt set. The first problem raises ConfigError
    `DATASET_INVALID` as `FILE:LINE: FIELD: reason`; nothing is sent before that."""
    path = Path(path)
    file = shown_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _error(file, 0, "file", f"cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _error(file, line, "file", "is not UTF-8 text") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        records: list[tuple[int, Any]] | Iterator[tuple[int, Any]] = _yaml_records(file, text)
    else:
        records = _jsonl_records(file, text)
    cat, cat_name = _resolve_catalogue(path, catalogue)
    items: list[Item] = []
    first_line: dict[str, int] = {}
    for line, raw in records:
        try:
            item = _item(raw, line, cat, cat_name)
        except _Invalid as bad:
            raise _error(file, line, bad.field, bad.reason) from None
        if item.id in first_line:
            raise _error(
                file, line, "id", f'duplicate id "{item.id}" (first at line {first_line[item.id]})'
            )
        first_line[item.id] = line
        items.append(item)
    if not items:
        raise _error(file, 1, "file", "holds no items")
    return Dataset(
        name=path.stem, path=path, items=tuple(items), sha256=hashlib.sha256(data).hexdigest()
    )


BFCL_PREFIX = "bfcl:"  # a dataset argument naming BFCL categories: `bfcl:simple_python,multiple`


def open_dataset(
    spec: str | Path, *, limit: int | None = None, bfcl_source: str | Path | None = None
) -> Dataset:
    """What a run's dataset argument names: a prompt-set file, or `bfcl:<categories>` (BFCL's
    questions, read from `workbench bfcl fetch`'s cache or `bfcl_source`). `limit` keeps the
    first N items (per category for BFCL); the dataset's hash says so, so that resuming
    checks it is the same questions."""
    if isinstance(spec, str) and spec.startswith(BFCL_PREFIX):
        from workbench.eval.suites.bfcl.loader import bfcl_dataset  # only BFCL runs load it

        return bfcl_dataset(spec[len(BFCL_PREFIX) :], source=bfcl_source, limit=limit)
    dataset = load_dataset(spec)
    if limit is None:
        return dataset
    if limit < 1:
        raise ConfigError("--limit must be at least 1", code="RUN_INVALID")
    sha = hashlib.sha256(f"{dataset.sha256}:limit={limit}".encode()).hexdigest()
    return dataclasses.replace(dataset, items=dataset.items[:limit], sha256=sha, limit=limit)


__all__ = ["Dataset", "Expect", "Item", "load_dataset", "open_dataset"]
