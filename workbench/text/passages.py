"""Library passages for a prompt, each saying its language (the seed's
"Des passages dans une autre langue").

An English question may find its best answer in a text that exists only in French. So each
passage carries its language (`[fr]`), and when any passage is in another language than the
answer's, your `foreign` instruction — written in the answer's language — asks the model to
translate what it uses **while keeping the original reference**. A foreign passage without
that instruction is refused (ConfigError `PASSAGES_INVALID`) rather than left to the model
to guess. `fr-FR` and `fr` are the same language (primary subtag).

Two kinds of nothing stay distinct:

- `passages=None`: the search failed; we could not look, so the context says nothing of
  the library (an empty string: no header, no "nothing found");
- `passages=[]`: we looked and found nothing; the `empty` text says so.

The layout, one passage a line::

    {header}
    [F1] [fr] La tour Eiffel — La tour Eiffel mesure 330 mètres de haut.
    {foreign, with {languages} replaced by "[fr]"}
    {footer}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import ConfigError
from workbench.text.language import primary_language

TEXT_KEYS = ("header", "footer", "empty", "foreign")


@dataclass(frozen=True, slots=True)
class Passage:
    ref: str  # the original reference the answer cites, kept through any translation
    text: str
    lang: str  # its language tag ("fr", "fr-FR"): every passage says it
    title: str | None = None
    url: str | None = None

    @classmethod
    def of(cls, value: Passage | Mapping[str, Any], index: int = 0) -> Passage:
        """A Passage, or a mapping with `ref` (or `id`), `text`, `lang` (or `language`),
        optional `title` and `url`."""
        if isinstance(value, Passage):
            return value
        if not isinstance(value, Mapping):
            raise _invalid(f"passages[{index}] must be a Passage or a mapping")
        ref = value.get("ref", value.get("id"))
        lang = value.get("lang", value.get("language"))
        return cls(
            ref=ref,
            text=value.get("text", ""),  # checked, with ref and lang, by _check
            lang=lang,
            title=value.get("title"),
            url=value.get("url"),
        )


def _invalid(message: str, **details: Any) -> ConfigError:
    return ConfigError(message, code="PASSAGES_INVALID", details=details or None)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _check(p: Passage, index: int) -> None:
    for name in ("ref", "text"):
        value = getattr(p, name)
        if not isinstance(value, str) or not value.strip():
            raise _invalid(f"passages[{index}].{name} must be a non-empty string", index=index)
    if primary_language(p.lang) is None:
        # Every passage says its language: without it, nobody can tell it is foreign.
        raise _invalid(f"passages[{index}] ({p.ref}) does not say its language", index=index)


def passage_line(p: Passage) -> str:
    """`[ref] [lang] title — text`, on one line; the tag is the primary subtag."""
    head = f"[{_one_line(p.ref)}] [{primary_language(p.lang)}]"
    title = _one_line(p.title) if isinstance(p.title, str) and p.title.strip() else ""
    body = _one_line(p.text)
    return f"{head} {title} — {body}" if title else f"{head} {body}"


def foreign_languages(passages: Iterable[Passage], lang: str) -> list[str]:
    """Primary subtags of the passages not in `lang`, in order of first appearance."""
    own = primary_language(lang)
    out: list[str] = []
    for p in passages:
        tag = primary_language(p.lang)
        if tag is not None and tag != own and tag not in out:
            out.append(tag)
    return out


def build_passages_context(
    passages: Iterable[Passage | Mapping[str, Any]] | None,
    lang: str,
    texts: Mapping[str, str] | None = None,
) -> str:
    """The passages block for a prompt answered in `lang`; see the module doc for the rules.

    `texts`: {header, footer, empty, foreign}, all yours (the package ships no words);
    `foreign` may hold `{languages}` (replaced by "[fr]" or "[fr], [de]"). Refused
    (`PASSAGES_INVALID`): a foreign passage without `foreign`, `[]` without `empty`, a
    passage without its reference, text or language, an unknown key in `texts`."""
    texts = dict(texts or {})
    unknown = sorted(set(texts) - set(TEXT_KEYS))
    if unknown:
        raise _invalid(f"texts: unknown key {unknown[0]!r} (known: {', '.join(TEXT_KEYS)})")
    for key, value in texts.items():
        if value is not None and not isinstance(value, str):
            raise _invalid(f"texts.{key} must be a string")
    if primary_language(lang) is None:
        raise _invalid(f"lang must be a language tag, not {lang!r}")
    if passages is None:
        return ""  # the search failed: say nothing of the library, not even "nothing found"
    items = [Passage.of(p, i) for i, p in enumerate(passages)]
    for i, p in enumerate(items):
        _check(p, i)

    def text(key: str) -> str:
        value = texts.get(key)
        return value.strip() if isinstance(value, str) else ""

    if not items:
        if not text("empty"):
            raise _invalid("passages is empty (searched, nothing found) but texts.empty is missing")
        return "\n".join(line for line in (text("header"), text("empty"), text("footer")) if line)
    foreign = foreign_languages(items, lang)
    lines = [text("header")] if text("header") else []
    lines += [passage_line(p) for p in items]
    if foreign:
        if not text("foreign"):
            raise _invalid(
                f"passages in {', '.join(foreign)} for an answer in {primary_language(lang)} "
                "need texts.foreign (translate, keeping the original reference)",
                languages=foreign,
            )
        marks = ", ".join(f"[{t}]" for t in foreign)
        lines.append(text("foreign").replace("{languages}", marks))
    if text("footer"):
        lines.append(text("footer"))
    return "\n".join(lines)


__all__ = ["Passage", "build_passages_context", "foreign_languages", "passage_line"]
