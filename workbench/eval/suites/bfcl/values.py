"""Java and JavaScript argument values, read the way BFCL's checker reads them.

BFCL sends every Java and JavaScript parameter to the model as a *string* holding source
text (`"new ArrayList<>(Arrays.asList(1, 2))"`, `"5L"`, `"{key: 'v'}"`), then turns that
text back into a value before comparing it with the possible answers. The turning back is
a set of regular expressions with their own quirks (a `char` is never unquoted, a nested
JavaScript object is cut at its first `}`, text that matches nothing stays text), and a
verdict is only BFCL's verdict if the same quirks apply. So these functions follow BFCL's
rules line for line in behaviour; a value they cannot read stays the string it was, which
the type check then refuses, never raises.
"""

from __future__ import annotations

import re
from typing import Any

# BFCL's type names → the Python type a converted value must have.
JAVA_TYPES: dict[str, type] = {
    "byte": int, "short": int, "integer": int, "long": int,
    "float": float, "double": float, "boolean": bool, "char": str,
    "Array": list, "ArrayList": list, "Set": set, "HashMap": dict, "Hashtable": dict,
    "Queue": list, "Stack": list, "String": str, "any": str,
}  # fmt: skip
JS_TYPES: dict[str, type] = {
    "String": str,
    "integer": int,
    "float": float,
    "Bigint": int,
    "Boolean": bool,
    "dict": dict,
    "array": list,
    "any": str,
}

_INT = re.compile(r"^-?\d+$")
_JAVA_FLOAT = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
_JAVA_DOUBLE = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")
_JAVA_LONG = re.compile(r"^-?\d+[lL]$")
# `$` also matches before a final newline: "5L\n" is a long, its suffix the letter before it.
_SUFFIX_F = re.compile(r"[fF]$")
_SUFFIX_L = re.compile(r"[lL]$")
_AS_LIST = re.compile(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)")
_ADDS = re.compile(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", re.S)
_ADD = re.compile(r"add\((.+?)\)")
_EMPTY_LIST = re.compile(r"new\s+ArrayList<\w*>\(\)")
_ARRAY = re.compile(r"new\s+\w+\[\]\s*\{(.*?)\}")
_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", re.S)
_PUT = re.compile(r"put\(\"(.*?)\",\s*(.*?)\)")
_EMPTY_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)")


class Unsupported(Exception):
    """A declared type BFCL's converter refuses (Set, Hashtable, Queue, Stack): BFCL's own run
    stops there; ours grades the call invalid."""


# ------------------------------------------------------------------ Java
def java_value(text: str, kind: str, nested: str | None = None) -> Any:
    """A Java parameter's source text as the value BFCL compares."""
    if kind not in JAVA_TYPES:
        raise Unsupported(f"Unsupported type: {kind}")
    if kind in ("byte", "short", "integer"):
        return int(text) if _INT.match(text) else text
    if kind == "float":
        return float(_SUFFIX_F.sub("", text)) if _JAVA_FLOAT.match(text) else text
    if kind == "double":
        return float(text) if _JAVA_DOUBLE.match(text) else text
    if kind == "long":
        return int(_SUFFIX_L.sub("", text)) if _JAVA_LONG.match(text) else text
    if kind == "boolean":
        return text == "true" if text in ("true", "false") else text
    if kind == "ArrayList":
        return _java_array_list(text, nested)
    if kind == "Array":
        return _java_array(text, nested)
    if kind == "HashMap":
        return _java_map(text)
    if kind in ("Set", "Hashtable", "Queue", "Stack"):
        raise Unsupported(f"{kind} conversion is not implemented")
    return text  # String, any, and char (BFCL's char pattern can never match: kept as written)


def _java_element(text: str, nested: str | None) -> Any:
    if nested in ("char", "String"):
        return text[1:-1]  # the quotes go, whatever they were
    return java_value(text, nested) if nested else java_literal(text)


def _java_array_list(text: str, nested: str | None) -> Any:
    m = _AS_LIST.search(text)
    if m:
        return [_java_element(e.strip(), nested) for e in m.group(1).split(",")]
    m = _ADDS.search(text)
    if m:
        return [_java_element(e.strip(), nested) for e in _ADD.findall(m.group(1))]
    return [] if _EMPTY_LIST.search(text) else text


