"""MiniMax-M1: `<tool_calls>` then one JSON call object per line, then `</tool_calls>` (which may
be missing at the end of the reply). A call written inside `<think>` is reasoning, removed
before any reader runs."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json, json_at
from workbench.providers.protocols.reading import (
    Family,
    Found,
    Marker,
    Offer,
    Reading,
    Seeker,
    broken_call,
    call_from_object,
)

__all__ = ["FAMILY"]

NAME = "minimax"
_OPEN = re.compile(r"<tool_calls>")
_CLOSE = "</tool_calls>"


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    closes = Seeker(text, _CLOSE)
    for m in _OPEN.finditer(text):
        hit = closes.find(m.end())
        close = hit[0] if hit else -1
        limit = close if close >= 0 else len(text)
        body = text[m.end() : limit]
        if not body.lstrip().startswith("{"):
            continue
        calls: list[Found] = []
        i = m.end() + len(body) - len(body.lstrip())
        ok = True
        while i < limit:
            got = json_at(text, i, limit)
            if got is None:
                broken = broken_call(text[i:limit], offer) if close < 0 else None
                if broken is not None:
                    calls.append(Found(i, limit, *broken, NAME))
                    i = limit
                    break
                ok = False
                break
            call = call_from_object(got[0], offer)
            if call is not None:
                calls.append(Found(i, got[1], *call, NAME))
            i = got[1]
            while i < limit and text[i] in " \t\r\n":
                i += 1
            if i < limit and text[i] != "{":
                # The close cut off at the very end is the end; anything else is not a call.
                ok = close < 0 and _CLOSE.startswith(text[i:limit].rstrip())
                break
        if not ok or not calls:
            continue
        end = close + len(_CLOSE) if close >= 0 else len(text)
        calls[0].start = m.start()
        calls[-1].end = end
        # One span for the block: the calls between the tags go with it.
        for c in calls:
            c.start, c.end = m.start(), end
        out.calls += calls
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return (
        "<tool_calls>\n" + compact_json({"name": name, "arguments": arguments}) + "\n</tool_calls>"
    )


FAMILY = Family(NAME, (Marker("<tool_calls>", "</tool_calls>"),), read, example)
