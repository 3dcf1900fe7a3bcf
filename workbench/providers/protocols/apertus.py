"""Swiss AI Apertus: `<|tools_prefix|>[{"get_weather": {"location": "London"}}]<|tools_suffix|>`
— each call an object whose one key is the tool name and whose value is the arguments."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import args_from_value, compact_json, json_at
from workbench.providers.protocols.reading import Family, Found, Marker, Offer, Reading

__all__ = ["FAMILY"]

NAME = "apertus"
OPEN, CLOSE = "<|tools_prefix|>", "<|tools_suffix|>"


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    opens = list(re.finditer(re.escape(OPEN), text))
    for k, m in enumerate(opens):
        limit = opens[k + 1].start() if k + 1 < len(opens) else len(text)
        i = m.end()
        while i < limit and text[i] in " \t\r\n":
            i += 1
        got = json_at(text, i, limit)
        if got is None and limit == len(text) and text[i : i + 1] == "[":
            out.calls += _cut(text, i, m.start(), offer)
            continue
        if got is None or not isinstance(got[0], list) or not got[0]:
            continue
        items = got[0]
        if not all(isinstance(x, dict) and len(x) == 1 for x in items):
            continue
        calls = [(k, v) for x in items for k, v in x.items() if k in offer.names]
        if not calls:
            continue
        end = got[1]
        rest = text[end:]
        if rest.lstrip().startswith(CLOSE):
            end += len(rest) - len(rest.lstrip()) + len(CLOSE)
        a, b = (m.start(), end) if len(calls) == len(items) else (m.start(), m.start())
        out.calls += [Found(a, b, k, args_from_value(v), NAME) for k, v in calls]
    return out


def _cut(text: str, i: int, start: int, offer: Offer) -> list[Found]:
    """A list cut off by the end of the reply: its complete `{name: args}` objects as calls,
    the one being written (its name out, its arguments not) as a truncated call."""
    out: list[Found] = []
    j = i + 1
    while j < len(text):
        while j < len(text) and text[j] in " \t\r\n,":
            j += 1
        got = json_at(text, j) if j < len(text) else None
        if got is None:
            m = re.match(r'\{\s*"([^"\\]+)"', text[j:])
            if m is not None and m.group(1) in offer.names:
                out.append(Found(start, len(text), m.group(1), ({}, text[j:], "truncated"), NAME))
            break
        if isinstance(got[0], dict) and len(got[0]) == 1:
            ((k, v),) = got[0].items()
            if k in offer.names:
                out.append(Found(start, len(text), k, args_from_value(v), NAME))
        j = got[1]
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return OPEN + compact_json([{name: arguments}]) + CLOSE


FAMILY = Family(NAME, (Marker(OPEN, CLOSE),), read, example, one_list=True)
