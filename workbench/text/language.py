"""Which language is a text in? Small words first, then a local identifier.

The seed's order, and why: a lone "merci" cannot be guessed by a statistical identifier (too
little text), but a table of very frequent small words names it at once. So the words table
decides whenever it has a clear winner; only then is the injected `identify(text)` asked — a
local model, never a remote call — and it is believed only at or above `threshold`, and only
at or above the much higher `short_threshold` for a text of two words or fewer, where such
models guess wildly. `None` means "don't know", never a default language.

Words are compared case- and accent-insensitively, as whole words ("la" never matches
inside "last"); an entry of several words ("thank you", "s'il vous plaît") matches as a
phrase. A language tag is compared on its primary subtag: `fr-FR`, `fr_CA` and `FR` are
all `fr` (`same_language`).

The library's detector ships no words (like the cleaner): the caller passes its
table. `default_detector()` is the one exception, a tiny fr/en table for the workbench's
grader (`expect.language` in the prompt sets), kept in that eval-facing function.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from workbench.errors import ConfigError

Identify = Callable[[str], Any]  # text -> (lang, score) | None

_WORD = re.compile(r"[^\W\d_]+")  # runs of letters: apostrophes and hyphens split words
_SHORT_WORDS = 2  # "two words or fewer" (the seed: "bien plus haut pour deux mots")


def fold(text: str) -> str:
    """Case- and accent-insensitive form: "Été" -> "ete", "Straße" -> "strasse"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words_of(text: str) -> list[str]:
    """The folded words of `text`, in order (letters only; "l'Italie" is "l", "italie")."""
    return _WORD.findall(fold(text))


def primary_language(tag: str | None) -> str | None:
    """The primary subtag, lower-cased: "fr-FR" -> "fr", "en_us" -> "en"; None if blank."""
    if not isinstance(tag, str):
        return None
    primary = re.split(r"[-_]", tag.strip(), maxsplit=1)[0].strip().lower()
    return primary or None


def same_language(a: str | None, b: str | None) -> bool:
    """True when both tags name the same language (primary subtag, case-insensitive): fr-FR == fr.

    Two unknown languages are not the same language: None never equals anything."""
    pa, pb = primary_language(a), primary_language(b)
    return pa is not None and pa == pb


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code="LANGUAGE_DETECTOR_INVALID")


