"""FunctionGemma and Gemma 4: `call:name{key:<escape>text<escape>,n:42,flag:true}` between
`<start_function_call>` and `<end_function_call>` (FunctionGemma) or `<|tool_call>` and
`<tool_call|>` (Gemma 4, whose string delimiter is `<|"|>`). Keys are bare; strings sit between
delimiters; numbers, booleans, nested objects and lists are written as in JSON. Both are read
by one reader, each as its own family."""

from __future__ import annotations

import json
import re
from typing import Any

from workbench.providers.protocols.jsonish import Args, compact_json
from workbench.providers.protocols.reading import (
    Family,
    Marker,
    Offer,
    Reading,
    block_calls,
    blocks,
)

__all__ = ["FUNCTION_GEMMA", "GEMMA4"]

_HEAD = re.compile(r"\s*call:([A-Za-z_][\w.\-]*)\s*")
_KEY = re.compile(r"\s*([A-Za-z_][\w\-]*)\s*:")
_BARE = re.compile(r"[^,}\]]+")


def _to_json(body: str, quote: str) -> str | None:
    """The argument object rewritten as JSON, or None when it does not scan."""
    out: list[str] = []
    i, depth = 0, []
    expect_key = False
    while i < len(body):
        if body.startswith(quote, i):
            j = body.find(quote, i + len(quote))
            if j < 0:
                return None
            out.append(json.dumps(body[i + len(quote) : j], ensure_ascii=False))
            i = j + len(quote)
            expect_key = False
            continue
        c = body[i]
        if c in "{[":
            depth.append(c)
            out.append(c)
            i += 1
            expect_key = c == "{"
            continue
        if c in "}]":
            if not depth:
                return None
            depth.pop()
            out.append(c)
            i += 1
            continue
        if c == ",":
            out.append(c)
            i += 1
            expect_key = bool(depth) and depth[-1] == "{"
            continue
        if c.isspace():
            i += 1
            continue
        if expect_key:
            m = _KEY.match(body, i)
            if m is None:
                return None
            out.append(json.dumps(m.group(1)) + ":")
            i = m.end()
            expect_key = False
            continue
        m = _BARE.match(body, i)
        if m is None:
            return None
        word = m.group(0).strip()
        try:
            json.loads(word)
            out.append(word)
        except ValueError:
            out.append(json.dumps(word, ensure_ascii=False))
        i = m.end()
    return "".join(out) if not depth else None


def _reader(family: str, open_: str, close: str, quote: str):
    def read(text: str, offer: Offer) -> Reading:
        out = Reading()
        for start, end, body, closed in blocks(text, open_, close):
            m = _HEAD.match(body)
            if m is None or m.group(1) not in offer.names:
                continue
            raw = body[m.end() :].strip()
            src = _to_json(raw, quote) if raw.startswith("{") else None
            args: Args
            try:
                value = json.loads(src) if src is not None else None
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict):
                args = (value, compact_json(value), None)
            else:
                args = ({}, raw, "truncated" if not closed and end == len(text) else "not_json")
            out.calls += block_calls(start, end, [(m.group(1), args)], 1, family)
        return out

    return read


def _write(value: Any, quote: str) -> str:
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_write(v, quote)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_write(v, quote) for v in value) + "]"
    return compact_json(value)


def _example(open_: str, close: str, quote: str):
    def example(name: str, arguments: dict[str, Any]) -> str:
        return f"{open_}call:{name}{_write(arguments, quote)}{close}"

    return example


_FG = ("<start_function_call>", "<end_function_call>", "<escape>")
_G4 = ("<|tool_call>", "<tool_call|>", '<|"|>')
FUNCTION_GEMMA = Family(
    "function_gemma", (Marker(_FG[0], _FG[1]),), _reader("function_gemma", *_FG), _example(*_FG)
)
GEMMA4 = Family("gemma4", (Marker(_G4[0], _G4[1]),), _reader("gemma4", *_G4), _example(*_G4))
