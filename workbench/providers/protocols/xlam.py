"""xLAM and other JSON-list callers: a reply that is only a JSON list of call objects
(`[{"name": …, "arguments": …}, …]`), bare or fenced; or prose that ends with a fenced block
of call objects (```json … ```), the way small instruction models answer.

The fence must end the reply: a fenced example followed by more prose is an explanation. A
list where some element names a tool not offered keeps its calls but also its text: a partly
read list is evidence of what the model wrote.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json, json_at, match_bracket, unfence
from workbench.providers.protocols.llama3_json import read_objects
from workbench.providers.protocols.reading import (
    Family,
    Found,
    Offer,
    Reading,
    calls_in_json_list,
    cut_list_calls,
)

__all__ = ["FAMILY"]

NAME = "xlam"
TRIGGER = r"```(?i:json)?[ \t]*\r?\n\s*[\[{]"  # a fence that opens JSON
_OPENING = re.compile(r"[ \t]*```(?:json)?[ \t]*\r?\n", re.I)


def _last_fence(text: str) -> tuple[int, str] | None:
    """(start, body) of a fenced block that ends the reply, found from the end (a regex from
    every fence would rescan the reply once per fence)."""
    t = text.rstrip()
    if not t.endswith("```"):
        return None
    close = len(t) - 3
    line = t.rfind("\n", 0, close) + 1
    if t[line:close].strip():
        return None  # the closing fence must stand on its own line
    opening = t.rfind("```", 0, line)
    if opening < 0:
        return None
    start = t.rfind("\n", 0, opening) + 1
    m = _OPENING.match(t, start)
    if m is None or t[start:opening].strip():
        return None
    body = t[m.end() : line].strip()
    return (start, body) if body[:1] in ("[", "{") else None


def _open_fence(text: str) -> tuple[int, str] | None:
    """A fence opened at the end of the reply and never closed (the reply was cut inside it)."""
    opening = text.rfind("```")
    if opening < 0:
        return None
    start = text.rfind("\n", 0, opening) + 1
    m = _OPENING.match(text, start)
    if m is None or text[start:opening].strip():
        return None
    body = text[m.end() :].strip().rstrip("`").rstrip()  # a closing fence cut short
    return (start, body) if body[:1] in ("[", "{") else None


def _list(text: str, offer: Offer, start: int, end: int, body: str) -> list[Found] | None:
    got = json_at(body, 0)
    if got is None and match_bracket(body, 0) is None and text.rstrip().endswith(body.rstrip()):
        items = cut_list_calls(body, 0, offer, need_args=True)  # cut off at the end
        return [Found(start, end, n, a, NAME) for _, _, n, a in items] if items else None
    if got is None or body[got[1] :].strip():
        return None
    found = calls_in_json_list(got[0], offer, need_args=True)
    if found is None or not found[0]:
        return None
    calls, complete = found
    a, b = (start, end) if complete else (start, start)
    return [Found(a, b, name, args, NAME) for name, args in calls]


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    t = unfence(text)
    if offer.at_start and t.startswith("["):
        whole = _list(text, offer, 0, len(text), t)
        if whole:
            out.calls += whole
            return out
    fence = _last_fence(text) or _open_fence(text)
    if fence is None or (offer.at_start and not text[: fence[0]].strip()):
        return out  # no fence at the end, or a fenced reply (a whole reply: read above)
    start, body = fence
    if body.startswith("["):
        out.calls += _list(text, offer, start, len(text), body) or []
    else:
        got = read_objects(body, 0, offer) if body.startswith("{") else None
        if got is not None and not any(f.args[2] for f in got[0]):
            out.calls += [Found(start, len(text), f.name, f.args, NAME) for f in got[0]]
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return compact_json([{"name": name, "arguments": arguments}])


FAMILY = Family(NAME, (), read, example, triggers=(TRIGGER,), starts="[", one_list=True)