def _java_array(text: str, nested: str | None) -> Any:
    m = _ARRAY.search(text)
    if not m:
        return text
    parts = [p.strip() for p in m.group(1).split(",") if p.strip()]
    return [java_value(p, nested) if nested else java_literal(p) for p in parts]


def _java_map(text: str) -> Any:
    m = _MAP.search(text)
    if m:
        return {k: java_literal(v.strip()) for k, v in _PUT.findall(m.group(1))}
    return {} if _EMPTY_MAP.search(text) else text


def java_literal(text: str) -> Any:
    """A Java literal of unknown type: boolean, string, long, float, then int or double."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _JAVA_LONG.match(text):
        return int(_SUFFIX_L.sub("", text))
    if _JAVA_FLOAT.match(text):
        return float(_SUFFIX_F.sub("", text))
    return _number_or_text(text)


def _number_or_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# ------------------------------------------------------------------ JavaScript
_JS_FLOAT = re.compile(r"^-?\d+(\.\d+)?$")
_JS_BIGINT = re.compile(r"^-?\d+n$")
_JS_2D = re.compile(
    r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
)
_JS_1D = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")
# The 2-D pattern backtracks exponentially on text it cannot match (a truncated array of
# rows): it can only match text holding `]]` or `])` (spaces allowed), so without one it is
# not tried, which changes no verdict.
_JS_2D_ENDING = re.compile(r"\]\s*[\])]")
_JS_INNER = re.compile(r"\[(.*?)\]")
_JS_OBJECT = re.compile(r"\{(.*?)\}")
_JS_PAIR = re.compile(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)")


def js_value(text: str, kind: str, nested: str | None = None) -> Any:
    """A JavaScript parameter's source text as the value BFCL compares."""
    if kind not in JS_TYPES:
        raise Unsupported(f"Unsupported type: {kind}")
    if kind == "String":
        return text[1:-1] if quoted(text) else text
    if kind == "integer":
        return int(text) if _INT.match(text) else text
    if kind == "float":
        return float(text) if _JS_FLOAT.match(text) else text
    if kind == "Bigint":
        if not _JS_BIGINT.match(text):
            return text
        try:
            return int(text[:-1])
        except ValueError:  # "5n\n": BFCL's own converter raises here; the value stays text
            return text
    if kind == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if kind == "dict":
        return _js_object(text)
    if kind == "array":
        return _js_array(text, nested)
    return text  # any


def quoted(text: str) -> bool:
    """Whether BFCL takes `text` for a quoted string (its quotes are then dropped)."""
    return (text.startswith('"') and text.endswith('"')) or (
        text.startswith("'") and text.endswith("'")
    )


def _js_array(text: str, nested: str | None) -> Any:
    src = text.strip()
    try:
        m = _JS_2D.match(src) if _JS_2D_ENDING.search(src) else None
        if m:
            rows = []
            for k, inner in enumerate(_JS_INNER.findall(m.group(0))):
                inner = inner.strip()
                if k == 0 and inner.startswith("["):
                    inner = inner[1:]
                rows.append([js_literal(e.strip()) for e in inner.split(",")])
            return rows
        m = _JS_1D.match(src)
        if not m:
            return src
        body = m.group(1) if m.group(1) is not None else m.group(2)
        body = (body or "").strip()
        parts = body.split(",") if body else []
        if nested:
            return [js_value(p.strip(), nested) for p in parts]
        return [js_literal(p.strip()) for p in parts]
    except Exception:  # BFCL keeps the text of an array it cannot read, whatever went wrong
        return src


def _js_object(text: str) -> Any:
    src = text.strip()
    if src == "{}":
        return {}
    m = _JS_OBJECT.match(src)
    if not m:
        return src
    out: dict[str, Any] = {}
    for key, raw in _JS_PAIR.findall(m.group(1)):
        key, raw = key.strip().strip("'\""), raw.strip()
        if raw.startswith("[") and raw.endswith("]"):
            out[key] = _js_array(raw, None)
        elif raw.startswith("{") and raw.endswith("}"):
            out[key] = _js_object(raw)
        else:
            out[key] = js_literal(raw.strip("'\""))
    return out


def js_literal(text: str) -> Any:
    """A JavaScript literal of unknown type: boolean, quoted string, then int or float."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if quoted(text):
        return text[1:-1]
    return _number_or_text(text)
