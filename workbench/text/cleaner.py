"""Clean a model's reply before a human reads it.

A rule written in the prompt is only a wish; three leaks still reached the screen: raw JSON,
the labels of a structure the model invented for itself (`**Introduction** :`), and reasoning
drafts or robotic closing phrases. `ResponseCleaner.clean` removes them deterministically, in
this order:

1. reasoning blocks — `<think>…</think>`, an unterminated `<think>`, everything before a lone
   `</think>` — via `strip_reasoning` (the one rule the providers use);
2. JSON — a reply that is JSON (bare, or fenced as ```json / ```), a fenced JSON block in
   prose, and a JSON object that starts a line (text after it on its last line becomes
   the next paragraph) become Markdown: a title becomes a bold
   line, a text a paragraph, a list bullets, a named item `**Name** — description`. A
   wrapper such as `{"role": …, "response": …}` yields its payload field itself. No key is
   ever shown;
3. reasoning drafts — only what follows the last line starting with a reasoning starter,
   or the last final marker (`Final answer: 42` keeps `42`), is kept;
4. line labels — removed only at the start of a line (after an optional heading, quote or
   bullet mark, inside optional emphasis), when a colon follows; the same word elsewhere
   stays;
5. closing phrases — removed from the end, one per pass, at most `max_closing_passes`
   passes;
6. whitespace — CRLF to LF, trailing spaces, runs of blank lines, leading/trailing blanks.

Fenced code blocks other than JSON are never touched by steps 3-6 (except line endings).

The package ships no words. Every vocabulary entry is a literal string — escaped, matched
case-insensitively — or a compiled regex, matched with its own flags. Without vocabulary
only steps 1, 2 and 6 run (plus a word-free rule in step 2: in a JSON object that also
holds text, a field whose value is a lower-case identifier such as `"assistant"` or `"ok"`,
a boolean or null is protocol, not prose, and is dropped).

Decisions made here, stated once:

- the draft rule never empties a reply: when nothing follows the last reasoning line (or
  the final marker), the text is left as it was — a reply that is only a draft is better
  shown than replaced by nothing;
- a closing phrase is removed only where a sentence or a line begins (after `.!?…` or a
  newline), and never when it is the whole remaining reply ("Let me know if you need
  anything else!" answering "thanks" stays);
- idempotence: `clean(clean(x)) == clean(x)` holds except when more closing phrases are
  stacked than `max_closing_passes` (the bound is the point) and for adversarial input
  whose `<think>` tags only form once others are removed beyond three levels of nesting.

Language tags are reduced to their primary subtag (`fr-FR`, `fr_fr` and `FR` are `fr`); an
unknown or missing language uses `fallback_language`; the `shared` vocabulary always
applies. Everything is compiled once, at construction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.providers.reasoning import strip_reasoning
from workbench.text.language import primary_language

__all__ = ["ResponseCleaner", "Vocabulary", "load_vocabulary"]

Entry = str | re.Pattern[str]

_FIELDS = (
    "payload_keys",
    "title_keys",
    "line_labels",
    "reasoning_starters",
    "final_markers",
    "closing_phrases",
)


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code="VOCABULARY_INVALID")


def _entries(value: Any, where: str) -> tuple[Entry, ...]:
    if isinstance(value, str | re.Pattern):
        value = (value,)
    try:
        items = tuple(value)
    except TypeError:
        raise _invalid(f"{where} must be a list of strings or compiled regexes") from None
    for i, e in enumerate(items):
        if isinstance(e, str):
            if not e.strip():
                raise _invalid(f"{where}[{i}] is blank")
        elif isinstance(e, re.Pattern):
            if not isinstance(e.pattern, str):
                raise _invalid(f"{where}[{i}] is a bytes regex")
            if e.match(""):
                raise _invalid(f"{where}[{i}] matches the empty string")
        else:
            raise _invalid(f"{where}[{i}] must be a string or a compiled regex, not {e!r}")
    return items


@dataclass(frozen=True)
class Vocabulary:
    """The words of one language (or of all: `shared`). Each entry is a literal string,
    escaped and matched case-insensitively, or a compiled regex matched with its own flags.

    - `payload_keys`: JSON fields whose value IS the answer (`response`, `answer`);
    - `title_keys`: JSON fields that title an object (`title`, `name`);
    - `line_labels`: words the model puts before a colon at the start of a line;
    - `reasoning_starters`: words that open a draft line (`Wait`, `Actually`);
    - `final_markers`: what announces the answer after a draft (`Final answer`);
    - `closing_phrases`: robotic endings (`Hope this helps!`).
    """

    payload_keys: tuple[Entry, ...] = ()
    title_keys: tuple[Entry, ...] = ()
    line_labels: tuple[Entry, ...] = ()
    reasoning_starters: tuple[Entry, ...] = ()
    final_markers: tuple[Entry, ...] = ()
    closing_phrases: tuple[Entry, ...] = ()

    def __post_init__(self) -> None:
        for name in _FIELDS:
            object.__setattr__(self, name, _entries(getattr(self, name), name))

    def __add__(self, other: Vocabulary) -> Vocabulary:
        return Vocabulary(**{n: getattr(self, n) + getattr(other, n) for n in _FIELDS})

    def __bool__(self) -> bool:
        return any(getattr(self, n) for n in _FIELDS)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "vocabulary") -> Vocabulary:
        """A vocabulary from JSON-shaped data: each field a list whose entries are strings
        (literal) or `{"regex": "...", "flags": "i"}` (flags among `i`, `m`, `s`, `x`)."""
        if not isinstance(d, Mapping):
            raise _invalid(f"{where} must be an object")
        unknown = sorted(set(d) - set(_FIELDS), key=str)
        if unknown:
            raise _invalid(f"{where}.{unknown[0]}: unknown field")
        kw: dict[str, tuple[Entry, ...]] = {}
        for name, value in d.items():
            if not isinstance(value, list):
                raise _invalid(f"{where}.{name} must be a list")
            kw[name] = tuple(
                _entry_from_json(e, f"{where}.{name}[{i}]") for i, e in enumerate(value)
            )
        return cls(**kw)


_FLAG_LETTERS = {"i": re.I, "m": re.M, "s": re.S, "x": re.X}


def _entry_from_json(e: Any, where: str) -> Entry:
    if isinstance(e, str):
        return e
    if isinstance(e, dict) and isinstance(e.get("regex"), str) and set(e) <= {"regex", "flags"}:
        flags = 0
        for letter in str(e.get("flags", "")):
            if letter not in _FLAG_LETTERS:
                raise _invalid(f"{where}.flags: unknown flag {letter!r}")
            flags |= _FLAG_LETTERS[letter]
        try:
            return re.compile(e["regex"], flags)
        except re.error as exc:
            raise _invalid(f"{where}.regex does not compile: {exc}") from None
    raise _invalid(f'{where} must be a string or {{"regex": "...", "flags": "..."}}')


def load_vocabulary(path: str | Path) -> dict[str, Any]:
    """Read `{"shared": {...}, "languages": {"fr": {...}}, "fallback_language": "en"}` and
    return the keyword arguments of `ResponseCleaner`: `ResponseCleaner(**load_vocabulary(p))`.
    A bad file raises ConfigError `VOCABULARY_INVALID`."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _invalid(f"{p}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise _invalid(f"{p}: not JSON ({exc})") from None
    return vocabulary_config(data, str(p))


