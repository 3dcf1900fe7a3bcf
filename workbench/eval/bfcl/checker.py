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
- `parallel` categories match calls in any order, `multiple` checks the one expected
  function, every other category wants exactly one call; irrelevance wants no call, and
  relevance at least one.

Calls come in with BFCL's own (dotted) names: `grade_calls` maps a native call's
`math_factorial` back to `math.factorial` first, because BFCL's function-calling handlers
send dotted names with underscores (vendors refuse dots).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.eval.bfcl.case import BfclCase, Language
from workbench.eval.bfcl.values import JAVA_TYPES, JS_TYPES, Unsupported, java_value, js_value
from workbench.types import ToolCall

PYTHON_TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "any": str,
}  # fmt: skip
_NESTED_PYTHON = ("array", "tuple")  # the only Python types whose items are type-checked
_NESTED_CONVERTED = ("Array", "ArrayList", "array")  # Java/JavaScript collections of items
_STANDARDISED_AWAY = re.compile(r"[ \,\.\/\-\_\*\^]")


@dataclass(frozen=True, slots=True)
class BfclGrade:
    """BFCL's verdict on one item: `error_type` in its taxonomy (`simple_function_checker:
    wrong_func_name`, `type_error:simple`, `value_error:string`, ...), None when valid."""

    valid: bool
    error_type: str | None = None
    errors: tuple[str, ...] = ()


_VALID = BfclGrade(True)


class _Failed(Exception):
    def __init__(self, error_type: str, *errors: str) -> None:
        self.grade = BfclGrade(False, error_type, tuple(errors))


def standardize(text: str) -> str:
    """BFCL's string standardisation (so "April 1, 2024" equals "april 1 2024")."""
    return _STANDARDISED_AWAY.sub("", text).lower().replace("'", '"')


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
    except _Failed as failed:
        return failed.grade
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
            raise _Failed("multiple_function_checker:wrong_count", "Wrong number of functions.")
        _one_call(case, _function(case, _expected_name(answers[0])), calls[0], answers[0])
    else:
        if len(calls) != 1:
            raise _Failed("simple_function_checker:wrong_count", "Wrong number of functions.")
        _one_call(case, case.functions[0], calls[0], answers[0])


def _expected_name(answer: Mapping[str, Any]) -> str:
    return next(iter(answer))


