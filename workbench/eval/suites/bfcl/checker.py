"""BFCL's AST checker: the verdict BFCL itself gives a set of calls, with its error types.

A leaderboard number is only comparable when it is graded by the leaderboard's rules, so
these are BFCL's rules, quirks included, written for this project:

- strings are compared after standardisation: spaces and `,./-_*^` removed, lower-cased,
  single quotes made double ("April 1, 2024" == "april 1 2024");
- types are exact (`True` is not an integer), except that Python accepts an int for a
  float; a value whose type is that of the possible answers but not the declared one is a
  *variable* and is compared as it is;
- a parameter whose possible answers include `""` is optional; one absent from the
  possible answers is unexpected, even when the function declares it;
- list and dict values are compared element by element after standardising their strings;
  a list of dicts in the answers' order;
- Java and JavaScript values arrive as source text and are converted first (`values.py`);
  the checks of one value, in BFCL's order, are in `value_checks.py`;
- `parallel` categories match calls in any order, `multiple` checks the one expected
  function, every other category wants exactly one call; irrelevance wants no call, and
  relevance at least one.

Calls come in with BFCL's own (dotted) names: `grade_calls` maps a native call's
`math_factorial` back to `math.factorial` first, because BFCL's function-calling handlers
send dotted names with underscores (vendors refuse dots).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.eval.suites.bfcl.case import BfclCase, Language
from workbench.eval.suites.bfcl.value_checks import (
    Failed,
    dict_check,
    list_check,
    list_of_dicts_check,
    string_check,
    type_check,
)
from workbench.eval.suites.bfcl.values import (
    JAVA_TYPES,
    JS_TYPES,
    Unsupported,
    java_value,
    js_value,
)
from workbench.types import ToolCall

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_NESTED_PYTHON = ("array", "tuple")  # the only Python types whose items are type-checked
_NESTED_CONVERTED = ("Array", "ArrayList", "array")  # Java/JavaScript collections of items


@dataclass(frozen=True, slots=True)
class BfclGrade:
    """BFCL's verdict on one item: `error_type` in its taxonomy (`simple_function_checker:
    wrong_func_name`, `type_error:simple`, `multi_turn:instance_state_mismatch`, ...), None
    when valid."""

    valid: bool
    error_type: str | None = None
    errors: tuple[str, ...] = ()
    # JSON-safe particulars a notebook shows (multi-turn: the turn, the state differences or
    # the missing results); left out of equality so a grade stays a comparable value.
    details: dict[str, Any] | None = field(default=None, compare=False)


_VALID = BfclGrade(True)


# ------------------------------------------------------------------ entry point
Call = ToolCall | Mapping[str, Any]


def grade_calls(item: Any, calls: Sequence[Call] | None) -> BfclGrade:
    """BFCL's verdict on `calls` for a BFCL item (an `Item` loaded by `load_bfcl`, or its
    `BfclCase`). `calls`: `ToolCall`s from any protocol, or `{"name", "arguments"}` dicts
    (BFCL's decoded `{name: arguments}` too); None when the reply held no call at all.

    As BFCL's decoder would: no call, or one whose arguments could not be read (not JSON, not
    an object), is `ast_decoder:decoder_failed` in an AST category and counts as no call for
    (ir)relevance; an empty list is a decoded reply with zero calls (a wrong count)."""
    case = _case_of(item)
    decoded = _decode(case, calls)
    if case.kind == "irrelevance":
        if decoded:
            return BfclGrade(
                False,
                "irrelevance_error:decoder_success",
                ("Valid syntax. Successfully decode AST when it should not.",),
            )
        return _VALID
    if case.kind == "relevance":
        if decoded:
            return _VALID
        return BfclGrade(
            False,
            "relevance_error:decoder_failed",
            ("Invalid syntax. Failed to decode AST when it should have.",),
        )
    if decoded is None:
        return BfclGrade(
            False,
            "ast_decoder:decoder_failed",
            ("Invalid syntax. Failed to decode AST. No function call was read from the reply.",),
        )
    try:
        _check(case, decoded)
    except Failed as failed:
        return BfclGrade(False, failed.error_type, failed.errors)
    except Exception as exc:  # a shape BFCL's own checker would crash on: wrong, never a crash
        return BfclGrade(False, "ast_checker:unreadable", (f"{type(exc).__name__}: {exc}"[:300],))
    return _VALID


def _case_of(item: Any) -> BfclCase:
    if isinstance(item, BfclCase):
        return item
    case = getattr(getattr(item, "expect", None), "bfcl", None)
    if not isinstance(case, BfclCase):
        raise TypeError("grade_calls needs an item loaded by load_bfcl (or its BfclCase)")
    return case


def _decode(
    case: BfclCase, calls: Sequence[Call] | None
) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls as BFCL's decoder gives them: `(BFCL name, arguments)`, or None when the reply
    cannot be decoded (no call at all, or one with unreadable arguments)."""
    if calls is None:
        return None
    out: list[tuple[str, dict[str, Any]]] = []
    for call in calls:
        if isinstance(call, ToolCall):
            if call.invalid or not isinstance(call.arguments, dict):
                return None
            name, args = call.name, call.arguments
            if call.source == "native":  # sent with underscores: the name BFCL wrote
                name = case.sent_names.get(name, name)
            elif case.language != "python":
                args = {k: _as_source(v) for k, v in args.items()}
        else:
            name, args = _dict_call(call)
            if not isinstance(name, str) or not isinstance(args, dict):
                return None
        out.append((name, args))
    return out


def _dict_call(call: Mapping[str, Any]) -> tuple[Any, Any]:
    """`{"name": ..., "arguments": {...}}`, or BFCL's own decoded shape `{name: {...}}`."""
    if "name" in call and "arguments" in call:
        return call["name"], call["arguments"]
    if len(call) == 1:
        return next(iter(call.items()))
    return None, None


def _as_source(value: Any) -> Any:
    """A value read from prose for a Java or JavaScript parameter, as the source text BFCL's
    prompt-mode parsers hand the checker (`count=5` arrives as "5", `true` as "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return value


# ------------------------------------------------------------------ the categories
def _check(case: BfclCase, calls: list[tuple[str, dict[str, Any]]]) -> None:
    answers = list(case.ground_truth)
    if "parallel" in case.category:
        _parallel_any_order(case, calls, answers)
    elif "multiple" in case.category:
        if len(calls) != len(answers):
            raise Failed("multiple_function_checker:wrong_count", "Wrong number of functions.")
        _one_call(case, _function(case, _expected_name(answers[0])), calls[0], answers[0])
    else:
        if len(calls) != 1:
            raise Failed("simple_function_checker:wrong_count", "Wrong number of functions.")
        _one_call(case, case.functions[0], calls[0], answers[0])


def _expected_name(answer: Mapping[str, Any]) -> str:
    return next(iter(answer))


def _function(case: BfclCase, name: str) -> dict[str, Any]:
    found = next((f for f in case.functions if f.get("name") == name), None)
    if found is None:  # BFCL's data never does this; a hand-made case might
        raise Failed(
            "simple_function_checker:wrong_func_name",
            f"No function named {name!r} among the item's functions.",
        )
    return found


def _parallel_any_order(
    case: BfclCase, calls: list[tuple[str, dict[str, Any]]], answers: list[dict[str, Any]]
) -> None:
    """Each expected call, in order, takes the first unmatched call that satisfies it;
    a call is never matched twice (greedy, as BFCL matches)."""
    if len(calls) != len(answers):
        raise Failed("parallel_function_checker_no_order:wrong_count", "Wrong number of functions.")
    matched: set[int] = set()
    for i, answer in enumerate(answers):
        function = _function(case, _expected_name(answer))
        misses: list[str] = []
        for k, call in enumerate(calls):
            if k in matched:
                continue
            try:
                _one_call(case, function, call, answer)
            except Failed as failed:
                why = "; ".join(failed.errors)
                misses.append(f"Model Result Index {k}: {failed.error_type}: {why}")
                continue
            matched.add(k)
            break
        else:
            left = [k for k in range(len(calls)) if k not in matched]
            raise Failed(
                "parallel_function_checker_no_order:cannot_find_match",
                f"Could not find a matching function among index {left} of model output "
                f"for index {i} of possible answers.",
                *misses,
            )


# ------------------------------------------------------------------ one call
def _one_call(
    case: BfclCase,
    function: dict[str, Any],
    call: tuple[str, dict[str, Any]],
    answer: Mapping[str, Any],
) -> None:
    expected_name = function["name"]
    possible: dict[str, list[Any]] = next(iter(answer.values()))
    name, args = call
    if name != expected_name:
        raise Failed(
            "simple_function_checker:wrong_func_name",
            f"Function name {expected_name!r} not found in model output.",
        )
    params = function.get("parameters") or {}
    declared: dict[str, Any] = params.get("properties") or {}
    for required in params.get("required") or []:
        if required not in args:
            raise Failed(
                "simple_function_checker:missing_required",
                f"Missing required parameter: {required!r}.",
            )
    for param, value in args.items():
        if param not in declared or param not in possible:
            raise Failed(
                "simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}."
            )
        _one_value(case.language, param, value, declared[param], possible[param])
    for param, values in possible.items():
        if param not in args and "" not in values:
            raise Failed(
                "simple_function_checker:missing_optional",
                f"Optional parameter {param!r} not provided and not marked as optional.",
            )


def _one_value(
    language: Language, param: str, value: Any, spec: dict[str, Any], possible: list[Any]
) -> None:
    declared = str(spec.get("type"))
    nested_type: type | None = None
    if language == "python":
        expected = PYTHON_TYPES.get(declared, str)
        if declared in _NESTED_PYTHON:
            nested_type = PYTHON_TYPES.get(str((spec.get("items") or {}).get("type")), str)
        if declared == "float" and type(value) is int:
            value = float(value)  # Python would take an int where a float is asked
    else:
        value, expected, nested_type = _converted(language, param, value, spec)
    if declared == "tuple" and type(value) is tuple:
        value = list(value)  # answers went through JSON: their tuples are lists
    is_variable = type_check(param, value, possible, declared, expected, nested_type)
    if not is_variable:
        if expected is dict:
            return dict_check(param, value, possible)
        if expected is list and nested_type is dict:
            return list_of_dicts_check(param, value, possible)
        if expected is str:
            return string_check(param, value, possible)
        if expected is list:
            return list_check(param, value, possible)
    if value not in possible:
        raise Failed(
            "value_error:others",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {possible}.",
        )


def _converted(
    language: Language, param: str, value: Any, spec: dict[str, Any]
) -> tuple[Any, type, type | None]:
    """A Java or JavaScript value: its source text must be a string, then it is converted."""
    declared = spec.get("type")
    types, convert, code = (
        (JAVA_TYPES, java_value, "type_error:java")
        if language == "java"
        else (JS_TYPES, js_value, "type_error:js")
    )
    if declared not in types:
        raise Failed(code, f"Unsupported type {declared!r} for parameter {param!r}.")
    if type(value) is not str:
        raise Failed(
            code,
            f"Incorrect type for parameter {param!r}. Expected type String, got "
            f"{type(value).__name__}. Parameter value: {value!r}.",
        )
    nested_type = None
    nested = None
    if declared in _NESTED_CONVERTED:
        nested = (spec.get("items") or {}).get("type")
        if nested not in types:
            raise Failed(code, f"Unsupported item type {nested!r} for parameter {param!r}.")
        nested_type = types[nested]
    try:
        converted = convert(value, declared, nested)
    except Unsupported as exc:
        raise Failed(code, f"{exc} (parameter {param!r}).") from None
    return converted, types[declared], nested_type
