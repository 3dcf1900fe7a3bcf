"""grade_multi_turn against BFCL's own multi_turn_checker, on BFCL's real entries.

Traces are BFCL's ground truth, then mutated the ways models go wrong (a call dropped, an
argument changed, a step split, a turn emptied, a call moved to the turn before, a call
duplicated, an unknown function); ours and BFCL's checker grade the same trace, BFCL's from
the call texts its decoder would have given it.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from workbench.errors import ConfigError
from workbench.eval.suites.bfcl import grade_multi_turn
from workbench.eval.suites.bfcl.backends import BackendCall
from workbench.eval.suites.bfcl.case import MULTI_TURN_CATEGORIES, BfclEntry
from workbench.eval.suites.bfcl.multi_turn_checker import grading_sides
from workbench.eval.suites.bfcl.sandbox import BackendSandbox
from workbench.types import ToolCall

Trace = list[list[list[BackendCall]]]


@pytest.fixture(scope="module")
def entries(bfcl_wheel: Any) -> dict[str, list[BfclEntry]]:
    from workbench.eval.suites.bfcl.loader import bfcl_dataset

    found = bfcl_dataset(",".join(MULTI_TURN_CATEGORIES), source=bfcl_wheel)
    by_category: dict[str, list[BfclEntry]] = {c: [] for c in MULTI_TURN_CATEGORIES}
    for item in found.items:
        entry = item.expect.bfcl
        by_category[entry.category].append(entry)
    return by_category


@pytest.fixture(scope="module")
def sandbox(entries: dict[str, list[BfclEntry]]) -> Iterator[BackendSandbox]:
    first = entries["multi_turn_base"][0]
    with BackendSandbox(first, sides=grading_sides()) as shared:
        yield shared


@pytest.fixture(scope="module")
def bfcl_multi_turn(bfcl_package: None) -> Callable[[BfclEntry, Trace], tuple[bool, str | None]]:
    """BFCL's own checker on the trace's call texts (in-process, with its eval: only ever
    given traces made of BFCL's own ground-truth calls and an unknown name)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (  # type: ignore[import-not-found]
        multi_turn_checker,
    )

    counter = itertools.count()

    def check(entry: BfclEntry, trace: Trace) -> tuple[bool, str | None]:
        if len(trace) != len(entry.ground_truth):
            return False, "multi_turn:force_terminated"
        decoded = [[[c.text() for c in step] for step in turn if step] for turn in trace]
        test_entry = {
            "id": entry.id,
            "initial_config": entry.initial_config,
            "involved_classes": list(entry.involved_classes),
        }
        # BFCL keeps instances in globals() by model name and entry: a fresh name each time.
        got = multi_turn_checker(
            decoded,
            [list(turn) for turn in entry.ground_truth],
            test_entry,
            entry.category,
            f"oracle_{next(counter)}",
        )
        return got["valid"], got.get("error_type")

    return check


def ground_truth_trace(entry: BfclEntry) -> Trace:
    """Each turn's ground truth as one step (the oracle persona's answer)."""
    return [[[BackendCall.parse(t) for t in turn]] if turn else [] for turn in entry.ground_truth]


def _flat(trace: Trace) -> list[tuple[int, int, int]]:
    return [
        (t, s, c)
        for t, turn in enumerate(trace)
        for s, step in enumerate(turn)
        for c in range(len(step))
    ]


def _changed(call: BackendCall) -> BackendCall | None:
    def change(value: Any) -> Any:
        if isinstance(value, bool):
            return not value
        if isinstance(value, int | float):
            return value + 7
        if isinstance(value, str):
            return value + "_changed"
        if isinstance(value, list):
            return [*value, "changed"]
        return None

    for key, value in call.kwargs.items():
        new = change(value)
        if new is not None:
            return BackendCall(call.name, call.args, {**call.kwargs, key: new})
    if call.args and change(call.args[0]) is not None:
        return BackendCall(call.name, (change(call.args[0]), *call.args[1:]), call.kwargs)
    return None


