"""Qwen3-Coder: `<tool_call><function=name><parameter=key>value</parameter></function></tool_call>`.

Values are bare text, typed from the tool's JSON Schema (`True` under a boolean is `true`, a
multi-line JSON array under an array is parsed); without a schema JSON is tried, else the text
stays a string. One newline around a value is layout, not content. A missing `</parameter>`
ends at the next `<parameter=`; a `<function=…` without its `>` is not a call. The
`<tool_call>` wrapper is optional (and is Seed-OSS's `<seed:tool_call>` in its own family).
"""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import args_from_text
from workbench.providers.protocols.reading import Family, Found, Marker, Offer, Reading, xml_args

__all__ = ["FAMILY", "read_functions"]

NAME = "qwen3_xml"
_FN = re.compile(r"<function=([^>\s<]+)\s*>")
_FN_CLOSE = re.compile(r"</function\s*>")
_PARAM = re.compile(r"<parameter=([^>\s<]+)\s*>")
_PARAM_END = re.compile(r"</parameter\s*>|(?=<parameter=)")


def _layout(value: str) -> str:
    if value.startswith("\r\n"):
        value = value[2:]
    elif value.startswith("\n"):
        value = value[1:]
    if value.endswith("\r\n"):
        value = value[:-2]
    elif value.endswith("\n"):
        value = value[:-1]
    return value


def _cut_here(body: str) -> bool:
    """Does the reply stop inside this block (nothing but its parameters, or nothing yet)?"""
    rest = body.strip()
    return not rest or rest.startswith("<parameter")


def _params(body: str, tool: str, offer: Offer, cut: bool) -> tuple[Any, ...]:
    if not _PARAM.search(body):
        return args_from_text(body) if not cut else ({}, body.strip(), "truncated")
    pairs = []
    pos = 0
    while (pm := _PARAM.search(body, pos)) is not None:
        em = _PARAM_END.search(body, pm.end())
        value = body[pm.end() : em.start()] if em else body[pm.end() :]
        pairs.append((pm.group(1), _layout(value)))
        pos = em.end() if em and em.end() > pm.end() else (em.start() if em else len(body))
        if em is None:
            break
    args = xml_args(pairs, tool, offer)
    return (args[0], body.strip(), "truncated") if cut else args


# Wrapper tags around a block, and the family a block wrapped so belongs to.
WRAPPERS = (
    ("<seed:tool_call>", "</seed:tool_call>", "seed_oss"),
    ("<tool_call>", "</tool_call>", NAME),
)


def read_functions(text: str, offer: Offer, family: str) -> Reading:
    """`<function=…>` blocks of `family` (decided by the wrapper right around each block, which
    is markup that goes with the call; no wrapper is Qwen3-Coder's)."""
    out = Reading()
    low = text.lower()
    for m in _FN.finditer(text):
        name = m.group(1)
        nxt = _FN.search(text, m.end())
        limit = nxt.start() if nxt else len(text)
        cm = _FN_CLOSE.search(text, m.end(), limit)
        body = text[m.end() : cm.start()] if cm else text[m.end() : limit]
        # The last block, left open, mid-parameter (or before its first): the reply was cut
        # inside the call.
        cut = cm is None and nxt is None and _cut_here(body)
        if name not in offer.names:
            continue
        if cm is None and not cut and (nxt is not None or not _cut_here(body)):
            # A block without its close is a call only if the reply ends inside it: followed by
            # another call or by prose, it is unreadable or a mention.
            continue
        start, end = m.start(), cm.end() if cm else limit
        window = max(0, start - 64)  # a bounded look around: thousands of blocks stay linear
        before = low[window:start].rstrip()
        owner = NAME
        for wo, wc, fam in WRAPPERS:
            if before.endswith(wo):
                start, owner = window + len(before) - len(wo), fam
                after = low[end : end + 64]
                tail = after.lstrip()
                if tail.startswith(wc):
                    end += len(after) - len(tail) + len(wc)
                break
        if owner == family:
            out.calls.append(Found(start, end, name, _params(body, name, offer, cut), family))
    return out


def read(text: str, offer: Offer) -> Reading:
    return read_functions(text, offer, NAME)


def example(name: str, arguments: dict[str, Any]) -> str:
    from workbench.providers.protocols.jsonish import compact_json

    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else compact_json(v)}\n</parameter>\n"
        for k, v in arguments.items()
    )
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


FAMILY = Family(NAME, (Marker("<function=", "</function>"),), read, example, needs_close=True)
