"""Every family on replies of our own: read right, markup out, streamed split anywhere, and cut
off anywhere inside a call (a reply stopped by max_tokens)."""

from __future__ import annotations

import pytest

from tests.providers.protocols.cases import CASES, NAMES, SCHEMAS, Case
from workbench.providers.protocols import FAMILIES, family_example, read_text_tool_calls
from workbench.providers.protocols.prose_stream import ProtocolFilter


def read(text: str):
    return read_text_tool_calls(text, NAMES, schemas=SCHEMAS)


def test_every_family_has_a_case_of_its_own():
    assert {f.name for f in FAMILIES} <= {c.family for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_each_family_reads_its_calls_and_leaves_only_the_prose(case: Case):
    calls, rest = read(case.text)
    assert [(c.name, c.arguments) for c in calls] == case.calls
    assert all(not c.invalid and c.family == case.family and c.source == "text" for c in calls)
    assert rest == case.rest


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_name_not_offered_is_never_a_call(case: Case):
    calls, _ = read_text_tool_calls(case.text, ["something_else"])
    assert calls == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_split_at_every_character_the_stream_shows_only_the_final_text(case: Case):
    final = read(case.text)[1]
    for cut in range(1, len(case.text)):
        f = ProtocolFilter(NAMES)
        shown = f.feed(case.text[:cut])
        assert final.startswith(shown), (cut, shown)
        shown += f.feed(case.text[cut:]) + f.finish()
        assert shown == final, cut
    f = ProtocolFilter(NAMES)
    shown = "".join(f.feed(ch) for ch in case.text) + f.finish()
    assert shown == final


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_reply_cut_anywhere_never_reads_a_wrong_call(case: Case):
    # A TOOL line alone is a whole call in the line protocol: cut before ARGS it is one.
    first = case.text.index("ARGS:") + len("ARGS:") if case.family == "tool_lines" else 0
    for cut in range(first, len(case.text)):
        calls, rest = read(case.text[:cut])
        for c in calls:
            if not c.invalid:
                assert (c.name, c.arguments) in case.calls, (cut, c)
        assert rest.startswith(case.prose[:cut].strip()), (cut, rest)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_reply_cut_inside_its_last_call_ends_with_a_truncated_call_never_text(case: Case):
    name, arguments = case.calls[-1]
    # From just past the name and the character that ends it (a quote, `>`, `(`…): before
    # that the name itself may still be growing.
    start = case.text.rindex(name) + len(name) + 1
    if case.family == "tool_lines":
        # A TOOL line alone is a whole call in that protocol (one without arguments).
        start = case.text.index("ARGS:") + len("ARGS: {")
    for cut in range(start, len(case.text)):
        calls, rest = read(case.text[:cut])
        assert len(calls) == len(case.calls), (cut, calls)
        last = calls[-1]
        assert last.name == name, (cut, last)
        # Unfinished: marked as such (an optional close may be all that is missing).
        assert (last.invalid and last.invalid_reason == "truncated") or (
            not last.invalid and last.arguments == arguments
        ), (cut, last)
        # One character into a closing tag is not yet markup: that `<` may stay.
        one_in = case.text[:cut].endswith("<") and rest == f"{case.prose}\n\n<".strip()
        assert rest == case.prose or one_in or rest == case.prose + "<", (cut, rest)


@pytest.mark.parametrize("family", [f.name for f in FAMILIES])
def test_each_family_reads_back_the_example_it_writes(family: str):
    text = family_example(family, "book_flight", {"origin": "LHR", "passengers": 2})
    assert text is not None
    calls, rest = read(text)
    assert [(c.name, c.arguments, c.family) for c in calls] == [
        ("book_flight", {"origin": "LHR", "passengers": 2}, family)
    ]
    assert rest == ""
