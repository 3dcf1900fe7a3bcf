"""JSON as models write it: found inside prose, fenced, cut short, or given as a string.

Every family of prose tool calls carries its arguments as JSON somewhere (or as values typed
from the tool's schema), so the scanning rules live here once: brackets are matched string- and
escape-aware, `None` ("nothing readable") and `{}` ("a call with no arguments") stay distinct,
and unreadable arguments keep the call with a reason instead of dropping it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from workbench.types import InvalidReason

__all__ = [
    "Args",
    "args_from_text",
    "args_from_value",
    "compact_json",
    "json_at",
    "match_bracket",
    "match_object",
    "safe_json_object",
    "unfence",
    "why_unreadable",
]

# (arguments, raw_arguments, invalid_reason): what every reader reports for one call.
Args = tuple[dict[str, Any], str, InvalidReason | None]

_FENCE_OPEN = re.compile(r"^```[\w-]*[ \t]*\n?")
_FENCE_CLOSE = re.compile(r"\n?[ \t]*```$")
_PAIRS = {"{": "}", "[": "]"}


def compact_json(x: Any) -> str:
    """JSON like JavaScript's `JSON.stringify`: compact, non-ASCII kept."""
    return json.dumps(x, separators=(",", ":"), ensure_ascii=False)


def unfence(raw: str) -> str:
    """`raw` without one surrounding code fence (```json … ```), trimmed."""
    t = raw.strip()
    t = _FENCE_OPEN.sub("", t, count=1)
    t = _FENCE_CLOSE.sub("", t, count=1)
    return t.strip()


def match_bracket(s: str, start: int, limit: int | None = None) -> int | None:
    """Index just past the bracket closing the `{` or `[` at `start` (string- and escape-aware,
    both kinds nested), or None when it does not close before `limit`."""
    if start >= len(s) or s[start] not in _PAIRS:
        return None
    stack: list[str] = []
    in_str = esc = False
    end = len(s) if limit is None else min(limit, len(s))
    for i in range(start, end):
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
        elif c in _PAIRS:
            stack.append(_PAIRS[c])
        elif c == "}" or c == "]":
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return i + 1
    return None


def match_object(s: str, start: int) -> int | None:
    """Index just past the `}` matching the `{` at `start`, or None when it does not close."""
    return match_bracket(s, start) if start < len(s) and s[start] == "{" else None


def json_at(s: str, start: int, limit: int | None = None) -> tuple[Any, int] | None:
    """(value, end) of the JSON object or array opening at `start`, or None when it does not
    close before `limit` or is not JSON."""
    end = match_bracket(s, start, limit)
    if end is None:
        return None
    try:
        return json.loads(s[start:end]), end
    except (ValueError, RecursionError):
        return None


def safe_json_object(raw: str | None) -> dict[str, Any] | None:
    """The first JSON object in `raw` (fences tolerated), or None. None and `{}` stay distinct:
    None means "nothing readable", `{}` means "a call that takes no arguments"."""
    if not isinstance(raw, str):
        return None
    t = unfence(raw)
    if not t:
        return None
    if t == "{}":
        return {}
    start = t.find("{")
    got = json_at(t, start) if start >= 0 else None
    return got[0] if got is not None and isinstance(got[0], dict) else None


def why_unreadable(raw: str) -> InvalidReason:
    try:
        json.loads(unfence(raw))
    except (ValueError, RecursionError):
        return "not_json"
    return "not_object"


def args_from_text(raw: str, *, at_end: bool = False) -> Args:
    """Arguments from argument text: strict JSON first, then the first balanced object; empty
    means no arguments; an object left open where the reply ends (`at_end`) is `truncated`."""
    t = unfence(raw)
    if not t:
        return {}, "{}", None
    try:
        value = json.loads(t)
    except (ValueError, RecursionError):
        value = safe_json_object(t)
        if value is None:
            reason: InvalidReason = (
                "truncated"
                if at_end and t[0] in "{[" and match_bracket(t, 0) is None
                else "not_json"
            )
            return {}, raw.strip(), reason
    if isinstance(value, dict):
        return value, compact_json(value), None
    return {}, raw.strip(), "not_object"


def args_from_value(value: Any) -> Args:
    """Arguments given as a JSON value inside a call object: an object, a JSON string, or absent."""
    if value is None:
        return {}, "{}", None
    if isinstance(value, dict):
        return value, compact_json(value), None
    if isinstance(value, str):
        return args_from_text(value)
    return {}, compact_json(value), "not_object"
