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
  arithmetic on literals is computed (BFCL evaluates it: we compute literals only and never
  run anything else, which BFCL could not run either);
- Java and JavaScript: the first call found, each argument as the source text the model wrote
  (string quotes removed), through the same tree-sitter grammars BFCL pins (the `bfcl` extra).
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from workbench.eval.bfcl.case import Language

Decoded = list[dict[str, Any]]  # BFCL's shape: [{function name: {parameter: value}}, ...]


class Undecodable(Exception):
    """The reply is not a call list BFCL's decoder can read."""


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
        from workbench.eval.bfcl.tree_calls import first_call  # tree-sitter: the `bfcl` extra

        return first_call(text[1:-1], language)
    except RecursionError:
        raise Undecodable("nested too deeply to read") from None


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
_HUGE = (ast.Pow, ast.LShift)  # operators whose result grows with the right operand


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
    """A BinOp of literals, computed; anything else would need running code: undecodable."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(right, int) and isinstance(node.op, _HUGE) and abs(right) > 10_000:
            raise Undecodable("a number too large to compute")  # BFCL would spend minutes on it
        try:
            return _ARITHMETIC[type(node.op)](left, right)
        except (ArithmeticError, TypeError, ValueError, MemoryError) as exc:
            raise Undecodable(f"arithmetic that fails: {type(exc).__name__}") from None
    if isinstance(node, ast.Constant | ast.UnaryOp | ast.List | ast.Tuple):
        return _value(node)
    raise Undecodable("an expression that would have to be run")
