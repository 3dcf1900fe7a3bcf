"""`grade_agentic` agrees with BFCL's own agentic evaluation (eval_runner's
`_evaluate_single_agentic_entry` over its `agentic_checker`) on every trace tried: answers
written with other punctuation, case and quotes, partial words, an answer inside a longer
word, dates, no answer at all."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.eval.suites.bfcl.agentic_checker import grade_agentic, standardize
from workbench.eval.suites.bfcl.case import BfclEntry


def _entry(*answers: str) -> BfclEntry:
    return BfclEntry(
        id="web_search_base_0",
        category="web_search_base",
        turns=(({"role": "user", "content": "?"},),),
        functions=(),
        involved_classes=("WebSearchAPI",),
        answers=answers,
    )


@pytest.fixture(scope="module")
def bfcl_agentic(bfcl_package: None) -> Any:
    """`verdict(answers, steps) -> (valid, error_type)` by BFCL's own entry evaluation; its
    handler decodes a call step and fails on a text one, as a model's handler does."""
    from bfcl_eval.eval_checker.eval_runner import (  # type: ignore[import-not-found]
        _evaluate_single_agentic_entry,
    )

    class Handler:
        def decode_execute(self, result: Any, has_tool_call_tag: bool) -> list[str]:
            if isinstance(result, str):
                raise ValueError("not a call")
            return [f"{name}()" for call in result for name in call]

    def verdict(answers: list[str], steps: list[Any]) -> tuple[bool, str | None]:
        got = _evaluate_single_agentic_entry(
            Handler(), "web_search_base_0", [steps], answers, {"question": []}, "m", "web"
        )
        return got["valid"], None if got["valid"] else got["error"]["error_type"]

    return verdict


CALL = [{"search_engine_query": '{"keywords": "x"}'}]
ANSWERS = [
    ["Zhang Yiming"],
    ["7", "seven"],
    ["Dong-Sup Yoon", "Yoo Dong-Sup", "Yoon Dong-Sup"],
    ["April 1, 2024"],
    ["O'Neil"],
    ["Kang"],
    ["3.14"],
    ["(a) option"],
    ["C++"],
    ["$5"],
]
REPLIES = [
    "{'answer': 'Zhang Yiming', 'context': 'Forbes, April 2025'}",
    "ZHANG YIMING",
    "zhang-yiming",
    "Zhang  Yiming",
    "Zhang Yi ming",
    "ZhangYiming",
    "The Cowboys won 7 games.",
    "They won 17 games",
    "seven",
    "Seventy",
    "7th",
    "Yoon Dong Sup",
    "dongsup yoon",
    "Dong-Sup Yoon.",
    "April 1 2024",
    "april 1,2024",
    "April 1st, 2024",
    "4/1/2024",
    'O"Neil',
    "O'Neil",
    "oneil",
    "Kangaroo",
    "Han Kang's novel",
    "_Kang_",
    "314",
    "3.14",
    "a option",
    "C++ it is",
    "C",
    "$5",
    "5",
    "I do not know",
    "",
    " ",
]


def test_every_reply_to_every_answer_list_is_graded_as_bfcl_grades_it(bfcl_agentic):
    checked = 0
    for answers in ANSWERS:
        for reply in REPLIES:
            for steps in ([reply], [CALL, reply], [reply, CALL], [CALL, reply, CALL, "x"]):
                ours = grade_agentic(_entry(*answers), steps)
                assert (ours.valid, ours.error_type) == bfcl_agentic(answers, steps), (
                    answers,
                    steps,
                )
                checked += 1
    assert checked == len(ANSWERS) * len(REPLIES) * 4


def test_a_turn_of_only_calls_or_an_empty_answer_has_no_last_message(bfcl_agentic):
    for steps in ([CALL], [CALL, CALL], ["", CALL], [CALL, ""], [CALL, []]):
        ours = grade_agentic(_entry("7"), steps)
        assert ours.error_type == "agentic:no_last_message"
        assert bfcl_agentic(["7"], steps) == (False, "agentic:no_last_message")


def test_grading_an_item_reads_its_entry_and_refuses_anything_else():
    from workbench.eval.dataset.prompt_set import Expect, Item

    item = Item(
        id="x", messages=({"role": "user", "content": "?"},), expect=Expect(bfcl=_entry("7"))
    )
    assert grade_agentic(item, ["7"]).valid
    assert grade_agentic(item, None).error_type == "agentic:inference_error"
    with pytest.raises(TypeError):
        grade_agentic(object(), ["7"])


TRICKY = st.text(alphabet=st.sampled_from(list("aAbB7 ,./-_*^()'\"+$é\n")), max_size=12)


@settings(max_examples=300, deadline=None)
@given(answers=st.lists(TRICKY, min_size=1, max_size=3), reply=TRICKY)
def test_generated_answers_agree_with_bfcls_checker(bfcl_agentic, answers, reply):
    ours = grade_agentic(_entry(*answers), [CALL, reply])
    assert (ours.valid, ours.error_type) == bfcl_agentic(answers, [CALL, reply])


def test_standardize_is_bfcls(bfcl_package):
    from bfcl_eval.eval_checker.agentic_eval.agentic_checker import (  # type: ignore[import-not-found]
        standardize_string,
    )

    for text in REPLIES + [a for answers in ANSWERS for a in answers]:
        assert standardize(text) == standardize_string(text)
