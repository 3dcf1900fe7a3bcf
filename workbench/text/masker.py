"""Reversible masking of personal data: mask what leaves the machine, unmask what
comes back.

One `ReversibleMasker` per conversation. It finds sensitive values three ways: a registry of
names (case-sensitive, whole words, Unicode-aware), `(type, regex)` patterns, and an optional
local detector (a NER that runs on this machine, never a remote service). Each value found is
replaced by a token such as `#PERSON_0001` (the type in upper case, then a counter of at least
four digits per type), and the masker **learns** it: the same value gets the same token in
every later text, even where no pattern or detector would find it again.

Decisions (where the seed leaves room):

- Registry names shorter than 3 characters (after stripping) are ignored; a name absent from a
  text creates no token (tokens are allotted when a value is first replaced). The NFC and NFD
  spellings of a name are both registered, each with its own token, so unmasking restores the
  exact characters the text had. "Whole word" uses `\\w` plus the Unicode combining marks, so
  "Grace" is masked in "Grace," but not in "Gracefully", "Grace\u0301" or "grâce".
- Matching literals (the registry, and every value learned) is ONE compiled regular expression
  per set, built as a character trie (common prefixes factored, so the regex engine never tries
  10,000 alternatives at one position, and the longest name wins), cached, and rebuilt only when
  the set changes: the registry's once, the learned values' when a text taught something new.
- Types are normalised to `[A-Z_]` ("phone number" -> `PHONE_NUMBER`; digits and other
  characters become `_`, trimmed; empty -> `ENTITY`). With no digit in a type, a token is always
  read back unambiguously, even when the text goes on with `_0002`.
- The detector gets at most `detect_chars` characters at a time. A longer text is cut into
  successive windows, each ending at whitespace (a line break in the window's second half is
  preferred), so no part of the text is skipped and no word is cut; a single run of more than
  `detect_chars` non-space characters is the one place a window ends mid-run. An entity that
  straddles two windows is seen in two halves (each half is masked if the detector reports it).
  Detections under `min_score` are ignored; offsets outside the window, or a detector that
  raises, raise: masking fails closed rather than send text half-masked.
- Spans found by different means that overlap are merged into one masked span (nothing of
  either leaks), and a span followed by a digit is extended over those digits, because
  `#PHONE_0001` followed by `5` would read back as `#PHONE_00015`.
- Tokens never collide with text already seen: every token-like string in a text masked
  (`#PERSON_0001`, `PERSON_0001`, and the shorter readings of `PERSON_00012...` that a masked
  span could cut it to) reserves its number, and counters skip reserved numbers.
- Tokens already in a text are never re-masked: `mask` first reads the masker's own `#` tokens
  back (to see the clear text a detector would see, and for whole-word decisions), and writes
  them out again as the same tokens. So `mask(mask(x)) == mask(x)`, and in general
  `unmask(mask(x)) == unmask(x)` (`== x` when `x` holds none of this masker's tokens).
- `unmask` reads `#TYPE_NNNN` anywhere, and `TYPE_NNNN` that lost its `#` where it starts a
  word; the digits must not go on (`#PERSON_0001` never eats the start of `#PERSON_00012`);
  unknown tokens stay as they are. The streaming unmasker holds back only a tail that could
  still become a token (including a complete one, whose digits could go on) and emits the
  rest at once.

A masker is not thread-safe; one conversation runs on one event loop.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import ConfigError

__all__ = ["Detection", "ReversibleMasker", "StreamingUnmasker"]

# A "word" character for boundaries: \w plus the combining marks (which \w does not include),
# so that a name followed by a combining accent is not a whole word.
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_W = rf"[\w{_MARKS}]"
_WORD_CHAR = re.compile(_W)
_DIGITS = re.compile(r"\d*")
# Any string unmask could read as a token for some type, without the right boundary: every
# prefix of its digits is a reading a masked span starting inside them could produce.
_TOKEN_LIKE = re.compile(rf"(?:#|(?<!{_W}))([A-Z](?:[A-Z_]*[A-Z])?)_(\d{{4,}})")
_TOKEN_HINT = re.compile(r"_\d{4}")
_MAX_TOKEN_DIGITS = 9  # counters never get there; longer digit runs reserve nothing more
_MAX_LITERAL = 200  # longer values are masked where found, never matched literally
_MIN_NAME = 3


@dataclass(frozen=True)
class Detection:
    """One entity a detector found: `text[start:end]`, of `type`, with a confidence `score`."""

    start: int
    end: int
    type: str
    score: float = 1.0


def _norm_type(value: Any) -> str:
    kind = re.sub(r"[^A-Z]+", "_", str(value).upper()).strip("_")
    return kind or "ENTITY"


def _trie_pattern(words: Iterable[str]) -> str:
    """One regex alternation of `words` as a trie: shared prefixes factored, longest first."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}
    return _emit(root)


