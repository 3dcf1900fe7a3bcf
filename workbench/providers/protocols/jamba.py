"""AI21 Jamba, and Hunyuan-A13B which writes the same: `<tool_calls>[{"name": …, "arguments": …}]
</tool_calls>` (a JSON list; MiniMax puts one object per line in the same tags)."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading, wrapped_json

__all__ = ["FAMILY"]

NAME = "jamba"
_OPEN = re.compile("<tool_calls>")


def read(text: str, offer: Offer) -> Reading:
    return wrapped_json(text, offer, NAME, _OPEN, "</tool_calls>", objects=False)


def example(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_calls>" + compact_json([{"name": name, "arguments": arguments}]) + "</tool_calls>"


FAMILY = Family(NAME, (Marker("<tool_calls>", "</tool_calls>"),), read, example, one_list=True)
