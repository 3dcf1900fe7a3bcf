"""Llama 3.1–3.3 JSON calls: a reply that is only `{"name": …, "parameters": …}` (or
`"arguments"`), several separated by `;`, optionally after `<|python_tag|>` (3.2), optionally
fenced.

Only a reply made of call objects counts: an object in the middle of prose is data, an object
with a name and no arguments is a record, and a tool *definition* echoed back (a description,
a JSON Schema where the arguments would be) is not a call whatever its keys.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json, json_at, match_bracket, unfence
from workbench.providers.protocols.reading import (
    Family,
    Found,
    Marker,
    Offer,
    Reading,
    broken_call,
    call_from_object,
)

__all__ = ["FAMILY", "read_objects"]

NAME = "llama3_json"
TAG = "<|python_tag|>"
_SEP = re.compile(r"\s*;?\s*")
_END_TOKENS = re.compile(r"\s*(?:<\|(?:eom_id|eot_id)\|>\s*)+\Z")


def read_objects(text: str, start: int, offer: Offer) -> tuple[list[Found], int] | None:
    """Call objects from `start` to the end of `text`, `;`-separated; None unless every one is
    a call (the last may be cut off at the end of the reply)."""
    found: list[Found] = []
    i = start
    while i < len(text):
        if text[i] != "{":
            return None
        got = json_at(text, i)
        if got is None:
            broken = broken_call(text[i:], offer)
            if broken is None or (match_bracket(text, i) is not None and found):
                return None
            found.append(Found(i, len(text), *broken, NAME))
            return found, len(text)
        value, end = got
        call = call_from_object(value, offer, need_args=True)
        if call is None:
            return None
        found.append(Found(i, end, *call, NAME))
        i = _SEP.match(text, end).end()  # type: ignore[union-attr]
    return (found, i) if found else None


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    # Llama's end-of-message tokens after the calls are frame, not text.
    if em := _END_TOKENS.search(text):
        out.markup.append(em.span())
        text = text[: em.start()]
    tag = text.find(TAG)
    if tag >= 0:
        body = text[tag + len(TAG) :]
        lead = len(body) - len(body.lstrip())
        got = read_objects(text.rstrip(), tag + len(TAG) + lead, offer)
        if got is not None:
            # Everything from the tag on is calls: one span, separators included.
            for f in got[0]:
                f.start, f.end = tag, len(text)
            out.calls += got[0]
        else:
            out.markup.append((tag, tag + len(TAG)))
        return out
    t = unfence(text)
    if not offer.at_start or not t.startswith("{"):
        return out
    got = read_objects(t.rstrip(), 0, offer)
    if got is not None:
        # The whole reply is calls: every character of it goes (fences included).
        for f in got[0]:
            f.start, f.end = 0, len(text)
        out.calls += got[0]
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return compact_json({"name": name, "parameters": arguments})


FAMILY = Family(NAME, (Marker(TAG),), read, example, starts="{")
