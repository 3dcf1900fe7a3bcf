"""GLM-4.5, 4.6 and 4.7 (Zhipu): `<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value>…
</tool_call>`, with newlines and indentation between the parts (4.5) or none (4.7), and no
pairs at all for a tool without arguments. Hunyuan v3 writes the same pairs after
`name<tool_sep>`, inside `<tool_calls>…</tool_calls>`: read here as the family `hunyuan`.

Values are bare text typed from the tool's schema (numbers and booleans come back typed even
without one, as GLM's own parser does). The name must be an offered tool written alone: a
`<tool_call>` holding a sentence or JSON belongs to no one here.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.reading import Family, Found, Marker, Offer, Reading, xml_args

__all__ = ["FAMILY", "HUNYUAN"]

NAME = "glm"
HUNYUAN_NAME = "hunyuan"
_OPEN = re.compile(r"<tool_call>")
_CLOSE = re.compile(r"</tool_call\s*>")
# Each part stops at the next key, so a reply of unclosed keys is read in one pass.
_PAIR = re.compile(
    r"<arg_key>((?:(?!<arg_key>).)*?)</arg_key>\s*<arg_value>((?:(?!<arg_key>).)*?)"
    r"(?:</arg_value>|(?=<arg_key>)|$)",
    re.S,
)
_NAME = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(<tool_sep>)?")
_WRAP_OPEN = re.compile(r"<tool_calls>\s*$")
_WRAP_CLOSE = re.compile(r"\s*</tool_calls>")


def _read(text: str, offer: Offer, family: str) -> Reading:
    out = Reading()
    for m in _OPEN.finditer(text):
        nxt = _OPEN.search(text, m.end())
        limit = nxt.start() if nxt else len(text)
        cm = _CLOSE.search(text, m.end(), limit)
        body = text[m.end() : cm.start() if cm else limit]
        nm = _NAME.match(body)
        if nm is None or nm.group(1) not in offer.names:
            continue
        if (HUNYUAN_NAME if nm.group(2) else NAME) != family:
            continue
        rest = body[nm.end() :]
        if rest.strip() and not rest.lstrip().startswith("<arg_key>"):
            continue
        if cm is None and (nxt is not None or ("<arg_key>" not in rest and rest.strip())):
            continue
        pairs = [(k.strip(), v.strip()) for k, v in _PAIR.findall(rest)]
        args = xml_args(pairs, nm.group(1), offer)
        if cm is None and rest.strip():
            args = (args[0], rest.strip(), "truncated")
        out.calls.append(Found(m.start(), cm.end() if cm else limit, nm.group(1), args, family))
    _wrapper(text, out)
    return out


def _wrapper(text: str, out: Reading) -> None:
    """`<tool_calls>` right before a call and `</tool_calls>` right after one are markup
    (Hunyuan v3 wraps its calls so, one section or several)."""
    for call in out.calls:
        if om := _WRAP_OPEN.search(text, max(0, call.start - 64), call.start):
            call.extra.append((om.start(), call.start))
        if cm := _WRAP_CLOSE.match(text, call.end):
            call.extra.append((call.end, cm.end()))


def read(text: str, offer: Offer) -> Reading:
    return _read(text, offer, NAME)


def read_hunyuan(text: str, offer: Offer) -> Reading:
    return _read(text, offer, HUNYUAN_NAME)


def _pairs(arguments: dict[str, Any]) -> str:
    from workbench.providers.protocols.jsonish import compact_json

    return "".join(
        f"<arg_key>{k}</arg_key><arg_value>{v if isinstance(v, str) else compact_json(v)}</arg_value>"
        for k, v in arguments.items()
    )


def example(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>{name}{_pairs(arguments)}</tool_call>"


def example_hunyuan(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_calls><tool_call>{name}<tool_sep>{_pairs(arguments)}</tool_call></tool_calls>"


FAMILY = Family(NAME, (Marker("<tool_call>", "</tool_call>"),), read, example, needs_close=True)
HUNYUAN = Family(
    HUNYUAN_NAME,
    (Marker("<tool_sep>", ""), Marker("<tool_calls>", "</tool_calls>")),
    read_hunyuan,
    example_hunyuan,
    needs_close=True,
)
