"""Tool calls written in prose: every shape, the mentions that are not calls, invalid arguments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.providers.protocols import (
    TEXT_TOOL_PROTOCOL_HINT,
    compact_json,
    merge_tool_calls,
    native_tool_call,
    parse_text_tool_calls,
    read_text_tool_calls,
    safe_json_object,
    strip_tool_call_lines,
    tool_names_from,
)
from workbench.types import ToolCall

NAMES = ["get_weather", "search"]


def one(text: str, names=NAMES) -> tuple[ToolCall, str]:
    calls, rest = read_text_tool_calls(text, names)
    assert len(calls) == 1, calls
    return calls[0], rest


def test_compact_json_is_like_js_stringify():
    assert compact_json({"a": [1, 2], "é": "ü"}) == '{"a":[1,2],"é":"ü"}'


def test_hint_is_six_lines_showing_the_two_line_protocol():
    lines = TEXT_TOOL_PROTOCOL_HINT.split("\n")
    assert len(lines) == 6
    assert "TOOL: tool_name" in lines
    assert 'ARGS: {"argument": "value"}' in lines
    assert lines[-1].lower().rstrip(".").endswith("write nothing else")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("{}", {}),
        ("```json\n{}\n```", {}),
        ('prefix {"a": {"b": "}"}} suffix', {"a": {"b": "}"}}),
        ("[1, 2]", None),
        ("{not json}", None),
        ('"text"', None),
    ],
)
def test_safe_json_object_keeps_none_and_empty_distinct(raw, expected):
    got = safe_json_object(raw)
    assert got == expected
    assert (got is None) == (expected is None)


def test_tool_names_from_reads_openai_function_names_only():
    tools = [
        {"type": "function", "function": {"name": "a"}},
        {"function": {"name": ""}},
        {"function": {"name": 3}},
        "junk",
        {"type": "function", "function": {"name": "b"}},
    ]
    assert tool_names_from(tools) == ["a", "b"]
    assert tool_names_from({"function": {"name": "a"}}) == []
    assert tool_names_from(None) == []


# ----------------------------------------------------------------------- TOOL/ARGS lines


@pytest.mark.parametrize(
    "text",
    [
        'TOOL: get_weather\nARGS: {"city": "Paris"}',
        '- **TOOL**: `get_weather`\n- **ARGS**: {"city": "Paris"}',
        'tool = get_weather(city)\nargs= {"city": "Paris"}',
        '> TOOL: get_weather.\n\nARGS: {"city": "Paris"}',
        'TOOL: get_weather\nARGS: {\n  "city": "Paris"\n}',
        'TOOL: get_weather\nARGS:\n```json\n{"city": "Paris"}\n```',
    ],
)
def test_line_protocol_variants_read_one_call(text):
    calls = parse_text_tool_calls(text, NAMES)
    assert [(c.name, c.arguments, c.raw_arguments, c.id) for c in calls] == [
        ("get_weather", {"city": "Paris"}, '{"city":"Paris"}', "text_0_get_weather")
    ]
    assert calls[0].source == "text"
    call, rest = one(text)
    assert call.arguments == {"city": "Paris"}
    assert rest == ""


def test_line_protocol_ids_count_calls_found_so_far_and_skip_unknown_names():
    text = 'TOOL: nope\nARGS: {}\nTOOL: search\nARGS: {"q": 1}\nTOOL: get_weather\n'
    calls = parse_text_tool_calls(text, NAMES)
    assert [c.id for c in calls] == ["text_0_search", "text_1_get_weather"]
    assert calls[1].arguments == {} and calls[1].raw_arguments == "{}" and not calls[1].invalid


def test_args_lookahead_is_three_lines_and_stops_at_the_next_tool():
    far = 'TOOL: search\n\n\n\nARGS: {"q": 1}'
    assert parse_text_tool_calls(far, NAMES)[0].arguments == {}
    stop = 'TOOL: search\nTOOL: get_weather\nARGS: {"city": "x"}'
    calls = parse_text_tool_calls(stop, NAMES)
    assert [(c.name, c.arguments) for c in calls] == [
        ("search", {}),
        ("get_weather", {"city": "x"}),
    ]


def test_one_calls_unreadable_args_never_swallow_the_next_calls():
    text = 'TOOL: search\nARGS: oops\nTOOL: get_weather\nARGS: {"city": "x"}'
    calls = parse_text_tool_calls(text, NAMES)
    assert calls[0].invalid and calls[0].invalid_reason == "not_json"
    assert calls[1].arguments == {"city": "x"}


def test_no_names_or_no_text_parses_nothing():
    assert parse_text_tool_calls("TOOL: search\nARGS: {}", []) == []
    assert parse_text_tool_calls("", NAMES) == []
    text = "TOOL: search\nARGS: {}"
    assert read_text_tool_calls(text, []) == ([], text)


def test_strip_tool_call_lines_drops_lines_and_empty_fences():
    text = "Checking.\n```json\nTOOL: x\nARGS: {}\n```\n\n\n\nDone.  "
    assert strip_tool_call_lines(text) == "Checking.\n\nDone."


# ----------------------------------------------------------------------- other shapes


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        '<tool_call>{"name": "get_weather", "parameters": {"city": "Paris"}}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}</tool_call>',
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        '<tool_call name="get_weather">{"city": "Paris"}</tool_call>',
        '<tool_call name=\'get_weather\'>\n{"city": "Paris"}\n</tool_call>',
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        '[get_weather(city="Paris")]',
        '<function=get_weather>{"city": "Paris"}</function>',
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",
    ],
)
def test_each_prose_shape_is_a_call_and_leaves_no_text(text):
    call, rest = one(text)
    assert (call.name, call.arguments, call.raw_arguments) == (
        "get_weather",
        {"city": "Paris"},
        '{"city":"Paris"}',
    )
    assert (call.id, call.source, call.invalid) == ("text_0_get_weather", "text", False)
    assert rest == ""


def test_prose_around_a_tag_call_is_kept():
    text = 'Let me look.\n<tool_call>{"name":"search","arguments":{"q":"x"}}</tool_call>\n\n\n\nOK.'
    call, rest = one(text)
    assert call.arguments == {"q": "x"}
    assert rest == "Let me look.\n\nOK."


def test_calls_of_several_shapes_are_numbered_in_text_order():
    text = (
        '<function=search>{"q": 1}</function>\n'
        "TOOL: get_weather\nARGS: {}\n"
        '<tool_call name="search">{"q": 2}</tool_call>'
    )
    calls, rest = read_text_tool_calls(text, NAMES)
    assert [(c.id, c.arguments) for c in calls] == [
        ("text_0_search", {"q": 1}),
        ("text_1_get_weather", {}),
        ("text_2_search", {"q": 2}),
    ]
    assert rest == ""


def test_pythonic_list_reads_literals_and_several_calls():
    text = "[get_weather(city='Oslo', days=3, exact=True, tags=['a'], opt=None), search(q=\"x\")]"
    calls, rest = read_text_tool_calls(text, NAMES)
    assert [c.arguments for c in calls] == [
        {"city": "Oslo", "days": 3, "exact": True, "tags": ["a"], "opt": None},
        {"q": "x"},
    ]
    assert [c.id for c in calls] == ["text_0_get_weather", "text_1_search"]
    assert rest == ""


def test_pythonic_calls_may_use_dotted_names_and_tuples_become_lists():
    # Benchmarks name tools with dots (BFCL's `math.hypot`); a tuple has no JSON form but a list.
    calls, rest = read_text_tool_calls("[math.hypot(x=4, y=5, at=(1, 2))]", ["math.hypot"])
    assert [(c.name, c.arguments, c.invalid) for c in calls] == [
        ("math.hypot", {"x": 4, "y": 5, "at": [1, 2]}, False)
    ]
    assert rest == ""
    assert read_text_tool_calls("[math.hypot(x=4)]", ["hypot"])[0] == []  # not offered


def test_pythonic_positional_args_are_not_a_call_and_text_is_kept():
    calls, rest = read_text_tool_calls('[get_weather("Paris")]', NAMES)
    assert calls == [] and rest == '[get_weather("Paris")]'
    calls, rest = read_text_tool_calls('[get_weather("Paris"), search(q="x")]', NAMES)
    assert [c.name for c in calls] == ["search"]
    assert rest == '[get_weather("Paris"), search(q="x")]'


def test_pythonic_non_literal_value_is_an_invalid_call():
    call, _ = one("[get_weather(city=paris)]")
    assert call.invalid and call.invalid_reason == "not_json" and call.arguments == {}


def test_json_list_of_call_objects_is_read():
    text = '[{"name": "search", "arguments": {"q": 1}}, {"name": "get_weather", "arguments": {}}]'
    calls, rest = read_text_tool_calls(text, NAMES)
    assert [(c.name, c.arguments) for c in calls] == [("search", {"q": 1}), ("get_weather", {})]
    assert rest == ""


# ----------------------------------------------------------------------- mentions are not calls


@pytest.mark.parametrize(
    "text",
    [
        "You could use the get_weather tool for that.",
        "Call get_weather(city) to look it up, then search(q) for the rest.",
        'The call looks like {"name": "get_weather", "arguments": {"city": "Paris"}} in JSON.',
        'Example:\n{"name": "get_weather", "arguments": {"city": "Paris"}}\nThat is the format.',
        "Use <tool_call> tags when you want a tool.",
        "TOOL: the weather tool would help here",
        '{"name": "unknown_tool", "arguments": {}}',
        '<tool_call>{"name": "unknown_tool", "arguments": {}}</tool_call>',
        "[print(x=1)]",
        "I would run get_weather(city='Paris') if I could.",
    ],
)
def test_a_mention_is_not_a_call(text):
    calls, rest = read_text_tool_calls(text, NAMES)
    assert calls == []
    assert rest == text.strip()


# ----------------------------------------------------------------------- invalid arguments


@pytest.mark.parametrize(
    ("text", "reason", "raw"),
    [
        ("TOOL: search\nARGS: {q: 1}", "not_json", "{q: 1}"),
        ("TOOL: search\nARGS: [1, 2]", "not_object", "[1, 2]"),
        ('TOOL: search\nARGS: "hello"', "not_object", '"hello"'),
        ('<tool_call name="search">[1]</tool_call>', "not_object", "[1]"),
        ('<tool_call name="search">{bad</tool_call>', "not_json", "{bad"),
        ('{"name": "search", "arguments": "not json"}', "not_json", "not json"),
        ('{"name": "search", "arguments": [1, 2]}', "not_object", "[1,2]"),
        ('{"name": "search", "arguments": "[1]"}', "not_object", "[1]"),
        ("<function=search>nope</function>", "not_json", "nope"),
    ],
)
def test_unreadable_arguments_keep_the_call_marked_invalid(text, reason, raw):
    call, rest = one(text)
    assert call.name == "search"
    assert (call.invalid, call.invalid_reason) == (True, reason)
    assert call.arguments == {}
    assert call.raw_arguments == raw
    assert rest == ""


def test_unparseable_hermes_body_naming_a_tool_is_an_invalid_call():
    call, _ = one('<tool_call>{"name": "search", "arguments": {q: 1}}</tool_call>')
    assert call.invalid_reason == "not_json" and call.name == "search"


def test_empty_arguments_are_valid_and_distinct_from_unreadable():
    call, _ = one('{"name": "search", "arguments": {}}')
    assert not call.invalid and call.arguments == {} and call.raw_arguments == "{}"
    call, _ = one('<tool_call name="search"></tool_call>')
    assert not call.invalid and call.arguments == {}


# ----------------------------------------------------------------------- native calls, merging


def test_native_tool_call_reads_every_wire_form():
    c = native_tool_call("1", "f", '{"a": 1}')
    assert (c.arguments, c.raw_arguments, c.invalid, c.source) == (
        {"a": 1},
        '{"a": 1}',
        False,
        "native",
    )
    assert native_tool_call("1", "f", {"b": "é"}).raw_arguments == '{"b":"é"}'
    for empty in ("", "  ", None):
        c = native_tool_call("1", "f", empty)
        assert (c.arguments, c.raw_arguments, c.invalid) == ({}, "{}", False)
    c = native_tool_call("1", "f", "{oops")
    assert (c.invalid, c.invalid_reason, c.raw_arguments, c.arguments) == (
        True,
        "not_json",
        "{oops",
        {},
    )
    c = native_tool_call("1", "f", "[1]")
    assert (c.invalid, c.invalid_reason, c.raw_arguments) == (True, "not_object", "[1]")
    c = native_tool_call("1", "f", [1])  # type: ignore[arg-type]
    assert (c.invalid_reason, c.raw_arguments) == ("not_object", "[1]")


def test_native_wins_on_a_tie_and_text_duplicates_are_dropped():
    native = [native_tool_call("call_1", "search", '{"q": "x"}')]
    text, _ = read_text_tool_calls(
        'TOOL: search\nARGS: {"q":"x"}\nTOOL: search\nARGS: {"q": "y"}\n'
        'TOOL: search\nARGS: {"q": "y"}',
        NAMES,
    )
    merged = merge_tool_calls(native, text)
    assert [(c.id, c.arguments, c.source) for c in merged] == [
        ("call_1", {"q": "x"}, "native"),
        ("text_1_search", {"q": "y"}, "text"),
    ]


def test_merge_keeps_different_invalid_calls_apart():
    a = native_tool_call("1", "f", "{bad")
    b = ToolCall("t", "f", {}, "{worse", invalid=True, invalid_reason="not_json", source="text")
    assert len(merge_tool_calls([a], [b])) == 2


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4))
def test_any_object_round_trips_through_the_line_protocol(args):
    text = f"Checking.\nTOOL: search\nARGS: {compact_json(args)}\nDone."
    calls, rest = read_text_tool_calls(text, NAMES)
    assert len(calls) == 1
    assert calls[0].arguments == args
    assert calls[0].raw_arguments == compact_json(args)
    assert rest == "Checking.\nDone."
