"""A prompting-mode reply decoded the way BFCL decodes it, before its checker sees the calls.

In prompting mode BFCL does not look for calls *in* a reply: it trims backticks, newlines and
spaces, wraps the text in `[...]` if it is not already, and parses the whole thing — as a
Python expression for Python categories, with tree-sitter for Java and JavaScript. A reply
that does not parse has no calls (an AST category fails with `decoder_failed`, irrelevance
passes). So a prose call our readers would find inside a sentence, a ```` ``` ```` fence,
or a call to a function that was not offered all count differently than they would for an
app; this module gives BFCL's reading, our own code following its rules:

- Python: every element must be a call; a dotted name is joined (`math.factorial`); only
  keyword arguments count; a bare name is its text, a call without keywords is its source
  text, one with keywords a nested `{name: {...}}`; any unary operator negates (BFCL's rule);
  arithmetic is computed, as BFCL evaluates it, but over literals only: arithmetic on names
  or calls (`len('abc') + 1`), which BFCL's `eval` may compute, is undecodable here, the one
  place we part from BFCL on purpose — a reply is never run;
- Java and JavaScript: the first call found, each argument as the source text the model wrote
  (string quotes removed), through the same tree-sitter grammars BFCL pins (the `bfcl` extra).
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from workbench.eval.suites.bfcl.case import Language, Undecodable

Decoded = list[dict[str, Any]]  # BFCL's shape: [{function name: {parameter: value}}, ...]


def decode_prompt_reply(text: str, language: Language = "python") -> Any:
    """What BFCL's prompting-mode decoder returns for `text` (normally `Decoded`; Java and
    JavaScript can give other shapes when no call is found, which the caller refuses as BFCL
    does). Raises `Undecodable` where BFCL's decoder raises."""
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    try:
        if language == "python":
            return _python_calls(text)
        from workbench.eval.suites.bfcl.tree_calls import (
            first_call,  # tree-sitter: the `bfcl` extra
        )

        return first_call(text[1:-1], language)
    except (RecursionError, SystemError, MemoryError):
        # CPython's parser gives up on some long or deep texts with these, not a SyntaxError.
        raise Undecodable("nested too deeply to read") from None
    except (TypeError, ValueError) as exc:  # an unhashable dict key, a 5,000-digit literal
        raise Undecodable(f"{type(exc).__name__}: {exc}"[:200]) from None


def well_formed(decoded: Any) -> bool:
    """BFCL's check that a decode gave `[{name: {...}}, ...]` (an empty list included)."""
    return isinstance(decoded, list) and all(
        isinstance(d, dict) and len(d) == 1 and isinstance(next(iter(d.values())), dict)
        for d in decoded
    )


def holds_a_call(decoded: Any) -> bool:
    """BFCL's relevance rule: a well-formed decode with at least one non-empty call."""
    if not well_formed(decoded) or not decoded:
        return False
    return not (len(decoded) == 1 and not decoded[0])


# ------------------------------------------------------------------ Python
def _python_calls(text: str) -> Decoded:
    try:
        tree = ast.parse(text.strip().strip("'"), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise Undecodable(f"not a Python call list: {type(exc).__name__}") from None
    body = tree.body
    if isinstance(body, ast.Call):
        return [_call(body)]
    elements = getattr(body, "elts", None)
    if elements is None:
        raise Undecodable(f"a {type(body).__name__}, not a list of calls")
    out = []
    for element in elements:
        if not isinstance(element, ast.Call):
            raise Undecodable(f"a {type(element).__name__} where a call was expected")
        out.append(_call(element))
    return out


def _call(node: ast.Call) -> dict[str, Any]:
    parts: list[str] = []
    func: ast.expr = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    name = ".".join(reversed(parts))
    return {name: {k.arg: _value(k.value) for k in node.keywords}}


_ARITHMETIC: dict[type, Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitOr: operator.or_, ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}  # fmt: skip
_UNARY: dict[type, Any] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}
_LARGEST = 1_000_000  # bits of a number, or items of a string or list, computed at most


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        operand = getattr(node.operand, "value", None)
        if not isinstance(operand, int | float | complex):  # BFCL negates whatever it finds
            raise Undecodable("a unary operator on something that is not a number")
        return -operand
    if isinstance(node, ast.List):
        return [_value(v) for v in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(v) for v in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise Undecodable("a ** in a dict literal")
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.BinOp):
        return _arithmetic(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _call(node) if node.keywords else ast.unparse(node)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise Undecodable(f"Unsupported AST type: {type(node).__name__}")


def _arithmetic(node: ast.expr) -> Any:
    """A BinOp as BFCL computes it (it evaluates the expression), over literals only: names
    and calls would need code run, and are undecodable here. Inside arithmetic a literal has
    its Python meaning (`+1` is 1, `...` is Ellipsis), unlike a bare argument (BFCL's rule:
    any unary operator negates)."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        _refuse_huge(node.op, left, right)
        try:
            return _ARITHMETIC[type(node.op)](left, right)
        except (ArithmeticError, TypeError, ValueError, MemoryError) as exc:
            raise Undecodable(f"arithmetic that fails: {type(exc).__name__}") from None
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        try:
            return _UNARY[type(node.op)](_arithmetic(node.operand))
        except TypeError as exc:
            raise Undecodable(f"arithmetic that fails: {type(exc).__name__}") from None
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [_arithmetic(e) for e in node.elts]
        kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
        try:
            return kind(items)
        except TypeError as exc:
            raise Undecodable(f"arithmetic that fails: {type(exc).__name__}") from None
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if k is not None]
        if len(keys) != len(node.values):
            raise Undecodable("a ** in a dict literal")
        try:
            return {_arithmetic(k): _arithmetic(v) for k, v in zip(keys, node.values, strict=True)}
        except TypeError as exc:
            raise Undecodable(f"arithmetic that fails: {type(exc).__name__}") from None
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
    raise Undecodable("an expression that would have to be run")


def _refuse_huge(op: ast.operator, left: Any, right: Any) -> None:
    """BFCL would compute `(10**10000)**10000` for minutes or `'a' * 10**9` into a gigabyte:
    a reply never costs that here."""
    if isinstance(left, bool) or isinstance(right, bool):
        return
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int):
        if right > 0 and abs(left) > 1 and abs(left).bit_length() * right > _LARGEST:
            raise Undecodable("a number too large to compute")
    if isinstance(op, ast.LShift) and isinstance(left, int) and isinstance(right, int):
        if left and right > _LARGEST:
            raise Undecodable("a number too large to compute")
    if isinstance(op, ast.Mult):
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, str | list | tuple | bytes) and isinstance(n, int):
                if len(seq) * n > _LARGEST:
                    raise Undecodable("a value too large to build")