def _threshold(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise _invalid(f"{name} must be a number between 0 and 1, not {value!r}")
    return float(value)


class LanguageDetector:
    """`detect(text) -> str | None`: the words table first, then `identify`, never a guess.

    `words`: {lang: [word or phrase, ...]}; a word listed for several languages counts for
    each (it decides nothing). `identify(text) -> (lang, score)`: an injected local model;
    whatever it raises or returns out of shape is "don't know"."""

    def __init__(
        self,
        words: Mapping[str, Iterable[str]] | None = None,
        identify: Identify | None = None,
        threshold: float = 0.8,
        short_threshold: float = 0.95,
    ) -> None:
        self.threshold = _threshold(threshold, "threshold")
        self.short_threshold = _threshold(short_threshold, "short_threshold")
        if self.short_threshold < self.threshold:
            # The seed: a short text needs *more* confidence, never less.
            raise _invalid("short_threshold must be at least threshold")
        if identify is not None and not callable(identify):
            raise _invalid("identify must be a callable text -> (lang, score)")
        self.identify = identify
        self._single: dict[str, set[str]] = {}
        self._phrases: dict[str, list[tuple[str, ...]]] = {}
        for lang, entries in (words or {}).items():
            if primary_language(lang) is None:
                raise _invalid(f"words: {lang!r} is not a language tag")
            if isinstance(entries, str):
                raise _invalid(f"words[{lang!r}] must be a list of words, not a string")
            single, phrases = self._single.setdefault(lang, set()), []
            for entry in entries:
                tokens = words_of(entry) if isinstance(entry, str) else []
                if not tokens:
                    raise _invalid(f"words[{lang!r}]: {entry!r} holds no word")
                if len(tokens) == 1:
                    single.add(tokens[0])
                else:
                    phrases.append(tuple(tokens))
            self._phrases[lang] = phrases

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self._single)

    # ------------------------------------------------------------------ the two stages

    def word_hits(self, text: str) -> dict[str, int]:
        """How many table words (and phrases) of each language `text` holds."""
        tokens = words_of(text) if isinstance(text, str) else []
        hits: dict[str, int] = {}
        for lang, single in self._single.items():
            n = sum(1 for t in tokens if t in single)
            for phrase in self._phrases[lang]:
                k = len(phrase)
                n += sum(
                    1 for i in range(len(tokens) - k + 1) if tuple(tokens[i : i + k]) == phrase
                )
            if n:
                hits[lang] = n
        return hits

    def _by_words(self, text: str) -> str | None:
        hits = self.word_hits(text)
        if not hits:
            return None
        ranked = sorted(hits.values(), reverse=True)
        if len(ranked) > 1 and ranked[0] == ranked[1]:
            return None  # a tie is no answer: the identifier may still know
        return max(hits, key=hits.__getitem__)

    def _by_identifier(self, text: str, n_words: int) -> str | None:
        if self.identify is None:
            return None
        try:
            answer = self.identify(text)
            lang, score = answer
        except Exception:  # a local model that fails says nothing
            return None
        if not isinstance(lang, str) or primary_language(lang) is None:
            return None
        if isinstance(score, bool) or not isinstance(score, int | float):
            return None
        if not math.isfinite(score):
            return None
        needed = self.short_threshold if n_words <= _SHORT_WORDS else self.threshold
        return lang.strip() if score >= needed else None

    def detect(self, text: str) -> str | None:
        """The language of `text`, or None when neither the words nor the identifier know."""
        if not isinstance(text, str) or not text.strip():
            return None
        by_words = self._by_words(text)
        if by_words is not None:
            return by_words
        return self._by_identifier(text, len(words_of(text)))

    def same_language(self, a: str | None, b: str | None) -> bool:
        return same_language(a, b)


# ------------------------------------------------------------------ the grader's default

# Very frequent function words (and greetings), none of which is a common word of the other
# language: "on", "a", "son", "car", "plus", "me", "an", "mon", "sure", and "à" (it folds to "a") are left out on purpose.
DEFAULT_WORDS: dict[str, tuple[str, ...]] = {
    "fr": (
        "le", "la", "les", "de", "des", "du", "et", "un", "une", "est", "sont", "pas", "que", "qui",
        "pour", "avec", "dans", "sur", "par", "ce", "cette", "ces", "il", "elle", "ils",
        "elles", "nous", "vous", "je", "tu", "mais", "ou", "où", "donc", "ne", "très",
        "aussi", "sa", "ses", "leur", "au", "aux", "été", "être", "avoir", "fait", "comme",
        "tout", "tous", "bien", "quand", "ça", "mes", "peut", "entre", "selon", "chez",
        "alors", "ici", "voici", "oui", "ont", "était", "qu", "merci", "bonjour", "bonsoir",
        "salut", "d'accord", "s'il vous plaît", "au revoir",
    ),
    "en": (
        "the", "and", "is", "are", "was", "were", "of", "to", "in", "that", "with", "for",
        "it", "this", "these", "those", "be", "been", "have", "has", "had", "not", "but",
        "or", "what", "which", "who", "when", "where", "why", "how", "you", "your", "they",
        "their", "there", "we", "our", "he", "she", "his", "her", "my", "do", "does", "did",
        "can", "will", "would", "should", "could", "from", "by", "at", "about", "into",
        "than", "then", "if", "yes", "please", "because", "thanks", "thank you", "hello",
        "goodbye",
    ),
}  # fmt: skip


def default_detector(identify: Identify | None = None) -> LanguageDetector:
    """The workbench grader's detector: `DEFAULT_WORDS` (fr, en) and an optional local identifier.

    Eval-facing: the library ships no words, but grading `expect.language` needs some, and
    the prompt sets are French and English. Pass your own `LanguageDetector` to `grade`
    for other languages."""
    return LanguageDetector(words=DEFAULT_WORDS, identify=identify)


__all__ = [
    "DEFAULT_WORDS",
    "LanguageDetector",
    "default_detector",
    "fold",
    "primary_language",
    "same_language",
    "words_of",
]
