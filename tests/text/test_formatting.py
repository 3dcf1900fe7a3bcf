"""Format instructions: surfaces, columns, narrow/wide, mandatory paragraphs."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.text.formatting import FormatInstructions

FR = {
    "heading": "## Où part ta réponse",
    "intro": "Ta réponse s'affiche sur {surface}.",
    "surface_names": {
        "phone": "un téléphone",
        "tablet": "une tablette",
        "desktop": "un navigateur",
    },
    "table": "Un tableau tient au maximum {columns} colonnes courtes.",
    "narrow": "Sur un téléphone, préfère la liste au moindre doute.",
    "wide": "Le tableau reste réservé aux données réellement tabulaires.",
    "paragraphs": "Écris en paragraphes : une idée chacun, jamais de trait (---).",
}
EN = {
    "intro": "Your reply shows on {surface}.",
    "surface_names": {"phone": "a phone"},
    "table": "At most {columns} columns.",
    "narrow": "NARROW",
    "wide": "WIDE",
    "paragraphs": "Write paragraphs.",
}


def test_phone_build_in_full() -> None:
    f = FormatInstructions(languages={"fr": FR})
    assert f.build("phone", "fr") == (
        "## Où part ta réponse\n"
        "Ta réponse s'affiche sur un téléphone.\n"
        "Un tableau tient au maximum 3 colonnes courtes.\n"
        "Sur un téléphone, préfère la liste au moindre doute.\n"
        "Écris en paragraphes : une idée chacun, jamais de trait (---)."
    )


@pytest.mark.parametrize(
    ("surface", "columns", "name", "width"),
    [
        ("phone", 3, "un téléphone", "préfère la liste"),
        ("tablet", 4, "une tablette", "réellement tabulaires"),
        ("desktop", 6, "un navigateur", "réellement tabulaires"),
        (" Desktop ", 6, "un navigateur", "réellement tabulaires"),
        (None, 3, "un téléphone", "préfère la liste"),
        ("", 3, "un téléphone", "préfère la liste"),
        ("watch", 3, "un téléphone", "préfère la liste"),
    ],
)
def test_surfaces(surface: str | None, columns: int, name: str, width: str) -> None:
    out = FormatInstructions(languages={"fr": FR}).build(surface, "fr")
    assert f"au maximum {columns} colonnes" in out
    assert f"sur {name}." in out
    assert width in out
    assert ("préfère la liste" in out) != ("réellement tabulaires" in out)


def test_paragraphs_is_mandatory() -> None:
    pack = {k: v for k, v in FR.items() if k != "paragraphs"}
    with pytest.raises(ConfigError) as e:
        FormatInstructions(languages={"fr": pack})
    assert e.value.code == "FORMAT_INVALID"
    with pytest.raises(ConfigError):
        FormatInstructions(languages={"fr": {**FR, "paragraphs": "  "}})


@pytest.mark.parametrize(
    "languages",
    [
        {},
        {"fr": {**FR, "tabel": "typo"}},
        {"fr": {**FR, "intro": 3}},
        {"fr": {**FR, "surface_names": ["phone"]}},
        {"fr": FR, "fr-FR": FR},
        {"": FR},
    ],
)
def test_bad_packs_are_refused(languages: dict) -> None:
    with pytest.raises(ConfigError) as e:
        FormatInstructions(languages=languages)
    assert e.value.code == "FORMAT_INVALID"


def test_missing_parts_are_skipped_and_names_default_to_the_key() -> None:
    f = FormatInstructions(languages={"en": EN})
    assert f.build("tablet", "en") == (
        "Your reply shows on tablet.\nAt most 4 columns.\nWIDE\nWrite paragraphs."
    )
    assert FormatInstructions(languages={"en": {"paragraphs": "P."}}).build() == "P."


def test_language_fallback() -> None:
    f = FormatInstructions(languages={"fr": FR, "en": EN})
    assert f.fallback_language == "en"
    assert f.build("phone", "fr-CA").startswith("## Où part")
    assert f.build("phone", "de").startswith("Your reply")
    assert f.build("phone", None).startswith("Your reply")
    only_fr = FormatInstructions(languages={"fr-FR": FR})
    assert only_fr.fallback_language == "fr"
    assert only_fr.build("phone", "en").startswith("## Où part")
    chosen = FormatInstructions(languages={"fr": FR, "en": EN}, fallback_language="fr_FR")
    assert chosen.build("phone", "de").startswith("## Où part")
    with pytest.raises(ConfigError):
        FormatInstructions(languages={"fr": FR}, fallback_language="de")


def test_other_braces_are_literal() -> None:
    f = FormatInstructions(languages={"en": {"paragraphs": "No {json} here, {columns} max."}})
    assert f.build("desktop", "en") == "No {json} here, 6 max."
