"""granite-20b-functioncalling: `<function_call> ` then one JSON call object, repeated per call
(no closing token, no list)."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading, wrapped_json

__all__ = ["FAMILY"]

NAME = "granite_20b"
_OPEN = re.compile("<function_call>")


def read(text: str, offer: Offer) -> Reading:
    return wrapped_json(text, offer, NAME, _OPEN, None, lists=False)


def example(name: str, arguments: dict[str, Any]) -> str:
    return "<function_call> " + compact_json({"name": name, "arguments": arguments})


FAMILY = Family(NAME, (Marker("<function_call>"),), read, example)
