"""GigaChat 3: `<|message_sep|>` then `function call<|role_sep|>` and a JSON call object;
GigaChat 3.1: `<|function_call|>{json}`. No closing token."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading, wrapped_json

__all__ = ["FAMILY"]

NAME = "gigachat"
_OPEN = re.compile("<\\|function_call\\|>|<\\|message_sep\\|>\\s*function call\\s*<\\|role_sep\\|>")


def read(text: str, offer: Offer) -> Reading:
    return wrapped_json(text, offer, NAME, _OPEN, None, lists=False)


def example(name: str, arguments: dict[str, Any]) -> str:
    return "<|function_call|>" + compact_json({"name": name, "arguments": arguments})


FAMILY = Family(
    NAME,
    (
        Marker("<|function_call|>"),
        Marker("<|message_sep|>"),
    ),
    read,
    example,
)
