"""Bad input for the prose readers: one family's markup inside another's, nested and
unbalanced tags, a megabyte of text, bytes that are not UTF-8 from a stream. No crash, no hang
(each example is time-bounded), and no call invented: a name never written is never called."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from workbench.providers.protocols import FAMILIES, read_text_tool_calls
from workbench.providers.protocols.families import marker_table
from workbench.providers.protocols.prose_stream import ProtocolFilter
from workbench.providers.reasoning import ReasoningFilter, strip_reasoning
from workbench.providers.streamed_calls import iter_sse_json

OFFERED = ["book_flight", "lookup_stock"]
LITERALS = sorted({m.open for m in marker_table()} | {m.close for m in marker_table() if m.close})
PIECES = [
    *LITERALS,
    "{",
    "}",
    "[",
    "]",
    '"',
    "```",
    "```json\n",
    "\n",
    " ",
    "TOOL: ",
    "ARGS: ",
    '{"name": "other_tool", "arguments": {"x": 1}}',
    '"name": "other_tool"',
    "other_tool",
    "other_tool(x=1)",
    "[other_tool(x=1)]",
    "<function=other_tool>",
    "<parameter=x>",
    "</parameter>",
    "<arg_key>x</arg_key><arg_value>1</arg_value>",
    "functions.other_tool:0",
    "to=functions.other_tool",
    "call:other_tool{x:1}",
    "<think>",
    "</think>",
    "Some prose, with a word or two.",
]
soup = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def _stream(text: str, cuts: list[int]) -> str:
    think, protocol = ReasoningFilter(0), ProtocolFilter(OFFERED)
    shown, pos = [], 0
    for cut in sorted(cuts):
        shown.append(protocol.feed(think.feed(text[pos:cut])))
        pos = max(pos, cut)
    shown.append(protocol.feed(think.feed(text[pos:])))
    shown.append(protocol.feed(think.finish()))
    shown.append(protocol.finish())
    return "".join(shown)


@settings(
    max_examples=400, deadline=timedelta(seconds=2), suppress_health_check=[HealthCheck.too_slow]
)
@given(soup, st.lists(st.integers(0, 4000), max_size=12))
def test_markup_soup_never_crashes_and_never_calls_a_name_it_does_not_contain(text, cuts):
    calls, rest = read_text_tool_calls(strip_reasoning(text), OFFERED)
    assert calls == []  # no offered name is ever written in the soup
    assert isinstance(rest, str)
    assert isinstance(_stream(text, cuts), str)


named = st.lists(
    st.sampled_from([*PIECES, "book_flight", "lookup_stock", '"book_flight"', "=book_flight>"]),
    max_size=40,
).map("".join)


@settings(
    max_examples=400, deadline=timedelta(seconds=2), suppress_health_check=[HealthCheck.too_slow]
)
@given(named, st.lists(st.integers(0, 4000), max_size=12))
# Found by this test: inline code opened in an earlier chunk of the line still holds.
@example("</function>```<|python_tag|>```json\n", [11])
@example("</function>```tool_code<|END_RESPONSE|>", [])  # a held region read in its line
def test_nested_and_unbalanced_markup_reads_only_offered_names_and_streams_the_final_text(
    text, cuts
):
    stripped = strip_reasoning(text)
    calls, rest = read_text_tool_calls(stripped, OFFERED)
    for c in calls:
        assert c.name in OFFERED
        assert c.name in stripped  # every call is one whose name was written
        assert c.family in {f.name for f in FAMILIES}
        assert isinstance(c.arguments, dict)
        assert c.invalid == (c.invalid_reason is not None)
    # Streamed (reasoning already out, as the whole-text reading had it), the same text.
    f, shown, pos = ProtocolFilter(OFFERED), [], 0
    for cut in sorted(cuts):
        shown.append(f.feed(stripped[pos:cut]))
        pos = max(pos, cut)
    shown.append(f.feed(stripped[pos:]) + f.finish())
    assert "".join(shown) == rest


@contextmanager
def time_bound(seconds: int) -> Iterator[None]:
    """A hang guard, not a timing: the test fails instead of stalling the suite."""

    def stop(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


MEGABYTE = 1_000_000


def _megabytes() -> list[tuple[str, str]]:
    cases = [
        ("braces", "{" * MEGABYTE),
        ("brackets", "[" * MEGABYTE),
        ("quotes", '"' * MEGABYTE),
        ("fences", "```\n" * (MEGABYTE // 4)),
        ("pythonic", "[book_flight(" * (MEGABYTE // 13)),
        ("tool lines", "TOOL: book_flight\n" * (MEGABYTE // 18)),
        ("prose", ("word " * 200 + "\n") * (MEGABYTE // 1001)),
        ("orphan closes", "{[" + '{"a": 1}</tool_call>' * (MEGABYTE // 20)),
        (
            "unclosed keys",
            "<tool_call>book_flight" + "<arg_key>x" * (MEGABYTE // 10) + "</tool_call>",
        ),
    ]
    for m in marker_table():
        unit = m.open + "book_flight{"
        cases.append((f"open {m.open}", unit * (MEGABYTE // len(unit))))
        if m.close:
            unit = m.open + '{"name": "book_flight", "arguments": {}}' + m.close
            cases.append((f"closed {m.open}", unit * (MEGABYTE // len(unit))))
    return cases


_TOOL_CALL = '<tool_call>{"name": "book_flight", "arguments": {"to": "P"}}</tool_call>'


@pytest.mark.parametrize(
    "text",
    [
        # A line whose region closed, then a later line with inline code and a call: what the
        # first line showed is not the later line's context (found by review).
        "x\n``` a " + _TOOL_CALL + "\n`y " + _TOOL_CALL,
        "x ``` a " + _TOOL_CALL + "\nok\n`y " + _TOOL_CALL,
        "See: " + _TOOL_CALL + "\n`y " + _TOOL_CALL,
        "``` a " + _TOOL_CALL + "\n`y <|python_tag|>",
        "x\n```b " + _TOOL_CALL + "\n`y " + _TOOL_CALL + "\n",
        # An unclosed marker in inline code is an example: no truncated call, nothing hidden.
        'Use `<|python_tag|>{"name": "book_flight", "parameters": {"to": "P"}}` to call it.',
    ],
)
def test_a_held_region_is_read_in_its_own_line_split_anywhere(text):
    calls, want = read_text_tool_calls(text, OFFERED)
    if "Use `" in text:
        assert (calls, want) == ([], text)
    for cut in range(len(text) + 1):
        f = ProtocolFilter(OFFERED)
        assert f.feed(text[:cut]) + f.feed(text[cut:]) + f.finish() == want, cut


@pytest.mark.parametrize(("kind", "text"), _megabytes(), ids=[k for k, _ in _megabytes()])
def test_a_megabyte_of_markup_is_read_and_streamed_without_hanging(kind, text):
    with time_bound(60):
        calls, rest = read_text_tool_calls(strip_reasoning(text), OFFERED)
        assert all(c.name in OFFERED for c in calls)
        assert isinstance(rest, str)
        f = ProtocolFilter(OFFERED)
        shown = "".join(f.feed(text[i : i + 4096]) for i in range(0, len(text), 4096)) + f.finish()
        assert shown == rest


def _sse(content_bytes: bytes) -> bytes:
    """One OpenAI-style delta frame whose content is `content_bytes`, spliced in raw."""
    head = b'data: {"choices":[{"delta":{"content":"'
    return head + content_bytes + b'"}}]}\n\n'


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.parametrize("size", [1, 3, 7, 64])
@pytest.mark.parametrize(
    "bad",
    [
        b"\xff\xfe",  # never valid in UTF-8
        b"\xc3",  # a lead byte with no continuation
        b"\x80\x80",  # lone continuation bytes
        b"\xe2\x82",  # a three-byte sequence cut short
        b"\xf0\x9f\x98",  # a four-byte sequence cut short
        b"\xed\xa0\x80",  # an encoded surrogate
        b"\xc0\xaf",  # an overlong slash
    ],
)
def test_invalid_utf8_from_a_stream_is_replaced_not_fatal_and_invents_no_call(bad, size):
    # Bad bytes in the prose, inside an argument's value, and after the call.
    pieces = [
        b"Checking ",
        bad,
        b'<tool_call>{\\"name\\": \\"book_flight\\", \\"arguments\\": {\\"origin\\": \\"L',
        bad,
        b'HR\\"}}</tool_call> done',
        bad,
    ]
    data = b"".join(_sse(p) for p in pieces)

    async def collect() -> list[str]:
        return [
            f["choices"][0]["delta"]["content"] async for f in iter_sse_json(_chunks(data, size))
        ]

    deltas = asyncio.run(collect())
    text = "".join(deltas)
    assert "\ufffd" in text  # replaced, not dropped silently and not an exception
    think, protocol = ReasoningFilter(0), ProtocolFilter(OFFERED)
    shown = "".join(protocol.feed(think.feed(d)) for d in deltas)
    shown += protocol.feed(think.finish()) + protocol.finish()
    calls, rest = read_text_tool_calls(strip_reasoning(text), OFFERED)
    assert shown == rest
    assert [c.name for c in calls] == ["book_flight"]
    assert json.loads(calls[0].raw_arguments)["origin"].startswith("L")
