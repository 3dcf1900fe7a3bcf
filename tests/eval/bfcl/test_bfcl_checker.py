"""`grade_calls` gives BFCL's verdict: hand-written cases for every rule and error type, then
agreement with BFCL's own checker on the real files (right answers and seeded wrong ones)."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from workbench.eval.suites.bfcl import BfclCase, grade_calls, load_bfcl
from workbench.eval.suites.bfcl.case import CATEGORIES
from workbench.types import ToolCall


def fn(fname: str, required: list[str] | None = None, **props: Any) -> dict[str, Any]:
    properties = {k: (v if isinstance(v, dict) else {"type": v}) for k, v in props.items()}
    return {
        "name": fname,
        "parameters": {
            "type": "dict",
            "properties": properties,
            "required": required if required is not None else list(props),
        },
    }


def case(category: str, functions: list[dict[str, Any]], *answers: dict[str, Any]) -> BfclCase:
    sent = {f["name"].replace(".", "_"): f["name"] for f in functions if "." in f["name"]}
    return BfclCase("t_0", category, tuple(functions), tuple(answers), sent)


AREA = case(
    "simple_python",
    [fn("calc.area", ["base", "height"], base="integer", height="float", unit="string")],
    {"calc.area": {"base": [10], "height": [5.0], "unit": ["units", ""]}},
)


def verdict(c: BfclCase, *calls: Any) -> tuple[bool, str | None]:
    got = grade_calls(c, list(calls))
    return got.valid, got.error_type


def call(fname: str, **args: Any) -> dict[str, Any]:
    return {"name": fname, "arguments": args}


# ------------------------------------------------------------------ simple: one call
def test_a_right_call_is_valid_with_an_int_for_a_float_and_an_optional_left_out():
    assert verdict(AREA, call("calc.area", base=10, height=5)) == (True, None)
    assert verdict(AREA, call("calc.area", base=10, height=5.0, unit="Units")) == (True, None)


def test_each_simple_failure_has_bfcl_error_type():
    assert (
        verdict(AREA, call("area", base=10, height=5))[1]
        == "simple_function_checker:wrong_func_name"
    )
    assert (
        verdict(AREA, call("calc.area", base=10))[1] == "simple_function_checker:missing_required"
    )
    assert verdict(AREA, call("calc.area", base=10, height=5, depth=1))[1] == (
        "simple_function_checker:unexpected_param"
    )
    assert verdict(AREA, call("calc.area", base="10", height=5))[1] == "type_error:simple"
    assert (
        verdict(AREA, call("calc.area", base=True, height=5))[1] == "type_error:simple"
    )  # bool ≠ int
    assert verdict(AREA, call("calc.area", base=11, height=5))[1] == "value_error:others"
    assert verdict(AREA, call("calc.area", base=10, height=5, unit="cm"))[1] == "value_error:string"
    assert (
        verdict(AREA, call("calc.area", base=10, height=5), call("calc.area", base=10, height=5))[1]
        == "simple_function_checker:wrong_count"
    )


def test_an_answer_parameter_that_is_not_optional_must_be_given():
    c = case("simple_python", [fn("f", [], a="integer", b="integer")], {"f": {"a": [1], "b": [2]}})
    assert verdict(c, call("f", a=1))[1] == "simple_function_checker:missing_optional"


def test_a_parameter_missing_from_the_possible_answers_is_unexpected_even_if_declared():
    c = case("simple_python", [fn("f", [], a="integer", b="integer")], {"f": {"a": [1]}})
    assert verdict(c, call("f", a=1, b=2))[1] == "simple_function_checker:unexpected_param"


def test_strings_are_standardised_as_bfcl_does():
    c = case("simple_python", [fn("f", a="string")], {"f": {"a": ["April 1, 2024"]}})
    for same in ("april 1 2024", "APRIL-1,2024", "April_1.2024", "april1/2024*^"):
        assert verdict(c, call("f", a=same)) == (True, None), same
    assert verdict(c, call("f", a="April 2, 2024"))[1] == "value_error:string"


def test_a_variable_is_compared_as_written():
    # The answer's type (str) is not the declared one (integer): a variable name, taken as is.
    c = case("simple_python", [fn("f", n="integer")], {"f": {"n": ["count"]}})
    assert verdict(c, call("f", n="count")) == (True, None)
    assert verdict(c, call("f", n="Count"))[1] == "value_error:others"  # no standardising


def test_lists_compare_element_by_element_and_their_items_are_type_checked():
    c = case(
        "simple_python",
        [fn("f", xs={"type": "array", "items": {"type": "integer"}})],
        {"f": {"xs": [[1, 2, 3]]}},
    )
    assert verdict(c, call("f", xs=[1, 2, 3])) == (True, None)
    assert verdict(c, call("f", xs=[3, 2, 1]))[1] == "value_error:list/tuple"
    assert verdict(c, call("f", xs=[1, "2", 3]))[1] == "type_error:nested"
    words = case(
        "simple_python",
        [fn("f", xs={"type": "array", "items": {"type": "string"}})],
        {"f": {"xs": [["New York", "Paris"]]}},
    )
    assert verdict(words, call("f", xs=["new york", "PARIS"])) == (True, None)


def test_a_tuple_is_a_list():
    c = case(
        "simple_python",
        [fn("f", p={"type": "tuple", "items": {"type": "integer"}})],
        {"f": {"p": [[1, 2]]}},
    )
    assert verdict(c, {"f": {"p": (1, 2)}}) == (True, None)  # BFCL's own decoded shape
    assert verdict(c, call("f", p=[1, 2])) == (True, None)


def test_dicts_match_one_possible_answer_key_by_key():
    c = case(
        "simple_python", [fn("f", d="dict")], {"f": {"d": [{"city": ["Paris"], "unit": ["c", ""]}]}}
    )
    assert verdict(c, call("f", d={"city": "paris"})) == (True, None)
    assert verdict(c, call("f", d={"city": "Paris", "zone": 1}))[1] == "value_error:dict_key"
    assert verdict(c, call("f", d={"city": "Rome"}))[1] == "value_error:dict_value"
    assert verdict(c, call("f", d={"unit": "c"}))[1] == "value_error:dict_key"  # city missing


def test_a_list_of_dicts_matches_in_order():
    c = case(
        "simple_python",
        [fn("f", rows={"type": "array", "items": {"type": "dict"}})],
        {"f": {"rows": [[{"a": [1]}, {"a": [2]}]]}},
    )
    assert verdict(c, call("f", rows=[{"a": 1}, {"a": 2}])) == (True, None)
    assert verdict(c, call("f", rows=[{"a": 2}, {"a": 1}]))[1] == "value_error:dict_value"
    assert verdict(c, call("f", rows=[{"a": 1}]))[1] == "value_error:list_dict_count"


# ------------------------------------------------------------------ categories
def test_parallel_calls_match_in_any_order_each_once():
    c = case(
        "parallel", [fn("w", city="string")], {"w": {"city": ["Paris"]}}, {"w": {"city": ["Rome"]}}
    )
    assert verdict(c, call("w", city="Rome"), call("w", city="Paris")) == (True, None)
    assert verdict(c, call("w", city="Rome"), call("w", city="Rome"))[1] == (
        "parallel_function_checker_no_order:cannot_find_match"
    )
    assert verdict(c, call("w", city="Rome"))[1] == "parallel_function_checker_no_order:wrong_count"


def test_multiple_picks_the_one_expected_function_among_several():
    c = case("multiple", [fn("a", x="integer"), fn("b", x="integer")], {"b": {"x": [1]}})
    assert verdict(c, call("b", x=1)) == (True, None)
    assert verdict(c, call("a", x=1))[1] == "simple_function_checker:wrong_func_name"
    assert verdict(c, call("b", x=1), call("b", x=1))[1] == "multiple_function_checker:wrong_count"


def test_irrelevance_is_right_only_without_a_call_and_relevance_only_with_one():
    irr = case("irrelevance", [fn("a", x="integer")])
    rel = case("live_relevance", [fn("a", x="integer")])
    assert verdict(irr) == (True, None)
    assert grade_calls(irr, None).valid
    assert verdict(irr, call("a", x=5))[1] == "irrelevance_error:decoder_success"
    assert verdict(rel, call("a", x=5)) == (True, None)
    assert grade_calls(rel, None).error_type == "relevance_error:decoder_failed"


def test_no_readable_call_is_a_decoder_failure_and_never_a_crash():
    unreadable = ToolCall(
        "c1", "calc.area", {}, '{"base": 1', invalid=True, invalid_reason="not_json"
    )
    assert grade_calls(AREA, [unreadable]).error_type == "ast_decoder:decoder_failed"
    assert grade_calls(AREA, None).error_type == "ast_decoder:decoder_failed"
    assert grade_calls(AREA, []).error_type == "simple_function_checker:wrong_count"  # `[]` decoded
    assert (
        grade_calls(AREA, [{"no": "shape", "at": "all"}]).error_type == "ast_decoder:decoder_failed"
    )
    # Unreadable arguments make the whole reply undecodable: for irrelevance that is "no call".
    assert grade_calls(case("irrelevance", [fn("a", x="integer")]), [unreadable]).valid


def test_a_native_call_sent_with_underscores_is_graded_under_bfcls_dotted_name():
    native = ToolCall("c1", "calc_area", {"base": 10, "height": 5}, "{}", source="native")
    assert grade_calls(AREA, [native]).valid
    prose = ToolCall("t1", "calc_area", {"base": 10, "height": 5}, "{}", source="text")
    # In prompt mode the model read the dotted name: an underscore is a wrong name, as in BFCL.
    assert grade_calls(AREA, [prose]).error_type == "simple_function_checker:wrong_func_name"


# ------------------------------------------------------------------ Java and JavaScript
JAVA = case(
    "simple_java",
    [
        fn(
            "Db.open",
            ["name", "retries", "big", "opts", "ids"],
            name="String",
            retries="integer",
            big="long",
            opts="HashMap",
            ids={"type": "ArrayList", "items": {"type": "String"}},
        )
    ],
    {
        "Db.open": {
            "name": ["main"],
            "retries": [3],
            "big": [5],
            "opts": [{"mode": ["ro"]}],
            "ids": [["a", "b"]],
        }
    },
)


def test_java_values_arrive_as_source_text_and_are_converted_as_bfcl_converts_them():
    right = call(
        "Db.open",
        name="main",
        retries="3",
        big="5L",
        opts='new HashMap<String, String>() {{ put("mode", "ro"); }}',
        ids='new ArrayList<>(Arrays.asList("a", "b"))',
    )
    assert verdict(JAVA, right) == (True, None)
    assert (
        verdict(JAVA, right | {"arguments": right["arguments"] | {"retries": 3}})[1]
        == "type_error:java"
    )
    assert (
        verdict(JAVA, right | {"arguments": right["arguments"] | {"big": "5"}})[1]
        == "type_error:simple"
    )


def test_javascript_values_are_converted_too():
    js = case(
        "simple_javascript",
        [fn("go", ["on", "xs"], on="Boolean", xs={"type": "array", "items": {"type": "String"}})],
        {"go": {"on": [True], "xs": [["a", "b"]]}},
    )
    assert verdict(js, call("go", on="true", xs='["a", "b"]')) == (True, None)
    assert verdict(js, call("go", on=True, xs='["a", "b"]'))[1] == "type_error:js"


def test_prose_calls_for_java_pass_their_literals_as_source_text():
    prose = ToolCall("t1", "go", {"on": True, "xs": '["a", "b"]'}, "{}", source="text")
    js = case(
        "simple_javascript",
        [fn("go", ["on", "xs"], on="Boolean", xs={"type": "array", "items": {"type": "String"}})],
        {"go": {"on": [True], "xs": [["a", "b"]]}},
    )
    assert grade_calls(js, [prose]).valid  # `on=true` written in prose is the text "true"


# ------------------------------------------------------------------ against BFCL itself
AST = [c for c in CATEGORIES if "relevance" not in c]


def _answers(c: BfclCase, k: int) -> list[dict[str, Any]]:
    out = []
    for answer in c.ground_truth:
        name, params = next(iter(answer.items()))
        args = {}
        for p, values in params.items():
            allowed = [v for v in values if v != ""]
            if allowed:
                args[p] = copy.deepcopy(allowed[k % len(allowed)])
        out.append({name: args})
    return out


def _java_source(value: Any, kind: str) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "long" and isinstance(value, int):
        return f"{value}L"
    if kind == "float" and isinstance(value, float):
        return f"{value}f"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        puts = " ".join(f'put("{k}", {json.dumps(v)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    if isinstance(value, list):
        return "new ArrayList<>(Arrays.asList(" + ", ".join(json.dumps(v) for v in value) + "))"
    return value


def _js_source(value: Any, kind: str) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | dict):
        return json.dumps(value)
    return value


def _as_source(c: BfclCase, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    render = _java_source if c.language == "java" else _js_source
    docs = {f["name"]: f["parameters"].get("properties", {}) for f in c.functions}
    return [
        {
            name: {
                p: render(v, docs.get(name, {}).get(p, {}).get("type", "")) for p, v in args.items()
            }
        }
        for call in calls
        for name, args in call.items()
    ]


def _mutated(rng: random.Random, c: BfclCase, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = copy.deepcopy(calls)
    target = rng.choice(calls)
    name = next(iter(target))
    args = target[name]
    how = rng.choice(["value", "value", "value", "drop", "extra", "name", "count", "order"])
    if how == "value" and args:
        p = rng.choice(list(args))
        v = args[p]
        args[p] = rng.choice(
            [
                [v],
                str(v),
                "",
                7,
                2.5,
                True,
                {"k": v},
                v if not isinstance(v, str) else v.upper() + "!",
            ]
        )
    elif how == "drop" and args:
        args.pop(rng.choice(list(args)))
    elif how == "extra":
        args["not_a_parameter"] = 1
    elif how == "name":
        target[name + "x"] = target.pop(name)
    elif how == "count":
        calls.append(copy.deepcopy(target)) if rng.random() < 0.5 else calls.pop()
    else:
        rng.shuffle(calls)
    return calls


@pytest.mark.parametrize("category", AST)
def test_our_verdict_is_bfcls_on_every_possible_answer_and_on_seeded_wrong_ones(
    category, bfcl_wheel, bfcl_oracle
):
    rng = random.Random(category)
    disagreements, checked, failed = [], 0, 0
    for item in load_bfcl(category, source=bfcl_wheel):
        c = item.expect.bfcl
        candidates = [_answers(c, k) for k in range(2)]
        candidates += [_mutated(rng, c, candidates[0]) for _ in range(3)]
        if c.language != "python":
            candidates += [_as_source(c, x) for x in candidates]
        for calls in candidates:
            ours = grade_calls(c, calls)
            theirs = bfcl_oracle(c, calls)
            checked += 1
            failed += not ours.valid
            if (ours.valid, ours.error_type) != theirs:
                disagreements.append((c.id, calls, ours.error_type, theirs))
    assert not disagreements[:5], f"{len(disagreements)} of {checked} disagree"
    assert 0 < failed < checked  # both verdicts were exercised
