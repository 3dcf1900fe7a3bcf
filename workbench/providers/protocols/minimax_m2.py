"""MiniMax-M2: `<minimax:tool_call><invoke name="…"><parameter name="…">value</parameter>
</invoke>…</minimax:tool_call>`, values typed from the tool's schema."""

from __future__ import annotations

from typing import Any

from workbench.providers.protocols.invoke_xml import invoke_example, read_invokes
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading

__all__ = ["FAMILY"]

NAME = "minimax_m2"
SECTION = ("<minimax:tool_call>", "</minimax:tool_call>")


def read(text: str, offer: Offer) -> Reading:
    return read_invokes(text, offer, NAME, SECTION, "invoke", "parameter")


def example(name: str, arguments: dict[str, Any]) -> str:
    return invoke_example(SECTION, "invoke", "parameter", name, arguments)


FAMILY = Family(
    NAME, (Marker(*SECTION), Marker("<invoke name=", "</invoke>")), read, example, needs_close=True
)