def vocabulary_config(data: Any, where: str = "vocabulary") -> dict[str, Any]:
    """The `ResponseCleaner` keyword arguments for already-parsed vocabulary data."""
    if not isinstance(data, dict):
        raise _invalid(f"{where}: must be an object")
    unknown = sorted(set(data) - {"shared", "languages", "fallback_language"}, key=str)
    if unknown:
        raise _invalid(f"{where}: {unknown[0]}: unknown field")
    languages = data.get("languages") or {}
    if not isinstance(languages, dict):
        raise _invalid(f"{where}: languages must be an object")
    fallback = data.get("fallback_language", "en")
    if not isinstance(fallback, str) or not fallback.strip():
        raise _invalid(f"{where}: fallback_language must be a language tag")
    return {
        "shared": Vocabulary.from_dict(data.get("shared") or {}, f"{where}: shared"),
        "languages": {
            lang: Vocabulary.from_dict(v, f"{where}: languages.{lang}")
            for lang, v in languages.items()
        },
        "fallback_language": fallback,
    }


# --------------------------------------------------------------------------- compilation

_WS = r"[ \t\u00a0\u202f]"
_EMPH = r"(?:\*{1,3}|_{1,3})"
# What may precede a label or a final marker at the start of a line: a heading, a quote, a
# bullet or a number. `#` is escaped so that a verbose (re.X) entry does not read a comment.
_LINE_PREFIX = rf"(?P<pre>{_WS}*(?:\#{{1,6}}{_WS}+|>{_WS}*|[-*+]{_WS}+|\d{{1,3}}[.)]{_WS}+)?)"
_COLON = r"[:：]"


