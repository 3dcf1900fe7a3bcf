"""BFCL's verdict on an agentic entry (web search, memory): is an accepted answer in the
model's final reply?

BFCL never looks at the calls of an agentic entry: only at the last reply of the turn that
held no call — the answer. Both that answer and each accepted answer are made comparable
the way BFCL's `agentic_checker` makes them: the characters `, . / - _ * ^ ( )` removed,
lowercased, single quotes turned double ("April 1, 2024" and "april 1 2024" are the same);
then an accepted answer must stand in the reply as whole words (`\\b...\\b`), so "7" is found
in "7 games" but not in "17", and "Kang" not in "Kangaroo".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from workbench.eval.suites.bfcl.case import BfclEntry
from workbench.eval.suites.bfcl.checker import BfclGrade

# What BFCL removes before comparing: the punctuation that writes one answer several ways.
_IGNORED = re.compile(r"[,./\-_*^()]")
NO_LIST = "Error during inference phase. Model did not output a list of model responses."
NO_ANSWER = "Cannot find the last chat message that is not a function call."
NOT_FOUND = "None of the expected answers were found in the model response."

Step = Sequence[Any] | str | None  # a step's calls (decoded), or its text when it held none


def standardize(text: str) -> str:
    """`text` as BFCL compares it (its `standardize_string`)."""
    return _IGNORED.sub("", text).lower().replace("'", '"')


def answer_found(answer: str, accepted: Sequence[str]) -> bool:
    """Whether one of `accepted` stands, as whole words, in `answer` (both standardized)."""
    said = standardize(answer)
    return any(re.search(rf"\b{re.escape(standardize(a))}\b", said) for a in accepted)


def final_answer(steps: Sequence[Step]) -> str | None:
    """The last step that was not a call: its text ("" for a step with neither), or None
    when every step called something."""
    last: str | None = None
    for step in steps:
        if isinstance(step, str):
            last = step
        elif not step:  # neither calls nor text: BFCL's empty decode, kept as the message
            last = ""
    return last


def grade_agentic(entry_or_item: Any, steps: Sequence[Step] | None) -> BfclGrade:
    """BFCL's verdict on one agentic entry, from the model's replies of its turn in order:
    each step either its calls (a non-empty list) or its text (a str: it held no call).

    No answer (every step a call, or the last non-call step empty) is
    `agentic:no_last_message`, as BFCL finds it; an answer that holds none of the entry's
    accepted answers is `agentic:answer_not_found`."""
    entry = _entry_of(entry_or_item)
    if steps is None or isinstance(steps, str):
        return BfclGrade(False, "agentic:inference_error", (NO_LIST,))
    last = final_answer(steps)
    if not last:  # BFCL tests the message's truth: an empty text is no answer
        return BfclGrade(False, "agentic:no_last_message", (NO_ANSWER,))
    if answer_found(last, entry.answers):
        return BfclGrade(True)
    return BfclGrade(
        False,
        "agentic:answer_not_found",
        (NOT_FOUND, f"the answer: {last[:300]!r}; accepted: {list(entry.answers)!r}"),
    )


def _entry_of(entry_or_item: Any) -> BfclEntry:
    entry = entry_or_item
    if not isinstance(entry, BfclEntry):
        expect = getattr(entry_or_item, "expect", None)
        entry = getattr(expect, "bfcl", None)
    if not isinstance(entry, BfclEntry) or entry.kind != "agentic":
        raise TypeError("grade_agentic takes an agentic BFCL entry, or an item loaded from one")
    return entry
