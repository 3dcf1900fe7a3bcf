"""Pythonic calls: `[get_weather(city="Paris"), search(q="x")]` (Llama 3.2 and ToolACE,
Gemma 3 when prompted, BFCL's prompting format). Read as a whole reply (bare or fenced), or as
a list that ends the reply after a line of prose ("Here's a tool call: [...]").

The source is parsed, never run: keyword values must be plain literals (Python's `None` /
`True` or JSON's `null` / `true`, tuples as lists); positional arguments cannot be mapped to
parameters, so such a call is not read; a value that is not a literal keeps the call, marked.
Tools may be named with dots (`math.factorial`), as benchmarks name them.
"""

from __future__ import annotations

import ast
import itertools
import re
import warnings
from typing import Any

from workbench.providers.protocols.jsonish import Args, compact_json, unfence
from workbench.providers.protocols.reading import Family, Found, Offer, Reading, python_literal

__all__ = ["FAMILY", "after_prose", "call_source", "parse_call_list", "parse_calls"]

NAME = "pythonic"
TRIGGER = r"\[\s*[A-Za-z_][\w.]*\s*\("  # a list of calls, wherever it starts
_TAIL = re.compile(r"\[\s*([A-Za-z_][\w.]*)\s*\(")


def _parse(src: str) -> ast.expr | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "invalid escape sequence": the string still reads
        try:
            return ast.parse(src, mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None


def _dotted_name(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def call_source(node: ast.expr, src: str, offer: Offer) -> tuple[str, Args] | bool | None:
    """One call expression: (name, args), None when it is a call but not a readable one of an
    offered tool, False when it is not a call at all."""
    if not isinstance(node, ast.Call):
        return False
    name = _dotted_name(node.func)
    if name is None:
        return False
    if name not in offer.names or node.args or any(k.arg is None for k in node.keywords):
        return None
    try:
        args = {k.arg: python_literal(k.value) for k in node.keywords if k.arg is not None}
    except (ValueError, TypeError, RecursionError):
        return name, ({}, ast.get_source_segment(src, node) or name, "not_json")
    return name, (args, compact_json(args), None)


def parse_calls(
    nodes: list[tuple[ast.expr, str]], offer: Offer
) -> tuple[list[tuple[str, Args]], bool] | None:
    """Calls among (expression, its source) pairs, and whether every one was read; None if
    one is not a call."""
    calls: list[tuple[str, Args]] = []
    for node, src in nodes:
        got = call_source(node, src, offer)
        if got is False:
            return None
        if isinstance(got, tuple):
            calls.append(got)
    return calls, len(calls) == len(nodes)


def parse_call_list(src: str, offer: Offer) -> tuple[list[tuple[str, Args]], bool] | None:
    """A pythonic list `[f(...), g(...)]`: its calls and whether all were read, or None."""
    tree = _parse(src)
    if not isinstance(tree, ast.List) or not tree.elts:
        return None
    return parse_calls([(el, src) for el in tree.elts], offer)


def _top_level(src: str) -> tuple[list[tuple[int, int]], bool]:
    """(start, end) of each element of the list `src` opens, split at its top-level commas,
    and whether the list closed (quote- and bracket-aware; no parse, so a cut list splits)."""
    parts: list[tuple[int, int]] = []
    depth, quote, esc, begin = 0, "", False, 1
    for i, c in enumerate(src):
        if quote:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                parts.append((begin, i))
                return parts, True
        elif c == "," and depth == 1:
            parts.append((begin, i))
            begin = i + 1
    parts.append((begin, len(src)))
    return parts, False


_CALL_START = re.compile(r"\s*([A-Za-z_][\w.]*)\s*(?:\(|$)")


def cut_calls(src: str, offer: Offer, sources: list[str]) -> list[tuple[str, Args]] | None:
    """Calls of pythonic `sources` (one call each) where the last was cut off by the end of the
    reply: the complete ones read, the cut one truncated if its name made it out; None when
    one is not a call."""
    calls: list[tuple[str, Args]] = []
    for k, part in enumerate(sources):
        if not part.strip():
            continue
        node = _parse(part.strip())
        if node is not None and (k < len(sources) - 1 or isinstance(node, ast.Call)):
            got = call_source(node, part.strip(), offer)
            if got is False:
                return None
            if isinstance(got, tuple):
                calls.append(got)
            continue
        if k < len(sources) - 1:
            return None
        m = _CALL_START.match(part)
        if m is None or m.group(1) not in offer.names:
            return calls or None
        calls.append((m.group(1), ({}, part.strip(), "truncated")))
    return calls or None


def cut_call_list(src: str, offer: Offer) -> list[tuple[str, Args]] | None:
    """A pythonic list cut off by the end of the reply, read as far as it goes."""
    parts, closed = _top_level(src)
    if closed:
        return None
    return cut_calls(src, offer, [src[a:b] for a, b in parts])


def _found(start: int, end: int, got: tuple[list[tuple[str, Args]], bool] | None) -> list[Found]:
    """A read list's calls; the list leaves the text only when every element was read."""
    if got is None or not got[0]:
        return []
    calls, complete = got
    a, b = (start, end) if complete else (start, start)
    return [Found(a, b, name, args, NAME) for name, args in calls]


def after_prose(text: str, i: int) -> bool:
    """A list that ends the reply counts after prose that introduces it — at the start of a
    line, or after a colon — never after code (`x = […]`, `return […]`)."""
    before = text[:i].rstrip(" \t")
    return not before or before.endswith(("\n", ":"))


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    t = unfence(text)
    if offer.at_start and t.startswith("["):
        # The whole reply is the list (cut off at its end, it is read as far as it goes).
        got = parse_call_list(t, offer)
        if got is None and _CALL_START.match(t[1:]):
            cut = cut_call_list(t, offer)
            got = (cut, True) if cut else None
        if got is not None:
            out.calls += _found(0, len(text), got)
            return out
    # Prose, then a list that ends the reply: the outermost `[name(` under an offered name
    # that reads to the end (a few tries at most: each is a parse of the rest of the reply).
    tail = text.rstrip()
    tries = (
        m
        for m in _TAIL.finditer(tail)
        if m.group(1) in offer.names and after_prose(tail, m.start())
    )
    for m in itertools.islice(tries, 4):
        rest = tail[m.start() :]
        got = parse_call_list(rest, offer) if rest.endswith("]") else None
        if got is None and not rest.endswith("]"):
            cut = cut_call_list(rest, offer)  # cut off at the end of the reply
            got = (cut, True) if cut else None
        if got is not None:
            out.calls += _found(m.start(), len(text), got)
            break
    return out


def python_call(name: str, arguments: dict[str, Any]) -> str:
    """`name(k=v, …)` with Python literals."""
    return f"{name}({', '.join(f'{k}={_py(v)}' for k, v in arguments.items())})"


def _py(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{compact_json(k)}: {_py(v)}" for k, v in value.items()) + "}"
    return compact_json(value)


def example(name: str, arguments: dict[str, Any]) -> str:
    return f"[{python_call(name, arguments)}]"


FAMILY = Family(NAME, (), read, example, triggers=(TRIGGER,), starts="[", one_list=True)