def _function(case: BfclCase, name: str) -> dict[str, Any]:
    found = next((f for f in case.functions if f.get("name") == name), None)
    if found is None:  # BFCL's data never does this; a hand-made case might
        raise _Failed(
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
        raise _Failed(
            "parallel_function_checker_no_order:wrong_count", "Wrong number of functions."
        )
    matched: set[int] = set()
    for i, answer in enumerate(answers):
        function = _function(case, _expected_name(answer))
        misses: list[str] = []
        for k, call in enumerate(calls):
            if k in matched:
                continue
            try:
                _one_call(case, function, call, answer)
            except _Failed as failed:
                grade = failed.grade
                misses.append(
                    f"Model Result Index {k}: {grade.error_type}: {'; '.join(grade.errors)}"
                )
                continue
            matched.add(k)
            break
        else:
            left = [k for k in range(len(calls)) if k not in matched]
            raise _Failed(
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
        raise _Failed(
            "simple_function_checker:wrong_func_name",
            f"Function name {expected_name!r} not found in model output.",
        )
    params = function.get("parameters") or {}
    declared: dict[str, Any] = params.get("properties") or {}
    for required in params.get("required") or []:
        if required not in args:
            raise _Failed(
                "simple_function_checker:missing_required",
                f"Missing required parameter: {required!r}.",
            )
    for param, value in args.items():
        if param not in declared or param not in possible:
            raise _Failed(
                "simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}."
            )
        _one_value(case.language, param, value, declared[param], possible[param])
    for param, values in possible.items():
        if param not in args and "" not in values:
            raise _Failed(
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
    is_variable = _type_check(param, value, possible, declared, expected, nested_type)
    if not is_variable:
        if expected is dict:
            return _dict_check(param, value, possible)
        if expected is list and nested_type is dict:
            return _list_of_dicts_check(param, value, possible)
        if expected is str:
            return _string_check(param, value, possible)
        if expected is list:
            return _list_check(param, value, possible)
    if value not in possible:
        raise _Failed(
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
        raise _Failed(code, f"Unsupported type {declared!r} for parameter {param!r}.")
    if type(value) is not str:
        raise _Failed(
            code,
            f"Incorrect type for parameter {param!r}. Expected type String, got "
            f"{type(value).__name__}. Parameter value: {value!r}.",
        )
    nested_type = None
    nested = None
    if declared in _NESTED_CONVERTED:
        nested = (spec.get("items") or {}).get("type")
        if nested not in types:
            raise _Failed(code, f"Unsupported item type {nested!r} for parameter {param!r}.")
        nested_type = types[nested]
    try:
        converted = convert(value, declared, nested)
    except Unsupported as exc:
        raise _Failed(code, f"{exc} (parameter {param!r}).") from None
    return converted, types[declared], nested_type


# ------------------------------------------------------------------ type and value checks
def _answer_type(possible: list[Any]) -> type | None:
    """The type of the first possible answer that is not the optional marker `""`."""
    return next((type(a) for a in possible if a != ""), None)


def _type_check(
    param: str,
    value: Any,
    possible: list[Any],
    declared: str,
    expected: type,
    nested: type | None,
) -> bool:
    """Raise unless `value` has the declared type (or the possible answers' type: a variable).
    Returns whether it is a variable. Items of a list are checked one level deep only, and an
    item list passes against the first possible answer it fits (or any that is not a list)."""
    answer_type = _answer_type(possible)
    is_variable = answer_type is not None and answer_type is not expected
    nested_failure: str | None = None
    if type(value) is expected:
        if nested is None:
            return is_variable
        for candidate in possible:
            if type(candidate) is not list or all(
                _item_fits(param, v, candidate, nested) for v in _elements(value)
            ):
                return is_variable
        nested_failure = (
            f"Nested type checking failed for parameter {param!r}. Expected outer type "
            f"{declared} with inner type {nested}. Parameter value: {value!r}."
        )
    if answer_type is not None and type(value) is answer_type:
        if nested_failure is not None:  # BFCL reports the nested failure as it stands
            raise _Failed("type_error:nested", nested_failure)
        return True
    wrong_type = (
        f"Incorrect type for parameter {param!r}. Expected type {declared}, got "
        f"{type(value).__name__}. Parameter value: {value!r}."
    )
    raise _Failed("type_error:simple", *filter(None, (nested_failure, wrong_type)))


def _elements(value: Any) -> list[Any]:
    return list(value)


def _item_fits(param: str, value: Any, candidate: list[Any], nested: type) -> bool:
    try:
        _type_check(param, value, candidate, str(nested), nested, None)
    except _Failed:
        return False
    return True


def _standard(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def _string_check(param: str, value: str, possible: list[Any]) -> None:
    if standardize(value) not in [standardize(a) for a in possible if type(a) is str]:
        raise _Failed(
            "value_error:string",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {possible}. "
            "Case insensitive.",
        )


def _list_check(param: str, value: list[Any], possible: list[Any]) -> None:
    if [_standard(v) for v in value] not in [[_standard(a) for a in _items(c)] for c in possible]:
        raise _Failed(
            "value_error:list/tuple",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {possible}.",
        )


def _dict_check(param: str, value: dict[str, Any], possible: list[Any]) -> None:
    """`value` must match one possible dict: no unexpected key, each value among that key's
    possible values (standardised), every key present unless its values include `""`.
    The failure reported is the last candidate's, as BFCL reports it."""
    failure: tuple[str, list[str]] = ("dict_checker:unclear", [])
    for candidate in possible:
        if candidate == "":
            continue
        mismatch = _dict_mismatch(value, candidate)
        if mismatch is None:
            return
        failure = mismatch
    raise _Failed(failure[0], *failure[1])


def _dict_mismatch(value: dict[str, Any], candidate: Any) -> tuple[str, list[str]] | None:
    """Why `value` does not match `candidate`, or None. A missing key is reported over a
    wrong value found before it (BFCL checks both, the missing key last)."""
    if not isinstance(candidate, dict):
        return "dict_checker:unclear", [f"The possible answer {candidate!r} is not a dict."]
    error_type: str | None = None
    errors: list[str] = []
    for key, v in value.items():
        if key not in candidate:
            error_type = "value_error:dict_key"
            errors.append(f"Unexpected dict key parameter: '{key}'.")
            break
        allowed = [_standard(a) for a in _items(candidate[key])]
        if _standard(v) not in allowed:
            error_type = "value_error:dict_value"
            errors.append(f"Invalid value for parameter {key!r}: {v!r}. Expected one of {allowed}.")
            break
    for key, values in candidate.items():
        if key not in value and not (isinstance(values, list | str | tuple) and "" in values):
            error_type = "value_error:dict_key"
            errors.append(f"Missing dict key parameter: '{key}'.")
            break
    return None if error_type is None else (error_type, errors)


def _items(values: Any) -> list[Any]:
    """A possible-answer list; a value that is not a sequence matches nothing."""
    return list(values) if isinstance(values, list | str | tuple) else []


def _list_of_dicts_check(param: str, value: list[Any], possible: list[Any]) -> None:
    """Each possible list of dicts is tried in turn; its dicts must match in order."""
    failure: _Failed = _Failed("list_dict_checker:unclear")
    for candidate in possible:
        if len(value) != len(candidate):
            failure = _Failed(
                "value_error:list_dict_count", "Wrong number of dictionaries in the list."
            )
            continue
        try:
            for got, want in zip(value, candidate, strict=True):
                _dict_check(param, got, [want])
        except _Failed as failed:
            failure = failed
            continue
        return
    raise failure
