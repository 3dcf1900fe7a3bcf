"""Every family in one list, one pre-scan over the reply, and the one entry point.

Why a pre-scan: most replies carry no call at all, and thirty readers each scanning the text
would make the common case thirty times dearer. One compiled alternation of every family's
literal openers and trigger patterns runs once; it names the families whose markup occurs, and
only those readers run. A reply with none costs one regex search.

Why an order: families share markup (`<tool_call>` opens Hermes JSON, Qwen3-Coder's
`<function=…>` and GLM's bare name). Each reader takes only the bodies of its own shape, and
when two still claim overlapping text the one listed first keeps it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from workbench.providers.protocols import (
    apertus,
    cohere,
    deepseek,
    gemma,
    gigachat,
    glm,
    granite,
    granite_20b,
    harmony,
    hermes,
    internlm,
    jamba,
    kimi,
    llama3_json,
    longcat,
    minimax,
    minimax_m2,
    mistral,
    phi4_mini,
    pythonic,
    qwen3_xml,
    seed_oss,
    step3,
    tagged_pythonic,
    tool_lines,
    xlam,
)
from workbench.providers.protocols.jsonish import match_bracket
from workbench.providers.protocols.reading import (
    Family,
    Found,
    Marker,
    Offer,
    Reading,
    to_tool_calls,
)
from workbench.types import ToolCall

__all__ = [
    "FAMILIES",
    "MARKER_RE",
    "family_example",
    "family_names",
    "family_takes_one_list",
    "find_calls",
    "find_protocol_spans",
    "marker_table",
    "read_text_tool_calls",
    "remove_spans",
    "tidy",
]

FAMILIES: tuple[Family, ...] = (
    deepseek.FAMILY,
    deepseek.DSML,
    kimi.FAMILY,
    step3.FAMILY,
    minimax_m2.FAMILY,
    seed_oss.FAMILY,
    qwen3_xml.FAMILY,
    glm.HUNYUAN,
    glm.FAMILY,
    jamba.FAMILY,
    minimax.FAMILY,
    hermes.FAMILY,
    longcat.FAMILY,
    internlm.FAMILY,
    granite.FAMILY,
    granite_20b.FAMILY,
    gigachat.FAMILY,
    apertus.FAMILY,
    cohere.FAMILY,
    phi4_mini.FAMILY,
    gemma.FUNCTION_GEMMA,
    gemma.GEMMA4,
    tagged_pythonic.LLAMA4,
    tagged_pythonic.LFM2,
    tagged_pythonic.OLMO,
    tagged_pythonic.GEMMA_TOOL_CODE,
    mistral.FAMILY,
    llama3_json.FAMILY,
    xlam.FAMILY,
    pythonic.FAMILY,
    tool_lines.FAMILY,
    harmony.FAMILY,
)
_BY_NAME = {f.name: f for f in FAMILIES}


def family_names() -> list[str]:
    return [f.name for f in FAMILIES]


def family_example(family: str, name: str, arguments: dict[str, Any]) -> str | None:
    """One call written the way `family` writes it, or None for a family not known."""
    f = _BY_NAME.get(family)
    return f.example(name, arguments) if f is not None else None


def family_takes_one_list(family: str) -> bool:
    """Does `family` put all the calls of a turn in one list, rather than one block each?"""
    f = _BY_NAME.get(family)
    return f is not None and f.one_list


def _pattern(f: Family) -> re.Pattern[str] | None:
    alts = [re.escape(m.open) for m in f.markers] + list(f.triggers)
    return re.compile("|".join(alts)) if alts else None


# The pre-scan. Every family's literal openers (and literal triggers) in one alternation,
# which the regex engine runs at C speed; the few pattern triggers each on their own (one
# alternation mixing them was ten times slower); a reply that matches none, and does not start
# like a whole-reply shape, has no call in any family. Each family's own pattern then says
# which readers run (patterns overlap — a `<tool_calls>` also starts `<tool_call` — so one
# scan cannot name them all).
_PATTERNS = [(f, _pattern(f)) for f in FAMILIES]
_LITERALS_RE = re.compile(
    "|".join(
        sorted(
            {re.escape(m.open) for f in FAMILIES for m in f.markers}
            | {t for f in FAMILIES for t in f.triggers if re.escape(t) == t},
            key=len,
            reverse=True,
        )
    )
)
_PATTERN_TRIGGERS = [
    (f.needs, re.compile("|".join(t for t in f.triggers if re.escape(t) != t)))
    for f in FAMILIES
    if any(re.escape(t) != t for t in f.triggers)
]
_STARTS = "".join(sorted({c for f in FAMILIES for c in f.starts}))
_LEAD = re.compile(r"\s*(?:```[\w-]*[ \t]*\r?\n\s*)?(.)")


def _anything(text: str) -> bool:
    """Could any family be in `text`? The one pass that rules them all out."""
    if _LITERALS_RE.search(text) is not None:
        return True
    low = None
    for needs, pattern in _PATTERN_TRIGGERS:
        if needs:
            low = text.lower() if low is None else low
            if needs not in low:
                continue
        if pattern.search(text) is not None:
            return True
    return False


def _first_char(text: str) -> str:
    """The reply's first character, past whitespace and an opening fence line."""
    m = _LEAD.match(text)
    return m.group(1) if m else ""


