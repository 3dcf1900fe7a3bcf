"""Search hits and read pages as grounding facts: their fields, their gaps, their ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from workbench.eval.scoring.grounding import (
    Fact,
    assign_fact_ids,
    render_facts,
    unrecorded_fields,
    verify_answer,
)
from workbench.web import (
    Page,
    WebResult,
    page_evidence,
    page_to_fact,
    results_evidence,
    results_to_facts,
)

NOW = datetime(2024, 3, 5, 9, 30, tzinfo=UTC)


def test_a_hit_becomes_a_web_result_fact_with_every_field():
    hit = WebResult(
        "Zurich transit", "https://zvv.example/", "Trams run all night.", "2024-02-01", "brave"
    )
    assert results_to_facts([hit], "searxng") == [
        Fact(
            id="",
            kind="web_result",
            subject="Zurich transit",
            fields={
                "title": "Zurich transit",
                "url": "https://zvv.example/",
                "published": "2024-02-01",
                "snippet": "Trams run all night.",
                "engine": "brave",
            },
            source="web search (searxng)",
        )
    ]


def test_an_undated_hit_has_no_published_date_and_its_engine_is_the_provider():
    (fact,) = results_to_facts([WebResult("A", "https://a.example/", "")], "tavily")
    assert fact.fields == {
        "title": "A",
        "url": "https://a.example/",
        "published": None,
        "snippet": None,
        "engine": "tavily",
    }
    assert unrecorded_fields([fact]) == ["web_result.published", "web_result.snippet"]
    assert "     published: <not recorded>" in render_facts([fact]).splitlines()


def test_hits_keep_the_engines_order_and_line_up_with_their_evidence():
    hits = [WebResult(t, f"https://{t.lower()}.example/", f"about {t}") for t in ("B", "A", "C")]
    facts = assign_fact_ids(results_to_facts(hits, "brave"))
    assert [(f.id, f.subject) for f in facts] == [("F1", "B"), ("F2", "A"), ("F3", "C")]
    assert results_evidence(hits, [f.id for f in facts]).split("\n\n")[1] == (
        "[F2] A — https://a.example/\nabout A"
    )
    assert results_to_facts([], "brave") == []


def test_a_read_page_becomes_a_web_page_fact_dated_when_it_was_read():
    page = Page("https://docs.example/guide", "The Guide", "Install with pip.", False)
    assert page_to_fact(page, now=NOW) == Fact(
        id="",
        kind="web_page",
        subject="The Guide",
        fields={
            "title": "The Guide",
            "url": "https://docs.example/guide",
            "retrieved": "2024-03-05",
            "truncated": "no",
        },
        source="page read",
    )


def test_a_truncated_page_says_only_its_first_part_was_read():
    page = Page("https://docs.example/long", "Long", "Part one.", True)
    fact = page_to_fact(page, now=NOW)
    assert fact.fields["truncated"] == "yes — only the first part of the page was read"


def test_an_untitled_page_is_named_by_its_url_and_its_title_is_not_recorded():
    fact = page_to_fact(Page("https://docs.example/raw.txt", "", "text", False), now=NOW)
    assert fact.subject == "https://docs.example/raw.txt"
    assert fact.fields["title"] is None
    assert render_facts([fact]).splitlines()[1] == "     title: <not recorded>"


def test_the_retrieved_date_is_the_utc_date_of_the_read():
    late_evening = datetime(2024, 3, 5, 23, 30, tzinfo=timezone(timedelta(hours=-2)))
    page = Page("https://a.example/", "A", "t", False)
    assert page_to_fact(page, now=late_evening).fields["retrieved"] == "2024-03-06"
    before = datetime.now(UTC).date().isoformat()
    retrieved = page_to_fact(page).fields["retrieved"]
    assert retrieved in {before, datetime.now(UTC).date().isoformat()}  # midnight-proof


def test_an_answer_citing_a_read_page_is_checked_against_its_text():
    page = Page("https://docs.example/guide", "The Guide", "Install with Poetry 1.8.", False)
    facts = assign_fact_ids([page_to_fact(page, now=NOW)])
    evidence = [page_evidence(page, facts[0].id)]
    assert verify_answer("Use Poetry [F1].", facts, "how?", extra_evidence=evidence).ok
    invented = verify_answer("Use Hatch [F1].", facts, "how?", extra_evidence=evidence)
    assert [v.text for v in invented.violations] == ["Hatch"]
