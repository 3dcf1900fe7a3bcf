"""Hermes / Qwen: `<tool_call>{"name": …, "arguments": …}</tool_call>` (Qwen2.5 and Qwen3,
Hermes 2 Pro, ERNIE 4.5, Granite 4; also xLAM's JSON list inside the tags).

Tolerated, because real models do it: the closing tag missing at the end of the reply, the
opening tag missing (Qwen drops it now and then: a call object at the start of a line right
before `</tool_call>`), `"parameters"` for `"arguments"`, arguments given as a JSON string,
and `<tool_call name="…">{arguments}</tool_call>`. Bodies that are not JSON belong to the
families that share the tag (GLM writes a bare name, Qwen3-Coder `<function=…>`).
"""

from __future__ import annotations

import bisect
import itertools
import re
from typing import Any

from workbench.providers.protocols.jsonish import (
    args_from_text,
    compact_json,
    json_at,
    match_bracket,
    match_object,
)
from workbench.providers.protocols.reading import (
    Family,
    Found,
    Marker,
    Offer,
    Reading,
    Seeker,
    call_from_object,
    wrapped_json,
)

__all__ = ["FAMILY"]

NAME = "hermes"
_OPEN = re.compile(r"<tool_call(?![s\w])\s*>")
_NAMED = re.compile(r"""<tool_call\s+name\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))\s*>""")
_CLOSE = re.compile(r"</tool_call\s*>")


def _named(text: str, offer: Offer) -> list[Found]:
    out = []
    closes = Seeker(text, _CLOSE)
    for m in _NAMED.finditer(text):
        name = next(g for g in m.groups() if g is not None).strip()
        if name not in offer.names:
            continue
        hit = closes.find(m.end())
        if hit is not None:
            body, end = text[m.end() : hit[0]], hit[1]
        else:
            i = m.end() + len(text[m.end() :]) - len(text[m.end() :].lstrip())
            close = match_object(text, i)
            if close is None:
                continue
            body, end = text[m.end() : close], close
        out.append(Found(m.start(), end, name, args_from_text(body), NAME))
    return out


def _orphan_closes(text: str, offer: Offer, taken: list[tuple[int, int]]) -> list[Found]:
    """A `</tool_call>` with no opening tag: the call object right before it, starting at the
    beginning of a line (at most 64 lines up)."""
    out = []
    spans = sorted(taken)
    starts = [a for a, _ in spans]
    reach = list(itertools.accumulate((b for _, b in spans), max))

    def inside(i: int, j: int) -> bool:
        k = bisect.bisect_right(starts, j - 1) - 1
        return k >= 0 and reach[k] > i

    for cm in _CLOSE.finditer(text):
        if inside(cm.start(), cm.start() + 1):
            continue
        target = cm.start()
        while target > 0 and text[target - 1] in " \t\r\n":
            target -= 1
        if target == 0 or text[target - 1] != "}":
            continue
        line = text.rfind("\n", 0, target) + 1
        floor = max(0, target - 16_384)  # a call object is not longer than this: stay linear
        for _ in range(64):
            if line < floor:
                break
            lead = line
            while lead < target and text[lead] in " \t":
                lead += 1
            if text[lead] == "{" and match_bracket(text, lead, target) == target:
                got = json_at(text, lead, target)
                call = call_from_object(got[0], offer) if got else None
                if call is not None and not inside(lead, cm.end()):
                    out.append(Found(lead, cm.end(), *call, NAME))
                break
            if line == 0:
                break
            line = text.rfind("\n", 0, line - 1) + 1
    return out


def read(text: str, offer: Offer) -> Reading:
    out = wrapped_json(text, offer, NAME, _OPEN, "</tool_call>")
    out.calls += _named(text, offer)
    taken = [(f.start, f.end) for f in out.calls] + out.markup
    if "</tool_call" not in text.lower():
        return out
    # The opening tags already read own their closes; the rest may be orphans.
    closes = Seeker(text, _CLOSE)
    for m in _OPEN.finditer(text):
        hit = closes.find(m.end())
        taken.append((m.start(), hit[1] if hit else len(text)))
    out.calls += _orphan_closes(text, offer, taken)
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    body = compact_json({"name": name, "arguments": arguments})
    return f"<tool_call>\n{body}\n</tool_call>"


# A lone `</tool_call>` is a trigger, not an opener: a stream never holds text from a close.
FAMILY = Family(
    NAME, (Marker("<tool_call", "</tool_call>"),), read, example, triggers=("</tool_call",)
)