def marker_table() -> list[Marker]:
    """Every literal opener, longest first (a stream matches the longest at a position)."""
    return sorted({m for f in FAMILIES for m in f.markers}, key=lambda m: -len(m.open))


def _present(text: str, at_start: bool = True) -> list[Family]:
    first = _first_char(text) if at_start else ""
    whole = bool(first) and first in _STARTS
    if not whole and not _anything(text):
        return []
    return [
        f
        for f, p in _PATTERNS
        if (whole and first in f.starts) or (p is not None and p.search(text) is not None)
    ]


def _merged(spans: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Non-empty spans sorted, overlapping and touching ones joined."""
    merged: list[list[int]] = []
    for a, b in sorted(s for s in spans if s[0] < s[1]):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


class _Taken:
    """Spans already claimed, merged and sorted, for overlap checks in log time (a reply may
    hold thousands of calls)."""

    def __init__(self, spans: Iterable[tuple[int, int]] = ()) -> None:
        merged = _merged(spans)
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def overlaps(self, span: tuple[int, int]) -> bool:
        a, b = span
        if a >= b:
            return False
        k = bisect.bisect_left(self.starts, b) - 1  # the last claimed span starting before b
        return k >= 0 and self.ends[k] > a


def find_calls(text: str, offer: Offer) -> tuple[list[Found], list[tuple[int, int]]]:
    """The calls of every family present, in text order, and every span to remove."""
    # A marker cut off at the very end is markup: read as absent, and removed.
    dangling = _dangling_start(text)
    whole, text = text, text[:dangling] if dangling is not None else text
    families = _present(text, offer.at_start)
    if not families:
        return [], [] if dangling is None else [(dangling, len(whole))]
    calls: list[Found] = []
    taken: list[tuple[int, int]] = []  # by the families before this one
    markup: list[tuple[int, int]] = []
    for family in families:
        reading: Reading = family.read(text, offer)
        before = _Taken(taken)
        mine: list[tuple[int, int]] = []
        for f in reading.calls:
            if before.overlaps((f.start, f.end)):
                continue
            calls.append(f)
            if f.start < f.end:
                mine.append((f.start, f.end))
            markup.extend(f.extra)
        markup.extend(s for s in reading.markup if not before.overlaps(s))
        taken.extend(mine)
    calls.sort(key=lambda f: f.start)
    if "`" in text:
        calls, taken, markup = _outside_inline_code(text, calls, taken, markup)
    spans = taken + markup
    _settle_tail(text, offer, calls, spans)
    if dangling is not None:
        spans.append((dangling, len(whole)))
    return calls, spans


# --------------------------------------------------------------------------- a reply cut short


def _markers() -> tuple[re.Pattern[str], dict[str, tuple[Marker, Family]]]:
    owner: dict[str, tuple[Marker, Family]] = {}
    for f in FAMILIES:
        for m in f.markers:
            owner.setdefault(m.open, (m, f))
    pattern = re.compile("|".join(re.escape(o) for o in sorted(owner, key=len, reverse=True)))
    return pattern, owner


MARKER_RE, _OWNER = _markers()
_OPEN_BEFORE = re.compile(
    "(?:" + "|".join(re.escape(o) for o in sorted(_OWNER, key=len, reverse=True)) + r")\s*$"
)
# Openers and closes a reply may stop in the middle of (not fences: a backtick ends prose).
_LITERALS = sorted(
    lit
    for lit in {m.open for m, _ in _OWNER.values()}
    | {m.close for m, _ in _OWNER.values() if m.close}
    if not lit.startswith("`")
)
_LONGEST = max(map(len, _LITERALS))
_FIRSTS = sorted({lit[0] for lit in _LITERALS})
_CUT_PREFIXES = {lit[:k] for lit in _LITERALS for k in range(2, len(lit))}
# What may stand between a family's opener and the name of the call it opens: markup and the
# families' own keywords (`function<｜tool▁sep｜>`, `functions.`, `call:`, `{"name": "`,
# `<function=`, `name="`, `to=functions.`); any other word means the name is only mentioned.
_GLUE = r"""[\s"'{\[<>|｜▁:=,.]"""
_KEYWORDS = r"(?:functions|function|call|name|tool_name|invoke|steptml:invoke|commentary|assistant|to|plugin|tool[▁_]sep|tool[▁_]call[▁_]begin|DSML)"


@lru_cache(maxsize=256)
def _call_head(names: frozenset[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?:{_GLUE}|{_KEYWORDS}(?!\w))*?({alts})(?![\w\-])")


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_OPEN_STRING = re.compile(r'"[^"]*\Z')


def _unquoted(text: str) -> str:
    """What follows a name, without the markup closing it and without JSON strings (argument
    values may be prose; the last may be cut off)."""
    return _OPEN_STRING.sub("", _QUOTED.sub('""', text.lstrip("\"'>:= \t\r\n")))


# Prose between a marker and a tool name: the name is mentioned, not being called.
_PROSE = re.compile(r"(?:[A-Za-z]{2,}\s+){2,}[A-Za-z]{2,}")


def _dangling_start(text: str) -> int | None:
    """Where a marker or close cut off by the end of the reply begins (`…}</tool_ca`, at least
    two characters of it), if the reply ends in one."""
    lo, best = max(0, len(text) - _LONGEST), None
    for c in _FIRSTS:  # a handful of characters, each found at C speed
        k = text.find(c, lo, len(text) - 1)
        while k >= 0:
            if text[k:] in _CUT_PREFIXES and (best is None or k < best):
                best = k
                break
            k = text.find(c, k + 1, len(text) - 1)
    return best


def _settle_tail(text: str, offer: Offer, calls: list[Found], spans: list[tuple[int, int]]) -> None:
    """A reply cut off inside its last call (by max_tokens): the call being written is a call
    marked `truncated`, whatever its family, and none of its markup is shown.

    The open region is the text from the last marker whose close never came. Calls read in it
    are truncated when unreadable, or when their family's values are bare text (only the close
    says they are complete); when no reader could take a call there, the first offered name in
    it makes one — unless prose sits between the marker and the name (a mention)."""
    last = None
    # A token alone opens no region; nor does a marker shown in inline code (an example). The
    # backticks of each line are counted as the scan goes: a long line of markers stays linear.
    line, ticks, seen, fence = -1, 0, 0, False
    for m in MARKER_RE.finditer(text):
        if _OWNER[m.group(0)][0].close == "":
            continue
        at = m.start()
        start = text.rfind("\n", seen, at) + 1 or (line if line >= 0 else 0)
        if start != line:  # a new line: count from its start
            line, ticks, seen = start, 0, start
            fence = _FENCE_START.match(text, start) is not None
        ticks += text.count("`", seen, at)
        seen = at
        if fence or ticks % 2 == 0:
            last = m
    if last is None:
        return
    marker, family = _OWNER[last.group(0)]
    if marker.close is not None and text.find(marker.close, last.end()) >= 0:
        return
    start = last.start()
    inside = [f for f in calls if f.end > start]
    cut = False
    for f in inside:
        _, raw, reason = f.args
        # Unreadable because its brackets never closed, or bare-text values never closed:
        # the reply stopped inside it. A call written wrong but whole keeps its own reason.
        open_json = reason is not None and raw[:1] in "{[" and match_bracket(raw, 0) is None
        if open_json or _BY_NAME[f.family].needs_close:
            f.args, f.end, cut = (
                ({}, raw if reason else text[f.start :].strip(), "truncated"),
                len(text),
                True,
            )
    if not inside:
        # No reader could take the call being written: its name, in the call's own position
        # right after the marker (only markup and the family's keywords between), makes one.
        head = _call_head(offer.names).match(text, last.end())
        if head is not None and not _PROSE.search(_unquoted(text[head.end() :])):
            raw = text[start:].strip()
            calls.append(
                Found(start, len(text), head.group(1), ({}, raw, "truncated"), family.name)
            )
            cut = True
    if cut:
        # Markers right before the open region (a section opener) go with it.
        while (opener := _OPEN_BEFORE.search(text, 0, start)) is not None:
            if opener.end() != start:
                break
            start = opener.start()
        spans.append((start, len(text)))


def find_protocol_spans(
    text: str, names: Iterable[str], *, at_start: bool = True
) -> tuple[list[ToolCall], list[tuple[int, int]]]:
    """The calls and the spans to remove, for a region of a stream (`at_start`: whether the
    region begins the reply)."""
    found, spans = find_calls(text, Offer(frozenset(names), {}, at_start))
    return to_tool_calls(found), spans


def in_inline_code(before: str) -> bool:
    """Does a line that begins with `before` leave the next character inside a `code span` (an
    odd number of backticks, on a line that is no fence)? A call shown in inline code is an
    example, not a call."""
    return before.count("`") % 2 == 1 and not before.lstrip().startswith("```")


_FENCE_START = re.compile(r"[ \t\r\f\v]*```")


def _in_inline_code(text: str, i: int) -> bool:
    return in_inline_code(text[text.rfind("\n", 0, i) + 1 : i])


def _outside_inline_code(
    text: str, calls: list[Found], taken: list[tuple[int, int]], markup: list[tuple[int, int]]
) -> tuple[list[Found], list[tuple[int, int]], list[tuple[int, int]]]:
    inside = [f for f in calls if _in_inline_code(text, f.start)]
    dropped = {(f.start, f.end) for f in inside} | {s for f in inside for s in f.extra}
    return (
        [f for f in calls if f not in inside],
        [s for s in taken if s not in dropped],
        [s for s in markup if s not in dropped and not _in_inline_code(text, s[0])],
    )


def remove_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` without `spans`; a code fence left empty around a removed span goes with it."""
    merged = _merged(spans)
    if not merged:
        return text
    # Spans separated by whitespace only share a fence; the whitespace between them stays
    # (removing it would make the result depend on text far from either span).
    groups: list[list[list[int]]] = []
    for span in merged:
        if groups and not text[groups[-1][-1][1] : span[0]].strip():
            groups[-1].append(span)
        else:
            groups.append([span])
    for group in groups:
        first, last = group[0], group[-1]
        before = re.search(
            r"(?:^|\n)([ \t]*```[\w-]*[ \t]*\n\s*)$", text[max(0, first[0] - 200) : first[0]]
        )
        after = re.match(r"\s*```[ \t]*(?:\n|$)", text[last[1] :])
        if before and after:
            first[0] = max(0, first[0] - 200) + before.start(1)
            last[1] += after.end()
    out, pos = [], 0
    for s, e in merged:
        if s >= pos:
            out.append(text[pos:s])
            pos = e
    out.append(text[pos:])
    return "".join(out)


def tidy(text: str) -> str:
    """No run of 3+ newlines, no leading or trailing whitespace."""
    return re.sub(r"\n{3,}", "\n\n", text).strip()


@lru_cache(maxsize=256)
def _offer(names: frozenset[str]) -> Offer:
    return Offer(names)


def read_text_tool_calls(
    text: str,
    valid_names: Iterable[str],
    *,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
    at_start: bool = True,
) -> tuple[list[ToolCall], str]:
    """Every family's prose tool calls: (calls in text order, the text without their markup,
    tidied). Only offered names count; no offered names → ([], text) untouched, since a model
    does not narrate a call it was not offered. `schemas` (tool name → parameters schema)
    types the bare-text values of the XML-style families. `at_start=False` reads a piece of a
    reply that does not begin it (a stream's held region): whole-reply shapes do not apply."""
    names = frozenset(n for n in valid_names if isinstance(n, str) and n)
    if not names or not text:
        return [], text
    offer = Offer(names, schemas or {}, at_start) if schemas or not at_start else _offer(names)
    found, spans = find_calls(text, offer)
    if not found and not spans:
        return [], tidy(text)
    return to_tool_calls(found), tidy(remove_spans(text, spans))
