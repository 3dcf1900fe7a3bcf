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
from workbench.providers.protocols.reading import Family, Found, Marker, Offer, Reading
from workbench.types import ToolCall

__all__ = [
    "FAMILIES",
    "family_example",
    "family_names",
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


def _pattern(f: Family) -> re.Pattern[str] | None:
    alts = [re.escape(m.open) for m in f.markers] + list(f.triggers)
    return re.compile("|".join(alts)) if alts else None


# One alternation of every opener and trigger: a reply it does not match has no call in any
# family. Each family's own pattern then says which readers to run (patterns overlap — a
# `<tool_calls>` also starts `<tool_call` — so one scan cannot name them all).
_PATTERNS = [(f, _pattern(f)) for f in FAMILIES]
_PRESCAN = re.compile("|".join(f"(?:{p.pattern})" for _, p in _PATTERNS if p is not None))


def marker_table() -> list[Marker]:
    """Every literal opener, longest first (a stream matches the longest at a position)."""
    return sorted({m for f in FAMILIES for m in f.markers}, key=lambda m: -len(m.open))


def _present(text: str) -> list[Family]:
    if _PRESCAN.search(text) is None:
        return []
    return [f for f, p in _PATTERNS if p is not None and p.search(text) is not None]


class _Taken:
    """Spans already claimed, merged and sorted, for overlap checks in log time (a reply may
    hold thousands of calls)."""

    def __init__(self, spans: Iterable[tuple[int, int]] = ()) -> None:
        merged: list[list[int]] = []
        for a, b in sorted(s for s in spans if s[0] < s[1]):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
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
    families = _present(text)
    if not families:
        return [], []
    # A marker cut off at the very end is read as absent, and goes with the calls.
    dangling = _dangling_start(text)
    whole, text = text, text[:dangling] if dangling is not None else text
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
    spans = taken + markup
    _settle_tail(text, offer, calls, spans)
    if dangling is not None and calls:
        spans.append((dangling, len(whole)))
    return calls, spans


# --------------------------------------------------------------------------- a reply cut short


def _markers() -> tuple[re.Pattern[str], dict[str, tuple[Marker, Family]]]:
    owner: dict[str, tuple[Marker, Family]] = {}
    for f in FAMILIES:
        for m in f.markers:
            owner.setdefault(m.open.lower(), (m, f))
    pattern = re.compile("|".join(re.escape(o) for o in sorted(owner, key=len, reverse=True)), re.I)
    return pattern, owner


_MARKER_RE, _OWNER = _markers()
_OPEN_BEFORE = re.compile(
    "(?:" + "|".join(re.escape(o) for o in sorted(_OWNER, key=len, reverse=True)) + r")\s*$", re.I
)
_LITERALS = sorted(
    {m.open.lower() for m, _ in _OWNER.values()}
    | {m.close.lower() for m, _ in _OWNER.values() if m.close},
    key=len,
)
_LONGEST = max(map(len, _LITERALS))
_FIRSTS = {lit[0] for lit in _LITERALS} | {lit[0].upper() for lit in _LITERALS}
# Prose between a marker and a tool name: the name is mentioned, not being called.
_PROSE = re.compile(r"(?:[A-Za-z]{2,}\s+){2,}[A-Za-z]{2,}")


def _dangling_start(text: str) -> int | None:
    """Where a marker or close cut off by the end of the reply begins (`…}</tool_ca`), if
    the reply ends in one."""
    for k in range(max(0, len(text) - _LONGEST), len(text)):
        if text[k] in _FIRSTS:
            tail = text[k:].lower()
            if any(lit.startswith(tail) and lit != tail for lit in _LITERALS):
                return k
    return None


def _settle_tail(text: str, offer: Offer, calls: list[Found], spans: list[tuple[int, int]]) -> None:
    """A reply cut off inside its last call (by max_tokens): the call being written is a call
    marked `truncated`, whatever its family, and none of its markup is shown.

    The open region is the text from the last marker whose close never came. Calls read in it
    are truncated when unreadable, or when their family's values are bare text (only the close
    says they are complete); when no reader could take a call there, the first offered name in
    it makes one — unless prose sits between the marker and the name (a mention)."""
    last = None
    for m in _MARKER_RE.finditer(text):
        if _OWNER[m.group(0).lower()][0].close != "":  # a token alone opens no region
            last = m
    if last is None:
        return
    marker, family = _OWNER[last.group(0).lower()]
    if marker.close is not None and text.lower().find(marker.close.lower(), last.end()) >= 0:
        return
    start = last.start()
    inside = [f for f in calls if f.end > start]
    cut = False
    for f in inside:
        _, raw, reason = f.args
        if reason is not None or _BY_NAME[f.family].needs_close:
            f.args, f.end, cut = (
                ({}, raw if reason else text[f.start :].strip(), "truncated"),
                len(text),
                True,
            )
    if not inside:
        after = last.end()
        names = "|".join(re.escape(n) for n in sorted(offer.names, key=len, reverse=True))
        # The last name written is the call being written (`functions.ping:` is Kimi's id).
        nm = None
        for hit in re.finditer(rf"(?<![\w])(?:{names})(?![\w])", text[after:]):
            nm = hit
        if nm is not None and not _PROSE.search(text[last.end() : after + nm.start()]):
            raw = text[start:].strip()
            calls.append(Found(start, len(text), nm.group(0), ({}, raw, "truncated"), family.name))
            cut = True
    if cut:
        # Markers right before the open region (a section opener) go with it.
        while (opener := _OPEN_BEFORE.search(text, 0, start)) is not None:
            if opener.end() != start:
                break
            start = opener.start()
        spans.append((start, len(text)))


def find_protocol_spans(
    text: str, names: Iterable[str]
) -> tuple[list[ToolCall], list[tuple[int, int]]]:
    """The calls and the spans to remove, for a region of a stream."""
    found, spans = find_calls(text, _offer(frozenset(names)))
    return _to_calls(found), spans


def remove_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` without `spans`; a code fence left empty around a removed span goes with it."""
    merged: list[list[int]] = []
    for s, e in sorted(x for x in spans if x[0] < x[1]):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
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


def _to_calls(found: Iterable[Found]) -> list[ToolCall]:
    out: list[ToolCall] = []
    for k, f in enumerate(found):
        args, raw, reason = f.args
        out.append(
            ToolCall(
                id=f"text_{k}_{f.name}",
                name=f.name,
                arguments=args,
                raw_arguments=raw,
                invalid=reason is not None,
                invalid_reason=reason,
                source="text",
                family=f.family,
            )
        )
    return out


@lru_cache(maxsize=256)
def _offer(names: frozenset[str]) -> Offer:
    return Offer(names)


def read_text_tool_calls(
    text: str,
    valid_names: Iterable[str],
    *,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[list[ToolCall], str]:
    """Every family's prose tool calls: (calls in text order, the text without their markup,
    tidied). Only offered names count; no offered names → ([], text) untouched, since a model
    does not narrate a call it was not offered. `schemas` (tool name → parameters schema)
    types the bare-text values of the XML-style families."""
    names = frozenset(n for n in valid_names if isinstance(n, str) and n)
    if not names or not text:
        return [], text
    offer = Offer(names, schemas) if schemas else _offer(names)
    found, spans = find_calls(text, offer)
    if not found and not spans:
        return [], tidy(text)
    return _to_calls(found), tidy(remove_spans(text, spans))