def _emit(node: dict[str, Any]) -> str:
    alts = []
    for ch in sorted(k for k in node if k):
        label, child = ch, node[ch]
        while len(child) == 1 and "" not in child:  # compress a chain with no branch
            ((nxt, child),) = child.items()
            label += nxt
        alts.append(re.escape(label) + _emit(child))
    if not alts:
        return ""
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    # A word may end here: the longer continuation is tried first (greedy), the engine backs
    # off to this shorter one if the longer fails the boundary.
    return "(?:" + body + ")?" if "" in node else body


def _literal_regex(words: Iterable[str]) -> re.Pattern[str] | None:
    words = [w for w in words if w]
    if not words:
        return None
    # No lookbehind in front: a pattern that starts with the trie lets the engine skip to
    # possible first characters (about 4x faster on prose); `_literal_matches` checks the
    # left boundary.
    return re.compile(rf"(?:{_trie_pattern(words)})(?!{_W})")


def _literal_matches(rx: re.Pattern[str], text: str) -> Iterable[re.Match[str]]:
    """Matches of a `_literal_regex` that start a word. A match that does not is skipped one
    character on, never past its end: a name inside it may still start a word."""
    search = rx.search
    word = _WORD_CHAR.match
    pos = 0
    while (m := search(text, pos)) is not None:
        start = m.start()
        if start > 0 and word(text, start - 1):
            pos = start + 1
            continue
        yield m
        pos = m.end()


def _is_run_char(ch: str) -> bool:
    return ch == "#" or ch == "_" or "A" <= ch <= "Z" or ch.isdecimal()


def _coerce_detection(item: Any) -> Detection:
    if isinstance(item, Detection):
        return item
    if isinstance(item, Mapping):
        kind = next(
            (item[k] for k in ("type", "entity_group", "entity", "label") if item.get(k)),
            "ENTITY",
        )
        score = item.get("score", 1.0)
        return Detection(item.get("start"), item.get("end"), kind, score)  # type: ignore[arg-type]
    if isinstance(item, (tuple, list)) and len(item) in (3, 4):
        return Detection(*item)
    raise TypeError(
        f"a detector must return Detection, (start, end, type[, score]) or dict; got {type(item).__name__}"
    )


