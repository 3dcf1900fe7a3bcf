"""Tool calls written in prose, and native calls read off the wire.

Half of the free models cannot emit a native `tool_calls` entry; they narrate the call in one
of a handful of conventions instead. A native-only read hands that narration back as a finished
answer, and the turn reports a lookup that never happened — so every shape below is read.

The other half of the rule matters as much: only these *shapes* count. A mere mention of a tool
("use the get_weather tool", `get_weather(city)` in an explanation, a JSON object in the middle
of prose) is not a call, because a false positive records a capability the model does not have.

Shapes read by `read_text_tool_calls` (names must be among the offered tools):

- ``TOOL: name`` / ``ARGS: {json}`` lines (the ai-kit line protocol);
- Hermes/Qwen ``<tool_call>{"name": …, "arguments": …}</tool_call>`` — also with the opening
  tag missing, ``"parameters"`` as an alias, arguments possibly a JSON string;
- ``<tool_call name="…">{json}</tool_call>``;
- ``<function=name>{json}</function>`` (and Qwen3-Coder's ``<parameter=key>value</parameter>``);
- a reply that is ONLY a JSON call object (or a list of them), optionally fenced;
- a reply that is ONLY a pythonic call list ``[f(a=1), g(b="x")]`` (literal keyword values).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from typing import Any

from workbench.types import InvalidReason, ToolCall

__all__ = [
    "TEXT_TOOL_PROTOCOL_HINT",
    "compact_json",
    "merge_tool_calls",
    "native_tool_call",
    "parse_text_tool_calls",
    "read_text_tool_calls",
    "safe_json_object",
    "strip_tool_call_lines",
    "tool_names_from",
]

TEXT_TOOL_PROTOCOL_HINT = "\n".join(
    [
        "If you need a tool and cannot call it natively, write exactly these two lines:",
        "TOOL: tool_name",
        'ARGS: {"argument": "value"}',
        "Use one of the tool names offered, and put the arguments on the ARGS line as one",
        "JSON object (write {} when the tool takes none).",
        "Then stop: write nothing else.",
    ]
)


def compact_json(x: Any) -> str:
    """JSON like JavaScript's `JSON.stringify`: compact, non-ASCII kept."""
    return json.dumps(x, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- JSON helpers

_FENCE_OPEN = re.compile(r"^```[\w-]*[ \t]*\n?")
_FENCE_CLOSE = re.compile(r"\n?[ \t]*```$")


def _unfence(raw: str) -> str:
    t = raw.strip()
    t = _FENCE_OPEN.sub("", t, count=1)
    t = _FENCE_CLOSE.sub("", t, count=1)
    return t.strip()


def match_object(s: str, start: int) -> int | None:
    """Index just past the `}` matching the `{` at `start` (string- and escape-aware), or None
    when the object does not close inside `s`."""
    depth = 0
    in_str = False
    esc = False
    for i in range(start, len(s)):
        c = s[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _object_slice(s: str) -> tuple[int, int] | None:
    start = s.find("{")
    if start < 0:
        return None
    end = match_object(s, start)
    return None if end is None else (start, end)


def safe_json_object(raw: str | None) -> dict[str, Any] | None:
    """The first JSON object in `raw` (fences tolerated), or None. None and `{}` stay distinct:
    None means "nothing readable", `{}` means "a call that takes no arguments"."""
    if not isinstance(raw, str):
        return None
    t = _unfence(raw)
    if not t:
        return None
    if t == "{}":
        return {}
    sl = _object_slice(t)
    if sl is None:
        return None
    try:
        value = json.loads(t[sl[0] : sl[1]])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _why_unreadable(raw: str) -> InvalidReason:
    try:
        json.loads(_unfence(raw))
    except ValueError:
        return "not_json"
    return "not_object"


def _args_from_text(raw: str) -> tuple[dict[str, Any], str, InvalidReason | None]:
    """(arguments, raw_arguments, invalid_reason) from argument text: strict JSON first, then
    the first balanced object; empty means no arguments."""
    t = _unfence(raw)
    if not t:
        return {}, "{}", None
    try:
        value = json.loads(t)
    except ValueError:
        value = safe_json_object(t)
        if value is None:
            return {}, raw.strip(), "not_json"
    if isinstance(value, dict):
        return value, compact_json(value), None
    return {}, raw.strip(), "not_object"


def _args_from_value(value: Any) -> tuple[dict[str, Any], str, InvalidReason | None]:
    """Arguments given as a JSON value inside a call object: an object, a JSON string, or absent."""
    if value is None:
        return {}, "{}", None
    if isinstance(value, dict):
        return value, compact_json(value), None
    if isinstance(value, str):
        return _args_from_text(value)
    return {}, compact_json(value), "not_object"


def tool_names_from(tools: Any) -> list[str]:
    """The non-empty string `function.name` values of an OpenAI-shaped tools list."""
    if not isinstance(tools, list):
        return []
    names: list[str] = []
    for t in tools:
        fn = t.get("function") if isinstance(t, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(name, str) and name:
            names.append(name)
    return names


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


# --------------------------------------------------------------------------- TOOL: / ARGS: lines

LINE_RE = re.compile(r"^[ \t]*(?:[-*>][ \t]+)?(?:\*\*)?(TOOL|ARGS)(?:\*\*)?[ \t]*[:=](.*)$", re.I)
_EMPTY_FENCES = re.compile(r"```(?:json)?\s*```")


def _collapse(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text)


def _tidy(text: str) -> str:
    return _collapse(text).strip()


def _clean_name(value: str) -> str:
    name = value.strip().replace("`", "").replace("*", "")
    name = name.split("(", 1)[0].strip()
    if name and name[-1] in ".,;":
        name = name[:-1]
    return name.strip()


# A found call: (start, end, name, arguments, raw_arguments, invalid_reason), plus extra spans.
_Found = tuple[int, int, str, dict[str, Any], str, InvalidReason | None]


def _lines_with_offsets(text: str) -> list[tuple[int, str, int]]:
    """(start, line without newline or \\r, end including the newline) for every line."""
    out: list[tuple[int, str, int]] = []
    pos = 0
    for piece in text.split("\n"):
        end = pos + len(piece)
        out.append((pos, piece.rstrip("\r"), min(end + 1, len(text))))
        pos = end + 1
    return out


def _line_calls(
    text: str, names: set[str], taken: list[tuple[int, int]]
) -> tuple[list[_Found], list[tuple[int, int]]]:
    """TOOL/ARGS calls (ai-kit's line protocol) and the line spans they occupy."""
    lines = _lines_with_offsets(text)
    keys = [LINE_RE.match(line) for _, line, _ in lines]

    def free(i: int) -> bool:
        s, _, e = lines[i]
        return not any(a < e and s < b for a, b in taken)

    found: list[_Found] = []
    spans: list[tuple[int, int]] = []
    for i, m in enumerate(keys):
        if m is None or m.group(1).upper() != "TOOL" or not free(i):
            continue
        name = _clean_name(m.group(2))
        if name not in names:
            continue
        spans.append((lines[i][0], lines[i][2]))
        args_at = None
        for j in range(i + 1, min(i + 4, len(lines))):
            mj = keys[j]
            if mj is not None and mj.group(1).upper() == "TOOL":
                break
            if mj is not None and free(j):
                args_at = j
                break
        if args_at is None:
            found.append((lines[i][0], lines[i][2], name, {}, "{}", None))
            continue
        j = args_at
        value = keys[j].group(2)  # type: ignore[union-attr]
        last = j
        obj = safe_json_object(value)
        if obj is None:
            # The object may run over the next lines: join up to 8 (stopping at the next
            # protocol line, so one call's ARGS never swallow the next call's).
            stop = j + 1
            while stop < min(j + 8, len(lines)) and keys[stop] is None:
                stop += 1
            joined = "\n".join(line for _, line, _ in lines[j:stop])
            cut = re.search(r"[:=]", joined)
            rest = joined[cut.end() :] if cut else joined
            obj = safe_json_object(rest)
            sl = _object_slice(rest) if obj is not None else None
            if sl is not None:
                last = j + rest[: sl[1]].count("\n")
                # A fence opened inside the ARGS lines closes after the object: take it too.
                fenced = any(ln.lstrip().startswith("```") for _, ln, _ in lines[j : last + 1])
                if fenced and last + 1 < len(lines) and lines[last + 1][1].strip() == "```":
                    last += 1
        spans.append((lines[j][0], lines[last][2]))
        if obj is not None:
            found.append((lines[i][0], lines[i][2], name, obj, compact_json(obj), None))
        elif not value.strip():
            found.append((lines[i][0], lines[i][2], name, {}, "{}", None))
        else:
            raw = value.strip()
            found.append((lines[i][0], lines[i][2], name, {}, raw, _why_unreadable(raw)))
    return found, spans


# --------------------------------------------------------------------------- tag shapes

_TC_OPEN = re.compile(r"<tool_call\b([^>]*)>", re.I)
_TC_CLOSE = re.compile(r"</tool_call\s*>", re.I)
_FN_OPEN = re.compile(r"<function=([^>\s]+)\s*>", re.I)
_FN_CLOSE = re.compile(r"</function\s*>", re.I)
_NAME_ATTR = re.compile(r"""\bname\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.I)
_PARAM = re.compile(
    r"<parameter=([^>\s]+)\s*>(.*?)(?:</parameter\s*>|(?=<parameter=)|$)", re.I | re.S
)


def _call_from_object(
    body: str, names: set[str]
) -> tuple[str, dict[str, Any], str, InvalidReason | None] | None:
    """A `{"name": …, "arguments" | "parameters": …}` body, or None when it names no offered tool."""
    t = _unfence(body)
    try:
        value = json.loads(t)
    except ValueError:
        sl = _object_slice(t)
        value = None
        if sl is not None:
            try:
                value = json.loads(t[sl[0] : sl[1]])
            except ValueError:
                value = None
    if isinstance(value, dict):
        name = value.get("name")
        if not isinstance(name, str) or name not in names:
            return None
        args = value.get("arguments", value.get("parameters"))
        return (name, *_args_from_value(args))
    # Unreadable JSON that still names an offered tool: keep the call, invalid.
    m = re.search(r'"name"\s*:\s*"([^"]+)"', t)
    if m is None or m.group(1) not in names:
        return None
    am = re.search(r'"(?:arguments|parameters)"\s*:\s*(.*)$', t, re.S)
    raw = am.group(1).strip() if am else t
    if am and raw.endswith("}"):
        raw = raw[:-1].strip()
    return m.group(1), {}, raw, "not_json"


def _function_args(body: str) -> tuple[dict[str, Any], str, InvalidReason | None]:
    if re.search(r"<parameter=", body, re.I):
        args: dict[str, Any] = {}
        for pm in _PARAM.finditer(body):
            raw = pm.group(2).strip()
            try:
                args[pm.group(1)] = json.loads(raw)
            except ValueError:
                args[pm.group(1)] = raw
        return args, compact_json(args), None
    return _args_from_text(body)


def _body_end(text: str, after: int, close: re.Pattern[str], limit: int) -> tuple[int, int] | None:
    """(body end, span end) of a tag opened at `after`: its closing tag before `limit`, else a
    balanced JSON object right after the opening tag (an unclosed tag)."""
    cm = close.search(text, after, limit)
    if cm is not None:
        return cm.start(), cm.end()
    m = re.compile(r"\s*").match(text, after)
    start = m.end() if m else after
    if start < len(text) and text[start] == "{":
        end = match_object(text, start)
        if end is not None:
            return end, end
    return None


def _tag_calls(text: str, names: set[str]) -> list[_Found]:
    found: list[_Found] = []
    events = sorted(
        [(m.start(), "open", m) for m in _TC_OPEN.finditer(text)]
        + [(m.start(), "close", m) for m in _TC_CLOSE.finditer(text)]
        + [(m.start(), "fn", m) for m in _FN_OPEN.finditer(text)],
        key=lambda e: e[0],
    )
    pos = 0
    for start, kind, m in events:
        if start < pos:
            continue
        if kind == "open":
            nxt = _TC_OPEN.search(text, m.end())
            limit = nxt.start() if nxt else len(text)
            ends = _body_end(text, m.end(), _TC_CLOSE, limit)
            if ends is None:
                continue
            body = text[m.end() : ends[0]]
            attr = _NAME_ATTR.search(m.group(1))
            inner = _FN_OPEN.match(body.strip())
            if attr:
                name = next(g for g in attr.groups() if g is not None).strip()
                if name not in names:
                    continue
                call = (name, *_args_from_text(body))
            elif inner is not None:
                name = inner.group(1)
                if name not in names:
                    continue
                rest = body.strip()[inner.end() :]
                cm = _FN_CLOSE.search(rest)
                call = (name, *_function_args(rest[: cm.start()] if cm else rest))
            else:
                got = _call_from_object(body, names)
                if got is None:
                    continue
                call = got
            found.append((start, ends[1], *call))
            pos = ends[1]
        elif kind == "close":
            # A closing tag with no opening one: the JSON call object right before it, starting
            # at the beginning of a line (Qwen drops the opening tag now and then).
            before = text[pos:start].rstrip()
            target = pos + len(before)
            if not before.endswith("}"):
                continue
            for lm in re.finditer(r"(?m)^[ \t]*\{", text[pos:target]):
                s = pos + lm.end() - 1
                if match_object(text, s) == target:
                    got = _call_from_object(text[s:target], names)
                    if got is not None:
                        found.append((s, m.end(), *got))
                        pos = m.end()
                    break
        else:  # <function=name>
            name = m.group(1)
            nxt = _FN_OPEN.search(text, m.end())
            limit = nxt.start() if nxt else len(text)
            ends = _body_end(text, m.end(), _FN_CLOSE, limit)
            if ends is None or name not in names:
                continue
            found.append((start, ends[1], name, *_function_args(text[m.end() : ends[0]])))
            pos = ends[1]
    return found


# --------------------------------------------------------------------------- whole-reply shapes

_WHOLE_FENCE = re.compile(r"```[\w-]*[ \t]*\n(.*?)\n?[ \t]*```", re.S)


def _literal(node: ast.AST) -> Any:
    value = ast.literal_eval(node)

    def plain(v: Any) -> Any:
        """The literal as JSON: a tuple (`point=(1, 2)`) is a list, nothing else is allowed."""
        if v is None or isinstance(v, str | int | float | bool):
            return v
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {k: plain(x) for k, x in v.items()}
        raise ValueError("not a JSON literal")

    return plain(value)


def _dotted_name(node: ast.expr) -> str | None:
    """`f` or a namespaced `math.factorial` (tools named with dots, as benchmarks name them)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _pythonic_calls(
    src: str, names: set[str]
) -> tuple[list[tuple[str, dict[str, Any], str, InvalidReason | None]], bool]:
    """Calls in a pythonic list, and whether every element was read as a call."""
    try:
        tree = ast.parse(src, mode="eval")
    except (SyntaxError, ValueError):
        return [], False
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return [], False
    calls: list[tuple[str, dict[str, Any], str, InvalidReason | None]] = []
    for el in tree.body.elts:
        name = _dotted_name(el.func) if isinstance(el, ast.Call) else None
        if not isinstance(el, ast.Call) or name is None:
            return [], False
        if name not in names or el.args or any(k.arg is None for k in el.keywords):
            continue  # positional arguments cannot be mapped to parameters: not a valid call
        try:
            args = {k.arg: _literal(k.value) for k in el.keywords if k.arg is not None}
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raw = ast.get_source_segment(src, el) or name
            calls.append((name, {}, raw, "not_json"))
            continue
        calls.append((name, args, compact_json(args), None))
    return calls, len(calls) == len(tree.body.elts)


def _whole_reply(
    text: str, names: set[str]
) -> tuple[list[tuple[str, dict[str, Any], str, InvalidReason | None]], bool]:
    t = text.strip()
    fm = _WHOLE_FENCE.fullmatch(t)
    if fm:
        t = fm.group(1).strip()
    if not t or t[0] not in "{[":
        return [], False
    try:
        value = json.loads(t)
    except ValueError:
        return _pythonic_calls(t, names) if t[0] == "[" else ([], False)
    items = value if isinstance(value, list) else [value]
    if not items:
        return [], False
    calls = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return [], False
        if "arguments" not in item and "parameters" not in item:
            return [], False
        if item["name"] in names:
            calls.append(
                (item["name"], *_args_from_value(item.get("arguments", item.get("parameters"))))
            )
    return calls, len(calls) == len(items)


# --------------------------------------------------------------------------- reading and stripping


def _to_calls(
    found: Iterable[tuple[str, dict[str, Any], str, InvalidReason | None]],
) -> list[ToolCall]:
    out: list[ToolCall] = []
    for k, (name, args, raw, reason) in enumerate(found):
        out.append(
            ToolCall(
                id=f"text_{k}_{name}",
                name=name,
                arguments=args,
                raw_arguments=raw,
                invalid=reason is not None,
                invalid_reason=reason,
                source="text",
            )
        )
    return out


def remove_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without `spans`; a code fence left empty around a removed span goes with it."""
    if not spans:
        return text
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    # Spans separated by whitespace only share a fence; the whitespace between them stays
    # (removing it would make the result depend on text far from either span).
    groups: list[list[list[int]]] = []
    for span in merged:
        if groups and not text[groups[-1][-1][1] : span[0]].strip():
            groups[-1].append(span)
        else:
            groups.append([span])
    for group in groups:
        first, last = group[0], group[-1]
        before = re.search(r"(?:^|\n)([ \t]*```[\w-]*[ \t]*\n\s*)$", text[: first[0]])
        after = re.match(r"\s*```[ \t]*(?:\n|$)", text[last[1] :])
        if before and after:
            first[0] = before.start(1)
            last[1] += after.end()
    out, pos = [], 0
    for s, e in merged:
        if s >= pos:
            out.append(text[pos:s])
            pos = e
    out.append(text[pos:])
    return "".join(out)


def find_protocol_spans(text: str, names: set[str]) -> tuple[list[ToolCall], list[tuple[int, int]]]:
    """Calls from the tag and line shapes (not the whole-reply ones), in text order, and the
    spans to remove."""
    tags = _tag_calls(text, names)
    taken = [(f[0], f[1]) for f in tags]
    lines, line_spans = _line_calls(text, names, taken)
    ordered = sorted(tags + lines, key=lambda f: f[0])
    return _to_calls(f[2:] for f in ordered), taken + line_spans


def read_text_tool_calls(text: str, valid_names: Iterable[str]) -> tuple[list[ToolCall], str]:
    """Every prose tool-call shape: (calls, text without the spans read as calls, tidied).
    No offered names → ([], text) untouched: a model does not narrate a call it was not offered."""
    names = {n for n in valid_names if isinstance(n, str) and n}
    if not names or not text:
        return [], text
    whole, complete = _whole_reply(text, names)
    if whole:
        # The list is removed only when every element was read: a partly read list is evidence.
        return _to_calls(whole), "" if complete else _tidy(text)
    calls, spans = find_protocol_spans(text, names)
    return calls, _tidy(remove_spans(text, spans))


def parse_text_tool_calls(text: str, valid_names: Iterable[str]) -> list[ToolCall]:
    """The TOOL:/ARGS: line protocol only (ai-kit's), ids `text_{k}_{name}`."""
    names = {n for n in valid_names if isinstance(n, str) and n}
    if not text or not names:
        return []
    found, _ = _line_calls(text, names, [])
    return _to_calls(f[2:] for f in found)


def strip_tool_call_lines(text: str) -> str:
    """Drop every TOOL/ARGS line and empty fence pairs, collapse blank runs, trim."""
    kept = [line for line in re.split(r"\r?\n", text) if not LINE_RE.match(line)]
    return _tidy(_EMPTY_FENCES.sub("", "\n".join(kept)))
