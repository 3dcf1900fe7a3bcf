"""Phi-4-mini: `functools[{"name": …, "arguments": …}, …]`, no closing token."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading, wrapped_json

__all__ = ["FAMILY"]

NAME = "phi4_mini"
_OPEN = re.compile("functools(?=\\s*\\[)")


def read(text: str, offer: Offer) -> Reading:
    return wrapped_json(text, offer, NAME, _OPEN, None, objects=False)


def example(name: str, arguments: dict[str, Any]) -> str:
    return "functools" + compact_json([{"name": name, "arguments": arguments}])


FAMILY = Family(NAME, (Marker("functools["),), read, example, one_list=True)
