"""SSE frames, split argument objects, tool-call slots, incremental decoding."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.providers.streamed_calls import (
    ToolSlots,
    iter_sse_json,
    split_json_objects,
    sse_frames,
)


def test_sse_frames_reads_data_lines_and_keeps_the_remainder():
    buf = (
        ": keep-alive\n"
        "event: message\n"
        'data: {"a":1}\n'
        "\n"
        'data:{"b":2}\r\n'
        "data: \n"
        "data: [DONE]\n"
        '  {"bare":true}  \n'
        'data: {"partial"'
    )
    frames, rest = sse_frames(buf)
    assert frames == ['{"a":1}', '{"b":2}', '{"bare":true}']
    assert rest == 'data: {"partial"'


@pytest.mark.parametrize(
    ("buf", "frames", "rest"),
    [
        ("", [], ""),
        ("data: {}", [], "data: {}"),  # no newline yet: the whole thing is the remainder
        ("data: {}\n", ["{}"], ""),
        ("\n\n\n", [], ""),
        ("data:[DONE]\ndata:x\n", ["x"], ""),
        ("event: ping\n:comment\n   \n", [], ""),
    ],
)
def test_sse_frames_edge_cases(buf, frames, rest):
    assert sse_frames(buf) == (frames, rest)


@given(
    st.lists(st.dictionaries(st.text(max_size=4), st.integers(), max_size=3), max_size=5),
    st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_sse_frames_is_chunking_invariant(objects, cuts):
    wire = "".join(f"data: {json.dumps(o)}\n\n" for o in objects)
    points = sorted({c % (len(wire) + 1) for c in cuts})
    frames, rest, prev = [], "", 0
    for p in [*points, len(wire)]:
        got, rest = sse_frames(rest + wire[prev:p])
        frames += got
        prev = p
    assert [json.loads(f) for f in frames] == objects
    assert rest == ""


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        ('{"a":1}{"b":2}', ['{"a":1}', '{"b":2}']),
        ('{"a":1} \n {"b":"}{"}', ['{"a":1}', '{"b":"}{"}']),
        ('{"a":"\\"}"}{"b":2}', ['{"a":"\\"}"}', '{"b":2}']),
        ('{"a":1}', ['{"a":1}']),
        ('{"a":1}x{"b":2}', ['{"a":1}x{"b":2}']),
        ('{"a":1}{"b":', ['{"a":1}{"b":']),
        ("{a:1}{b:2}", ["{a:1}{b:2}"]),
        ("[1][2]", ["[1][2]"]),
        ("", [""]),
    ],
)
def test_split_json_objects(args, parts):
    assert split_json_objects(args) == parts


@given(
    st.lists(
        st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
        min_size=2,
        max_size=4,
    )
)
def test_split_json_objects_recovers_concatenated_objects(objects):
    joined = "".join(json.dumps(o) for o in objects)
    assert [json.loads(p) for p in split_json_objects(joined)] == objects


def test_indexed_fragments_assemble_per_index():
    slots = ToolSlots()
    slots.absorb(0, "call_a", "search", '{"q":')
    slots.absorb(1, "call_b", "get_weather", "")
    slots.absorb(0, None, None, '"x"}')
    slots.absorb(1, None, None, '{"city":"Oslo"}')
    calls = slots.calls()
    assert [(c.id, c.name, c.arguments, c.source) for c in calls] == [
        ("call_a", "search", {"q": "x"}, "native"),
        ("call_b", "get_weather", {"city": "Oslo"}, "native"),
    ]


def test_gemini_parallel_calls_without_index_become_two_calls():
    slots = ToolSlots()
    slots.absorb(None, "g1", "search", '{"q":"a"}')
    slots.absorb(None, "g2", "search", '{"q":"b"}')
    calls = slots.calls()
    assert [(c.id, c.arguments) for c in calls] == [("g1", {"q": "a"}), ("g2", {"q": "b"})]


def test_same_id_again_on_a_slot_continues_that_call():
    slots = ToolSlots()
    slots.absorb(0, "c1", "search", '{"q":')
    slots.absorb(0, "c1", None, '"a"}')
    assert [(c.id, c.arguments) for c in slots.calls()] == [("c1", {"q": "a"})]


def test_new_slot_number_is_past_every_slot_in_use():
    slots = ToolSlots()
    slots.absorb(0, "a", "search", "{}")
    slots.absorb(1, "b", "search", "{}")
    slots.absorb(0, "c", "get_weather", "{}")  # new id on a named slot: opens slot 2
    slots.absorb(0, None, None, "")
    assert [c.id for c in slots.calls()] == ["a", "b", "c"]


def test_concatenated_arguments_split_into_calls_with_suffixed_ids():
    slots = ToolSlots()
    slots.absorb(None, "id", "search", '{"a":1}{"b":2}')
    calls = slots.calls()
    assert [(c.id, c.arguments) for c in calls] == [("id", {"a": 1}), ("id-1", {"b": 2})]
    slots = ToolSlots()
    slots.absorb(None, None, "search", '{"a":1}{"b":2}')
    assert [c.id for c in slots.calls()][1] == "call-1"


def test_nameless_slots_are_dropped_and_bad_args_are_invalid():
    slots = ToolSlots()
    slots.absorb(0, "x", None, '{"a":1}')
    slots.absorb(1, "y", "search", "{oops")
    slots.absorb(2, "z", "search", None)
    calls = slots.calls()
    assert [c.id for c in calls] == ["y", "z"]
    assert calls[0].invalid and calls[0].invalid_reason == "not_json"
    assert calls[1].arguments == {} and not calls[1].invalid


async def _aiter(chunks):
    for c in chunks:
        yield c


async def test_iter_sse_json_survives_a_multibyte_character_split_across_chunks():
    wire = 'data: {"t":"h\u00e9llo \u2603"}\n\n'.encode()
    cut = wire.index("\u2603".encode()) + 1  # in the middle of the snowman's three bytes
    got = [f async for f in iter_sse_json(_aiter([wire[:cut], wire[cut:]]))]
    assert got == [{"t": "h\u00e9llo \u2603"}]


async def test_iter_sse_json_skips_bad_frames_and_reads_a_last_unterminated_line():
    chunks = [
        b": hi\n",
        b"data: {bad\n\n",
        b"data: [1,2]\n",
        b'data: {"ok":1}\n\ndata: [DONE]\n',
        b'data: {"last":2}',
    ]
    got = [f async for f in iter_sse_json(_aiter(chunks))]
    assert got == [{"ok": 1}, {"last": 2}]


@given(st.lists(st.integers(1, 60), max_size=10))
def test_iter_sse_json_any_byte_split_gives_the_same_frames(cuts):
    objs = [{"t": "\u00e9\u2603\U0001f600"}, {"n": 1}, {"s": "a\nb"}]
    wire = b"".join(b"data: " + json.dumps(o, ensure_ascii=False).encode() + b"\n\n" for o in objs)
    points = sorted({c % (len(wire) + 1) for c in cuts})
    pieces, prev = [], 0
    for p in [*points, len(wire)]:
        pieces.append(wire[prev:p])
        prev = p

    async def collect():
        return [f async for f in iter_sse_json(_aiter(pieces))]

    assert asyncio.run(collect()) == objs


async def test_iter_sse_json_lets_the_source_error_propagate():
    async def broken():
        yield b'data: {"a":1}\n\n'
        raise OSError("reset")

    got = []
    with pytest.raises(OSError):
        async for f in iter_sse_json(broken()):
            got.append(f)
    assert got == [{"a": 1}]
