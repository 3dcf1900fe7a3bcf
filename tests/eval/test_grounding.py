"""verify_answer: the seed's own pins, and each check's pass and fail."""

from __future__ import annotations

from workbench.eval.scoring.grounding import (
    Fact,
    build_repair_prompt,
    facts_from_sources,
    proper_noun_runs,
    verify_answer,
)


def elena() -> list[Fact]:
    return [
        Fact(
            id="F1",
            kind="person",
            subject="Elena Weber",
            source="people",
            fields={
                "name": "Elena Weber",
                "affiliation": "SINGA Switzerland",
                "channels": "+41774730093",
                "role": None,
            },
        )
    ]


def kinds(result) -> set[str]:
    return {v.kind for v in result.violations}


def texts(result) -> list[str]:
    return [v.text for v in result.violations]


def test_the_canonical_fabrication_is_caught():
    r = verify_answer(
        "Your contact is Ilya Druzhnikov at the University of Liechtenstein.",
        elena(),
        "who should I contact?",
    )
    assert not r.ok and kinds(r) == {"novel-proper-noun"}
    assert {"Ilya Druzhnikov", "University of Liechtenstein", "Liechtenstein"} <= set(texts(r))


def test_an_invented_acronym_beside_a_real_name_is_reported_alone():
    r = verify_answer("Elena Weber (UZH) is your contact.", elena(), "who?")
    assert "UZH" in texts(r)
    assert "Weber" not in texts(r) and "Elena Weber" not in texts(r)


def test_the_true_answer_passes_clean():
    r = verify_answer(
        "Elena Weber (SINGA Switzerland) — +41774730093.", elena(), "who should I contact?"
    )
    assert r.ok and r.violations == ()


def test_what_the_user_said_is_never_a_fabrication():
    r = verify_answer(
        "Noted — Bahnhofstrasse 12 is saved as the meeting point.",
        [],
        "we meet at Bahnhofstrasse 12",
    )
    assert r.ok
    assert not verify_answer("Noted — Bahnhofstrasse 12 it is.", [], "where do we meet?").ok


def test_an_invented_citation_is_caught_in_fullwidth_brackets_as_written():
    r = verify_answer("Elena Weber is at SINGA Switzerland【F9】.", elena(), "who?")
    assert [(v.kind, v.text) for v in r.violations] == [("unknown-citation", "【F9】")]


def test_a_valid_citation_in_fullwidth_brackets_is_fine():
    assert verify_answer("Elena Weber (SINGA Switzerland)【F1】.", elena(), "who?").ok
    assert verify_answer("See ［F1］ and [D1].", elena(), "who?", extra_citation_ids=["d1"]).ok
    assert not verify_answer("See [D1].", elena(), "who?").ok


def test_a_grounded_table_does_not_read_as_fabricating():
    facts = [
        Fact(
            id="F1",
            kind="alert",
            subject="printcraft: 4 consecutive failed runs",
            source="alerts table",
            fields={"title": "printcraft: 4 consecutive failed runs", "severity": "urgent"},
        )
    ]
    answer = "\n".join(
        [
            "**Things that need your attention right now**",
            "",
            "| Category | Item | Status | Notes |",
            "|----------|------|--------|-------|",
            "| **Open alerts** | printcraft: 4 consecutive failed runs | Urgent | Alert [F1] |",
        ]
    )
    r = verify_answer(answer, facts, "what needs me right now")
    assert r.ok, texts(r)


def test_a_run_cannot_span_two_table_cells():
    r = verify_answer("| Status | Notes |\n|---|---|\n| Pending | none |", [], "status?")
    assert not [t for t in texts(r) if "Status Notes" in t]


def test_a_fabrication_inside_a_cell_is_caught_run_and_tokens_both():
    facts = [Fact("F1", "person", "Elena Weber", {"name": "Elena Weber"}, "people table")]
    r = verify_answer(
        "| Person | Role |\n|---|---|\n| Elena Weber | Program Manager at Impact Hub Zurich [F1] |",
        facts,
        "who is Elena",
    )
    assert not r.ok
    assert "Impact Hub Zurich" in texts(r) and "Zurich" in texts(r)


def test_numbers_pass_in_another_spacing_and_fail_when_new():
    assert verify_answer("Call +41 77 473 00 93.", elena(), "number?").ok
    r = verify_answer("Call +41 79 111 22 33.", elena(), "number?")
    assert kinds(r) == {"novel-number"}
    assert verify_answer("You have 3 tasks and 12 notes.", [], "tasks?").ok  # < 4 digits
    assert kinds(verify_answer("It grew by 2024%.", [], "growth?")) == {"novel-number"}


def test_paths_must_be_in_the_evidence():
    r = verify_answer(
        "Update the key in /opt/fleetcrown/runner/.env and data/contact-resolver.json.",
        elena(),
        "where is the key?",
    )
    assert [(v.kind, v.text) for v in r.violations] == [
        ("novel-path", "/opt/fleetcrown/runner/.env"),
        ("novel-path", "data/contact-resolver.json"),
    ]
    assert verify_answer("Edit config.toml.", [], "should I edit config.toml?").ok


def test_code_is_not_checked_for_names():
    assert verify_answer("Run `Kubernetes Operator` with ```Helm Chart```.", [], "how?").ok


def test_entity_attribution_only_checks_sentences_about_a_subject():
    answer = "Many people pay with Twint here. Elena Weber works at Impact Hub."
    closed = verify_answer(answer, elena(), "payment apps?")
    scoped = verify_answer(answer, elena(), "payment apps?", mode="entity-attribution")
    assert "Twint" in texts(closed)
    assert "Twint" not in texts(scoped) and "Impact Hub" in texts(scoped)


def test_sentence_initial_and_common_words_are_not_names():
    assert proper_noun_runs("Rotate the key.") == []
    assert verify_answer("Today is Monday. The Summary is here.", [], "day?").ok


def test_sources_become_document_facts_and_the_repair_prompt_lists_details():
    facts = facts_from_sources([{"id": "S1", "text": "Lyon is in France.", "title": "Lyon"}])
    assert facts[0].kind == "document" and facts[0].fields["excerpt"] == "Lyon is in France."
    r = verify_answer("Lyon is near Geneva.", facts, "where is Lyon?")
    prompt = build_repair_prompt(r.violations, "Not in your data.")
    assert '- "Geneva" does not appear' in prompt and "Not in your data." in prompt
