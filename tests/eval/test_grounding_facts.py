"""Facts and the verifier: the facts are the library's, the checking is the workbench's."""

from __future__ import annotations

import workbench.eval
import workbench.eval.scoring.grounding
import workbench.text.facts
from workbench.eval.scoring.grounding import verify_answer
from workbench.text.facts import assign_fact_ids, make_fact

FACT_NAMES = (
    "FACT_KINDS",
    "NOT_RECORDED",
    "Fact",
    "assign_fact_ids",
    "declared_fields",
    "fact_ids",
    "make_fact",
    "render_facts",
    "unrecorded_fields",
)


def test_grounding_still_names_the_librarys_facts():
    for name in FACT_NAMES:
        home = getattr(workbench.text.facts, name)
        assert getattr(workbench.eval.scoring.grounding, name) is home, name
        if name != "NOT_RECORDED":  # never public in workbench.eval
            assert getattr(workbench.eval, name) is home, name


def test_numbered_facts_are_what_the_verifier_accepts_as_citations():
    facts = assign_fact_ids(
        [
            make_fact(
                "person",
                "Elena Weber",
                "people table",
                {"name": "Elena Weber", "channels": "whatsapp +41774730093"},
            )
        ]
    )
    assert verify_answer("Elena Weber [F1].", facts, "who?").ok
    flagged = verify_answer("Elena Weber [F2].", facts, "who?")
    assert [v.text for v in flagged.violations] == ["[F2]"]
