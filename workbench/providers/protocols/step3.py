"""StepFun Step-3: `<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="…">
<steptml:parameter name="…">value</steptml:parameter></steptml:invoke><｜tool_call_end｜>…
<｜tool_calls_end｜>` (calls separated by `<｜tool_sep｜>`), values typed from the schema."""

from __future__ import annotations

from typing import Any

from workbench.providers.protocols.invoke_xml import invoke_example, read_invokes
from workbench.providers.protocols.reading import Family, Marker, Offer, Reading

__all__ = ["FAMILY"]

NAME = "step3"
SECTION = ("<｜tool_calls_begin｜>", "<｜tool_calls_end｜>")


def read(text: str, offer: Offer) -> Reading:
    return read_invokes(text, offer, NAME, SECTION, "steptml:invoke", "steptml:parameter")


def example(name: str, arguments: dict[str, Any]) -> str:
    wrap = ("<｜tool_call_begin｜>", "<｜tool_call_end｜>")
    return invoke_example(
        SECTION, "steptml:invoke", "steptml:parameter", name, arguments, wrap=wrap
    )


FAMILY = Family(
    NAME,
    (
        Marker(*SECTION),
        Marker("<｜tool_call_begin｜>", "<｜tool_call_end｜>"),
        Marker("<steptml:invoke", "</steptml:invoke>"),
    ),
    read,
    example,
    needs_close=True,
)
