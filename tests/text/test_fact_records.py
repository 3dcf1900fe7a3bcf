"""Facts: declared fields, how a fact is built, numbered and rendered, and what it lacks."""

from __future__ import annotations

import pytest

from workbench.text.facts import (
    FACT_KINDS,
    NOT_RECORDED,
    Fact,
    assign_fact_ids,
    declared_fields,
    fact_ids,
    make_fact,
    render_facts,
    unrecorded_fields,
)


def elena() -> Fact:
    return make_fact(
        "person",
        "Elena Weber",
        "people table",
        {"name": "Elena Weber", "channels": "whatsapp +41774730093"},
    )


def test_every_kind_declares_the_seeds_fields_in_order():
    assert dict(FACT_KINDS) == {
        "person": (
            "name",
            "affiliation",
            "role",
            "how_we_met",
            "last_interaction",
            "notes",
            "channels",
        ),
        "project": ("name", "status", "stack", "description", "latest_dev_log", "repo"),
        "goal": ("title", "project", "progress", "target_date", "last_updated"),
        "habit": ("title", "frequency", "current_streak", "last_checked"),
        "commitment": ("title", "due", "counterparty", "status"),
        "event": ("name", "type", "deadline", "url", "status"),
        "crew_member": (
            "name",
            "role",
            "skills",
            "engagement",
            "rate",
            "availability",
            "open_assignments",
        ),
        "assignment": ("title", "assignee", "status", "due", "fee", "why"),
        "document": ("title", "source", "excerpt"),
        "pending_action": ("title", "type", "reasoning", "proposed_on", "id"),
        "web_result": ("title", "url", "published", "snippet", "engine"),
        "web_page": ("title", "url", "retrieved", "truncated"),
    }


def test_the_kinds_cannot_be_edited_at_run_time():
    with pytest.raises(TypeError):
        FACT_KINDS["person"] = ("name",)  # type: ignore[index]


def test_declared_fields_fall_back_only_for_an_unknown_kind():
    assert declared_fields("habit", ["ignored"]) == (
        "title",
        "frequency",
        "current_streak",
        "last_checked",
    )
    assert declared_fields("recipe", ["dish", "time"]) == ("dish", "time")
    assert declared_fields("recipe") == ()


def test_a_fact_has_every_declared_field_and_none_other():
    fact = make_fact(
        "commitment", "Send the deck", "commitments", {"title": "Send the deck", "colour": "red"}
    )
    assert fact == Fact(
        id="",
        kind="commitment",
        subject="Send the deck",
        fields={"title": "Send the deck", "due": None, "counterparty": None, "status": None},
        source="commitments",
        similarity=None,
    )
    assert list(fact.fields) == ["title", "due", "counterparty", "status"]


def test_values_are_trimmed_and_blank_ones_become_none():
    fact = make_fact(
        "habit", "Run", "habits", {"title": "  Run \n", "frequency": "   ", "current_streak": ""}
    )
    assert fact.fields == {
        "title": "Run",
        "frequency": None,
        "current_streak": None,
        "last_checked": None,
    }


def test_an_unknown_kind_keeps_the_keys_of_its_values():
    fact = make_fact("recipe", "Rösti", "cookbook", {"dish": " Rösti ", "time": "", "serves": None})
    assert fact.fields == {"dish": "Rösti", "time": None, "serves": None}
    assert make_fact("recipe", "Rösti", "cookbook").fields == {}


def test_a_similarity_is_kept_only_when_given():
    assert make_fact("document", "Guide", "search", {}, similarity=0.82).similarity == 0.82
    assert make_fact("document", "Guide", "search", {}).similarity is None


def test_ids_are_f1_to_fn_on_copies_and_the_inputs_are_untouched():
    built = [elena(), make_fact("goal", "Ship", "goals", {"title": "Ship"}), elena()]
    numbered = assign_fact_ids(built)
    assert [f.id for f in numbered] == ["F1", "F2", "F3"]
    assert [f.id for f in built] == ["", "", ""]
    assert [f.subject for f in numbered] == ["Elena Weber", "Ship", "Elena Weber"]
    numbered[0].fields["role"] = "invented"
    assert built[0].fields["role"] is None  # a copy's fields are its own
    assert [f.id for f in assign_fact_ids(numbered[1:])] == ["F1", "F2"]  # numbered afresh
    assert assign_fact_ids([]) == []


def test_fact_ids_are_the_set_of_handles():
    assert fact_ids(assign_fact_ids([elena(), elena()])) == {"F1", "F2"}
    assert fact_ids([]) == set()


def test_render_shows_every_field_and_says_what_is_not_recorded():
    goal = Fact("", "goal", "Ship v2", {"title": "Ship v2", "progress": "", "target_date": None})
    rendered = render_facts(assign_fact_ids([elena(), goal]))
    assert rendered == (
        "[F1] person — Elena Weber  (people table)\n"
        "     name: Elena Weber\n"
        "     affiliation: <not recorded>\n"
        "     role: <not recorded>\n"
        "     how_we_met: <not recorded>\n"
        "     last_interaction: <not recorded>\n"
        "     notes: <not recorded>\n"
        "     channels: whatsapp +41774730093\n"
        "\n"
        "[F2] goal — Ship v2  ()\n"
        "     title: Ship v2\n"
        "     progress: <not recorded>\n"
        "     target_date: <not recorded>"
    )


def test_render_of_no_facts_is_empty_and_a_fieldless_fact_is_its_head():
    assert render_facts([]) == ""
    assert render_facts([Fact("F1", "note", "Todo", {}, "notes")]) == "[F1] note — Todo  (notes)"


def test_unrecorded_fields_are_sorted_named_once_by_kind():
    facts = [elena(), elena(), make_fact("goal", "Ship", "goals", {"title": "Ship"})]
    assert unrecorded_fields(facts) == [
        "goal.last_updated",
        "goal.progress",
        "goal.project",
        "goal.target_date",
        "person.affiliation",
        "person.how_we_met",
        "person.last_interaction",
        "person.notes",
        "person.role",
    ]
    assert (
        unrecorded_fields(
            [make_fact("goal", "Ship", "goals", dict.fromkeys(FACT_KINDS["goal"], "x"))]
        )
        == []
    )
    assert NOT_RECORDED == "<not recorded>"
