"""Language detection: small words first, then a local identifier believed only above a
threshold (much higher for two words or fewer); None means "don't know"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.text.language import (
    DEFAULT_WORDS,
    LanguageDetector,
    default_detector,
    fold,
    primary_language,
    same_language,
)

WORDS = {"fr": ["merci", "le", "la", "est", "s'il vous plaît"], "en": ["thanks", "the", "is"]}


class Identify:
    """A stand-in local model that always answers the same, and records what it was asked."""

    def __init__(self, lang: str, score: float) -> None:
        self.answer = (lang, score)
        self.asked: list[str] = []

    def __call__(self, text: str) -> tuple[str, float]:
        self.asked.append(text)
        return self.answer


# ------------------------------------------------------------------ small words


@pytest.mark.parametrize("text", ["merci", "Merci !", "MERCI", "  merci.  "])
def test_a_lone_merci_is_french_by_the_words_table(text):
    assert LanguageDetector(words=WORDS).detect(text) == "fr"


def test_a_lone_thanks_is_english_by_the_words_table():
    assert LanguageDetector(words=WORDS).detect("Thanks!") == "en"


def test_the_words_table_decides_before_the_identifier():
    identify = Identify("de", 0.99)
    detector = LanguageDetector(words=WORDS, identify=identify)
    assert detector.detect("merci") == "fr"
    assert identify.asked == []  # never asked: the words were enough


def test_words_are_compared_without_case_or_accents():
    detector = LanguageDetector(words={"fr": ["été", "très"], "en": ["the"]})
    assert detector.detect("ETE") == "fr"
    assert detector.detect("Tres") == "fr"
    assert fold("Été") == "ete"


def test_words_are_whole_words_only():
    detector = LanguageDetector(words={"fr": ["la"], "en": ["the"]})
    assert detector.detect("last") is None  # "la" inside "last" is no hit
    assert detector.detect("lather") is None


def test_hits_are_counted_per_language_and_the_majority_wins():
    detector = LanguageDetector(words=WORDS)
    assert detector.detect("The Louvre is called le Louvre") == "en"  # the, is vs le
    assert detector.word_hits("le chat est la") == {"fr": 3}


def test_a_phrase_entry_matches_as_a_phrase():
    detector = LanguageDetector(words={"fr": ["s'il vous plaît"], "en": ["please"]})
    assert detector.word_hits("Un café, s’il vous plait") == {"fr": 1}
    assert detector.word_hits("vous") == {}


def test_a_tie_in_words_is_no_answer_and_the_identifier_decides():
    tie = "merci thanks and more words here"
    assert LanguageDetector(words=WORDS).detect(tie) is None
    assert LanguageDetector(words=WORDS, identify=Identify("en", 0.9)).detect(tie) == "en"


def test_no_words_and_no_identifier_means_none():
    assert LanguageDetector(words=WORDS).detect("Rome") is None
    assert LanguageDetector().detect("bonjour tout le monde") is None  # no table: no words


# ------------------------------------------------------------------ the identifier


def test_an_identifier_below_threshold_is_not_believed():
    text = "Quatre mots sans petits"  # four words, none in the table
    assert LanguageDetector(words=WORDS, identify=Identify("fr", 0.79)).detect(text) is None
    assert LanguageDetector(words=WORDS, identify=Identify("fr", 0.8)).detect(text) == "fr"
    assert LanguageDetector(identify=Identify("fr", 0.5), threshold=0.4).detect(text) == "fr"


@pytest.mark.parametrize(
    ("text", "score", "expected"),
    [
        ("Rome", 0.9, None),  # one word: 0.9 is not enough
        ("Roma Termini", 0.94, None),  # two words: still short
        ("Roma Termini", 0.95, "it"),
        ("Roma Termini stazione", 0.9, "it"),  # three words: the ordinary threshold
    ],
)
def test_two_words_or_fewer_need_the_short_threshold(text, score, expected):
    detector = LanguageDetector(words=WORDS, identify=Identify("it", score))
    assert detector.detect(text) == expected


def test_the_identifier_gets_the_text():
    identify = Identify("it", 0.99)
    LanguageDetector(identify=identify).detect("Roma Termini stazione")
    assert identify.asked == ["Roma Termini stazione"]


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "fr",
        ("fr",),
        ("fr", "high"),
        ("fr", float("nan")),
        ("", 0.99),
        (3, 0.99),
        ("fr", True),
    ],
)
def test_an_identifier_answer_out_of_shape_is_dont_know(answer):
    detector = LanguageDetector(identify=lambda _text: answer)
    assert detector.detect("several words of some text") is None


def test_an_identifier_that_raises_is_dont_know():
    def broken(_text: str):
        raise RuntimeError("model not loaded")

    assert LanguageDetector(identify=broken).detect("several words of some text") is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 1.5},
        {"threshold": -0.1},
        {"short_threshold": 0.5},  # below threshold: a short text would need less, not more
        {"words": {"fr": "merci"}},  # a string, not a list
        {"words": {"": ["merci"]}},
        {"words": {"fr": ["   "]}},
        {"identify": "not callable"},
    ],
)
def test_a_bad_configuration_is_refused(kwargs):
    with pytest.raises(ConfigError) as err:
        LanguageDetector(**kwargs)
    assert err.value.code == "LANGUAGE_DETECTOR_INVALID"


# ------------------------------------------------------------------ tags


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("fr-FR", "fr", True),
        ("fr", "FR", True),
        ("fr_CA", "fr-FR", True),
        (" en-us ", "en", True),
        ("fr", "en", False),
        ("fr", None, False),
        (None, None, False),  # two unknowns are not one language
        ("", "", False),
    ],
)
def test_same_language_compares_primary_subtags(a, b, same):
    assert same_language(a, b) is same
    assert LanguageDetector().same_language(a, b) is same


def test_primary_language():
    assert primary_language("fr-FR") == "fr"
    assert primary_language("  ") is None
    assert primary_language(None) is None


# ------------------------------------------------------------------ the grader's default


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("merci", "fr"),
        ("Bonjour !", "fr"),
        ("Oui.", "fr"),
        ("Rome est la capitale de l'Italie.", "fr"),
        ("La tour Eiffel mesure 330 mètres de haut [F1].", "fr"),
        ("Le train part à midi.", "fr"),
        ("thanks", "en"),
        ("Hello!", "en"),
        ("Madrid is the capital of Spain.", "en"),
        ("The Eiffel Tower is 330 metres tall [F1].", "en"),
        ("Thank you", "en"),
    ],
)
def test_the_default_detector_knows_french_and_english(text, lang):
    assert default_detector().detect(text) == lang


def test_the_default_table_shares_no_word_between_french_and_english():
    fr = {fold(w) for w in DEFAULT_WORDS["fr"]}
    en = {fold(w) for w in DEFAULT_WORDS["en"]}
    assert not fr & en
    assert len(fr) >= 50 and len(en) >= 50


def test_the_default_detector_takes_a_local_identifier():
    detector = default_detector(identify=Identify("de", 0.99))
    assert detector.detect("Guten Morgen zusammen") == "de"


# ------------------------------------------------------------------ never raises


@given(st.text())
def test_detect_never_raises_on_arbitrary_text(text):
    result = default_detector().detect(text)
    assert result is None or result in ("fr", "en")


@given(st.text(), st.floats(allow_nan=True), st.text(max_size=5))
def test_detect_never_raises_whatever_the_identifier_says(text, score, lang):
    detector = LanguageDetector(words=WORDS, identify=lambda _t: (lang, score))
    result = detector.detect(text)
    assert result is None or isinstance(result, str)


@pytest.mark.parametrize("value", [None, 3, b"merci", ["merci"]])
def test_detect_on_a_non_string_is_dont_know(value):
    assert default_detector().detect(value) is None