def _windows(text: str, limit: int) -> Iterable[tuple[int, int]]:
    """Successive windows of at most `limit` characters, each ending at whitespace."""
    n = len(text)
    start = 0
    while start < n:
        while start < n and text[start].isspace():
            start += 1
        if start >= n:
            return
        end = start + limit
        if end >= n:
            yield start, n
            return
        cut = end
        if not text[end].isspace():
            newline = text.rfind("\n", start + limit // 2, end)
            if newline > start:
                cut = newline
            else:
                cut = end - 1
                while cut > start and not text[cut].isspace():
                    cut -= 1
                if cut == start:  # one run longer than the limit: the only mid-run cut
                    cut = end
        yield start, cut
        start = cut


class ReversibleMasker:
    """Masks names, pattern matches and detected entities with stable tokens; unmasks them."""

    def __init__(
        self,
        names: Iterable[str] = (),
        patterns: Iterable[tuple[str, str | re.Pattern[str]]] = (),
        detect: Callable[[str], Iterable[Detection | tuple | dict]] | None = None,
        min_score: float = 0.6,
        detect_chars: int = 1500,
        name_type: str = "PERSON",
    ) -> None:
        if isinstance(names, str):
            raise TypeError("names must be an iterable of names, not one string")
        registry: dict[str, None] = {}
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"a name must be a string, got {type(name).__name__}")
            name = name.strip()
            if len(name) < _MIN_NAME or len(name) > _MAX_LITERAL:
                continue
            for form in (
                name,
                unicodedata.normalize("NFC", name),
                unicodedata.normalize("NFD", name),
            ):
                registry[form] = None
        self._names: frozenset[str] = frozenset(registry)
        self._names_rx: re.Pattern[str] | None = None
        self._names_built = False

        self._patterns: list[tuple[str, re.Pattern[str]]] = []
        for entry in patterns:
            kind, rx = (entry["type"], entry["pattern"]) if isinstance(entry, Mapping) else entry
            self._patterns.append((_norm_type(kind), re.compile(rx) if isinstance(rx, str) else rx))

        if detect_chars < 1:
            raise ConfigError("detect_chars must be at least 1", code="MASKER_INVALID")
        self._detect = detect
        self._min_score = float(min_score)
        self._detect_chars = int(detect_chars)
        self._name_type = _norm_type(name_type)

        self._to_token: dict[str, str] = {}  # value -> token
        self._to_value: dict[str, str] = {}  # token -> value
        self._counters: dict[str, int] = {}
        self._reserved: set[tuple[str, int]] = set()
        self._learned: dict[str, str] = {}  # value -> type, matched literally from now on
        self._learned_rx: re.Pattern[str] | None = None
        self._learned_dirty = False
        self._types: list[str] = []
        self._unmask_rx: re.Pattern[str] | None = None
        self._hash_rx: re.Pattern[str] | None = None

    def __repr__(self) -> str:  # never the values themselves
        return (
            f"ReversibleMasker(names={len(self._names)}, patterns={len(self._patterns)}, "
            f"detect={self._detect is not None}, tokens={len(self._to_value)})"
        )

    # -- public API ------------------------------------------------------------------------
    @property
    def tokens(self) -> dict[str, str]:
        """token -> original value (a copy)."""
        return dict(self._to_value)

    def learn(self, value: str, type: str = "PERSON") -> str:
        """Register `value` (masked everywhere from now on) and return its token."""
        if not isinstance(value, str):
            raise TypeError("value must be a string")
        value = value.strip()
        if not value:
            raise ValueError("cannot learn an empty value")
        kind = _norm_type(type)
        self._remember(value, kind)
        return self._token_for(value, kind)

    def mask(self, text: str) -> str:
        if not isinstance(text, str):
            raise TypeError(f"mask() takes a string, got {type(text).__name__}")
        if not text:
            return text
        view, spans = self._clear_view(text)
        self._reserve(view)
        found = self._find(view)
        for start, end, kind in found:
            self._remember(view[start:end], kind)
        spans.extend(found)
        names_rx = self._names_regex()
        if names_rx is not None:
            kind = self._name_type
            spans.extend((m.start(), m.end(), kind) for m in _literal_matches(names_rx, view))
        learned_rx = self._learned_regex()
        if learned_rx is not None:
            learned = self._learned
            spans.extend(
                (m.start(), m.end(), learned[m.group()]) for m in _literal_matches(learned_rx, view)
            )
        if not spans:
            return view
        out: list[str] = []
        pos = 0
        for start, end, kind in self._merge(view, spans):
            start = self._whole_token_like(view, pos, start)
            out.append(view[pos:start])
            out.append(self._token_for(view[start:end], kind))
            pos = end
        out.append(view[pos:])
        return "".join(out)

    def unmask(self, text: str) -> str:
        if not isinstance(text, str):
            raise TypeError(f"unmask() takes a string, got {type(text).__name__}")
        return self._unmask_range(text, 0, len(text))

    def mask_value(self, value: Any) -> Any:
        """Every string inside `value` (dict values, list and tuple items) masked; keys kept."""
        return _map_strings(value, self.mask)

    def unmask_value(self, value: Any) -> Any:
        return _map_strings(value, self.unmask)

    def unmasker(self) -> StreamingUnmasker:
        return StreamingUnmasker(self)

    # -- finding ---------------------------------------------------------------------------
    def _find(self, view: str) -> list[tuple[int, int, str]]:
        """Spans the patterns and the detector find (whitespace at their edges trimmed)."""
        raw: list[tuple[int, int, str]] = []
        for kind, rx in self._patterns:
            raw.extend((m.start(), m.end(), kind) for m in rx.finditer(view))
        if self._detect is not None:
            for offset, stop in _windows(view, self._detect_chars):
                window = view[offset:stop]
                for item in self._detect(window) or ():
                    det = _coerce_detection(item)
                    score = det.score if det.score is not None else 1.0
                    if not isinstance(score, (int, float)) or isinstance(score, bool):
                        raise TypeError(f"detection score must be a number, got {score!r}")
                    if math.isnan(score) or score < self._min_score:
                        continue
                    start, end = det.start, det.end
                    if not (isinstance(start, int) and isinstance(end, int)) or isinstance(
                        start, bool
                    ):
                        raise TypeError(f"detection offsets must be ints, got {start!r}, {end!r}")
                    if not 0 <= start <= end <= len(window):
                        raise ValueError(
                            f"detection ({start}, {end}) lies outside its {len(window)}-character input"
                        )
                    raw.append((offset + start, offset + end, _norm_type(det.type)))
        spans = []
        for start, end, kind in raw:
            while start < end and view[start].isspace():
                start += 1
            while end > start and view[end - 1].isspace():
                end -= 1
            if start < end:
                spans.append((start, end, kind))
        return spans

    @staticmethod
    def _merge(view: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Overlapping spans become one (of the longest member's type); a span followed by
        digits swallows them, so that its token is never followed by a digit."""
        spans.sort(key=lambda s: (s[0], -s[1]))
        merged: list[tuple[int, int, str]] = []
        cur_start, cur_end, cur_kind = spans[0]
        best = cur_end - cur_start
        for start, end, kind in spans[1:]:
            if start >= cur_end:
                cur_end = _DIGITS.match(view, cur_end).end()  # type: ignore[union-attr]
            if start < cur_end:
                if end - start > best:
                    cur_kind, best = kind, end - start
                cur_end = max(cur_end, end)
                continue
            merged.append((cur_start, cur_end, cur_kind))
            cur_start, cur_end, cur_kind, best = start, end, kind, end - start
        cur_end = _DIGITS.match(view, cur_end).end()  # type: ignore[union-attr]
        merged.append((cur_start, cur_end, cur_kind))
        return merged

    def _names_regex(self) -> re.Pattern[str] | None:
        if not self._names_built:
            # Longest names first is what the trie does: at each branch the longer goes on.
            self._names_rx = _literal_regex(self._names)
            self._names_built = True
        return self._names_rx

    def _learned_regex(self) -> re.Pattern[str] | None:
        if self._learned_dirty:
            self._learned_rx = _literal_regex(self._learned)
            self._learned_dirty = False
        return self._learned_rx

    def _remember(self, value: str, kind: str) -> None:
        if (
            _MIN_NAME <= len(value) <= _MAX_LITERAL
            and value not in self._learned
            and value not in self._names
        ):
            self._learned[value] = kind
            self._learned_dirty = True

    # -- tokens ----------------------------------------------------------------------------
    def _token_for(self, value: str, kind: str) -> str:
        token = self._to_token.get(value)
        if token is not None:
            return token
        n = self._counters.get(kind, 0) + 1
        while (kind, n) in self._reserved:
            n += 1
        self._counters[kind] = n
        token = f"#{kind}_{n:04d}"
        self._to_token[value] = token
        self._to_value[token] = value
        if kind not in self._types:
            self._types.append(kind)
            self._unmask_rx = self._hash_rx = None
        return token

    def _reserve(self, view: str) -> None:
        """Numbers that token-like strings of `view` could be read as are never allotted."""
        if not _TOKEN_HINT.search(view):
            return
        reserved = self._reserved
        for m in _TOKEN_LIKE.finditer(view):
            kind, digits = m.group(1), m.group(2)
            for length in range(4, min(len(digits), _MAX_TOKEN_DIGITS) + 1):
                prefix = digits[:length]
                if length == 4 or prefix[0] != "0":
                    reserved.add((kind, int(prefix)))

    def _whole_token_like(self, view: str, pos: int, start: int) -> int:
        """Where a value that starts right after a digit must start instead. In
        `#PERSON_0001555-1234` the digits run on, so nothing there reads as a token; masking
        `555-1234` alone would end `#PERSON_0001` and make it one, and unmasking would give
        back a name that was never there. The token-like text joins the value's token."""
        if not (0 < start < len(view) and view[start - 1].isdigit() and view[start].isdigit()):
            return start
        if not _TOKEN_HINT.search(view, pos, start):
            return start
        ending = [m for m in _TOKEN_LIKE.finditer(view, pos, start) if m.end() == start]
        return ending[-1].start() if ending else start

    def _types_alternation(self) -> str:
        return "|".join(re.escape(t) for t in sorted(self._types, key=lambda t: (-len(t), t)))

    def _unmask_regex(self) -> re.Pattern[str]:
        if self._unmask_rx is None:
            # Types first (letters), so the engine skips quickly to a possible start; the
            # left side (`#`, or no word character for a token that lost its `#`) is checked
            # on each match. Types hold no digit, so `_(\d{4,})(?!\d)` is the whole number.
            self._unmask_rx = re.compile(rf"(?:{self._types_alternation()})_\d{{4,}}(?!\d)")
        return self._unmask_rx

    def _hash_regex(self) -> re.Pattern[str]:
        if self._hash_rx is None:
            self._hash_rx = re.compile(rf"#(?:{self._types_alternation()})_\d{{4,}}(?!\d)")
        return self._hash_rx

    def _clear_view(self, text: str) -> tuple[str, list[tuple[int, int, str]]]:
        """`text` with this masker's `#` tokens read back, and where those values now sit."""
        if not self._to_value or "#" not in text:
            return text, []
        values = self._to_value
        pieces: list[str] = []
        spans: list[tuple[int, int, str]] = []
        size = pos = 0
        for m in self._hash_regex().finditer(text):
            value = values.get(m.group())
            if value is None:
                continue
            before = text[pos : m.start()]
            pieces.append(before)
            size += len(before)
            pieces.append(value)
            kind = m.group()[1:].rsplit("_", 1)[0]
            spans.append((size, size + len(value), kind))
            size += len(value)
            pos = m.end()
        if not spans:
            return text, []
        pieces.append(text[pos:])
        return "".join(pieces), spans

    def _unmask_range(self, s: str, start: int, end: int) -> str:
        """Unmask `s[start:end]`, reading `s` before `start` for the left boundary only."""
        if not self._to_value or start >= end:
            return s[start:end]
        values = self._to_value
        out: list[str] = []
        pos = start
        for m in self._unmask_regex().finditer(s, start, end):
            at = m.start()
            before = s[at - 1] if at > 0 else ""
            if before == "#":
                if at - 1 >= start:  # a `#` already emitted stays; the bare reading applies
                    at -= 1
            elif before and _WORD_CHAR.match(before):
                continue
            value = values.get("#" + m.group())
            if value is None:
                continue
            out.append(s[pos:at])
            out.append(value)
            pos = m.end()
        out.append(s[pos:end])
        return "".join(out)

    def _hold_from(self, s: str, start: int) -> int:
        """Where the tail of `s` that could still become (or grow into) a token begins."""
        if not self._types:
            return len(s)
        q = len(s)
        while q > start and _is_run_char(s[q - 1]):
            q -= 1
        for p in range(q, len(s)):
            ch = s[p]
            if ch == "#":
                rest = s[p + 1 :]
            elif "A" <= ch <= "Z" and (p == 0 or s[p - 1] == "#" or not _WORD_CHAR.match(s[p - 1])):
                rest = s[p:]
            else:
                continue
            if self._could_be_token(rest):
                return p
        return len(s)

    def _could_be_token(self, rest: str) -> bool:
        if not rest:
            return True
        for kind in self._types:
            head = kind + "_"
            if len(rest) <= len(head):
                if head.startswith(rest):
                    return True
            elif rest.startswith(head) and rest[len(head) :].isdecimal():
                return True
        return False


class StreamingUnmasker:
    """Unmasks a stream chunk by chunk: `feed(chunk)` returns what can be shown now (a tail
    that could still be or grow into a token is held back), `finish()` returns the rest."""

    def __init__(self, masker: ReversibleMasker) -> None:
        self._masker = masker
        self._ctx = ""  # the last character already emitted, raw: the left boundary
        self._pending = ""

    def feed(self, chunk: str) -> str:
        if not chunk:
            return ""
        s = self._ctx + self._pending + chunk
        start = len(self._ctx)
        hold = self._masker._hold_from(s, start)
        out = self._masker._unmask_range(s, start, hold)
        if hold > start:
            self._ctx = s[hold - 1]
        self._pending = s[hold:]
        return out

    def finish(self) -> str:
        s = self._ctx + self._pending
        out = self._masker._unmask_range(s, len(self._ctx), len(s))
        self._ctx = self._pending = ""
        return out


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, tuple):
        items = [_map_strings(v, fn) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value
