"""Mistral: `[TOOL_CALLS]` then a JSON list of call objects (tokenizers before v11), or
`[TOOL_CALLS]name{arguments}` (v11), or `[TOOL_CALLS]name[ARGS]{arguments}` (Magistral,
Devstral, Mistral Small 3.2 and later); several calls repeat the marker.

The marker is markup wherever it appears: followed by prose, the prose stays and the marker
goes. A name written right before the end of the reply with no argument object yet is a
truncated call.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import (
    args_from_text,
    compact_json,
    json_at,
    match_bracket,
)
from workbench.providers.protocols.reading import (
    Family,
    Found,
    Marker,
    Offer,
    Reading,
    calls_in_json_list,
    cut_list_calls,
)

__all__ = ["FAMILY"]

NAME = "mistral"
MARKER = "[TOOL_CALLS]"
# `name`, then the v11+ tokens: an optional `[CALL_ID]id` and `[ARGS]`.
_NAMED = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*[\w\-]+\s*)?(\[ARGS\])?\s*")


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    starts = [m.start() for m in re.finditer(re.escape(MARKER), text)]
    for k, start in enumerate(starts):
        after = start + len(MARKER)
        limit = starts[k + 1] if k + 1 < len(starts) else len(text)
        nm = _NAMED.match(text, after, limit)
        if nm is not None and nm.group(1) in offer.names:
            i = nm.end()
            if i < limit and text[i] == "{":
                end = match_bracket(text, i, limit)
                body = text[i:end] if end else text[i:limit]
                at_end = end is None and limit == len(text)
                args = args_from_text(body, at_end=at_end)
                out.calls.append(Found(start, end or limit, nm.group(1), args, NAME))
                continue
            if not text[i:limit].strip() and limit == len(text):
                out.calls.append(Found(start, limit, nm.group(1), ({}, "", "truncated"), NAME))
                continue
            if nm.group(2) and i < limit and text[i] in '["0123456789-tfn':
                # `[ARGS]` followed by JSON that is no object: the call, marked.
                body = text[i:limit].strip()
                args = args_from_text(body, at_end=limit == len(text))
                out.calls.append(Found(start, limit, nm.group(1), args, NAME))
                continue
        # A JSON list, possibly after some junk on the way.
        j = text.find("[", after, limit)
        got = json_at(text, j, limit) if j >= 0 else None
        if got is None and j >= 0 and limit == len(text) and match_bracket(text, j) is None:
            items = cut_list_calls(text, j, offer)
            if items:
                out.calls += [Found(start, limit, n, a, NAME) for _, _, n, a in items]
                continue
        found = calls_in_json_list(got[0], offer) if got is not None else None
        if got is not None and found is not None and found[0]:
            calls, complete = found
            stop = got[1] if complete else start
            for name, args in calls:
                out.calls.append(Found(start, stop, name, args, NAME))
            if not complete:
                out.markup.append((start, after))
            continue
        out.markup.append((start, after))
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return f"{MARKER}{name}[ARGS]{compact_json(arguments)}"


FAMILY = Family(NAME, (Marker(MARKER),), read, example)