def _alternatives(entries: Iterable[Entry]) -> list[str]:
    """Each entry as a regex source with its flags inlined, literals first, longest first."""
    literals = sorted({e for e in entries if isinstance(e, str)}, key=len, reverse=True)
    out = [f"(?i:{re.escape(e.strip())})" for e in literals]
    for e in entries:
        if isinstance(e, re.Pattern):
            letters = "".join(
                ch for ch, f in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)) if e.flags & f
            )
            out.append(f"(?{letters}:{e.pattern})" if letters else f"(?:{e.pattern})")
    return out


_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


def _compile_each(template: str, entries: Iterable[Entry]) -> tuple[re.Pattern[str], ...]:
    """The entries compiled into `template` (where `{E}` stands): one alternation when that
    is safe, else one pattern per entry — a caller's back-reference keeps its group number
    and two entries may reuse a group name."""
    alts = _alternatives(entries)
    if not alts:
        return ()
    if not any(_BACKREF.search(a) for a in alts):
        try:
            return (re.compile(template.replace("{E}", "|".join(alts))),)
        except re.error:
            pass
    return tuple(re.compile(template.replace("{E}", alt)) for alt in alts)


def _key_matcher(entries: Iterable[Entry]) -> Callable[[str], bool]:
    alts = _alternatives(entries)
    if not alts:
        return lambda _key: False
    pats = [re.compile(rf"(?:{a})\Z") for a in alts]
    seen: dict[str, bool] = {}  # JSON keys repeat: each is read once per cleaner

    def matches(key: str) -> bool:
        hit = seen.get(key)
        if hit is None:
            hit = any(p.match(key.strip()) for p in pats)
            if len(seen) < 4096:
                seen[key] = hit
        return hit

    return matches


@dataclass(frozen=True)
class _Compiled:
    is_payload: Callable[[str], bool]
    is_title: Callable[[str], bool]
    labels: tuple[re.Pattern[str], ...]
    starters: tuple[re.Pattern[str], ...]
    finals: tuple[re.Pattern[str], ...]
    closings: tuple[re.Pattern[str], ...]


def _compile(v: Vocabulary) -> _Compiled:
    # A label: `[prefix][emphasis]LABEL[emphasis]:` — the colon may end the entry itself.
    label = (
        rf"{_LINE_PREFIX}(?P<open>{_EMPH})?{_WS}*(?:{{E}})(?P<close>{_EMPH})?"
        rf"(?:{_WS}*{_COLON}|(?<=[:：]))(?P<close2>{_EMPH})?{_WS}*"
    )
    # A reasoning line: optional spaces and emphasis, then the starter as a whole word.
    starter = rf"{_WS}*{_EMPH}?(?:{{E}})(?:(?<=\W)|(?!\w))"
    # A final marker: like a label, but the colon (or dash) is optional at the end of a line.
    final = (
        rf"{_LINE_PREFIX}(?P<open>{_EMPH})?{_WS}*(?:{{E}})(?P<close>{_EMPH})?"
        rf"(?:{_WS}*[:：\-–—]|(?<=[:：])|{_WS}*$)(?P<close2>{_EMPH})?{_WS}*"
    )
    return _Compiled(
        is_payload=_key_matcher(v.payload_keys),
        is_title=_key_matcher(v.title_keys),
        labels=_compile_each(label, v.line_labels),
        starters=_compile_each(starter, v.reasoning_starters),
        finals=_compile_each(final, v.final_markers),
        closings=_compile_each(r"(?:{E})", v.closing_phrases),
    )


