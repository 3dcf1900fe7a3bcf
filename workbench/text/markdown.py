"""The text of a reply: Markdown a phone renders, plain text for a voice, whole sentences,
faithful quotations.

- `tidy_markdown(text, remove=())` — ATX headings (`#Title` → `# Title`, setext underlines
  → `#`/`##`, closing `#`s dropped, deeper than `###` → `###`), one bullet mark (`*`, `+`,
  `•`, `–` → `-`; `1)` → `1.`), tabs in indentation → two spaces, no horizontal rules, no
  raw HTML (`<br>` → line break, `<b>`/`<strong>` → `**`, `<i>`/`<em>` → `*`, other tags
  dropped, their text kept, comments dropped), `remove` phrases dropped wherever they
  occur within a line (a literal — case-insensitive — or a compiled regex; a line left
  empty goes), at most one blank line, no trailing
  spaces. Fenced code blocks and inline code are left as they are.
- `plain_text(md)` — for a voice: no markup, a link is its text, an image its alt text, a
  heading a sentence, a list sentences (an item without final punctuation gets a period),
  a table row its cells joined by commas; paragraphs stay separated by a blank line,
  lines of one paragraph are joined by a space. Fenced code keeps its lines, fences gone.
- `whole_sentences(text)` — a reply cut by a length limit, back to its last whole
  sentence. A boundary is a sentence end (`.`, `!`, `?`, `…`, `。` followed by closing
  quotes or emphasis, then a space or the end) or the end of a complete Markdown block
  (a paragraph break, or a newline after a list item, heading or table row). With no
  boundary, the whole text is kept.
- `verify_quotations(text, find_references, resolve)` — a quotation followed by its
  reference (`« … » (Jn 3:16)`, `"…" (Doc 4)`) is replaced by the true text when it is
  unfaithful. What a reference is, and where its text lives, belongs to the caller:

      find_references(text) -> iterable of ((start, end), reference)
          `(start, end)` is the span of the quoted words, inside the quotation marks;
      resolve(reference) -> str | None
          the true text, or None when unknown (the quotation is then left alone).

  Both are synchronous: an async source (a database, an API) is read first and handed over
  as a lookup, e.g. `resolve=texts.get`. `quotes_with_references(pattern)` builds a
  `find_references` for the common shape: a quotation in `« »`, `“ ”` or `" "`, then
  optional spaces and a parenthesised reference matching `pattern`.

  A quotation is faithful when, ignoring case, accents of quotation marks and apostrophes,
  spacing and the punctuation at its ends, it is the true text or a contiguous excerpt of
  it (an ellipsis `…`, `...` or `[…]` in the quotation may skip words, the pieces in
  order). A `resolve` that raises is treated as unknown: the quotation stays.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "plain_text",
    "quotes_with_references",
    "tidy_markdown",
    "verify_quotations",
    "whole_sentences",
]

_FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_BR = re.compile(r"<br\s*/?>", re.I)
_P_TAG = re.compile(r"</?p\b[^>]*>", re.I)
_BOLD_TAG = re.compile(r"</?(?:b|strong)\b[^>]*>", re.I)
_ITALIC_TAG = re.compile(r"</?(?:i|em)\b[^>]*>", re.I)
_ANY_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s+[^<>]*?)?\s*/?>")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
_ATX = re.compile(r"^(#{1,6})[ \t]*(.*?)[ \t]*#*[ \t]*$")
_ATX_START = re.compile(r"^[ \t]{0,3}#{1,6}(?=[^#]|$)")
_SETEXT = re.compile(r"^[ \t]{0,3}(=+|-+)[ \t]*$")
_HR = re.compile(r"^[ \t]{0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_BULLET = re.compile(r"^([ \t]*)(?:[*+•‣◦▪–—]|-)[ \t]+(.*)$")
_ORDERED = re.compile(r"^([ \t]*)(\d{1,9})[.)][ \t]+(.*)$")
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")


def _lines_outside_fences(lines: list[str]) -> list[bool]:
    inside: list[bool] = []
    opener: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if opener is None:
            if m:
                opener = m.group(1)
            inside.append(opener is not None)
        else:
            inside.append(True)
            if m and m.group(1)[0] == opener[0] and len(m.group(1)) >= len(opener):
                if not line.strip()[len(m.group(1)) :].strip():
                    opener = None
    return inside


def _protect_code(line: str) -> tuple[str, list[str]]:
    """Inline code spans replaced by placeholders, so that HTML and phrase rules skip them."""
    kept: list[str] = []

    def keep(m: re.Match[str]) -> str:
        kept.append(m.group(0))
        return f"\x00{len(kept) - 1}\x00"

    return _INLINE_CODE.sub(keep, line), kept


def _restore_code(line: str, kept: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], line)


def _strip_html(text: str) -> str:
    text = _HTML_COMMENT.sub("", text)
    text = _BR.sub("\n", text)
    text = _P_TAG.sub("\n\n", text)
    text = _BOLD_TAG.sub("**", text)
    text = _ITALIC_TAG.sub("*", text)
    return _ANY_TAG.sub("", text)


def _phrase_patterns(remove: Iterable[str | re.Pattern[str]]) -> list[re.Pattern[str]]:
    out: list[re.Pattern[str]] = []
    for r in remove:
        if isinstance(r, re.Pattern):
            out.append(r)
        elif isinstance(r, str) and r.strip():
            out.append(re.compile(re.escape(r.strip()), re.I))
        else:
            raise TypeError(f"remove: {r!r} is neither a phrase nor a compiled regex")
    return out


def _prose_blocks(text: str) -> list[tuple[bool, str]]:
    """`text` split into (is_code, chunk) runs of whole lines."""
    lines = text.split("\n")
    fenced = _lines_outside_fences(lines)
    runs: list[tuple[bool, list[str]]] = []
    for line, f in zip(lines, fenced, strict=True):
        if runs and runs[-1][0] == f:
            runs[-1][1].append(line)
        else:
            runs.append((f, [line]))
    return [(f, "\n".join(ls)) for f, ls in runs]


def tidy_markdown(text: str, remove: Iterable[str | re.Pattern[str]] = ()) -> str:
    """Markdown a phone renders (module docstring: the rules)."""
    if not isinstance(text, str) or not text:
        return ""
    phrases = _phrase_patterns(remove)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out: list[str] = []
    for is_code, chunk in _prose_blocks(text):
        if is_code:
            # Code keeps its blank lines: \x01 marks them until the prose ones are collapsed.
            out.extend(line.rstrip() or "\x01" for line in chunk.split("\n"))
            continue
        protected, kept = _protect_code(chunk)
        protected = _strip_html(protected)
        out.extend(_tidy_lines(protected.split("\n"), kept, phrases))
    return _collapse_blank(out).replace("\x01", "")


def _tidy_lines(lines: list[str], kept: list[str], phrases: list[re.Pattern[str]]) -> list[str]:
    out: list[str] = []
    for raw in lines:
        line = raw.rstrip()
        lead = len(line) - len(line.lstrip(" \t"))
        indent, body = line[:lead].replace("\t", "  "), line[lead:]
        if phrases and body:
            before = body
            for p in phrases:
                body = p.sub("", body)
            if body != before:
                # A removed phrase leaves doubled spaces or a space before punctuation.
                body = re.sub(r"[ \t]{2,}", " ", body)
                body = re.sub(r" +([,.;!?])(?=\s|$)", r"\1", body).strip()
                if re.fullmatch(r"(?:[-*+•>#]+|\d{1,9}[.)])?", body):
                    continue  # nothing but the mark of a list item, heading or quote
        line = indent + body
        setext = _SETEXT.match(line)
        if (
            setext
            and out
            and out[-1].strip()
            and not _BULLET.match(out[-1])
            and not _ATX_START.match(out[-1])
            and not (setext.group(1)[0] == "-" and _HR.match(line) and not out[-1].strip())
        ):
            level = "#" if setext.group(1)[0] == "=" else "##"
            out[-1] = f"{level} {out[-1].strip()}"
            out.append("")
            continue
        if _HR.match(line):
            out.append("")
            continue
        if re.fullmatch(r"[ \t]*[-*+•][ \t]*", line):
            continue  # an empty bullet (a lone number is text: "2024.")
        if _ATX_START.match(line):
            m = _ATX.match(line.strip())
            assert m is not None
            hashes, title = m.groups()
            if not title:
                continue
            if len(hashes) > 3:
                hashes = "###"
            if out and out[-1].strip():
                out.append("")
            out.extend([f"{hashes} {_restore_code(title, kept)}", ""])
            continue
        b = _BULLET.match(line)
        if b:
            indent, body = b.groups()
            if not body.strip():
                continue
            line = f"{indent}- {body}"
        else:
            o = _ORDERED.match(line)
            if o:
                indent, num, body = o.groups()
                if not body.strip():
                    continue
                line = f"{indent}{num}. {body}"
        out.append(_restore_code(line, kept))
    return out


def _collapse_blank(lines: list[str]) -> str:
    out: list[str] = []
    for line in lines:
        if not line.strip():
            if out and out[-1] == "":
                continue
            out.append("")
        else:
            out.append(line)
    return "\n".join(out).strip("\n")


# --------------------------------------------------------------------------- plain text

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()]|\([^)]*\))*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_LINK_DEF = re.compile(r"^[ \t]{0,3}\[[^\]]+\]:[ \t]*\S+.*$")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_EMPHASIS = re.compile(r"(\*{1,3}|_{1,3}|~~)(?=\S)(.+?)(?<=\S)\1")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~>])")
_SENTENCE_END = ".!?…:;。！？"


def _inline_plain(s: str) -> str:
    s = _strip_html(s)
    s = _IMAGE.sub(r"\1", s)
    s = _LINK.sub(r"\1", s)
    s = _REF_LINK.sub(r"\1", s)
    s = _AUTOLINK.sub(r"\1", s)
    s = _INLINE_CODE.sub(lambda m: m.group(2).strip(), s)
    for _ in range(3):
        s2 = _EMPHASIS.sub(r"\2", s)
        if s2 == s:
            break
        s = s2
    s = _ESCAPE.sub(r"\1", s)
    return html.unescape(" ".join(s.split()))


def _sentence(s: str) -> str:
    s = s.strip()
    if s and s[-1] not in _SENTENCE_END and not s.endswith(("»", '"', "”", ")")):
        s += "."
    elif s and s[-1] in ":;":
        s = s[:-1] + "."
    return s


def plain_text(md: str) -> str:
    """`md` for a voice (module docstring: the rules)."""
    if not isinstance(md, str) or not md:
        return ""
    md = md.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs: list[list[str]] = [[]]

    def brk() -> None:
        if paragraphs[-1]:
            paragraphs.append([])

    for is_code, chunk in _prose_blocks(md):
        if is_code:
            brk()
            for line in chunk.split("\n"):
                if _FENCE.match(line):
                    continue
                if line.strip():
                    paragraphs[-1].append(line.rstrip())
            brk()
            continue
        lines = _strip_html(chunk).split("\n")
        skip = -1
        for i, line in enumerate(lines):
            if i == skip:
                continue
            stripped = line.strip()
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if not stripped or _HR.match(line):
                brk()
                continue
            if _LINK_DEF.match(line):
                continue
            if _SETEXT.match(nxt) and not _BULLET.match(line) and not _ATX_START.match(line):
                skip = i + 1
                brk()
                paragraphs[-1].append(_sentence(_inline_plain(stripped)))
                brk()
                continue
            while stripped.startswith(">"):
                stripped = stripped[1:].strip()
            if not stripped:
                continue
            if _ATX_START.match(stripped):
                m = _ATX.match(stripped)
                title = m.group(2) if m else ""
                brk()
                if title:
                    paragraphs[-1].append(_sentence(_inline_plain(title)))
                brk()
                continue
            if _TABLE_SEP.match(stripped) and "-" in stripped:
                continue
            if _TABLE_ROW.match(stripped):
                cells = [_inline_plain(c) for c in stripped.strip("|").split("|")]
                text = ", ".join(c for c in cells if c)
                if text:
                    paragraphs[-1].append(_sentence(text))
                continue
            b = _BULLET.match(stripped) or _ORDERED.match(stripped)
            if b:
                body = _inline_plain(b.groups()[-1])
                if body:
                    paragraphs[-1].append(_sentence(body))
                continue
            paragraphs[-1].append(_inline_plain(stripped))
    return "\n\n".join(" ".join(p) for p in paragraphs if p).strip()


# --------------------------------------------------------------------------- whole sentences

_END = re.compile(r"[.!?…。！？](?:[\"'»”’)\]*_]|[ \u00a0\u202f]»)*(?=\s|$)")
_BLOCK_LINE = re.compile(r"^[ \t]*(?:[-*+•][ \t]+|\d{1,9}[.)][ \t]+|#{1,6}[ \t]|\|).*$", re.M)


def whole_sentences(text: str) -> str:
    """`text` cut back to its last whole sentence (module docstring: what a boundary is)."""
    if not isinstance(text, str):
        return ""
    body = text.rstrip()
    if not body:
        return body
    last = None
    for m in _END.finditer(body):
        last = m.end()
    if last == len(body):
        return body
    # A complete Markdown block also ends a unit: a paragraph, a list item, a heading, a row.
    for m in re.finditer(r"\n[ \t]*\n", body):
        if last is None or m.start() > last:
            last = m.start()
    for m in _BLOCK_LINE.finditer(body):
        if m.end() < len(body) and (last is None or m.end() > last):
            last = m.end()
    if last is None:
        return body
    return body[:last].rstrip()


# --------------------------------------------------------------------------- quotations

Span = tuple[int, int]
FindReferences = Callable[[str], Iterable[tuple[Span, Any]]]
Resolve = Callable[[Any], str | None]

_QUOTE_CHARS = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "“": '"', "”": '"', "«": '"', "»": '"'})
_ELLIPSIS = re.compile(r"\s*(?:\[\s*(?:…|\.\.\.)\s*\]|\(\s*(?:…|\.\.\.)\s*\)|…|\.\.\.)\s*")
_EDGE_PUNCT = " \t\n\"'.,;:!?…«»“”‘’()[]-–—"


def _norm(s: str) -> str:
    s = s.translate(_QUOTE_CHARS).casefold()
    s = " ".join(s.split())
    return s.strip(_EDGE_PUNCT)


def _words(s: str) -> list[str]:
    return re.findall(r"\w+(?:'\w+)*", s.translate(_QUOTE_CHARS).casefold())


def _is_faithful(quote: str, truth: str) -> bool:
    if _norm(quote) == _norm(truth):
        return True
    true_words = _words(truth)
    pos = 0
    pieces = [p for p in _ELLIPSIS.split(quote) if _words(p)]
    if not pieces:
        return False
    for piece in pieces:
        words = _words(piece)
        found = None
        for i in range(pos, len(true_words) - len(words) + 1):
            if true_words[i : i + len(words)] == words:
                found = i
                break
        if found is None:
            return False
        pos = found + len(words)
    return True


def verify_quotations(text: str, find_references: FindReferences, resolve: Resolve) -> str:
    """`text` with every unfaithful quotation replaced by its true text (module docstring)."""
    if not isinstance(text, str) or not text:
        return "" if not isinstance(text, str) else text
    found: list[tuple[int, int, Any]] = []
    for item in find_references(text) or ():
        try:
            (start, end), ref = item
        except (TypeError, ValueError):
            continue
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text)):
            continue
        found.append((start, end, ref))
    found.sort(key=lambda f: (f[0], f[1]))
    chosen: list[tuple[int, int, Any]] = []
    for f in found:
        if chosen and f[0] < chosen[-1][1]:
            continue  # overlapping spans: the first one wins
        chosen.append(f)
    out = text
    for start, end, ref in reversed(chosen):
        try:
            truth = resolve(ref)
        except Exception:
            continue  # an unreachable source is doubt, not a reason to fail the reply
        if not isinstance(truth, str) or not truth.strip():
            continue
        quote = text[start:end]
        if _is_faithful(quote, truth):
            continue
        out = out[:start] + truth.strip() + out[end:]
    return out


_QUOTE_PAIRS = (("«", "»"), ("“", "”"), ('"', '"'), ("„", "“"))


def quotes_with_references(reference: str | re.Pattern[str]) -> FindReferences:
    """A `find_references` for `« quotation » (REF)`, `“quotation” (REF)` and
    `"quotation" (REF)`, REF matching `reference` (its whole text, inside the parentheses).
    The reference handed to `resolve` is REF as written, stripped."""
    ref = reference if isinstance(reference, re.Pattern) else re.compile(reference)
    alternatives = "|".join(
        rf"{re.escape(o)}(?P<q{i}>[^{re.escape(o + c)}\n]{{1,2000}}?){re.escape(c)}"
        for i, (o, c) in enumerate(_QUOTE_PAIRS)
    )
    pattern = re.compile(rf"(?:{alternatives})[ \t\u00a0]*\((?P<ref>[^()\n]{{1,200}})\)")

    def find(text: str) -> list[tuple[Span, Any]]:
        out: list[tuple[Span, Any]] = []
        for m in pattern.finditer(text):
            r = m.group("ref").strip()
            if not ref.fullmatch(r):
                continue
            for i in range(len(_QUOTE_PAIRS)):
                if m.group(f"q{i}") is not None:
                    s, e = m.span(f"q{i}")
                    inner = text[s:e]
                    lead = len(inner) - len(inner.lstrip())
                    tail = len(inner) - len(inner.rstrip())
                    out.append(((s + lead, e - tail), r))
                    break
        return out

    return find
