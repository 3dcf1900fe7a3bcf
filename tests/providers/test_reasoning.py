"""Reasoning and protocol lines never reach the reader, whole or streamed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.providers.protocols import read_text_tool_calls
from workbench.providers.protocols.prose_stream import ProtocolFilter
from workbench.providers.reasoning import ReasoningFilter, strip_reasoning

NAMES = ["get_weather", "search"]


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces, prev = [], 0
    for p in [*points, len(text)]:
        pieces.append(text[prev:p])
        prev = p
    return pieces


def stream(filt, pieces: list[str]) -> str:
    return "".join(filt.feed(p) for p in pieces) + filt.finish()


# ----------------------------------------------------------------------- strip_reasoning


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>plan</think>Answer.", "Answer."),
        ("<THINK>\nmulti\nline\n</Think>\n\nAnswer.", "Answer."),
        ("A <think>x</think>B <think>y</think>C", "A B C"),
        ("Answer so far <think>still thinking", "Answer so far "),
        ("reasoning without an opening tag</think>\nAnswer.", "Answer."),
        ("<think>a</think>b</think>c", "c"),
        ("no tags at all", "no tags at all"),
        ("  <think>x</think>  spaced", "spaced"),
        ("a < think > b", "a < think > b"),
    ],
)
def test_strip_reasoning(text, expected):
    assert strip_reasoning(text) == expected


# ----------------------------------------------------------------------- ReasoningFilter

_PIECES = [
    "a",
    "b",
    " ",
    "\n",
    "<think>",
    "</think>",
    "<THINK>",
    "</Think>",
    "<",
    "/",
    "think",
    ">",
]
_TAG = re.compile(r"<(/?)think>", re.I)


def lone_close_ends(text: str) -> list[int]:
    ends, in_think = [], False
    for m in _TAG.finditer(text):
        if m.group(1):
            if in_think:
                in_think = False
            else:
                ends.append(m.end())
        else:
            in_think = True
    return ends


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=40),
    st.lists(st.integers(min_value=0, max_value=200), max_size=12),
    st.integers(min_value=0, max_value=60),
)
def test_reasoning_filter_matches_strip_reasoning_for_any_chunking(parts, cuts, window):
    text = "".join(parts)
    out = stream(ReasoningFilter(lone_close_window=window), chunked(text, cuts))
    if all(e <= window for e in lone_close_ends(text)):
        assert out == strip_reasoning(text)
    else:
        # Past the window a lone close cannot take back what was shown: only the tag goes,
        # and what follows it is read exactly.
        assert out.endswith(strip_reasoning(text))


def test_reasoning_filter_releases_after_the_window_and_hides_think_blocks():
    f = ReasoningFilter(lone_close_window=10)
    assert f.feed("Hel") == ""  # held: a lone </think> may still come
    assert f.feed("lo there, ") == "Hello there, "
    assert f.feed("<thi") == ""
    assert f.feed("nk>secret</think> world") == " world"
    assert f.finish() == ""


def test_reasoning_filter_hides_everything_before_a_lone_close_within_the_window():
    f = ReasoningFilter()
    out = f.feed("I should answer briefly.") + f.feed("</think>\n\nParis.") + f.finish()
    assert out == "Paris."


def test_reasoning_filter_late_lone_close_drops_only_the_tag():
    f = ReasoningFilter(lone_close_window=5)
    out = f.feed("visible text") + f.feed("</think>more") + f.finish()
    assert out == "visible textmore"


def test_reasoning_filter_drops_an_unterminated_block_at_the_end():
    f = ReasoningFilter(lone_close_window=0)
    assert f.feed("Answer <think>hm") == "Answer "
    assert f.feed(" still") == ""
    assert f.finish() == ""


def test_reasoning_filter_partial_tag_text_that_never_completes_is_shown():
    f = ReasoningFilter(lone_close_window=0)
    assert f.feed("a <thi") == "a "
    assert f.finish() == "<thi"


# ----------------------------------------------------------------------- ProtocolFilter

_PROSE = [
    "Let me check that for you.",
    "You could use the get_weather tool.",
    "Call get_weather(city) when needed.",
    'Example {"name": "search", "arguments": {}} in prose.',
    "The answer is 42.",
    "  indented line",
    "",
    "",
    "Args: none needed",
    "```python",
    "print('x')",
    "```",
    "{ not json",
    "}",
    "<b>bold</b>",
    "Tool: maybe later",
]
_CALLS = [
    'TOOL: get_weather\nARGS: {"city": "Paris"}',
    '- **TOOL**: search\n\n- **ARGS**: {\n  "q": "x"\n}',
    "TOOL: search\nARGS: oops",
    "TOOL: unknown\nARGS: {}",
    '<tool_call>\n{"name": "search", "arguments": {"q": 1}}\n</tool_call>',
    'Sure: <tool_call>{"name": "get_weather", "arguments": {}}</tool_call> then',
    '{"name": "search", "arguments": {"q": 2}}\n</tool_call>',
    '<tool_call name="search">{"q": 3}</tool_call>',
    '<function=get_weather>{"city": "Oslo"}</function>',
    "```json\nTOOL: search\nARGS: {}\n```",
    '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',
    '{\n  "name": "get_weather",\n  "arguments": {"city": "Rome"}\n}\n</tool_call>',
    '<tool_call>\n{"name": "search", "arguments": {"q": 4}}',
    "<tool_call>\n<function=search>\n<parameter=q>\nhi\n</parameter>\n</function>\n</tool_call>",
    'TOOL: search\nsome words\n\nARGS: {"q": 5}',
    'TOOL: search\nARGS:\n{\n\n"q":\n6}',
    "</tool_call>",
    "<function=search>",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_PROSE) | st.sampled_from(_CALLS), min_size=1, max_size=12),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=15),
)
def test_protocol_filter_streams_what_read_text_tool_calls_leaves(blocks, cuts):
    text = "\n".join(blocks)
    out = stream(ProtocolFilter(NAMES), chunked(text, cuts))
    assert out == read_text_tool_calls(text, NAMES)[1]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "search", "arguments": {"q": 1}}',
        '```json\n{"name": "search", "arguments": {"q": 1}}\n```',
        '[search(q="x"), get_weather(city="y")]',
        '[get_weather("positional")]',
        '{"config": true}\nis a JSON object',
        "```python\nprint(1)\n```\nDone.",
        "   \n\n",
        "",
    ],
)
@pytest.mark.parametrize("size", [1, 4, 1000])
def test_protocol_filter_whole_reply_shapes(text, size):
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    assert stream(ProtocolFilter(NAMES), pieces) == read_text_tool_calls(text, NAMES)[1]


def test_protocol_filter_releases_prose_promptly_and_holds_protocol():
    f = ProtocolFilter(NAMES)
    assert f.feed("Let me check the weather for you") == "Let me check the weather for you"
    assert f.feed(".\nTOOL: get") == "."
    assert f.feed('_weather\nARGS: {"city": "Paris"}\n') == ""
    rest = f.feed("Done.\n") + f.finish()
    assert rest == "\nDone."


def test_protocol_filter_holds_a_partial_line_only_while_it_may_be_protocol():
    f = ProtocolFilter(NAMES)
    assert f.feed("To") == ""  # could still become "TOOL:"
    assert f.feed("day is sunny") == "Today is sunny"
    assert f.feed(" <tool_") == ""
    assert f.feed("x> ok") == " <tool_x> ok"


def test_protocol_filter_passes_everything_when_no_tools_were_offered():
    f = ProtocolFilter([])
    assert f.feed("TOOL: search\n") == "TOOL: search\n"
    assert f.finish() == ""
