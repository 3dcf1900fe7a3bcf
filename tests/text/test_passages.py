"""Passages: each says its language; a foreign one needs the instruction to translate while
keeping its reference, or the call is refused; None (search failed) is not [] (nothing found)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import load_dataset
from workbench.text.language import default_detector, same_language
from workbench.text.passages import Passage, build_passages_context, foreign_languages

TEXTS = {
    "header": "Library passages:",
    "footer": "Cite what you use.",
    "empty": "The library holds nothing on this.",
    "foreign": "A passage marked {languages} is in another language: translate it, "
    "keep its original reference.",
}
FR = {"ref": "F1", "text": "La tour Eiffel mesure 330 mètres.", "lang": "fr"}
EN = {"ref": "E1", "text": "The Louvre closes at 6 pm.", "lang": "en"}


def test_each_passage_says_its_language():
    out = build_passages_context([EN], "en", TEXTS)
    assert out.splitlines() == [
        "Library passages:",
        "[E1] [en] The Louvre closes at 6 pm.",
        "Cite what you use.",
    ]


def test_a_foreign_passage_brings_the_instruction_with_its_languages():
    out = build_passages_context([EN, FR], "en", TEXTS)
    assert out.splitlines() == [
        "Library passages:",
        "[E1] [en] The Louvre closes at 6 pm.",
        "[F1] [fr] La tour Eiffel mesure 330 mètres.",
        "A passage marked [fr] is in another language: translate it, keep its original reference.",
        "Cite what you use.",
    ]


def test_a_foreign_passage_without_the_instruction_is_refused():
    texts = {k: v for k, v in TEXTS.items() if k != "foreign"}
    with pytest.raises(ConfigError) as err:
        build_passages_context([EN, FR], "en", texts)
    assert err.value.code == "PASSAGES_INVALID"
    assert err.value.details["languages"] == ["fr"]
    with pytest.raises(ConfigError):
        build_passages_context([FR], "en", {**TEXTS, "foreign": "   "})


def test_without_a_foreign_passage_the_instruction_is_not_needed_nor_shown():
    texts = {k: v for k, v in TEXTS.items() if k != "foreign"}
    assert "another language" not in build_passages_context([EN], "en", texts)
    assert "another language" not in build_passages_context([EN], "en", TEXTS)


@pytest.mark.parametrize("lang", ["fr-FR", "FR", "fr_CA", "fr"])
def test_fr_FR_and_fr_are_the_same_language(lang):
    texts = {k: v for k, v in TEXTS.items() if k != "foreign"}
    out = build_passages_context([FR, {**FR, "ref": "F2", "lang": "fr-FR"}], lang, texts)
    assert "[F2] [fr] " in out  # the tag shown is the primary subtag


def test_several_foreign_languages_are_all_named_once():
    de = {"ref": "D1", "text": "Der Turm ist hoch.", "lang": "de"}
    out = build_passages_context([FR, de, {**FR, "ref": "F2"}], "en", TEXTS)
    assert "A passage marked [fr], [de] is" in out
    assert foreign_languages([Passage.of(p) for p in (FR, de, EN)], "en-GB") == ["fr", "de"]


def test_none_says_nothing_of_the_library():
    # The search failed: no header, and above all no "nothing found".
    assert build_passages_context(None, "en", TEXTS) == ""
    assert build_passages_context(None, "en", {}) == ""


def test_an_empty_list_says_the_library_holds_nothing():
    out = build_passages_context([], "en", TEXTS)
    assert out.splitlines() == [
        "Library passages:",
        "The library holds nothing on this.",
        "Cite what you use.",
    ]
    assert out != build_passages_context(None, "en", TEXTS)


def test_an_empty_list_without_the_empty_text_is_refused():
    with pytest.raises(ConfigError) as err:
        build_passages_context([], "en", {"header": "Passages:"})
    assert err.value.code == "PASSAGES_INVALID"


@pytest.mark.parametrize(
    "passage",
    [
        {"ref": "F1", "text": "Sans langue."},  # every passage says its language
        {"ref": "F1", "text": "x", "lang": "  "},
        {"text": "No reference.", "lang": "en"},
        {"ref": "E1", "text": "  ", "lang": "en"},
        "not a passage",
    ],
)
def test_a_passage_missing_its_reference_text_or_language_is_refused(passage):
    with pytest.raises(ConfigError) as err:
        build_passages_context([passage], "en", TEXTS)
    assert err.value.code == "PASSAGES_INVALID"


def test_unknown_text_keys_and_a_missing_lang_are_refused():
    with pytest.raises(ConfigError):
        build_passages_context([EN], "en", {"foriegn": "typo"})
    with pytest.raises(ConfigError):
        build_passages_context([EN], "", TEXTS)


def test_passages_accept_dataclasses_ids_titles_and_flatten_lines():
    p = Passage(ref="F1", text="Ligne un.\n\nLigne   deux.", lang="fr", title="Titre")
    q = {"id": "E1", "text": "Hi there.", "language": "en-GB"}
    out = build_passages_context([p, q], "fr", TEXTS)
    assert "[F1] [fr] Titre — Ligne un. Ligne deux." in out.splitlines()
    assert "[E1] [en] Hi there." in out.splitlines()
    assert "marked [en]" in out


def test_braces_in_texts_are_left_alone():
    out = build_passages_context([FR], "en", {"foreign": "Marked {languages}; {not a field}"})
    assert out.endswith("Marked [fr]; {not a field}")


# ------------------------------------------------------------------ the shipped prompt set

DATASET = Path(__file__).resolve().parents[2] / "datasets" / "multilingual.jsonl"


def test_the_multilingual_set_carries_its_passages_as_build_passages_context_writes_them():
    detector = default_detector()
    items = [i for i in load_dataset(DATASET) if i.sources]
    assert len(items) >= 10
    crossed = 0
    for item in items:
        assert item.expect is not None and item.expect.language in ("fr", "en"), item.id
        foreign = False
        for s in item.sources:
            lang = detector.detect(s["text"])
            assert lang in ("fr", "en"), (item.id, s["id"])
            assert f"[{s['id']}] [{lang}] " in (item.system or ""), (item.id, s["id"])
            foreign |= not same_language(lang, item.expect.language)
        crossed += foreign
        mentions_keep = "garde sa référence" in item.system or "keep its original" in item.system
        assert mentions_keep is foreign, item.id
    assert crossed >= 8  # most sourced items answer in the other language than the passage
