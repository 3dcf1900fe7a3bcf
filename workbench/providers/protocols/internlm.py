"""InternLM2 / 2.5: `<|action_start|><|plugin|>{"name": …, "parameters": …}<|action_end|>`."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import compact_json
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading, wrapped_json

__all__ = ["FAMILY"]

NAME = "internlm"
_OPEN = re.compile("<\\|action_start\\|>\\s*<\\|plugin\\|>")


def read(text: str, offer: Offer) -> Reading:
    return wrapped_json(text, offer, NAME, _OPEN, "<|action_end|>", lists=False)


def example(name: str, arguments: dict[str, Any]) -> str:
    return (
        "<|action_start|><|plugin|>"
        + compact_json({"name": name, "parameters": arguments})
        + "<|action_end|>"
    )


FAMILY = Family(NAME, (Marker("<|action_start|>", "<|action_end|>"),), read, example)
