"""Replies that talk about tools, show code or use a family's markup in prose: no call is
read, no text is lost, and the stream shows the same text. Each case once read a call or
deleted text."""

from __future__ import annotations

import pytest

from workbench.providers.protocols import family_example, read_text_tool_calls
from workbench.providers.protocols.prose_stream import ProtocolFilter

NAMES = ("get_weather", "search")

MENTIONS = [
    "I would normally emit a <tool_call> block for get_weather, but I already know: it is sunny.",
    '<invoke name="get_weather"> is the XML element Claude uses.',
    "Qwen3-Coder writes `<function=get_weather>` followed by parameter tags. Anything else?",
    'Run this:\n```python\nresult = [get_weather(city="Paris")]\n```',
    'To check: `[get_weather(city="Paris")]`',
    'x = [get_weather(city="Paris")]',
    'def f():\n    return [get_weather(city="x")]',
    'Use `<tool_call>` tags: `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`.',
    'Sure!\n{"name": "get_weather", "parameters": {"city": "Paris"}}',
    '{"name": "get_weather", "description": "Get the weather", "arguments": {"city": "string"}}',
    "Is 3 < 4? Yes, and [1] says so.",
]


def _stream(text: str) -> str:
    f = ProtocolFilter(NAMES)
    return "".join(f.feed(ch) for ch in text) + f.finish()


@pytest.mark.parametrize("text", MENTIONS)
def test_a_mention_is_no_call_and_keeps_every_character(text):
    calls, rest = read_text_tool_calls(text, NAMES)
    assert calls == []
    assert rest == text.strip()
    assert _stream(text) == rest


def test_a_harmony_final_answer_naming_a_tool_is_its_text_without_the_frame():
    text = "<|channel|>final<|message|>Sunny, per get_weather."
    assert read_text_tool_calls(text, NAMES) == ([], "Sunny, per get_weather.")
    assert _stream(text) == "Sunny, per get_weather."


def test_markup_named_in_prose_goes_but_the_prose_stays():
    # `[TOOL_CALLS]` is a token, markup wherever it is; the sentence around it is not a call.
    calls, rest = read_text_tool_calls(
        "No need for [TOOL_CALLS] here; get_weather is not required.", NAMES
    )
    assert calls == []
    assert rest == "No need for  here; get_weather is not required."


def test_a_harmony_answer_after_a_call_keeps_its_text_and_invents_no_second_call():
    text = (
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"city":"Paris"}<|call|><|start|>assistant<|channel|>final<|message|>Calling search next.<|return|>'
    )
    calls, rest = read_text_tool_calls(text, NAMES)
    assert [(c.name, c.arguments, c.invalid) for c in calls] == [
        ("get_weather", {"city": "Paris"}, False)
    ]
    assert rest == "Calling search next."


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[TOOL_CALLS]get_weather{"city": Paris}', "not_json"),  # whole, written wrong
        ("[TOOL_CALLS]get_weather[ARGS][1,2]", "not_object"),
        (
            '<|channel|>commentary to=functions.get_weather<|message|>{"city": Paris}<|call|>',
            "not_json",
        ),
    ],
)
def test_a_call_written_wrong_is_not_called_truncated(text, reason):
    (call,) = read_text_tool_calls(text, NAMES)[0]
    assert call.invalid and call.invalid_reason == reason


@pytest.mark.parametrize(
    "text",
    [
        '<|python_tag|>{"name":"get_weather","parameters":{"city":"Paris"}}<|eom_id|>',
        '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city":"Paris"}',
        'Here you go:\n```JSON\n[{"name":"get_weather","arguments":{"city":"Paris"}}]\n```',
        '[Note] I will check.\n[get_weather(city="Paris")]',
    ],
)
def test_real_variants_of_a_family_are_read(text):
    calls, rest = read_text_tool_calls(text, NAMES)
    assert [(c.name, c.arguments, c.invalid) for c in calls] == [
        ("get_weather", {"city": "Paris"}, False)
    ]
    assert "get_weather" not in rest
    assert _stream(text) == rest


def test_a_tool_code_block_cut_off_keeps_its_finished_calls():
    calls, _ = read_text_tool_calls(
        '```tool_code\nprint(search(q="x"))\nprint(get_weather(city="Pa', NAMES
    )
    assert [(c.name, c.invalid_reason) for c in calls] == [
        ("search", None),
        ("get_weather", "truncated"),
    ]


@pytest.mark.parametrize("family", ["kimi", "deepseek", "hunyuan"])
def test_two_sections_of_a_family_are_both_read_and_both_leave_the_text(family):
    one = family_example(family, "get_weather", {"city": "Paris"})
    two = family_example(family, "search", {"q": "x"})
    calls, rest = read_text_tool_calls(f"Checking.{one}\n{two}", NAMES)
    assert [c.name for c in calls] == ["get_weather", "search"]
    assert rest == "Checking."
