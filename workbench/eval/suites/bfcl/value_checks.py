"""BFCL's checks of one parameter's value against its possible answers.

The rules are BFCL's, down to the order it checks them in, because the order decides which
error type a wrong value gets: the declared type first (or the possible answers' type, which
makes the value a *variable* compared as it is), then strings standardised, lists element by
element, dicts key by key, lists of dicts in order.
"""

from __future__ import annotations

import re
from typing import Any, cast

_STANDARDISED_AWAY = re.compile(r"[ \,\.\/\-\_\*\^]")


class Failed(Exception):
    """A check failed: BFCL's error type and messages."""

    def __init__(self, error_type: str, *errors: str) -> None:
        super().__init__(error_type)
        self.error_type = error_type
        self.errors = tuple(errors)


def standardize(text: str) -> str:
    """BFCL's string standardisation (so "April 1, 2024" equals "april 1 2024")."""
    return _STANDARDISED_AWAY.sub("", text).lower().replace("'", '"')


def _answer_type(possible: list[Any]) -> type | None:
    """The type of the first possible answer that is not the optional marker `""`."""
    return next((type(a) for a in possible if a != ""), None)


def type_check(
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
                _item_fits(param, v, candidate, nested) for v in cast(list[Any], value)
            ):
                return is_variable
        nested_failure = (
            f"Nested type checking failed for parameter {param!r}. Expected outer type "
            f"{declared} with inner type {nested}. Parameter value: {value!r}."
        )
    if answer_type is not None and type(value) is answer_type:
        if nested_failure is not None:  # BFCL reports the nested failure as it stands
            raise Failed("type_error:nested", nested_failure)
        return True
    wrong_type = (
        f"Incorrect type for parameter {param!r}. Expected type {declared}, got "
        f"{type(value).__name__}. Parameter value: {value!r}."
    )
    raise Failed("type_error:simple", *filter(None, (nested_failure, wrong_type)))


def _item_fits(param: str, value: Any, candidate: list[Any], nested: type) -> bool:
    try:
        type_check(param, value, candidate, str(nested), nested, None)
    except Failed:
        return False
    return True


def _standard(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def string_check(param: str, value: str, possible: list[Any]) -> None:
    if standardize(value) not in [standardize(a) for a in possible if type(a) is str]:
        raise Failed(
            "value_error:string",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {possible}. "
            "Case insensitive.",
        )


def list_check(param: str, value: list[Any], possible: list[Any]) -> None:
    if [_standard(v) for v in value] not in [[_standard(a) for a in _items(c)] for c in possible]:
        raise Failed(
            "value_error:list/tuple",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {possible}.",
        )


def dict_check(param: str, value: dict[str, Any], possible: list[Any]) -> None:
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
    raise Failed(failure[0], *failure[1])


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


def list_of_dicts_check(param: str, value: list[Any], possible: list[Any]) -> None:
    """Each possible list of dicts is tried in turn; its dicts must match in order."""
    failure: Failed = Failed("list_dict_checker:unclear")
    for candidate in possible:
        if len(value) != len(candidate):
            failure = Failed(
                "value_error:list_dict_count", "Wrong number of dictionaries in the list."
            )
            continue
        try:
            for got, want in zip(value, candidate, strict=True):
                dict_check(param, got, [want])
        except Failed as failed:
            failure = failed
            continue
        return
    raise failure
