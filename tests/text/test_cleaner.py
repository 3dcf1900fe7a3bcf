"""The response cleaner: structural rules, vocabulary rules, languages, dataset."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.text.cleaner import ResponseCleaner, Vocabulary, load_vocabulary

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "datasets" / "cleaning.jsonl"
VOCABULARY = ROOT / "datasets" / "cleaning_vocabulary.json"

EN = Vocabulary(
    payload_keys=("response", "answer"),
    title_keys=("title", "name"),
    line_labels=("Answer", "Introduction", re.compile(r"key[ _]features", re.I)),
    reasoning_starters=("Wait", "Actually"),
    final_markers=(re.compile(r"Final\s*answer", re.I),),
    closing_phrases=("Hope this helps!", "Let me know if you have questions."),
)
FR = Vocabulary(
    payload_keys=("réponse",),
    line_labels=("Réponse",),
    closing_phrases=(re.compile(r"Besoin d'autre chose[^.?!]*[.?!]?"),),
)


@pytest.fixture
def cleaner() -> ResponseCleaner:
    return ResponseCleaner(languages={"en": EN, "fr": FR}, fallback_language="en")


# --------------------------------------------------------------------------- structural


def test_think_blocks_go_without_vocabulary() -> None:
    c = ResponseCleaner()
    assert c.clean("<think>plan</think>\n\nParis.") == "Paris."
    assert c.clean("draft\n</think>\nParis.") == "Paris."
    assert c.clean("Paris.\n<think>unfinished") == "Paris."


def test_without_vocabulary_only_structure_runs() -> None:
    c = ResponseCleaner()
    raw = "Answer: Paris.\nWait, no.\nFinal answer: Lyon\n\nHope this helps!"
    assert c.clean(raw) == raw
    assert c.clean("  a  \n\n\n\nb\t\n") == "a\n\nb"
    assert c.clean("x\r\n\r\n\r\ny") == "x\n\ny"


def test_json_wrapper_without_vocabulary_drops_protocol_values() -> None:
    raw = json.dumps({"role": "assistant", "response": "Berlin is the capital.", "done": True})
    assert ResponseCleaner().clean(raw) == "Berlin is the capital."


def test_empty_and_non_text() -> None:
    c = ResponseCleaner()
    assert c.clean("") == ""
    assert c.clean(None) == ""  # type: ignore[arg-type]
    assert c.clean("{}") == ""


# --------------------------------------------------------------------------- JSON


def test_wrapper_yields_the_payload_field(cleaner: ResponseCleaner) -> None:
    raw = json.dumps({"role": "assistant", "response": "Berlin is the capital of Germany."})
    assert cleaner.clean(raw) == "Berlin is the capital of Germany."


def test_payload_is_cleaned_like_a_reply(cleaner: ResponseCleaner) -> None:
    raw = "<think>x</think>" + json.dumps({"response": "Answer: Lyon is in France."})
    assert cleaner.clean(raw) == "Lyon is in France."


def test_title_text_list_and_named_items(cleaner: ResponseCleaner) -> None:
    raw = json.dumps(
        {
            "title": "Frameworks",
            "intro": "Three good ones.",
            "items": [
                {"name": "Django", "description": "Batteries included."},
                {"name": "Flask", "description": "Small."},
                "FastAPI",
            ],
        }
    )
    assert cleaner.clean(raw) == (
        "**Frameworks**\n\nThree good ones.\n\n"
        "- **Django** — Batteries included.\n- **Flask** — Small.\n- FastAPI"
    )


def test_nested_lists_indent(cleaner: ResponseCleaner) -> None:
    raw = json.dumps([{"name": "Week 1", "tasks": ["Read", "Practise"]}, ["a", "b"]])
    assert cleaner.clean(raw) == "- **Week 1**\n  - Read\n  - Practise\n  - a\n  - b"


@pytest.mark.parametrize("fence", ["```json", "```", "```JSON"])
def test_fenced_json_reply(cleaner: ResponseCleaner, fence: str) -> None:
    raw = f"{fence}\n" + json.dumps({"answer": "Use the reset link."}) + "\n```"
    assert cleaner.clean(raw) == "Use the reset link."


def test_json_inside_prose(cleaner: ResponseCleaner) -> None:
    raw = "Here:\n```json\n" + json.dumps({"title": "T", "list": ["x"]}) + "\n```\nThen more."
    assert cleaner.clean(raw) == "Here:\n\n**T**\n\n- x\n\nThen more."
    raw = "Here:\n" + json.dumps({"response": "The report is due Friday."}) + "\nBye."
    assert cleaner.clean(raw) == "Here:\n\nThe report is due Friday.\n\nBye."


def test_json_string_holding_json(cleaner: ResponseCleaner) -> None:
    raw = json.dumps({"response": json.dumps({"title": "Tips", "tips": ["Sleep"]})})
    assert cleaner.clean(raw) == "**Tips**\n\n- Sleep"


def test_not_json_is_left_alone(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("{curly} sets.") == "{curly} sets."
    assert cleaner.clean('{"unterminated": "x"') == '{"unterminated": "x"'
    code = "```python\nd = {'a': 1}\n```"
    assert cleaner.clean(code) == code


_KEY = st.from_regex(r"zq[a-z]{3,8}", fullmatch=True)
_VALUE = st.recursive(
    st.one_of(
        st.text(alphabet="abcdefgh ABC.", min_size=1, max_size=20),
        st.integers(-5, 5),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_KEY, inner, min_size=1, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(_KEY, _VALUE, min_size=1, max_size=5), st.booleans())
def test_no_json_key_ever_reaches_the_screen(doc: dict, fenced: bool) -> None:
    raw = json.dumps(doc, indent=2)
    if fenced:
        raw = f"```json\n{raw}\n```"
    for c in (ResponseCleaner(), ResponseCleaner(shared=EN)):
        out = c.clean(raw)
        assert "zq" not in out, out
        assert '":' not in out


# --------------------------------------------------------------------------- labels


def test_labels_only_at_the_start_of_a_line(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("Answer: It is Tuesday.") == "It is Tuesday."
    assert cleaner.clean("The answer: it depends.") == "The answer: it depends."
    raw = "Introduction: Start here.\nThe Introduction to Python covers: names."
    assert cleaner.clean(raw) == "Start here.\nThe Introduction to Python covers: names."


def test_label_shapes(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("**Answer:** At 9:15.") == "At 9:15."
    assert cleaner.clean("**Answer** : At 9.") == "At 9."
    assert cleaner.clean("- **Key features:** fast\n- **Price:** free") == (
        "- fast\n- **Price:** free"
    )
    assert cleaner.clean("**Introduction** :\nSolar.\n\nAnswer:\nYes.") == "Solar.\n\nYes."
    assert cleaner.clean("Answer: Answer: twice.") == "twice."
    assert cleaner.clean("**Answer: bold all through.**") == "**bold all through.**"


def test_label_needs_a_colon_and_a_whole_word(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("Answering questions is fun.") == "Answering questions is fun."
    assert cleaner.clean("Introduction to cooking.") == "Introduction to cooking."


def test_labels_in_code_are_kept(cleaner: ResponseCleaner) -> None:
    raw = "Log:\n\n```text\nAnswer: 42\n```"
    assert cleaner.clean(raw) == raw


def test_french_label_with_no_break_space(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("Réponse\u00a0: Mardi.", "fr") == "Mardi."
    assert cleaner.clean("La réponse : mardi.", "fr") == "La réponse : mardi."


def test_literals_are_escaped() -> None:
    c = ResponseCleaner(shared=Vocabulary(line_labels=("A.I.",)))
    assert c.clean("A.I.: yes") == "yes"
    assert c.clean("AxIx: yes") == "AxIx: yes"


# --------------------------------------------------------------------------- drafts


def test_only_what_follows_the_last_reasoning_line(cleaner: ResponseCleaner) -> None:
    raw = "Hmm, primes.\nWait, 12 is even.\nActually, 11.\n\n11 is the answer."
    assert cleaner.clean(raw) == "11 is the answer."


def test_final_marker_keeps_its_line(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("6 × 7 = 42.\nFinal answer: 42") == "42"
    assert cleaner.clean("Sum: 55.\n\n**Final Answer:**\nThe sum is 55.") == "The sum is 55."
    assert cleaner.clean("Wait, check.\nFinal answer: 4\nWait, sure.\nIt is 4.") == "It is 4."


def test_a_draft_never_empties_the_reply(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("Actually, it is 330 m.") == "Actually, it is 330 m."
    assert cleaner.clean("It is 4.\nWait, yes.") == "It is 4.\nWait, yes."


def test_starter_is_a_whole_word_at_line_start(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("Waiting lists are long.\nCall.") == "Waiting lists are long.\nCall."
    assert cleaner.clean("He said: wait.\nCall.") == "He said: wait.\nCall."


# --------------------------------------------------------------------------- closings


def test_stacked_closing_phrases(cleaner: ResponseCleaner) -> None:
    raw = "Rest.\n\nHope this helps! Let me know if you have questions."
    assert cleaner.clean(raw) == "Rest."


def test_closing_passes_are_bounded() -> None:
    raw = "Rest. Hope this helps! Let me know if you have questions."
    one = ResponseCleaner(languages={"en": EN}, max_closing_passes=1)
    assert one.clean(raw) == "Rest. Hope this helps!"
    assert ResponseCleaner(languages={"en": EN}, max_closing_passes=0).clean(raw) == raw
    assert ResponseCleaner(languages={"en": EN}, max_closing_passes=2).clean(raw) == "Rest."


def test_closing_only_where_a_sentence_starts(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("The song is called Hope this helps!") == (
        "The song is called Hope this helps!"
    )
    assert cleaner.clean('"Hope this helps!" said the note. Keep it.') == (
        '"Hope this helps!" said the note. Keep it.'
    )


def test_a_reply_that_is_only_a_closing_phrase_stays(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("Hope this helps!") == "Hope this helps!"


# --------------------------------------------------------------------------- languages


def test_region_subtags_are_the_same_language(cleaner: ResponseCleaner) -> None:
    raw = "Le pain se congèle.\n\nBesoin d'autre chose ?"
    assert cleaner.clean(raw, "fr-FR") == "Le pain se congèle."
    assert cleaner.clean(raw, "FR_ca") == "Le pain se congèle."
    assert cleaner.clean(raw, "en") == raw


def test_unknown_language_uses_the_fallback(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("Answer: yes.", "de") == "yes."
    assert cleaner.clean("Answer: yes.") == "yes."
    fr_first = ResponseCleaner(languages={"en": EN, "fr": FR}, fallback_language="fr-FR")
    assert fr_first.clean("Answer: yes.", "de") == "Answer: yes."
    assert fr_first.clean("Réponse : oui.", "de") == "oui."


def test_shared_applies_to_every_language() -> None:
    c = ResponseCleaner(shared=Vocabulary(line_labels=("Answer",)), languages={"fr": FR})
    assert c.clean("Answer: oui.", "fr") == "oui."
    assert c.clean("Answer: yes.", "en") == "yes."
    assert c.clean("Réponse : oui.", "en") == "Réponse : oui."


def test_missing_fallback_pack_means_shared_only() -> None:
    c = ResponseCleaner(languages={"fr": FR}, fallback_language="en")
    assert c.clean("Réponse : oui.", "de") == "Réponse : oui."


# --------------------------------------------------------------------------- vocabulary


def test_vocabulary_is_frozen_and_checked() -> None:
    v = Vocabulary(line_labels=["A"])  # type: ignore[arg-type]
    assert v.line_labels == ("A",)
    with pytest.raises(AttributeError):
        v.line_labels = ()  # type: ignore[misc]
    with pytest.raises(ConfigError) as e:
        Vocabulary(line_labels=(" ",))
    assert e.value.code == "VOCABULARY_INVALID"
    with pytest.raises(ConfigError):
        Vocabulary(closing_phrases=(re.compile(r"x*"),))
    with pytest.raises(ConfigError):
        Vocabulary(title_keys=(3,))  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ResponseCleaner(max_closing_passes=-1)


def test_from_dict_reads_literals_and_regexes() -> None:
    v = Vocabulary.from_dict(
        {"line_labels": ["Answer", {"regex": "key[ _]features", "flags": "i"}]}
    )
    assert v.line_labels[0] == "Answer"
    assert isinstance(v.line_labels[1], re.Pattern) and v.line_labels[1].flags & re.I
    for bad in ({"nope": []}, {"line_labels": "x"}, {"line_labels": [{"regex": "("}]}):
        with pytest.raises(ConfigError):
            Vocabulary.from_dict(bad)
    with pytest.raises(ConfigError):
        Vocabulary.from_dict({"line_labels": [{"regex": "x", "flags": "q"}]})


def test_load_vocabulary(tmp_path: Path) -> None:
    p = tmp_path / "v.json"
    p.write_text(
        json.dumps(
            {
                "shared": {"line_labels": ["Answer"]},
                "languages": {"fr-FR": {"line_labels": ["Réponse"]}},
                "fallback_language": "fr",
            }
        ),
        encoding="utf-8",
    )
    kw = load_vocabulary(p)
    c = ResponseCleaner(**kw)
    assert c.fallback_language == "fr" and c.languages == ("fr",)
    assert c.clean("Réponse : oui.") == "oui."
    p.write_text("{nope", encoding="utf-8")
    with pytest.raises(ConfigError):
        load_vocabulary(p)
    with pytest.raises(ConfigError):
        load_vocabulary(tmp_path / "missing.json")


# --------------------------------------------------------------------------- the dataset


def _items() -> list[dict]:
    return [
        json.loads(line)
        for line in DATASET.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]


def test_cleaning_dataset_shape() -> None:
    items = _items()
    assert len(items) >= 60
    assert {i["language"] for i in items} == {"fr", "en"}
    for it in items:
        assert it["category"] == "cleaning"
        assert it["messages"][0]["role"] == "user"
        assert it["messages"][-1]["role"] == "assistant"
        assert isinstance(it["expect"]["cleaned"], str)


@pytest.mark.parametrize("item", _items(), ids=lambda it: it["id"])
def test_cleaning_dataset(item: dict) -> None:
    cleaner = ResponseCleaner(**load_vocabulary(VOCABULARY))
    raw = item["messages"][-1]["content"]
    assert cleaner.clean(raw, item["language"]) == item["expect"]["cleaned"]


# --------------------------------------------------------------------------- properties

_PIECES = st.sampled_from(
    [
        "<think>",
        "</think>",
        "{",
        "}",
        '"response"',
        ":",
        '"a b"',
        "[",
        "]",
        ",",
        "\n",
        "\n\n",
        " ",
        "Answer:",
        "Wait,",
        "Final answer:",
        "Hope this helps!",
        "```",
        "```json",
        "**",
        "- ",
        "# ",
        "x",
        "Paris.",
        "Réponse :",
        "\r\n",
        '"title"',
        "true",
        "null",
        "1",
    ]
)
_TEXT = st.one_of(st.text(), st.lists(_PIECES, max_size=25).map("".join))
_DATASET_CLEANER = ResponseCleaner(**load_vocabulary(VOCABULARY))


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_TEXT, st.sampled_from(["en", "fr-FR", "de", None]))
def test_clean_never_raises_and_is_idempotent(text: str, lang: str | None) -> None:
    for c in (ResponseCleaner(), _DATASET_CLEANER):
        once = c.clean(text, lang)
        assert isinstance(once, str)
        assert once == once.strip()
        assert c.clean(once, lang) == once


def test_idempotence_stops_at_the_closing_bound() -> None:
    """The documented exception: more stacked closings than passes take two cleans."""
    c = ResponseCleaner(languages={"en": EN}, max_closing_passes=1)
    once = c.clean("Rest. Hope this helps! Let me know if you have questions.")
    assert c.clean(once) == "Rest."


def test_a_round_that_uncovers_structure_is_followed_by_another(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean("Answer: " + json.dumps({"response": "Yes it is."})) == "Yes it is."
    assert cleaner.clean(json.dumps({"title": "T b"}) + " Hope this helps!") == "**T b**"
    assert cleaner.clean("Final answer: Wait\n0") == "0"
    assert cleaner.clean("Answer: Final answer: 42") == "42"


def test_text_after_an_object_on_its_line_becomes_a_paragraph(cleaner: ResponseCleaner) -> None:
    assert cleaner.clean('{"title": "T", "list": ["x"]} and more.') == "**T**\n\n- x\n\nand more."
