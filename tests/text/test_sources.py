"""Sources: the ledger keeps each source with its own text; used_sources keeps only what the
answer relies on and never adds one; a contradiction counts only when clear; reranking moves
the sources with their results."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from workbench.text.sources import (
    Contradiction,
    Source,
    SourceLedger,
    factual_sentences,
    find_contradiction,
    normalize_url,
    rerank_results,
    used_sources,
)

SEARCH = {
    "results": [
        {
            "title": "Louvre hours",
            "url": "https://example.org/louvre",
            "snippet": "Closes at 6 pm.",
        },
        {
            "title": "Orsay hours",
            "url": "https://example.org/orsay",
            "snippet": "Closed on Mondays.",
        },
    ]
}


# ------------------------------------------------------------------ the ledger


def test_a_tool_returning_several_sources_does_not_tie_its_whole_output_to_each():
    ledger = SourceLedger()
    kept = ledger.keep("web_search", SEARCH)
    assert [s.url for s in kept] == ["https://example.org/louvre", "https://example.org/orsay"]
    louvre, orsay = kept
    assert louvre.text == "Closes at 6 pm." and "Mondays" not in louvre.text
    assert orsay.text == "Closed on Mondays." and "6 pm" not in orsay.text
    assert louvre.tool == orsay.tool == "web_search"
    assert [s.ref for s in ledger] == ["S1", "S2"]


def test_several_links_in_plain_text_each_get_their_own_block():
    text = (
        "Two results.\n\n"
        "Louvre hours\nhttps://example.org/louvre\nCloses at 6 pm.\n\n"
        "Orsay hours\nhttps://example.org/orsay\nClosed on Mondays."
    )
    louvre, orsay = SourceLedger().keep("web_search", text)
    assert (
        "6 pm" in louvre.text and "Mondays" not in louvre.text and "Two results" not in louvre.text
    )
    assert "Mondays" in orsay.text and "6 pm" not in orsay.text


def test_a_tool_returning_one_source_ties_its_whole_output_to_it():
    page = "Louvre — opening hours\nhttps://example.org/louvre\nCloses at 6 pm.\nOpen until 9 pm on Fridays."
    (source,) = SourceLedger().keep("read_page", page)
    assert source.text == page
    (one,) = SourceLedger().keep(
        "read_page", {"url": "https://example.org/a", "title": "A", "text": "All of it."}
    )
    assert (one.url, one.title, one.text) == ("https://example.org/a", "A", "All of it.")


def test_json_text_lists_and_ids_are_read():
    ledger = SourceLedger()
    kept = ledger.keep("search_docs", json.dumps([{"id": "D7", "title": "Doc", "content": "c"}]))
    assert kept == [Source(ref="D7", title="Doc", text="c", tool="search_docs")]
    assert ledger.get("d7") is kept[0]
    assert ledger.keep("calculator", "42") == []  # no link, no reference: not a source
    assert ledger.keep("calculator", {"result": 42}) == []
    assert len(ledger) == 1


def test_the_same_link_twice_is_one_source_whose_text_grows():
    ledger = SourceLedger()
    ledger.keep("web_search", SEARCH)
    ledger.keep("read_page", {"url": "http://www.example.org/louvre/", "text": "Full page."})
    assert len(ledger) == 2
    louvre = ledger.get("https://example.org/louvre")
    assert louvre is not None and louvre.ref == "S1"
    assert louvre.text == "Closes at 6 pm.\nFull page."


def test_a_reused_id_from_another_tool_gets_a_fresh_ref():
    ledger = SourceLedger()
    ledger.keep("a", [{"id": "1", "url": "https://a.example/x"}])
    ledger.keep("b", [{"id": "1", "url": "https://b.example/y"}])
    assert [s.ref for s in ledger.sources] == ["1", "S2"]


def test_normalize_url():
    assert normalize_url("HTTPS://WWW.Example.org/Path/#frag") == "example.org/Path"
    assert normalize_url("http://example.org/a?b=1") == "example.org/a?b=1"


# ------------------------------------------------------------------ used sources

SOURCES = [
    Source(
        ref="S1",
        url="https://example.org/louvre",
        title="Louvre",
        text="The Louvre closes at 18:00 on Mondays.",
    ),
    Source(
        ref="S2",
        url="https://example.org/orsay",
        title="Orsay",
        text="The Musée d'Orsay is closed on Mondays.",
    ),
    Source(
        ref="S3",
        url="https://example.org/rfc",
        title="HTTP",
        text="RFC 9110 defines HTTP semantics.",
    ),
    Source(
        ref="S4",
        url="https://example.org/tgv",
        text="Le TGV a atteint 574,8 km/h lors d'un essai, record mondial ferroviaire.",
    ),
]


def test_the_answer_s_link_keeps_its_source():
    answer = "See https://www.example.org/orsay/."
    assert used_sources(answer, SOURCES) == [SOURCES[1]]


def test_a_citation_or_a_reference_named_on_both_sides_keeps_the_source():
    assert used_sources("It closes early [S1].", SOURCES) == [SOURCES[0]]
    assert used_sources("Semantics are in RFC 9110.", SOURCES) == [SOURCES[2]]
    assert used_sources("Semantics are in RFC 9111.", SOURCES) == []


def test_enough_distinctive_shared_words_keep_the_source():
    answer = "Le record mondial ferroviaire du TGV est de 574,8 km/h, atteint lors d'un essai."
    assert used_sources(answer, SOURCES) == [SOURCES[3]]
    assert used_sources("Le TGV est rapide.", SOURCES) == []  # too few shared words
    assert used_sources(answer, SOURCES, min_shared_words=10) == []


def test_words_of_the_question_prove_nothing():
    answer = "The record mondial ferroviaire was set during an essai."
    assert used_sources(answer, SOURCES) == [SOURCES[3]]
    assert used_sources(answer, SOURCES, question="record mondial ferroviaire ?") == []


def test_evidence_adds_text_read_for_a_source():
    answer = "The pyramid was designed by Pei and inaugurated during Mitterrand's presidency."
    evidence = {"S1": "The pyramid was designed by Pei, inaugurated under Mitterrand's presidency."}
    assert used_sources(answer, SOURCES) == []
    assert used_sources(answer, SOURCES, evidence) == [SOURCES[0]]


def test_used_sources_never_adds_a_source():
    answer = "Per [S9] and https://elsewhere.example/x, see RFC 9999 [S1]."
    kept = used_sources(answer, SOURCES)
    assert kept == [SOURCES[0]]
    assert all(any(k is s for s in SOURCES) for k in kept)
    assert used_sources(answer, []) == []


def test_used_sources_accepts_mappings_and_keeps_their_order():
    given = [{"id": "b", "url": "https://x.example/b"}, {"id": "a", "url": "https://x.example/a"}]
    assert used_sources("[a] and https://x.example/b", given) == given


# ------------------------------------------------------------------ contradictions

EXCERPTS = ["The Louvre closes at 18:00 on Mondays.", "The Eiffel Tower is 330 metres tall."]


def nli(label_for: dict[str, object]):
    """A stand-in NLI: the label for the first key found in the hypothesis, else neutral."""
    calls: list[tuple[str, str]] = []

    def compare(premise: str, hypothesis: str):
        calls.append((premise, hypothesis))
        return next((v for k, v in label_for.items() if k in hypothesis), "neutral")

    compare.calls = calls  # type: ignore[attr-defined]
    return compare


async def test_a_clear_contradiction_is_found_against_the_nearest_excerpt():
    compare = nli({"300": "contradicts"})
    answer = "The Louvre closes at 18:00 on Mondays. The Eiffel Tower is 300 metres tall."
    found = await find_contradiction(answer, EXCERPTS, compare)
    assert found == Contradiction(
        sentence="The Eiffel Tower is 300 metres tall.", excerpt=EXCERPTS[1]
    )
    assert compare.calls[0] == (EXCERPTS[0], "The Louvre closes at 18:00 on Mondays.")


@pytest.mark.parametrize(
    "verdict",
    [
        "neutral",
        "entails",
        "maybe",
        None,
        0.99,
        ("contradicts", 0.6),
        {"label": "contradicts", "score": float("nan")},
    ],
)
async def test_doubt_is_not_a_contradiction(verdict):
    compare = nli({"300": verdict})
    assert (
        await find_contradiction("The Eiffel Tower is 300 metres tall.", EXCERPTS, compare) is None
    )


@pytest.mark.parametrize(
    "verdict",
    [
        "contradicts",
        "CONTRADICTION",
        ("contradicts", 0.97),
        {"label": "contradiction", "score": 0.9},
    ],
)
async def test_a_clear_verdict_in_any_shape_counts(verdict):
    compare = nli({"300": verdict})
    found = await find_contradiction("The Eiffel Tower is 300 metres tall.", EXCERPTS, compare)
    assert found is not None and found.excerpt == EXCERPTS[1]


async def test_an_async_compare_is_awaited():
    async def compare(premise: str, hypothesis: str) -> str:
        await asyncio.sleep(0)
        return "contradicts" if "300" in hypothesis else "entails"

    found = await find_contradiction("The Eiffel Tower is 300 metres tall.", EXCERPTS, compare)
    assert found is not None


async def test_a_failing_compare_says_nothing():
    def compare(premise: str, hypothesis: str) -> str:
        raise RuntimeError("NLI model crashed")

    assert (
        await find_contradiction("The Eiffel Tower is 300 metres tall.", EXCERPTS, compare) is None
    )


async def test_a_timeout_says_nothing():
    async def slow(premise: str, hypothesis: str) -> str:
        await asyncio.sleep(5)
        return "contradicts"

    def slow_sync(premise: str, hypothesis: str) -> str:
        time.sleep(0.5)
        return "contradicts"

    answer = "The Eiffel Tower is 300 metres tall."
    assert await find_contradiction(answer, EXCERPTS, slow, timeout_s=0.05) is None
    assert await find_contradiction(answer, EXCERPTS, slow_sync, timeout_s=0.05) is None


async def test_questions_short_phrases_and_unrelated_sentences_are_not_checked():
    compare = nli({"": "contradicts"})  # would call anything a contradiction
    answer = "Is the tower 300 metres tall? Yes indeed. Bananas grow in warm places."
    assert await find_contradiction(answer, EXCERPTS, compare) is None
    assert compare.calls == []
    assert await find_contradiction("The tower is 300 metres tall.", [], compare) is None


def test_factual_sentences():
    text = "Is it open? It opens at nine.\n- It closes at six on Mondays!\nOK."
    assert factual_sentences(text) == ["It opens at nine.", "It closes at six on Mondays!"]


# ------------------------------------------------------------------ reranking

FOUND = {
    "results": [
        {"url": "https://a.example", "title": "a"},
        {"url": "https://b.example", "title": "b"},
        {"url": "https://c.example", "title": "c"},
    ],
    "sources": [
        {"url": "https://c.example"},
        {"url": "https://a.example"},
        {"url": "https://b.example"},
    ],
}
SCORES = {"a": 0.1, "b": 0.9, "c": 0.5}


def by_title(_question: str, result: dict) -> float:
    return SCORES[result["title"]]


def test_rerank_orders_results_and_the_sources_follow():
    out = rerank_results("q", FOUND, by_title)
    assert [r["title"] for r in out["results"]] == ["b", "c", "a"]
    assert [s["url"] for s in out["sources"]] == [
        "https://b.example",
        "https://c.example",
        "https://a.example",
    ]
    assert [r["title"] for r in FOUND["results"]] == ["a", "b", "c"]  # not changed in place


def test_parallel_sources_without_links_follow_by_position():
    found = {"results": [{"title": t} for t in "abc"], "sources": ["sa", "sb", "sc"]}
    out = rerank_results("q", found, by_title)
    assert out["sources"] == ["sb", "sc", "sa"]


def test_without_score_or_when_it_fails_the_engine_order_stays():
    assert rerank_results("q", FOUND) == FOUND
    assert rerank_results("q", FOUND["results"]) == FOUND["results"]

    def broken(_q: str, _r: dict) -> float:
        raise RuntimeError("reranker down")

    assert rerank_results("q", FOUND, broken) == FOUND


def test_a_list_is_reranked_stably_and_unreadable_scores_go_last():
    results = [{"title": t} for t in "abcd"]
    scores = {"a": 0.5, "b": float("nan"), "c": 0.5, "d": 0.7}
    out = rerank_results("q", results, lambda _q, r: scores[r["title"]])
    assert [r["title"] for r in out] == ["d", "a", "c", "b"]
