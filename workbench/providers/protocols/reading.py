"""What every family reader shares: the offer it reads against, what it reports, and the rules
that make a JSON object a call rather than data.

A reader gets the whole reply and the `Offer` (the tool names, and each tool's parameter
schema when known) and returns a `Reading`: the calls it found, each with the span of text it
occupied, plus spans that are only markup (a stray `[TOOL_CALLS]`, a wrapper token). The
registry then resolves overlaps between families, removes the spans and tidies the rest.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.providers.protocols.jsonish import (
    Args,
    args_from_value,
    compact_json,
    json_at,
    match_bracket,
)
from workbench.types import ToolCall

__all__ = [
    "Family",
    "Found",
    "Marker",
    "Offer",
    "Reading",
    "Seeker",
    "block_calls",
    "blocks",
    "broken_call",
    "call_from_object",
    "calls_in_json_list",
    "cut_list_calls",
    "python_literal",
    "to_tool_calls",
    "typed_value",
    "wrapped_json",
]


@dataclass(frozen=True, slots=True)
class Offer:
    """The tools a reply may call: names, and parameter schemas when the request had them."""

    names: frozenset[str]
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # False for a piece of a reply that does not begin it (a stream's held region): the
    # whole-reply shapes (a reply that is only a JSON call, a list) do not apply there.
    at_start: bool = True

    def param(self, tool: str, key: str) -> Mapping[str, Any] | None:
        props = self.schemas.get(tool, {}).get("properties")
        got = props.get(key) if isinstance(props, Mapping) else None
        return got if isinstance(got, Mapping) else None


@dataclass(slots=True)
class Found:
    """One call read from prose: the span it occupied (removed from the text the user sees;
    an empty span keeps the text), and its arguments as every reader reports them."""

    start: int
    end: int
    name: str
    args: Args
    family: str
    extra: list[tuple[int, int]] = field(default_factory=list)  # markup that goes with it


@dataclass(slots=True)
class Reading:
    calls: list[Found] = field(default_factory=list)
    markup: list[tuple[int, int]] = field(default_factory=list)


Reader = Callable[[str, Offer], Reading]


@dataclass(frozen=True, slots=True)
class Marker:
    """A literal a family's call starts with, and the literal that closes its region (None:
    the region runs to the end of the reply; "": the region is the token alone). The pre-scan
    looks for `open`; a stream holds text from `open` until `close` (or its end) before
    letting the reader see it."""

    open: str
    close: str | None = None


@dataclass(frozen=True, slots=True)
class Family:
    """One format of prose tool calls. `triggers` are extra regular expressions for shapes
    without a literal opener (a pythonic list at the end of the reply); a plain literal one
    joins the pre-scan's one alternation, a pattern is searched on its own (after `needs`);
    `starts` names the first characters of a whole-reply shape; `example` writes one call the
    way this family writes it (what a prompt asks for)."""

    name: str
    markers: tuple[Marker, ...]
    read: Reader
    example: Callable[[str, dict[str, Any]], str]
    triggers: tuple[str, ...] = ()
    # Whole-reply shapes: the family may be present when the reply (after an optional fence
    # line) starts with one of these characters.
    starts: str = ""
    # A lowercase word the reply must hold before the triggers are worth a regex search.
    needs: str = ""
    # Bare-text values (XML-style parameters) are only known complete at their close: a call of
    # such a family left open at the end of the reply is truncated even if it reads.
    needs_close: bool = False
    # The calls of one turn go in one list (`[f(), g()]`), not one block each.
    one_list: bool = False


def to_tool_calls(found: Iterable[Found]) -> list[ToolCall]:
    """The calls read, as the adapters return them: ids `text_{k}_{name}`, in order."""
    out: list[ToolCall] = []
    for k, f in enumerate(found):
        args, raw, reason = f.args
        out.append(
            ToolCall(
                id=f"text_{k}_{f.name}",
                name=f.name,
                arguments=args,
                raw_arguments=raw,
                invalid=reason is not None,
                invalid_reason=reason,
                source="text",
                family=f.family,
            )
        )
    return out


# --------------------------------------------------------------------------- call objects


def _looks_like_schema(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "object" and "properties" in value


def call_from_object(
    value: Any,
    offer: Offer,
    *,
    name_keys: tuple[str, ...] = ("name",),
    arg_keys: tuple[str, ...] = ("arguments", "parameters"),
    need_args: bool = False,
) -> tuple[str, Args] | None:
    """A `{"name": …, "arguments" | "parameters": …}` object as a call, or None when it names no
    offered tool or is not a call: a tool *definition* echoed back (a description, or a JSON
    Schema where the arguments would be) is data, however call-shaped."""
    if not isinstance(value, dict):
        return None
    name = next((value[k] for k in name_keys if isinstance(value.get(k), str)), None)
    if name is None or name not in offer.names:
        return None
    key = next((k for k in arg_keys if k in value), None)
    if key is None and need_args:
        return None
    args = value.get(key) if key is not None else None
    if "description" in value or (key != "arguments" and _looks_like_schema(args)):
        declared = offer.schemas.get(name, {}).get("properties", {})
        if not (isinstance(declared, Mapping) and {"type", "properties"} <= set(declared)):
            return None
    return name, args_from_value(args)


def broken_call(body: str, offer: Offer) -> tuple[str, Args] | None:
    """Unreadable JSON that still names an offered tool as its first key: the call is kept,
    marked (`truncated` when its brackets never close)."""
    m = re.match(
        r'\s*\[?\s*\{\s*(?:"tool_call_id"\s*:\s*"[^"]*"\s*,\s*)?"(?:name|tool_name)"\s*:\s*"([^"\\]{1,200})"',
        body,
    )
    if m is None or m.group(1) not in offer.names:
        return None
    am = re.search(r'"(?:arguments|parameters)"\s*:\s*', body)
    raw = body[am.end() :].strip() if am else body.strip()
    closed = body.lstrip()[:1] in "{[" and match_bracket(body.lstrip(), 0) is not None
    if closed and raw.endswith("}"):
        raw = raw[:-1].strip()
    return m.group(1), ({}, raw, "not_json" if closed else "truncated")


def cut_list_calls(
    text: str, i: int, offer: Offer, **keys: Any
) -> list[tuple[int, int, str, Args]] | None:
    """A JSON list of call objects opening at `i` and cut off by the end of the reply: its
    complete elements as calls, the one being written as a truncated call (when its name made
    it out). None when an element is not call-shaped (then the list is data)."""
    out: list[tuple[int, int, str, Args]] = []
    j = i + 1
    while True:
        while j < len(text) and text[j] in " \t\r\n,":
            j += 1
        if j >= len(text):
            return out or None
        if text[j] != "{":
            return None
        got = json_at(text, j)
        if got is None:
            broken = broken_call(text[j:], offer)
            if broken is not None:
                out.append((j, len(text), *broken))
            return out or None
        call = call_from_object(got[0], offer, **keys)
        if call is None and not (isinstance(got[0], dict) and {"name", "tool_name"} & set(got[0])):
            return None
        if call is not None:
            out.append((j, got[1], *call))
        j = got[1]


def calls_in_json_list(
    value: Any, offer: Offer, **keys: Any
) -> tuple[list[tuple[str, Args]], bool] | None:
    """The calls of a JSON list of call objects, and whether every element was one of an
    offered tool; None when an element is not call-shaped at all (then the list is data)."""
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    calls: list[tuple[str, Args]] = []
    for item in items:
        got = call_from_object(item, offer, **keys)
        if got is None:
            if not isinstance(item, dict) or not any(k in item for k in ("name", "tool_name")):
                return None
            continue
        calls.append(got)
    return calls, len(calls) == len(items)


def wrapped_json(
    text: str,
    offer: Offer,
    family: str,
    open_re: re.Pattern[str],
    close: str | None,
    *,
    lists: bool = True,
    objects: bool = True,
    **keys: Any,
) -> Reading:
    """The common shape "marker, then a JSON call object or a list of them, then an optional
    closing marker". A body left open at the end of the reply is a truncated call when its
    name can be read, else markup; a body that is not JSON is left as text."""
    out = Reading()
    pos = 0
    closes = Seeker(text, close) if close else None
    opens = list(open_re.finditer(text))
    for k, m in enumerate(opens):
        if m.start() < pos:
            continue
        i = m.end()
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        # A body ends at its close, or at the next opener (never runs into the next call).
        hit = closes.find(i) if closes else None
        nxt = opens[k + 1].start() if k + 1 < len(opens) else len(text)
        limit = min(hit[0], nxt) if hit else nxt
        if i >= len(text) or text[i] not in "{[" or (text[i] == "[" and not lists):
            continue
        if text[i] == "{" and not objects:
            continue
        got = json_at(text, i, limit)
        if got is None:
            # Not JSON: a call still, marked, when its name can be read (cut off at the end of
            # the reply, or written wrong); a cut body naming no tool is markup.
            shut = match_bracket(text, i, limit)
            cut = shut is None and limit == len(text)
            if cut and text[i] == "[" and (items := cut_list_calls(text, i, offer, **keys)):
                out.calls += [Found(m.start(), len(text), n, a, family) for _, _, n, a in items]
                break
            broken = broken_call(text[i : shut or limit], offer)
            end = len(text) if cut else _after_close(text, shut or limit, close)
            if broken is not None:
                out.calls.append(Found(m.start(), end, *broken, family))
            elif cut:
                out.markup.append((m.start(), len(text)))
            pos = end
            continue
        value, end = got
        found = calls_in_json_list(value, offer, **keys)
        if found is None or not found[0]:
            continue
        calls, complete = found
        span_end = _after_close(text, end, close)
        start, stop = (m.start(), span_end) if complete else (m.start(), m.start())
        for name, args in calls:
            out.calls.append(Found(start, stop, name, args, family))
        pos = span_end
    return out


class Seeker:
    """The next occurrence of `needle` at or after a position, for positions that only grow.

    Why: readers look for each opener's close; a reply with thousands of openers and no close
    would rescan to the end for every one of them (quadratic on a 1 MB reply). Remembering the
    last answer makes the whole walk one pass."""

    def __init__(self, text: str, needle: str | re.Pattern[str]) -> None:
        self.text, self.needle = text, needle
        self.at: tuple[int, int] | None = None  # (start, end) of the last hit
        self.gone = False

    def find(self, i: int) -> tuple[int, int] | None:
        """(start, end) of the first occurrence at or after `i`, or None."""
        if self.gone:
            return None
        if self.at is None or self.at[0] < i:
            if isinstance(self.needle, str):
                j = self.text.find(self.needle, i)
                self.at = (j, j + len(self.needle)) if j >= 0 else None
            else:
                m = self.needle.search(self.text, i)
                self.at = m.span() if m else None
            self.gone = self.at is None
        return self.at


def blocks(text: str, open_: str, close: str) -> list[tuple[int, int, str, bool]]:
    """(start, end, body, closed) of every `open_ … close` block; a block left open runs to
    the next opener or the end of the reply."""
    out = []
    pos = 0
    closes = Seeker(text, close)
    while (i := text.find(open_, pos)) >= 0:
        hit = closes.find(i + len(open_))
        j = hit[0] if hit else -1
        nxt = text.find(open_, i + len(open_))
        if j >= 0 and (nxt < 0 or j < nxt):
            out.append((i, j + len(close), text[i + len(open_) : j], True))
            pos = j + len(close)
        else:
            end = nxt if nxt >= 0 else len(text)
            out.append((i, end, text[i + len(open_) : end], False))
            pos = end
    return out


def block_calls(
    start: int, end: int, calls: list[tuple[str, Args]], total: int, family: str
) -> list[Found]:
    """The calls of one block: the block goes from the text when all `total` of its calls were
    read (offered names), else it stays as evidence and the calls are kept."""
    a, b = (start, end) if len(calls) == total else (start, start)
    return [Found(a, b, name, args, family) for name, args in calls]


def _after_close(text: str, end: int, close: str | None) -> int:
    """`end`, or past the closing marker when only whitespace separates it."""
    if not close:
        return end
    j = end
    while j < len(text) and text[j] in " \t\r\n":
        j += 1
    return j + len(close) if text.startswith(close, j) else end


# --------------------------------------------------------------------------- values


def typed_value(raw: str, schema: Mapping[str, Any] | None) -> Any:
    """A parameter value written as bare text (XML-style families) typed the way the tool's
    schema says: `True` under a boolean is `true`, `3` under an integer is 3, an object or
    array is parsed; a string stays as written. Without a schema, JSON is tried (and Python's
    `True`/`False`/`None`), else the text stays a string."""
    types = schema.get("type") if schema else None
    kinds = (
        set(types) if isinstance(types, list) else ({types} if isinstance(types, str) else set())
    )
    if kinds & {"string"} and not kinds - {"string", "null"}:
        return raw
    low = raw.strip().lower()
    if "boolean" in kinds and low in ("true", "false"):
        return low == "true"
    if kinds & {"integer", "number"}:
        try:
            return int(raw.strip())
        except ValueError:
            try:
                return float(raw.strip())
            except ValueError:
                pass
    if "null" in kinds and low in ("null", "none"):
        return None
    if not kinds and raw.strip() in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[raw.strip()]  # Python's spelling
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        pass
    if kinds & {"object", "array"}:
        try:
            return python_literal(ast.parse(raw.strip(), mode="eval").body)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    return raw


def python_literal(node: ast.AST) -> Any:
    """A Python literal as JSON: tuples are lists, `true`/`false`/`null` (JSON spellings a model
    mixes in) are read as such; anything that is not a plain literal raises ValueError."""
    if isinstance(node, ast.Name) and node.id in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[node.id]
    if isinstance(node, ast.Constant) and (
        node.value is None or isinstance(node.value, str | int | float | bool)
    ):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [python_literal(x) for x in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = python_literal(k) if k is not None else None
            if not isinstance(key, str):
                raise ValueError("not a JSON object key")
            out[key] = python_literal(v)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = python_literal(node.operand)
        if isinstance(inner, int | float) and not isinstance(inner, bool):
            return -inner if isinstance(node.op, ast.USub) else inner
    raise ValueError("not a JSON literal")


def xml_args(pairs: list[tuple[str, str]], tool: str, offer: Offer) -> Args:
    """Arguments from (key, bare text value) pairs, each typed by the tool's schema."""
    args = {k: typed_value(v, offer.param(tool, k)) for k, v in pairs}
    return args, compact_json(args), None
