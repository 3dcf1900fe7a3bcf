"""Pythonic calls between special tokens: Llama 4 (`<|python_start|>[…]<|python_end|>`),
LFM2 (`<|tool_call_start|>[…]<|tool_call_end|>`), OLMo 3 (`<function_calls>` with one call
per line, no brackets) and Gemma 3's ```tool_code fences (`print(f(x=1))` as often as not).
The closing token may be missing at the end of the reply."""

from __future__ import annotations

import ast
from typing import Any

from workbench.providers.protocols.pythonic import (
    _parse,
    cut_call_list,
    cut_calls,
    parse_call_list,
    parse_calls,
    python_call,
)
from workbench.providers.protocols.reading import (
    Family,
    Marker,
    Offer,
    Reading,
    block_calls,
    blocks,
)

__all__ = ["GEMMA_TOOL_CODE", "LFM2", "LLAMA4", "OLMO"]


def _unprint(node: ast.expr) -> ast.expr:
    """`print(f(x=1))` is how Gemma writes `f(x=1)` in a tool_code block."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return node


def _unprint_src(line: str) -> str:
    """`print(f(x=1))` → `f(x=1)`, as source text (a cut line keeps what it has)."""
    if not line.startswith("print("):
        return line
    inner = line[len("print(") :]
    return inner[:-1] if inner.endswith("))") else inner


def _cut(calls: list[tuple[str, Any]] | None) -> tuple[list[tuple[str, Any]], bool] | None:
    return (calls, True) if calls else None


def _reader(family: str, open_: str, close: str, lines: bool = False):
    def read(text: str, offer: Offer) -> Reading:
        out = Reading()
        for start, end, body, closed in blocks(text, open_, close):
            src = body.strip()
            cut = not closed and end == len(text)
            if lines:
                rows = [line for line in map(str.strip, src.splitlines()) if line]
                nodes = [(_parse(line), line) for line in rows]
                got = None
                if nodes and all(node is not None for node, _ in nodes):
                    got = parse_calls([(_unprint(n), line) for n, line in nodes if n], offer)
                elif cut and rows:
                    got = _cut(cut_calls(src, offer, [_unprint_src(r) for r in rows]))
            else:
                got = parse_call_list(src, offer)
                if got is None and cut:
                    got = _cut(cut_call_list(src, offer))
            if got is None or not got[0]:
                continue
            calls, complete = got
            out.calls += block_calls(start, end, calls, len(calls) if complete else -1, family)
        return out

    return read


def _example(open_: str, close: str, listed: bool):
    def example(name: str, arguments: dict[str, Any]) -> str:
        call = python_call(name, arguments)
        return f"{open_}{'[' + call + ']' if listed else call}{close}"

    return example


def _family(name: str, open_: str, close: str, *, listed: bool) -> Family:
    """A family whose calls sit between two tokens: a list (`listed`) or one call a line."""
    reader = _reader(name, open_, close, lines=not listed)
    ex_open, ex_close = (open_, close) if open_ != "```tool_code" else ("```tool_code\n", "\n```")
    return Family(
        name, (Marker(open_, close),), reader, _example(ex_open, ex_close, listed), one_list=listed
    )


LLAMA4 = _family("llama4_pythonic", "<|python_start|>", "<|python_end|>", listed=True)
LFM2 = _family("lfm2", "<|tool_call_start|>", "<|tool_call_end|>", listed=True)
OLMO = _family("olmo", "<function_calls>", "</function_calls>", listed=False)
GEMMA_TOOL_CODE = _family("gemma_tool_code", "```tool_code", "```", listed=False)
