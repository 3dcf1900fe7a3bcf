"""`TOOL: name` / `ARGS: {json}` lines: the line protocol a model is asked for when it cannot
call natively and was seen using no other format (ai-kit's two-line protocol).

The lines may sit in a list item, in bold, or in a fence; ARGS may run over several lines; a
`TOOL:` line inside a sentence is a mention, not a call.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import (
    compact_json,
    match_bracket,
    match_object,
    safe_json_object,
    why_unreadable,
)
from workbench.providers.protocols.reading import Family, Found, Offer, Reading, to_tool_calls
from workbench.types import ToolCall

__all__ = ["FAMILY", "LINE_RE", "TEXT_TOOL_PROTOCOL_HINT"]

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

LINE_RE = re.compile(r"^[ \t]*(?:[-*>][ \t]+)?(?:\*\*)?(TOOL|ARGS)(?:\*\*)?[ \t]*[:=](.*)$", re.I)
# The pre-scan: `TOOL:` anywhere (the reader wants it at the start of a line; ARGS alone is
# never a call). Written to start with a character class, so the scan skips fast.
TRIGGER = r"[Tt][Oo][Oo][Ll](?:\*\*)?[ \t]*[:=]"


def _clean_name(value: str) -> str:
    name = value.strip().replace("`", "").replace("*", "")
    name = name.split("(", 1)[0].strip()
    if name and name[-1] in ".,;":
        name = name[:-1]
    return name.strip()


def _lines_with_offsets(text: str) -> list[tuple[int, str, int]]:
    """(start, line without newline or \\r, end including the newline) for every line."""
    out: list[tuple[int, str, int]] = []
    pos = 0
    for piece in text.split("\n"):
        end = pos + len(piece)
        out.append((pos, piece.rstrip("\r"), min(end + 1, len(text))))
        pos = end + 1
    return out


def read(text: str, offer: Offer) -> Reading:
    """TOOL/ARGS calls and the line spans they occupy (the TOOL line is the call's span, the
    ARGS lines are markup)."""
    lines = _lines_with_offsets(text)
    keys = [LINE_RE.match(line) if ":" in line or "=" in line else None for _, line, _ in lines]
    out = Reading()
    for i, m in enumerate(keys):
        if m is None or m.group(1).upper() != "TOOL":
            continue
        name = _clean_name(m.group(2))
        if name not in offer.names:
            continue
        start, end = lines[i][0], lines[i][2]
        args_at = None
        for j in range(i + 1, min(i + 4, len(lines))):
            mj = keys[j]
            if mj is not None:
                args_at = None if mj.group(1).upper() == "TOOL" else j
                break
        if args_at is None:
            out.calls.append(Found(start, end, name, ({}, "{}", None), FAMILY_NAME))
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
            brace = rest.find("{")
            close = match_object(rest, brace) if obj is not None and brace >= 0 else None
            if close is not None:
                last = j + rest[:close].count("\n")
                # A fence opened inside the ARGS lines closes after the object: take it too.
                fenced = any(ln.lstrip().startswith("```") for _, ln, _ in lines[j : last + 1])
                if fenced and last + 1 < len(lines) and lines[last + 1][1].strip() == "```":
                    last += 1
        extra = [(lines[j][0], lines[last][2])]
        if obj is not None:
            args: Any = (obj, compact_json(obj), None)
        elif not value.strip():
            # An empty ARGS line is no arguments, unless the reply ends on it (cut off).
            args = (
                ({}, "", "truncated")
                if lines[j][2] == len(text) and not text.endswith("\n")
                else ({}, "{}", None)
            )
        else:
            raw = value.strip()
            # An object the reply ends inside of was cut off, not written wrong.
            cut_off = lines[last][2] == len(text) and raw[:1] == "{"
            cut_off = cut_off and match_bracket(raw, 0) is None
            args = ({}, raw, "truncated" if cut_off else why_unreadable(raw))
        out.calls.append(Found(start, end, name, args, FAMILY_NAME, extra))
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return f"TOOL: {name}\nARGS: {compact_json(arguments)}"


FAMILY_NAME = "tool_lines"
FAMILY = Family(FAMILY_NAME, (), read, example, triggers=(TRIGGER,), needs="tool")


def parse_text_tool_calls(text: str, valid_names: Any) -> list[ToolCall]:
    """The TOOL:/ARGS: line protocol only (ai-kit's), ids `text_{k}_{name}`."""
    names = frozenset(n for n in valid_names if isinstance(n, str) and n)
    if not text or not names:
        return []
    return to_tool_calls(read(text, Offer(names)).calls)


_EMPTY_FENCES = re.compile(r"```(?:json)?\s*```")


def strip_tool_call_lines(text: str) -> str:
    """Drop every TOOL/ARGS line and empty fence pairs, collapse blank runs, trim."""
    kept = [line for line in re.split(r"\r?\n", text) if not LINE_RE.match(line)]
    return re.sub(r"\n{3,}", "\n\n", _EMPTY_FENCES.sub("", "\n".join(kept))).strip()
