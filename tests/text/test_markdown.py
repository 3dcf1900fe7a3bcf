"""Markdown and quotations."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.text.markdown import (
    plain_text,
    quotes_with_references,
    tidy_markdown,
    verify_quotations,
    whole_sentences,
)

# --------------------------------------------------------------------------- tidy_markdown


def test_headings_are_normalised() -> None:
    assert tidy_markdown("#Title ##\ntext") == "# Title\n\ntext"
    assert tidy_markdown("Big\n===\nSmall\n---\nx") == "# Big\n\n## Small\n\nx"
    assert tidy_markdown("##### Deep") == "### Deep"
    assert (
        tidy_markdown("#hashtag-free? no: #5 is a number") == "# hashtag-free? no: #5 is a number"
    )


def test_bullets_and_numbers() -> None:
    assert tidy_markdown("* a\n+ b\n• c\n\t* d\n1) e") == "- a\n- b\n- c\n  - d\n1. e"
    assert tidy_markdown("- \n- real") == "- real"


def test_blank_lines_rules_and_spaces() -> None:
    assert tidy_markdown("a   \n\n\n\nb\n\n---\n\nc\n") == "a\n\nb\n\nc"


def test_no_raw_html() -> None:
    out = tidy_markdown("Some <b>bold</b>, <em>it</em><br>next <span class='x'>in</span><!-- c -->")
    assert out == "Some **bold**, *it*\nnext in"
    assert "<" not in tidy_markdown("<div><p>Hello</p></div>")


def test_code_is_left_alone() -> None:
    md = "Run:\n\n```html\n<b>x</b>\n\n\n\n* not a bullet\n```\nand `<br>` inline."
    assert tidy_markdown(md) == md


def test_remove_phrases() -> None:
    out = tidy_markdown(
        "Paris.  Hope this helps!\n- HOPE THIS HELPS!\nNext , too.",
        remove=["Hope this helps!", re.compile(r"\btoo\b")],
    )
    assert out == "Paris.\nNext,."
    with pytest.raises(TypeError):
        tidy_markdown("x", remove=[3])  # type: ignore[list-item]


# --------------------------------------------------------------------------- plain_text


def test_plain_text_for_a_voice() -> None:
    md = (
        "# Weather\n\nSee [the site](https://x.y/a(b)) and **bold** _it_ `code` ![map](m.png).\n\n"
        "- apples\n- pears!\n1. one\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n\n---\n"
        "[ref]: https://x.y\n<b>html</b> &amp; more"
    )
    assert plain_text(md) == (
        "Weather.\n\nSee the site and bold it code map.\n\napples. pears! one.\n\n"
        "a, b. 1, 2.\n\nquoted\n\nhtml & more"
    )


def test_plain_text_joins_lines_and_reads_setext() -> None:
    assert plain_text("Title\n=====\nline one\nline two") == "Title.\n\nline one line two"
    assert plain_text("```py\nx = 1\n```") == "x = 1"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_plain_text_and_tidy_never_raise(s: str) -> None:
    assert isinstance(plain_text(s), str)
    assert isinstance(tidy_markdown(s), str)
    assert isinstance(whole_sentences(s), str)


# --------------------------------------------------------------------------- whole_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("First. Second is cu", "First."),
        ("All done!  ", "All done!"),
        ("no end here", "no end here"),
        ('He said "Go." Then', 'He said "Go."'),
        ("Pi is 3.14 and e is 2.7", "Pi is 3.14 and e is 2.7"),
        ("Il a dit « oui. » Puis", "Il a dit « oui. »"),
        ("**Bold end.** more", "**Bold end.**"),
        ("- a\n- b\n- parti", "- a\n- b"),
        ("Para one\n\nPara two is cu", "Para one"),
        ("Why? Because", "Why?"),
        ("", ""),
    ],
)
def test_whole_sentences(text: str, expected: str) -> None:
    assert whole_sentences(text) == expected


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_whole_sentences_is_a_prefix(s: str) -> None:
    out = whole_sentences(s)
    assert s.startswith(out)


# --------------------------------------------------------------------------- quotations

VERSES = {
    "Jn 3:16": "Car Dieu a tant aimé le monde qu’il a donné son Fils unique.",
    "Jn 14:6": "Je suis le chemin, la vérité et la vie.",
}
FIND = quotes_with_references(r"Jn \d+:\d+")


def test_unfaithful_quotation_is_replaced() -> None:
    text = "Il est écrit « Dieu aime un peu le monde » (Jn 3:16)."
    assert verify_quotations(text, FIND, VERSES.get) == (
        "Il est écrit « Car Dieu a tant aimé le monde qu’il a donné son Fils unique. » (Jn 3:16)."
    )


@pytest.mark.parametrize(
    "quote",
    [
        "Je suis le chemin, la vérité et la vie.",
        "je suis le chemin",
        "JE SUIS LE CHEMIN, LA VÉRITÉ et la vie",
        "Je suis le chemin … et la vie",
        "Je suis [...] la vie",
    ],
)
def test_faithful_quotations_stay(quote: str) -> None:
    text = f"Jésus dit « {quote} » (Jn 14:6)."
    assert verify_quotations(text, FIND, VERSES.get) == text


def test_ellipsis_pieces_must_keep_their_order() -> None:
    text = "« la vie … Je suis » (Jn 14:6)"
    assert verify_quotations(text, FIND, VERSES.get) == f"« {VERSES['Jn 14:6']} » (Jn 14:6)"


def test_several_quotations_and_shapes() -> None:
    find = quotes_with_references(r"Doc \d+")
    texts = {"Doc 4": "The sky is blue.", "Doc 5": "Water boils at 100 °C."}
    text = 'A "sky is green" (Doc 4), B “Water boils at 100 °C” (Doc 5), C "x" (Doc 9).'
    assert verify_quotations(text, find, texts.get) == (
        'A "The sky is blue." (Doc 4), B “Water boils at 100 °C” (Doc 5), C "x" (Doc 9).'
    )


def test_quotation_without_reference_or_with_foreign_reference_is_untouched() -> None:
    text = "« Dieu aime un peu » et « Dieu aime un peu » (Mt 1:1)."
    assert FIND(text) == []
    assert verify_quotations(text, FIND, VERSES.get) == text


def test_failing_resolver_and_bad_spans_leave_the_text() -> None:
    def boom(_ref: object) -> str:
        raise RuntimeError("offline")

    text = "« faux » (Jn 3:16)"
    assert verify_quotations(text, FIND, boom) == text
    bad = lambda _t: [((5, 2), "Jn 3:16"), ((0, 999), "Jn 3:16"), "junk"]  # noqa: E731
    assert verify_quotations(text, bad, VERSES.get) == text


def test_custom_finder_and_overlaps() -> None:
    text = "say hi twice"
    spans = lambda _t: [((4, 6), "r"), ((5, 12), "r"), ((7, 12), "s")]  # noqa: E731
    out = verify_quotations(text, spans, {"r": "hello", "s": "thrice"}.get)
    assert out == "say hello thrice"


def test_a_lone_number_is_text() -> None:
    assert tidy_markdown("Year:\n\n2024.") == "Year:\n\n2024."
