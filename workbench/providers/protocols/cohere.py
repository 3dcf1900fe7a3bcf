"""Cohere Command R7B and Command A: `<|START_ACTION|>[{"tool_call_id": …, "tool_name": …,
"parameters": …}]<|END_ACTION|>`, usually after a `<|START_THINKING|>` block (reasoning, which
`strip_reasoning` removes)."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading, wrapped_json

__all__ = ["FAMILY"]

NAME = "cohere"
_OPEN = re.compile("<\\|START_ACTION\\|>")


_RESPONSE = re.compile(r"<\|(?:START|END)_RESPONSE\|>")


def read(text: str, offer: Offer) -> Reading:
    out = wrapped_json(
        text,
        offer,
        NAME,
        _OPEN,
        "<|END_ACTION|>",
        objects=False,
        name_keys=("tool_name",),
        arg_keys=("parameters",),
    )
    # The response wrapper is frame around the text the user reads.
    out.markup += [m.span() for m in _RESPONSE.finditer(text)]
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return (
        "<|START_ACTION|>"
        + compact_json([{"tool_call_id": "0", "tool_name": name, "parameters": arguments}])
        + "<|END_ACTION|>"
    )


FAMILY = Family(
    NAME,
    (
        Marker("<|START_ACTION|>", "<|END_ACTION|>"),
        Marker("<|START_RESPONSE|>", ""),
        Marker("<|END_RESPONSE|>", ""),
    ),
    read,
    example,
    one_list=True,
)
