"""BFCL's multi-turn checker: the verdict BFCL gives a model's calls over an entry's turns.

Written from BFCL's `eval_runner._evaluate_single_multi_turn_entry` and
`multi_turn_checker`, in its order:

- a trace with fewer turns than the entry was force-quit (`multi_turn:force_terminated`);
  one with more is not a trace of this entry (BFCL_TRACE_INVALID);
- a step whose calls BFCL could not decode, and an empty step, are dropped;
- each turn, the model's steps run on the model's instances and the turn's ground truth on
  the ground truth's; both sets persist over the turns (BFCL keeps them in `globals()`);
- a turn with ground truth and no model step fails (`multi_turn:empty_turn_model_response`);
  a turn without ground truth is not checked (its calls still ran: the next turn's state
  counts them);
- the state check: every public attribute of each ground-truth instance `==` the model's
  (`multi_turn:instance_state_mismatch`, the differences in `details`);
- the response check: the turn's ground-truth results, as a multiset, inside all the
  model's results so far, earlier turns included (`multi_turn:execution_response_mismatch`).

Both sides run in one `BackendSandbox` — never `eval()`, never in this process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.eval.suites.bfcl.backends import BackendCall
from workbench.eval.suites.bfcl.case import BfclEntry
from workbench.eval.suites.bfcl.checker import BfclGrade
from workbench.eval.suites.bfcl.sandbox import BackendSandbox, SandboxLimits
from workbench.eval.suites.bfcl.source import BfclSource
from workbench.types import ToolCall

Call = BackendCall | ToolCall | Mapping[str, Any]


def grading_sides(model_name: str = "model") -> dict[str, str]:
    """The two sides of a grading sandbox, labelled as BFCL's checker labels its instances."""
    return {"model": f"{model_name}_eval", "ground_truth": f"{model_name}_ground_truth_eval"}


def grade_multi_turn(
    item_or_entry: Any,
    turns: Sequence[Sequence[Sequence[Call]]],
    *,
    source: str | Path | BfclSource | None = None,
    limits: SandboxLimits | None = None,
    sandbox: BackendSandbox | None = None,
    model_name: str = "model",
) -> BfclGrade:
    """BFCL's verdict on `turns[t][s]`, the calls of step `s` of turn `t`.

    `item_or_entry` is a multi-turn item (its `expect.bfcl`) or the `BfclEntry`. Pass a
    `sandbox` made with `sides=grading_sides(model_name)` to grade many entries in one worker
    (it is reset to each entry). `model_name` only shows in BFCL's instance names."""
    entry = _entry_of(item_or_entry)
    truth = entry.ground_truth
    if len(turns) > len(truth):
        raise ConfigError(
            f"{entry.id}: a trace with more turns than the entry ({len(turns)} > {len(truth)})",
            code="BFCL_TRACE_INVALID",
        )
    if len(turns) < len(truth):
        return BfclGrade(
            False,
            "multi_turn:force_terminated",
            (
                "Model was force-terminated during inference phase. The length of the model "
                f"result turns ({len(turns)}) does not match the length of the ground truth "
                f"turns ({len(truth)}).",
            ),
            {"turns": len(turns), "expected_turns": len(truth)},
        )
    decoded = [_decoded_steps(turn) for turn in turns]
    truth_calls = [[BackendCall.parse(text) for text in turn] for turn in truth]
    if sandbox is None:
        with BackendSandbox(
            entry, source=source, limits=limits or SandboxLimits(), sides=grading_sides(model_name)
        ) as own:
            return _check(entry, decoded, truth_calls, own)
    sandbox.reset(entry)
    return _check(entry, decoded, truth_calls, sandbox)


def _entry_of(item_or_entry: Any) -> BfclEntry:
    if isinstance(item_or_entry, BfclEntry):
        return item_or_entry
    expect = getattr(item_or_entry, "expect", None)
    entry = getattr(expect, "bfcl", None)
    if not isinstance(entry, BfclEntry):
        raise TypeError(f"not a BFCL multi-turn item or entry: {item_or_entry!r}")
    return entry


def _decoded_steps(turn: Sequence[Sequence[Call]]) -> list[list[BackendCall]]:
    """The steps BFCL keeps: one whose calls it cannot decode is dropped whole (its decoder
    raised), and so is an empty one."""
    steps = []
    for step in turn:
        try:
            calls = [BackendCall.of(call) for call in step]
        except (ValueError, KeyError, TypeError):
            continue
        if calls:
            steps.append(calls)
    return steps


def _check(
    entry: BfclEntry,
    decoded: list[list[list[BackendCall]]],
    truth: list[list[BackendCall]],
    sandbox: BackendSandbox,
) -> BfclGrade:
    so_far: list[str] = []  # every result of the model's, all turns
    for index, (steps, expected) in enumerate(zip(decoded, truth, strict=True)):
        # The steps in order, in one go: state carries over from one to the next either way.
        so_far.extend(sandbox.execute([call for step in steps for call in step], side="model"))
        wanted = sandbox.execute(expected, side="ground_truth")
        if expected and not steps:
            return BfclGrade(
                False,
                "multi_turn:empty_turn_model_response",
                (f"Model response list is empty for turn {index}",),
                {"turn": index},
            )
        if not expected:
            continue  # BFCL checks such a turn elsewhere (irrelevance), never here
        state = sandbox.compare("model", "ground_truth")
        if not state["valid"]:
            return BfclGrade(
                False,
                "multi_turn:instance_state_mismatch",
                (
                    f"Model instance for {state['class']} does not match the state with "
                    "ground truth instance.",
                ),
                {"turn": index, "class": state["class"], "differences": state["differences"]},
            )
        missing = _missing(wanted, so_far)
        if missing:
            return BfclGrade(
                False,
                "multi_turn:execution_response_mismatch",
                (
                    "Model response execution results so far does not contain all the ground "
                    f"truth response execution results for turn {index}.",
                ),
                {"turn": index, "missing": missing},
            )
    return BfclGrade(True)


def _missing(wanted: list[str], got: list[str]) -> list[str]:
    """The items of `wanted` that `got` lacks, as multisets (a duplicate needs two)."""
    pool = list(got)
    missing = []
    for item in wanted:
        try:
            pool.remove(item)
        except ValueError:
            missing.append(item)
    return missing
