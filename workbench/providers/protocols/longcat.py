"""Meituan LongCat-Flash: `<longcat_tool_call>{"name": …, "arguments": …}</longcat_tool_call>`."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading, wrapped_json

__all__ = ["FAMILY"]

NAME = "longcat"
_OPEN = re.compile("<longcat_tool_call>")


def read(text: str, offer: Offer) -> Reading:
    return wrapped_json(text, offer, NAME, _OPEN, "</longcat_tool_call>", lists=False)


def example(name: str, arguments: dict[str, Any]) -> str:
    return (
        "<longcat_tool_call>"
        + compact_json({"name": name, "arguments": arguments})
        + "</longcat_tool_call>"
    )


FAMILY = Family(NAME, (Marker("<longcat_tool_call>", "</longcat_tool_call>"),), read, example)