# --------------------------------------------------------------------------- JSON → Markdown

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_\-]{0,39}\Z")
_FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)[ \t]*([\w+.-]*)[^\n]*$")
_JSON_FENCE_LANGS = {"", "json", "json5", "jsonc"}
_MAX_DEPTH = 12
_MAX_STACK = 8  # stacked labels or final markers read at the start of one line


def _is_token(value: Any) -> bool:
    """A value that is protocol rather than prose: a flag, a null, a lower-case identifier."""
    return (
        value is None
        or isinstance(value, bool)
        or (isinstance(value, str) and bool(_IDENTIFIER.match(value)))
    )


def _one_line(s: str) -> str:
    return " ".join(s.split())


class _Renderer:
    def __init__(self, c: _Compiled) -> None:
        self.c = c

    def blocks(self, value: Any, depth: int = 0) -> list[str]:
        """`value` as Markdown blocks (paragraphs, bullet lists), keys never shown."""
        if depth > _MAX_DEPTH:
            return []
        if isinstance(value, str):
            s = value.strip()
            if s[:1] in "{[" and s:
                parsed = _parse_json(s)
                if parsed is not None:
                    return self.blocks(parsed, depth + 1)
            return [s] if s else []
        if isinstance(value, bool) or value is None:
            return []
        if isinstance(value, int | float):
            return [_number(value)]
        if isinstance(value, list):
            lines = self.bullets(value, 0, depth + 1)
            return ["\n".join(lines)] if lines else []
        if isinstance(value, dict):
            return self.object_blocks(value, depth + 1)
        return []

    def _payload(self, d: dict[str, Any], depth: int) -> list[str] | None:
        for k, v in d.items():
            if self.c.is_payload(str(k)):
                out = self.blocks(v, depth)
                if out:
                    return out
        return None

    def _content(self, d: dict[str, Any], skip: str | None) -> list[tuple[str, Any]]:
        items = [(k, v) for k, v in d.items() if k != skip]
        rich = any(not _is_token(v) and not isinstance(v, int | float) for _, v in items)
        if rich:
            items = [(k, v) for k, v in items if not _is_token(v)]
        return items

    def _title(self, d: dict[str, Any]) -> tuple[str | None, str | None]:
        for k, v in d.items():
            if self.c.is_title(str(k)) and isinstance(v, str) and v.strip():
                return k, _one_line(v)
        return None, None

    def object_blocks(self, d: dict[str, Any], depth: int) -> list[str]:
        payload = self._payload(d, depth)
        if payload is not None:
            return payload
        key, title = self._title(d)
        out = [f"**{title}**"] if title else []
        for _, v in self._content(d, key):
            out.extend(self.blocks(v, depth))
        return out

    def bullets(self, items: list[Any], indent: int, depth: int) -> list[str]:
        pad = "  " * indent
        lines: list[str] = []
        for el in items:
            if depth > _MAX_DEPTH:
                break
            if isinstance(el, list):
                lines.extend(self.bullets(el, indent + 1, depth + 1))
            elif isinstance(el, dict):
                lines.extend(self.named_item(el, indent, depth + 1))
            else:
                text = " ".join(_one_line(b) for b in self.blocks(el, depth + 1))
                if text:
                    lines.append(f"{pad}- {text}")
        return lines

    def named_item(self, d: dict[str, Any], indent: int, depth: int) -> list[str]:
        """A list element that is an object: `- **Name** — description`, nested lists below."""
        pad = "  " * indent
        payload = self._payload(d, depth)
        if payload is not None:
            return [f"{pad}- {_one_line(' '.join(payload))}"]
        key, name = self._title(d)
        content = self._content(d, key)
        if name is None:
            # Word-free: the first short one-line string, when something else follows, names it.
            for i, (k, v) in enumerate(content):
                if (
                    isinstance(v, str)
                    and 0 < len(v.strip()) <= 80
                    and "\n" not in v.strip()
                    and len(content) > 1
                    and i == 0
                ):
                    key, name = k, v.strip()
                    content = content[1:]
                break
        words: list[str] = []
        below: list[str] = []
        for _, v in content:
            if isinstance(v, list):
                below.extend(self.bullets(v, indent + 1, depth + 1))
            elif isinstance(v, dict):
                below.extend(self.named_item(v, indent + 1, depth + 1))
            else:
                words.extend(_one_line(b) for b in self.blocks(v, depth + 1))
        desc = " ".join(w for w in words if w)
        if name and desc:
            head = f"**{name}** — {desc}"
        elif name:
            head = f"**{name}**"
        else:
            head = desc
        return ([f"{pad}- {head}"] if head else []) + below


