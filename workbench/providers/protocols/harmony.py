"""OpenAI gpt-oss "harmony" messages, as a server without a harmony parser returns them:
`<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{…}<|call|>`, then
perhaps `<|start|>assistant<|channel|>final<|message|>The answer<|return|>`.

A message addressed `to=functions.<name>` is a call; the final channel, and commentary with
no recipient (a preamble the user may see), are text; everything else is frame: headers,
tokens, stray channel words between messages, and tool *results* echoed back (a message from
`functions.<name>` is not a call). The analysis channel is reasoning, removed before any
reader runs.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import args_from_text, compact_json
from workbench.providers.protocols.reading import Family, Found, Marker, Offer, Reading

__all__ = ["FAMILY"]

NAME = "harmony"
_TOKEN = re.compile(r"<\|(?:start|channel|message|end|call|return|constrain)\|>")
_MESSAGE = "<|message|>"
_ENDS = re.compile(r"<\|(?:end|call|return)\|>|<\|start\|>|<\|channel\|>")
_RECIPIENT = re.compile(r"\bto=(?:functions\.)?([\w.\-]+)")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")
_ROLE = re.compile(r"<\|start\|>\s*([\w.\-]+)")


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    first = _TOKEN.search(text)
    if first is None:
        return out
    visible: list[tuple[int, int]] = []
    pos = head = first.start()
    while (m := text.find(_MESSAGE, pos)) >= 0:
        header = text[head:m]
        body_start = m + len(_MESSAGE)
        em = _ENDS.search(text, body_start)
        body_end = em.start() if em else len(text)
        after = (
            em.end() if em and em.group(0) in ("<|end|>", "<|call|>", "<|return|>") else body_end
        )
        role = (_ROLE.findall(header) or ["assistant"])[-1]
        channel = (_CHANNEL.findall(header) or [""])[-1]
        recipient = _RECIPIENT.search(header)
        if role.startswith("functions"):
            pass  # a tool's result echoed back: frame, not a call
        elif recipient is not None and channel != "analysis":
            name = recipient.group(1)
            if name in offer.names:
                args = args_from_text(text[body_start:body_end], at_end=em is None)
                if em is None:  # no <|call|>: the reply stopped inside the message
                    args = ({}, text[body_start:].strip(), "truncated")
                out.calls.append(Found(head, after, name, args, NAME))
        elif channel in ("final", "commentary"):
            visible.append((body_start, body_end))
        pos = head = after
    # A header addressed to a tool, cut off before its message: the call being written.
    rm = _RECIPIENT.search(text, head)
    if rm is not None and rm.group(1) in offer.names and _MESSAGE not in text[head:]:
        args = ({}, text[head:].strip(), "truncated")
        out.calls.append(Found(head, len(text), rm.group(1), args, NAME))
    if not out.calls and not visible:
        return out  # harmony-looking tokens with nothing in them: leave the text alone
    # Everything from the first token on that is not a visible body is frame.
    cursor = first.start()
    for a, b in visible:
        if a > cursor:
            out.markup.append((cursor, a))
        cursor = b
    if cursor < len(text):
        out.markup.append((cursor, len(text)))
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return (
        f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json"
        f"<|message|>{compact_json(arguments)}<|call|>"
    )


FAMILY = Family(
    NAME,
    (Marker("<|channel|>"), Marker("<|start|>"), Marker("<|call|>", "")),
    read,
    example,
)
