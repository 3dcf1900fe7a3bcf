"""Java and JavaScript prompting-mode calls read with tree-sitter, as BFCL reads them.

BFCL parses a Java or JavaScript reply with tree-sitter (the grammar versions it pins, which
the `bfcl` extra installs) and hands the checker each argument as the *source text* the model
wrote: the checker converts that text itself (`values.py`). Its reading has rules of its own,
kept here: any parse error anywhere means no call; only the first call counts; a Java object
creation keeps its type and arguments but not an anonymous class body (so
`new HashMap<>() {{ put(...) }}` reads as `new HashMap<>()`); text inside an expression is
rejoined without its spaces.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from workbench.errors import ConfigError
from workbench.eval.suites.bfcl.case import Undecodable
from workbench.eval.suites.bfcl.values import quoted

_NAMED_TEXT = ("identifier", "class_literal", "type_identifier", "method_invocation")


@cache
def parser(language: str) -> Any:
    try:
        import tree_sitter
        import tree_sitter_java
        import tree_sitter_javascript
    except ImportError:
        raise ConfigError(
            "reading Java or JavaScript prompting-mode replies needs tree-sitter: "
            "pip install 'workbench[bfcl]'",
            code="BFCL_PARSER_MISSING",
        ) from None
    grammar = tree_sitter_java if language == "java" else tree_sitter_javascript
    reader = tree_sitter.Parser()
    reader.set_language(tree_sitter.Language(grammar.language(), language))
    return reader


def first_call(source: str, language: str) -> Any:
    """BFCL's reading of `source`: `[{name: {param: text}}]`, or what BFCL returns when it
    finds no call (`{}` for Java, None for JavaScript: not a call list)."""
    data = source.encode("utf8")
    tree = parser(language).parse(data)
    if _has_error_node(tree):
        raise Undecodable(f"the {language} does not parse")
    if language == "java":
        # BFCL's Java reader slices the *text* with tree-sitter's *byte* offsets: right for
        # ASCII, shifted after any other character. Its verdicts come from that reading.
        return _java_call(tree.root_node, lambda node: source[node.start_byte : node.end_byte])

    def text(node: Any) -> str:
        return data[node.start_byte : node.end_byte].decode("utf8", "replace")

    return _js_call(tree.root_node, text)


def _has_error_node(tree: Any) -> bool:
    """Whether any node is an ERROR (BFCL looks for "ERROR" in the tree's s-expression, which
    a deeply nested reply turns into a C stack overflow: this walks the tree in a loop)."""
    cursor = tree.walk()
    while True:
        if cursor.node.type == "ERROR":
            return True
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return False


def _single(pairs: list[tuple[str | None, str]]) -> dict[str | None, str]:
    out: dict[str | None, str] = {}
    for name, value in pairs:
        if name in out:
            raise Undecodable("Multiple arguments with the same name are not supported.")
        out[name] = value
    return out


# ------------------------------------------------------------------ Java
def _java_call(node: Any, text: Any) -> Any:
    found = _java_find(node, text)
    return found if found else {}


def _java_find(node: Any, text: Any) -> list[dict[str, Any]] | None:
    if node.type == "method_invocation":
        owner = node.child_by_field_name("object")
        name = text(node.child_by_field_name("name"))
        if owner is not None:
            name = f"{text(owner)}.{name}"
        arguments = node.child_by_field_name("arguments")
        if arguments is None:
            return None
        return [{name: _single(_java_arguments(arguments, text))}]
    for child in node.children:
        found = _java_find(child, text)
        if found:
            return found
    return None


def _java_arguments(node: Any, text: Any) -> list[tuple[str | None, str]]:
    pairs: list[tuple[str | None, str]] = []
    for child in node.children:
        if child.type == "assignment_expression":
            pairs.append((text(child.children[0]), _java_text(child.children[2], text)))
        elif child.type in ("identifier", "class_literal", "set"):
            pairs.append((None, _java_text(child, text)))  # a positional argument
    return pairs


def _java_text(node: Any, text: Any, nested: bool = False) -> str:
    if node is None:
        raise Undecodable("an incomplete Java expression")
    if node.type in ("string_literal", "character_literal"):
        return text(node) if nested else text(node)[1:-1]
    if node.type in _NAMED_TEXT:
        return str(text(node))
    if node.type == "array_creation_expression":
        kind = _java_text(node.child_by_field_name("type"), text, True)
        return f"new {kind}[]{_java_text(node.child_by_field_name('value'), text, True)}"
    if node.type == "object_creation_expression":
        kind = _java_text(node.child_by_field_name("type"), text, True)
        arguments = node.child_by_field_name("arguments")
        if arguments is None:
            return f"new {kind}()"
        inner = [
            _java_text(c, text, True) for c in arguments.children if c.type not in (",", "(", ")")
        ]
        return f"new {kind}({', '.join(inner)})"
    if node.type == "set":
        items = [_java_text(c, text, True) for c in node.children if c.type not in (",", "set")]
        return "{" + ", ".join(items) + "}"
    if node.child_count > 0:
        return "".join(_java_text(c, text, True) for c in node.children)
    return str(text(node))


# ------------------------------------------------------------------ JavaScript
def _js_call(root: Any, text: Any) -> Any:
    if root.type != "program":
        return None
    for statement in root.children:
        if statement.type != "expression_statement":
            continue
        for node in statement.children:
            if node.type == "call_expression":
                name = text(node.children[0])
                return [{name: _single(_js_arguments(node.children[1], text))}]
    return None


def _js_arguments(node: Any, text: Any) -> list[tuple[str | None, str]]:
    pairs: list[tuple[str | None, str]] = []
    for child in node.children:
        if child.type == "assignment_expression":
            value = text(child.children[2])
            if quoted(value):
                value = value[1:-1]
            pairs.append((text(child.children[0]), value))
        elif child.type in ("identifier", "true"):
            pairs.append((None, text(child)))  # a positional argument
    return pairs
