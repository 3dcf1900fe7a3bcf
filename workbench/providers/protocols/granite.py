"""IBM Granite 3.x: `<|tool_call|>` then a JSON list of call objects, no closing token (3.1
writes the plain text `<tool_call>` instead, which the Hermes family reads)."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading, wrapped_json

__all__ = ["FAMILY"]

NAME = "granite"
_OPEN = re.compile("<\\|tool_call\\|>")


def read(text: str, offer: Offer) -> Reading:
    return wrapped_json(text, offer, NAME, _OPEN, None)


def example(name: str, arguments: dict[str, Any]) -> str:
    return "<|tool_call|>" + compact_json([{"name": name, "arguments": arguments}])


FAMILY = Family(NAME, (Marker("<|tool_call|>"),), read, example, one_list=True)
