"""Tell the model where its reply goes.

    fmt = FormatInstructions(languages={"fr": {
        "heading": "## Où part ta réponse",
        "intro": "Ta réponse s'affiche sur {surface}.",
        "surface_names": {"phone": "un téléphone", "tablet": "une tablette",
                          "desktop": "un navigateur"},
        "table": "Un tableau tient au maximum {columns} colonnes courtes.",
        "narrow": "Sur un téléphone, préfère la liste au moindre doute.",
        "wide": "Le tableau reste réservé aux données réellement tabulaires.",
        "paragraphs": "Écris en paragraphes : une idée chacun, des phrases complètes.",
    }})
    fmt.build(request.headers.get("x-surface"), "fr-FR")

Surfaces: phone 3 columns, tablet 4, desktop 6. A missing or unknown surface is a **phone**:
erring small costs a list where a table would have fitted, erring large costs an unreadable
table. `narrow` is said on a narrow surface (one whose table holds at most 3 columns: the
phone) — prefer a list to a table; `wide` on the others (tablet, desktop) — a table only for
truly tabular data. Exactly one of the two is said.

The text is, line by line and skipping what a pack leaves out: `heading`, `intro`, `table`,
`narrow` or `wide`, `paragraphs`. `{surface}` becomes the pack's `surface_names[surface]`
(the surface key itself when the pack names none) and `{columns}` the column count; no
other brace is read, so a pack may show `{` literally.

`paragraphs` is mandatory: a pack without it is refused at construction (ConfigError
`FORMAT_INVALID`), not discovered on a screen. So is an unknown pack key (a typo would
silently drop a rule).

Languages, like the response cleaner: a tag is reduced to its primary subtag (`fr-FR` is
`fr`); an unknown or missing language uses `fallback_language`, which defaults to `"en"`
when there is an `en` pack and to the first pack given otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.errors import ConfigError
from workbench.text.language import primary_language

__all__ = ["NARROW_MAX_COLUMNS", "SURFACE_COLUMNS", "FormatInstructions"]

SURFACE_COLUMNS: dict[str, int] = {"phone": 3, "tablet": 4, "desktop": 6}
NARROW_MAX_COLUMNS = 3
DEFAULT_SURFACE = "phone"
_TEXT_KEYS = ("heading", "intro", "table", "narrow", "wide", "paragraphs")
_PACK_KEYS = frozenset((*_TEXT_KEYS, "surface_names"))


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code="FORMAT_INVALID")


def _check_pack(lang: str, pack: Any) -> dict[str, Any]:
    if not isinstance(pack, Mapping):
        raise _invalid(f"languages.{lang} must be an object")
    unknown = sorted(set(pack) - _PACK_KEYS, key=str)
    if unknown:
        raise _invalid(f"languages.{lang}.{unknown[0]}: unknown key")
    paragraphs = pack.get("paragraphs")
    if not isinstance(paragraphs, str) or not paragraphs.strip():
        raise _invalid(f"languages.{lang}.paragraphs is required (the paragraph rule)")
    for key in _TEXT_KEYS:
        value = pack.get(key)
        if value is not None and not isinstance(value, str):
            raise _invalid(f"languages.{lang}.{key} must be a string")
    names = pack.get("surface_names") or {}
    if not isinstance(names, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in names.items()
    ):
        raise _invalid(f"languages.{lang}.surface_names must map surfaces to names")
    out = {k: pack[k] for k in _TEXT_KEYS if isinstance(pack.get(k), str) and pack[k].strip()}
    out["surface_names"] = {k.strip().lower(): v for k, v in names.items()}
    return out


class FormatInstructions:
    """`build(surface, lang)`: the instructions that tell a model where its reply is shown."""

    def __init__(
        self,
        languages: Mapping[str, Mapping[str, Any]],
        fallback_language: str | None = None,
    ) -> None:
        if not isinstance(languages, Mapping) or not languages:
            raise _invalid("languages must name at least one language pack")
        packs: dict[str, dict[str, Any]] = {}
        for tag, pack in languages.items():
            lang = primary_language(tag)
            if lang is None:
                raise _invalid(f"languages: {tag!r} is not a language tag")
            if lang in packs:
                raise _invalid(f"languages: {tag!r} repeats the language {lang!r}")
            packs[lang] = _check_pack(str(tag), pack)
        if fallback_language is None:
            fallback = "en" if "en" in packs else next(iter(packs))
        else:
            fallback = primary_language(fallback_language) or ""
            if fallback not in packs:
                raise _invalid(f"fallback_language {fallback_language!r} has no pack")
        self._packs = packs
        self.fallback_language = fallback

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self._packs)

    @staticmethod
    def surface(surface: str | None) -> str:
        """The surface a header names, a phone when it names none we know."""
        key = surface.strip().lower() if isinstance(surface, str) else ""
        return key if key in SURFACE_COLUMNS else DEFAULT_SURFACE

    def build(self, surface: str | None = None, lang: str | None = None) -> str:
        key = self.surface(surface)
        columns = SURFACE_COLUMNS[key]
        language = primary_language(lang)
        pack = self._packs.get(language or "", self._packs[self.fallback_language])
        name = pack["surface_names"].get(key, key)

        def fill(s: str) -> str:
            return s.replace("{surface}", name).replace("{columns}", str(columns))

        width = "narrow" if columns <= NARROW_MAX_COLUMNS else "wide"
        parts = [pack.get(k) for k in ("heading", "intro", "table", width, "paragraphs")]
        return "\n".join(fill(p) for p in parts if p)