def mutations(entry: BfclEntry) -> Iterator[tuple[str, Trace]]:
    """The mutations of the ground truth, at places chosen by the entry's id."""
    rng = random.Random(entry.id)
    base = ground_truth_trace(entry)
    calls = _flat(base)
    if not calls:
        return

    def copy() -> Trace:
        return [[list(step) for step in turn] for turn in base]

    t, s, c = rng.choice(calls)
    dropped = copy()
    del dropped[t][s][c]
    yield "dropped", dropped

    changed = copy()
    for t2, s2, c2 in [*calls[calls.index((t, s, c)) :], *calls]:
        new = _changed(changed[t2][s2][c2])
        if new is not None:
            changed[t2][s2][c2] = new
            yield "argument changed", changed
            break

    split = copy()
    long_steps = [(t2, s2) for t2, s2, c2 in calls if c2 == 1]
    if long_steps:
        t2, s2 = rng.choice(long_steps)
        step = split[t2][s2]
        cut = rng.randrange(1, len(step))
        split[t2][s2 : s2 + 1] = [step[:cut], step[cut:]]
        yield "step split", split

    emptied = copy()
    emptied[rng.choice(sorted({t2 for t2, _, _ in calls}))] = []
    yield "turn emptied", emptied

    later = [(t2, s2, c2) for t2, s2, c2 in calls if t2 > 0]
    if later:
        moved = copy()
        t2, s2, c2 = rng.choice(later)
        call = moved[t2][s2].pop(c2)
        if moved[t2 - 1]:
            moved[t2 - 1][-1].append(call)
        else:
            moved[t2 - 1] = [[call]]
        yield "moved to the turn before", moved

    duplicated = copy()
    duplicated[t][s].insert(c, duplicated[t][s][c])
    yield "duplicated", duplicated

    unknown = copy()
    unknown[t][s][c] = BackendCall("no_such_function", (), dict(unknown[t][s][c].kwargs))
    yield "unknown function", unknown

    # BFCL rewrites `name(` inside string arguments: one that mentions the call's own name.
    for t2, s2, c2 in calls:
        call = base[t2][s2][c2]
        texts = [k for k, v in call.kwargs.items() if isinstance(v, str)]
        if texts:
            mentions = copy()
            kwargs = {**call.kwargs, texts[0]: f"{call.kwargs[texts[0]]} {call.name}(x)"}
            mentions[t2][s2][c2] = BackendCall(call.name, call.args, kwargs)
            yield "a string mentioning a function", mentions
            break


def sample(entries: dict[str, list[BfclEntry]], per_category: int) -> list[BfclEntry]:
    step = 200 // per_category
    return [e for c in MULTI_TURN_CATEGORIES for e in entries[c][::step][:per_category]]


# ------------------------------------------------------------------ the ground truth


def test_the_ground_truth_is_graded_valid_on_entries_of_every_category(
    entries: dict[str, list[BfclEntry]], sandbox: BackendSandbox
) -> None:
    for entry in sample(entries, 5):
        grade = grade_multi_turn(entry, ground_truth_trace(entry), sandbox=sandbox)
        assert grade.valid, (entry.id, grade)


def test_the_ground_truth_is_graded_valid_on_every_multi_turn_entry(
    entries: dict[str, list[BfclEntry]], sandbox: BackendSandbox
) -> None:
    failed = [
        entry.id
        for category in MULTI_TURN_CATEGORIES
        for entry in entries[category]
        if not grade_multi_turn(entry, ground_truth_trace(entry), sandbox=sandbox).valid
    ]
    assert failed == []


def test_a_trace_given_as_tool_calls_and_dicts_grades_as_its_calls(
    entries: dict[str, list[BfclEntry]], sandbox: BackendSandbox
) -> None:
    entry = next(
        e
        for e in entries["multi_turn_base"]
        if all(BackendCall.parse(t).args == () for turn in e.ground_truth for t in turn)
    )
    as_dicts = [
        [[{"name": c.name, "arguments": dict(c.kwargs)} for c in step] for step in turn]
        for turn in ground_truth_trace(entry)
    ]
    assert grade_multi_turn(entry, as_dicts, sandbox=sandbox).valid
    as_tool_calls = [
        [
            [ToolCall(f"c{i}", c["name"], c["arguments"], "{}") for i, c in enumerate(step)]
            for step in turn
        ]
        for turn in as_dicts
    ]
    assert grade_multi_turn(entry, as_tool_calls, sandbox=sandbox).valid


