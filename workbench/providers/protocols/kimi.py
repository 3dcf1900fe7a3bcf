"""Moonshot Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.name:0
<|tool_call_argument_begin|>{json}<|tool_call_end|>…<|tool_calls_section_end|>`. The call id is
`functions.<name>:<index>`; an id without its index is not a call (Kimi's own parser skips it).
A fragment without the begin tokens is text."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import args_from_text, compact_json
from workbench.providers.protocols.reading import Family, Found, Marker, Offer, Reading, blocks

__all__ = ["FAMILY"]

NAME = "kimi"
SECTION = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
_CALL = re.compile(
    r"<\|tool_call_begin\|>\s*(?:functions\.)?([\w.\-]+?):(\d+)\s*<\|tool_call_argument_begin\|>"
    r"(.*?)(<\|tool_call_end\|>|(?=<\|tool_call_begin\|>)|(?=<\|tool_calls_section_end\|>)|$)",
    re.S,
)


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    for start, end, _, _ in blocks(text, *SECTION):
        found = []
        for m in _CALL.finditer(text, start, end):
            if m.group(1) not in offer.names:
                continue
            at_end = not m.group(4) and m.end() == len(text)
            args = args_from_text(m.group(3), at_end=at_end)
            found.append(Found(m.start(), m.end(), m.group(1), args, NAME))
        if found:
            # The section's other tokens (its begin and end, a malformed call) are markup.
            found[0].extra.append((start, end))
            out.calls += found
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return (
        f"{SECTION[0]}<|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>"
        f"{compact_json(arguments)}<|tool_call_end|>{SECTION[1]}"
    )


FAMILY = Family(
    NAME,
    (Marker(*SECTION), Marker("<|tool_call_begin|>", "<|tool_call_end|>")),
    read,
    example,
    needs_close=True,
)
