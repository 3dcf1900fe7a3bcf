"""Seed-OSS (ByteDance): Qwen3-Coder's `<function=…><parameter=…>` blocks inside
`<seed:tool_call>…</seed:tool_call>`. Its reasoning sits in `<seed:think>…</seed:think>`, which
`strip_reasoning` removes first: a call spelled out while thinking is not a call."""

from __future__ import annotations

from typing import Any

from workbench.providers.protocols.qwen3_xml import example as qwen3_example
from workbench.providers.protocols.qwen3_xml import read_functions
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading

__all__ = ["FAMILY"]

NAME = "seed_oss"


def read(text: str, offer: Offer) -> Reading:
    return read_functions(text, offer, NAME)


def example(name: str, arguments: dict[str, Any]) -> str:
    inner = qwen3_example(name, arguments).removeprefix("<tool_call>").removesuffix("</tool_call>")
    return f"<seed:tool_call>{inner}</seed:tool_call>"


FAMILY = Family(
    NAME, (Marker("<seed:tool_call>", "</seed:tool_call>"),), read, example, needs_close=True
)