# ------------------------------------------------------------------ against BFCL's checker


@pytest.mark.parametrize(
    "per_category", [10, pytest.param(200, marks=pytest.mark.slow, id="every entry")]
)
def test_mutated_traces_are_graded_as_bfcls_own_checker_grades_them(
    entries: dict[str, list[BfclEntry]],
    sandbox: BackendSandbox,
    bfcl_multi_turn: Callable[[BfclEntry, Trace], tuple[bool, str | None]],
    per_category: int,
) -> None:
    seen: dict[str, set[str | None]] = {}
    disagreements = []
    for entry in sample(entries, per_category):
        for name, trace in mutations(entry):
            ours = grade_multi_turn(entry, trace, sandbox=sandbox)
            theirs = bfcl_multi_turn(entry, trace)
            seen.setdefault(name, set()).add(ours.error_type)
            if (ours.valid, ours.error_type) != theirs:
                disagreements.append((entry.id, name, (ours.valid, ours.error_type), theirs))
    assert disagreements == []
    assert len(seen) == 8
    # The sample reaches every verdict the checker gives, valid included.
    verdicts = set().union(*seen.values())
    assert {
        None,
        "multi_turn:empty_turn_model_response",
        "multi_turn:instance_state_mismatch",
        "multi_turn:execution_response_mismatch",
    } <= verdicts


def test_a_state_mismatch_carries_the_difference_and_the_turn(
    entries: dict[str, list[BfclEntry]], sandbox: BackendSandbox
) -> None:
    entry = entries["multi_turn_base"][0]  # turn 0: cd, mkdir temp, mv the report into it
    trace = ground_truth_trace(entry)
    del trace[0][0][1]  # no mkdir: the file system differs
    grade = grade_multi_turn(entry, trace, sandbox=sandbox)
    assert grade.error_type == "multi_turn:instance_state_mismatch"
    assert grade.details is not None
    assert grade.details["turn"] == 0 and grade.details["class"] == "GorillaFileSystem"
    assert set(grade.details["differences"]) == {"root"}
    # JSON a notebook can show: the file system as a tree of its public attributes.
    root = json.loads(json.dumps(grade.details["differences"]["root"]))
    expected = root["ground_truth"]["contents"]["document"]["contents"]["temp"]["contents"]
    assert "final_report.pdf" in expected
    # without the directory, the model's mv renamed the report to `temp`
    assert "contents" not in root["model"]["contents"]["document"]["contents"]["temp"]


def test_a_force_quit_fails_and_a_trace_with_more_turns_is_refused(
    entries: dict[str, list[BfclEntry]], sandbox: BackendSandbox
) -> None:
    entry = entries["multi_turn_base"][0]
    trace = ground_truth_trace(entry)
    grade = grade_multi_turn(entry, trace[:-1], sandbox=sandbox)
    assert (grade.valid, grade.error_type) == (False, "multi_turn:force_terminated")
    with pytest.raises(ConfigError) as raised:
        grade_multi_turn(entry, [*trace, []], sandbox=sandbox)
    assert raised.value.code == "BFCL_TRACE_INVALID"
    assert "more turns than the entry" in str(raised.value)


def test_a_step_bfcl_cannot_decode_is_dropped_as_bfcl_drops_it(
    entries: dict[str, list[BfclEntry]], sandbox: BackendSandbox
) -> None:
    entry = entries["multi_turn_base"][0]
    trace: list[list[list[Any]]] = [list(turn) for turn in ground_truth_trace(entry)]
    broken = ToolCall("x", "cd", {}, "{not json", invalid=True, invalid_reason="not_json")
    trace[0] = [[broken]]  # the turn's only step cannot be decoded: the turn is empty
    grade = grade_multi_turn(entry, trace, sandbox=sandbox)
    assert grade.error_type == "multi_turn:empty_turn_model_response"
    trace[0] = [[broken], *ground_truth_trace(entry)[0]]
    assert grade_multi_turn(entry, trace, sandbox=sandbox).valid