def _number(v: int | float) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


_DECODER = json.JSONDecoder()


def _parse_json(s: str) -> Any:
    """A JSON object or array, or None. Scalars are not JSON replies."""
    try:
        value = json.loads(s)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def _split_lines(text: str) -> list[str]:
    return text.split("\n")


def _fence_spans(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (fence lines included)."""
    inside: list[bool] = []
    opener: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if opener is None:
            if m:
                opener = m.group(1)
                inside.append(True)
            else:
                inside.append(False)
        else:
            inside.append(True)
            if (
                m
                and m.group(1)[0] == opener[0]
                and len(m.group(1)) >= len(opener)
                and not m.group(2)
            ):
                opener = None
    return inside


def _json_to_markdown(text: str, render: _Renderer) -> str:
    stripped = text.strip()
    if not stripped:
        return ""
    # The whole reply is JSON (bare, or one fenced block).
    whole = stripped
    fm = _FENCE.match(stripped.split("\n", 1)[0])
    if fm and fm.group(2).lower() in _JSON_FENCE_LANGS and "\n" in stripped:
        body, _, last = stripped.rpartition("\n")
        if last.strip().startswith(fm.group(1)) and last.strip() == last.strip()[0] * len(
            last.strip()
        ):
            whole = body.split("\n", 1)[1] if "\n" in body else ""
    if whole.lstrip()[:1] in ("{", "["):
        parsed = _parse_json(whole)
        if parsed is not None:
            return "\n\n".join(render.blocks(parsed))
    if "{" not in text:
        return text
    # JSON inside prose: fenced JSON blocks, and lines that are a whole JSON object.
    lines = _split_lines(text)
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    out: list[str] = []
    i = 0
    changed = False
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            j = i + 1
            while j < len(lines):
                c = _FENCE.match(lines[j])
                if c and c.group(1)[0] == m.group(1)[0] and not c.group(2):
                    break
                j += 1
            body = "\n".join(lines[i + 1 : j])
            parsed = (
                _parse_json(body.strip())
                if m.group(2).lower() in _JSON_FENCE_LANGS and j < len(lines)
                else None
            )
            if parsed is not None:
                out.extend(["", "\n\n".join(render.blocks(parsed)), ""])
                changed = True
            else:
                out.extend(lines[i : j + 1])
            i = j + 1
            continue
        lead = line.lstrip()
        if lead.startswith("{"):
            pos = offsets[i] + len(line) - len(lead)
            try:
                value, end = _DECODER.raw_decode(text, pos)
            except (ValueError, RecursionError):
                value, end = None, 0
            if isinstance(value, dict):
                # Text after the object on its last line becomes the next paragraph.
                nl = text.find("\n", end)
                tail = text[end:] if nl < 0 else text[end:nl]
                consumed = text.count("\n", offsets[i], end) + 1
                out.extend(["", "\n\n".join(render.blocks(value)), ""])
                if tail.strip():
                    out.extend([tail.strip(), ""])
                changed = True
                i += consumed
                continue
        out.append(line)
        i += 1
    return "\n".join(out) if changed else text


# --------------------------------------------------------------------------- line rules


def _remove_labels(line: str, labels: tuple[re.Pattern[str], ...]) -> str | None:
    """`line` without its leading labels (stacked ones too); None when nothing is left."""
    changed = False
    for _ in range(_MAX_STACK):
        for p in labels:
            m = p.match(line)
            if m:
                rest = line[m.end() :]
                opened = m.group("open") and not (m.group("close") or m.group("close2"))
                line = m.group("pre") + (m.group("open") if opened else "") + rest
                changed = True
                break
        else:
            break
    if changed and not line.strip(" \t\u00a0\u202f*_#>-+"):
        return None
    return line


def _after_finals(line: str, c: _Compiled) -> str | None:
    """What follows the final markers (and labels) that head `line`; None when none does."""
    found = False
    for _ in range(_MAX_STACK):
        for p in c.finals:
            m = p.match(line)
            if m:
                opened = m.group("open") and not (m.group("close") or m.group("close2"))
                line = (m.group("open") if opened else "") + line[m.end() :]
                found = True
                break
        else:
            break
        line = _remove_labels(line, c.labels) or ""
    return line if found else None


def _cut_drafts(lines: list[str], fenced: list[bool], c: _Compiled) -> list[str]:
    """Only what follows the last reasoning line or final marker. A line is read past its
    labels ("Answer: Final answer: 42" is a final marker line), so that removing labels
    afterwards never uncovers another marker."""
    for i in range(len(lines) - 1, -1, -1):
        if fenced[i]:
            continue
        head = _remove_labels(lines[i], c.labels) or ""
        rest = _after_finals(head, c)
        if any(p.match(head if rest is None else rest) for p in c.starters):
            kept = lines[i + 1 :]
        elif rest is not None:
            kept = [rest, *lines[i + 1 :]] if rest.strip() else lines[i + 1 :]
        else:
            continue
        return kept if any(k.strip() for k in kept) else lines
    return lines


_SENTENCE_START = re.compile(r"(?:\A|\n|[.!?…][\"'»”)\]]*[ \t\u00a0]+)[ \t]*(?:[*_]{1,3})?\Z")
_TAIL_CHARS = 1200
_WORDCHAR = re.compile(r"\w")


def _remove_closing(text: str, closings: tuple[re.Pattern[str], ...]) -> str | None:
    """`text` without one closing phrase at its end, or None when none ends it."""
    base = max(0, len(text) - _TAIL_CHARS)
    tail = text[base:]
    best: int | None = None
    for p in closings:
        for m in p.finditer(tail):
            if m.end() == m.start():
                continue
            after = tail[m.end() :]
            if after.strip() and _WORDCHAR.search(after):
                continue
            if after.strip().startswith("```"):
                continue
            start = base + m.start()
            if not _SENTENCE_START.search(text[max(0, start - 8) : start]) and start != 0:
                continue
            if best is None or start < best:
                best = start
            break
    if best is None or not text[:best].strip():
        return None
    return text[:best].rstrip()


def _normalise_ws(text: str) -> str:
    lines = _split_lines(text)
    fenced = _fence_spans(lines)
    out: list[str] = []
    blank = 0
    for line, f in zip(lines, fenced, strict=True):
        if f:
            blank = 0
            out.append(line.rstrip())
            continue
        line = line.rstrip()
        if not line:
            blank += 1
            if blank > 1:
                continue
        else:
            blank = 0
        out.append(line)
    return "\n".join(out).strip("\n").strip()


# --------------------------------------------------------------------------- the cleaner


class ResponseCleaner:
    """`clean(text, language)`: the reply a human should read (module docstring: the steps).

    `shared` applies to every language; `languages` maps a tag (reduced to its primary
    subtag) to its own words; an unknown or missing language uses `fallback_language`."""

    def __init__(
        self,
        shared: Vocabulary | None = None,
        languages: Mapping[str, Vocabulary] | None = None,
        fallback_language: str = "en",
        max_closing_passes: int = 3,
    ) -> None:
        shared = shared if shared is not None else Vocabulary()
        if not isinstance(shared, Vocabulary):
            raise _invalid("shared must be a Vocabulary")
        if isinstance(max_closing_passes, bool) or not isinstance(max_closing_passes, int):
            raise _invalid("max_closing_passes must be an integer")
        if max_closing_passes < 0:
            raise _invalid("max_closing_passes must be 0 or more")
        fallback = primary_language(fallback_language)
        if fallback is None:
            raise _invalid("fallback_language must be a language tag")
        self.fallback_language = fallback
        self.max_closing_passes = max_closing_passes
        merged: dict[str, Vocabulary] = {}
        for tag, vocab in (languages or {}).items():
            lang = primary_language(tag)
            if lang is None:
                raise _invalid(f"languages: {tag!r} is not a language tag")
            if not isinstance(vocab, Vocabulary):
                raise _invalid(f"languages.{tag} must be a Vocabulary")
            merged[lang] = merged[lang] + vocab if lang in merged else vocab
        self._shared = _compile(shared)
        self._by_lang = {lang: _compile(shared + v) for lang, v in merged.items()}
        self._renderers = {lang: _Renderer(c) for lang, c in self._by_lang.items()}
        self._shared_renderer = _Renderer(self._shared)

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self._by_lang)

    def _pick(self, language: str | None) -> tuple[_Compiled, _Renderer]:
        lang = primary_language(language)
        if lang not in self._by_lang:
            lang = self.fallback_language
        if lang in self._by_lang:
            return self._by_lang[lang], self._renderers[lang]
        return self._shared, self._shared_renderer

    def clean(self, text: str, language: str | None = None) -> str:
        """The reply without reasoning, JSON keys, labels, drafts and closing phrases."""
        if not isinstance(text, str) or not text:
            return ""
        c, render = self._pick(language)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        budget = self.max_closing_passes
        # One round is almost always enough. Another runs only when the round uncovered
        # something an earlier step reads (a removed label or closing phrase leaving a JSON
        # object, a fence or a tag at the start of a line). The closing budget spans rounds.
        for _ in range(_ROUNDS):
            text, used, exposed = _one_round(text, c, render, budget)
            budget -= used
            if not exposed:
                break
        return text


_ROUNDS = 3
_EXPOSING = re.compile(r"^\s*(?:[{\[]|```|~~~)|think>|[}\]]\s*$", re.I)


def _one_round(text: str, c: _Compiled, render: _Renderer, budget: int) -> tuple[str, int, bool]:
    """One pass of every step: (text, closing passes used, whether it uncovered structure)."""
    exposed = False
    text = _strip_think(text)
    converted = _json_to_markdown(text, render)
    if converted is not text:
        text = _strip_think(converted)
    lines = _split_lines(text)
    fenced = _fence_spans(lines)
    if c.starters or c.finals:
        kept = _cut_drafts(lines, fenced, c)
        if kept is not lines:
            first = next((k for k in kept if k.strip()), "")
            exposed = bool(_EXPOSING.search(first))
            lines = kept
            fenced = _fence_spans(lines)
    if c.labels:
        out: list[str] = []
        brace_above = False
        for line, f in zip(lines, fenced, strict=True):
            if f:
                out.append(line)
                continue
            cleaned = _remove_labels(line, c.labels)
            if cleaned is not line:
                # A changed line may now start a JSON object; a removed one may have been
                # the only thing keeping the lines around it from parsing as one.
                exposed = exposed or (
                    brace_above if cleaned is None else bool(_EXPOSING.search(cleaned))
                )
            if cleaned is not None:
                out.append(cleaned)
                brace_above = brace_above or cleaned.lstrip()[:1] in ("{", "[")
        lines = out
    text = _normalise_ws("\n".join(lines))
    used = 0
    while c.closings and used < budget:
        shorter = _remove_closing(text, c.closings)
        if shorter is None:
            break
        text = _normalise_ws(shorter)
        used += 1
    if used:
        last = text[text.rfind("\n") + 1 :]
        exposed = exposed or bool(_EXPOSING.search(last)) or "think>" in text[-_TAIL_CHARS:]
    return text, used, exposed


def _strip_think(text: str) -> str:
    """`strip_reasoning`, repeated while tags remain (removing one can join the halves of
    another), at most three times."""
    for _ in range(3):
        if "think>" not in text.lower():
            return text
        text = strip_reasoning(text)
    return text
