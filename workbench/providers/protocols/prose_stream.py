"""Stream form of `read_text_tool_calls(...)[1]`: prose is released as soon as it is safe, and
text that may be a call is held until its call is complete and read — so a call's markup split
across chunks is never shown, whatever its family.

What is held, and until when:
- from any family's opening marker (or a prefix of one at the end of what has arrived) until
  the marker's close token (`</tool_call>`, `<|tool_call_end|>`, …); markers without a close
  (`[TOOL_CALLS]`, `<|python_tag|>`, harmony frames, …) hold to the end of the reply, where
  their calls end;
- a `[name(` pythonic list under an offered name, to the end of the reply (only a list that
  ends the reply is a call);
- TOOL/ARGS lines (with the 8 lines after the last one, where their ARGS may run), a line
  starting with `{` until its object closes and the next line shows whether `</tool_call>`
  follows, a fence until it closes and the next line shows whether the reply goes on;
- a whole reply that starts with `{` or `[` (or a fence followed by one), decided at
  `finish()`, since a reply that is only a call object or list is one shape.

A held region is read on its own when it closes, so the text streamed equals the text of the
whole reply read at once. A reply cut off inside a call ends with the region still held: at
`finish()` it is read as a truncated call, never shown as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from workbench.providers.protocols.families import (
    MARKER_RE,
    find_protocol_spans,
    in_inline_code,
    marker_table,
    read_text_tool_calls,
    remove_spans,
)
from workbench.providers.protocols.jsonish import match_object
from workbench.providers.protocols.pythonic import after_prose
from workbench.providers.protocols.tool_lines import LINE_RE

__all__ = ["ProtocolFilter"]

_MARKERS = marker_table()
_CLOSE_OF = {m.open: m.close for m in _MARKERS}
_FIRST_CHARS = sorted({m.open[0] for m in _MARKERS} | {"["})
# Every proper prefix of every opener: a stream's last characters are held while
# they are one of these.
_PREFIXES = {m.open[:k] for m in _MARKERS for k in range(1, len(m.open))}
_LONGEST = max(len(m.open) for m in _MARKERS)
_PY_LIST = re.compile(r"\[\s*([A-Za-z_][\w.]*)\s*\(")
_PY_PARTIAL = re.compile(r"\[\s*([A-Za-z_][\w.]*)?\s*$")
_FENCE_LINE = re.compile(r"^[ \t]*```[\w-]*[ \t]*\r?$")
# A held region longer than this is no call still being written: it is held to the end.
_CHECK_CHARS = 16_384
_CHECK_LINES = 64
# A superset of the prefixes of a TOOL/ARGS line: while a partial line matches, it may still
# become one.
_MAYBE_KEY = re.compile(
    r"^[ \t]*(?:[-*>][ \t]*)?\**[ \t]*(?:t(?:o(?:o(?:l)?)?)?|a(?:r(?:g(?:s)?)?)?)?\**[ \t]*$", re.I
)


def _line_marker(line: str) -> bool:
    body = line.rstrip("\n").rstrip("\r")
    return body.lstrip().startswith("{") or bool(LINE_RE.match(body) or _FENCE_LINE.match(body))


class _Tidy:
    """Emits text the way `read_text_tool_calls` tidies it: no leading or trailing whitespace,
    no run of 3+ newlines. Trailing whitespace is held until text follows it."""

    def __init__(self) -> None:
        self.started = False
        self.ws = ""

    def take(self, s: str) -> str:
        if not s:
            return ""
        s = self.ws + s
        if not self.started:
            s = s.lstrip()
        body = s.rstrip()
        self.ws = s[len(body) :]
        if not body:
            return ""
        self.started = True
        return re.sub(r"\n{3,}", "\n\n", body)


class ProtocolFilter:
    """`feed(chunk)` returns the text safe to show now, `finish()` the rest; together they equal
    `read_text_tool_calls(whole, valid_names)[1]`. No offered names: everything passes."""

    def __init__(self, valid_names: Iterable[str]) -> None:
        self._names = frozenset(n for n in valid_names if isinstance(n, str) and n)
        self._mode = "start" if self._names else "pass"
        self._buf = ""
        self._whole: list[str] = []  # a whole-reply shape, read at the end
        self._held: list[str] = []  # a region held to the end
        self._to_end = False
        self._line_start = True
        self._region: str | None = None
        self._tidy = _Tidy()
        self._shown_line = ""  # what the current line has shown so far (inline code, context)
        self._context = ""  # what the line had shown when the held region opened

    def feed(self, chunk: str) -> str:
        if self._mode == "pass":
            return chunk
        if self._mode == "whole":
            self._whole.append(chunk)
            return ""
        self._buf += chunk
        if self._mode == "start":
            self._decide()
            if self._mode == "whole":
                self._whole, self._buf = [self._buf], ""
        if self._mode != "lines":
            return ""
        return self._tidy.take(self._process())

    def finish(self) -> str:
        if self._mode == "pass":
            return ""
        if self._mode != "lines":
            text = "".join(self._whole) + self._buf
            self._whole, self._buf = [], ""
            return self._tidy.take(read_text_tool_calls(text, self._names)[1])
        out = self._process()
        held = "".join(self._held) if self._to_end else (self._region or "")
        rest = held + self._buf
        self._region, self._buf, self._held, self._to_end = None, "", [], False
        return self._tidy.take(out + self._clean(rest))

    # -- markers

    def _first_marker(self, s: str, before: str = "") -> int | None:
        """Index of the first marker in `s` — a family's opener, or a pythonic list under an
        offered name after prose that introduces it — that is not inside inline code; `before`
        is what the line already showed ahead of `s`."""
        best = None
        for m in MARKER_RE.finditer(s):
            if not in_inline_code(before + s[: m.start()]):
                best = m.start()
                break
        for pm in _PY_LIST.finditer(s, 0, len(s) if best is None else best):
            context = before + s[: pm.start()]
            if pm.group(1) in self._names and after_prose(context, len(context)):
                if not in_inline_code(context):
                    return pm.start()
        return best

    def _cut_marker(self, s: str) -> int | None:
        """Index of a marker that may be cut off at the end of `s` (a suffix some opener, or a
        pythonic list under an offered name, starts with)."""
        window = len(s) - min(len(s), _LONGEST)
        for c in _FIRST_CHARS:
            i = s.find(c, window)
            while i >= 0:
                if s[i:] in _PREFIXES:
                    return i
                if c == "[" and (pp := _PY_PARTIAL.match(s, i)) is not None:
                    word = pp.group(1) or ""
                    if any(n.startswith(word) for n in self._names):
                        return i
                i = s.find(c, i + 1)
        return None

    def _markers_closed(self, region: str) -> bool:
        """Every marker in `region` has a close of its own after it (one without a close never
        has): opens are matched to closes in order, each close used once, so a nested or
        repeated opener needs as many closes."""
        low = region
        used: dict[str, int] = {}  # close token -> where the next unused close may start
        for m in MARKER_RE.finditer(region):
            close = _CLOSE_OF[m.group(0)]
            if close is None:
                return False
            if close == "":
                continue
            token = close
            j = low.find(token, max(m.end(), used.get(token, 0)))
            if j < 0:
                return False
            used[token] = j + len(token)
        return not any(
            pm.group(1) in self._names and after_prose(region, pm.start())
            for pm in _PY_LIST.finditer(region)
        )

    # -- internals

    def _show_line(self, piece: str) -> None:
        if self._line_start:
            self._shown_line = ""
        self._shown_line += piece

    def _decide(self) -> None:
        s = self._buf.lstrip()
        if not s:
            return
        if s[0] in "{[":
            self._mode = "whole"
        elif s[0] == "`":
            if len(s) < 3:
                return
            m = re.match(r"```[\w-]*[ \t]*(\r?\n|[^\s\w-])", s)
            if not s.startswith("```") or (m and m.group(1) not in ("\n", "\r\n")):
                self._mode = "lines"
                return
            after = re.match(r"```[\w-]*[ \t]*\r?\n\s*(\S)", s)
            if after:
                self._mode = "whole" if after.group(1) in "{[" else "lines"
        else:
            self._mode = "lines"

    def _open_region(self, context: str) -> None:
        self._region = ""
        self._context = context

    def _clean(self, region: str) -> str:
        """The region without its markup, read as the whole reply reads it: after what its
        line already showed (inline code opened there, a fence that is no fence mid-line)."""
        context = self._context
        # A held region begins the reply only if nothing was released before it.
        _, spans = find_protocol_spans(
            context + region, self._names, at_start=not self._tidy.started and not context
        )
        whole = remove_spans(context + region, spans)
        if whole.startswith(context):
            return whole[len(context) :]
        cut = len(context)  # a removal reached into what was shown: keep the region's part
        return remove_spans(region, [(max(a, cut) - cut, b - cut) for a, b in spans if b > cut])

    def _closed(self, region: str) -> bool:
        if not self._markers_closed(region):
            return False
        lines = region.split("\n")[:-1]  # the region ends with a newline when checked
        if sum(1 for line in lines if _FENCE_LINE.match(line)) % 2:
            return False  # a fence still open
        offset = 0
        last_p = -1
        inside = 0  # the end of the last object matched: lines before it are inside it
        keyed = braced = False
        for i, line in enumerate(lines):
            stripped = line.lstrip()
            if stripped.startswith("{") and offset >= inside:
                braced = True
                end = match_object(region, offset + len(line) - len(stripped))
                if end is None:
                    return False
                inside = end
                last_p = max(last_p, region.count("\n", 0, end - 1))
            if LINE_RE.match(line.rstrip("\r")):
                keyed = True
            if _FENCE_LINE.match(line):
                braced = True
            if _line_marker(line) or self._first_marker(line) is not None:
                last_p = max(last_p, i)
            offset += len(line) + 1
        after = lines[last_p + 1 :]
        if keyed and len(after) < 8:
            return False
        return not (braced and not any(a.strip() for a in after))

    def _process(self) -> str:
        out: list[str] = []
        buf, p = self._buf, 0
        while True:
            if self._region is not None:
                if self._to_end:
                    self._held.append(buf[p:])
                    p = len(buf)
                    break
                nl = buf.find("\n", p)
                if nl < 0:
                    if len(buf) - p > _CHECK_CHARS:  # one endless line: held to the end
                        self._to_end = True
                        self._held = [self._region, buf[p:]]
                        p = len(buf)
                    break
                self._region += buf[p : nl + 1]
                p = nl + 1
                if len(self._region) > _CHECK_CHARS or self._region.count("\n") > _CHECK_LINES:
                    # Too long for a call still being written: held to the end, read once there
                    # (checking a growing region on every line would be quadratic).
                    self._to_end = True
                    self._held = [self._region]
                elif self._closed(self._region):
                    out.append(self._clean(self._region))
                    self._region = None
                    self._line_start = True
                    self._shown_line = self._context = ""
                continue
            nl = buf.find("\n", p)
            if nl >= 0:
                line = buf[p : nl + 1]
                if self._line_start and _line_marker(line):
                    self._open_region("")
                    continue
                # What this line showed before (a chunk ago) is its context: inline code
                # opened there still holds.
                before = "" if self._line_start else self._shown_line
                self._line_start = True
                m = self._first_marker(line, before)
                if m is None:
                    out.append(line)
                    self._shown_line = ""
                    p = nl + 1
                    continue
                self._shown_line = before + line[:m]
                out.append(line[:m])
                self._open_region(self._shown_line)
                p += m
                self._line_start = False
                continue
            # A partial last line: a marker in it opens a region now; text that could still
            # become protocol is held; the rest is released.
            rest = buf[p:]
            if self._line_start and (_line_marker(rest) or len(rest) > _CHECK_CHARS):
                self._open_region("")
                continue
            if self._line_start and (_MAYBE_KEY.match(rest) or rest.lstrip().startswith("`")):
                break
            m = self._first_marker(rest, "" if self._line_start else self._shown_line)
            if m is not None:
                self._show_line(rest[:m])
                out.append(rest[:m])
                self._open_region(self._shown_line)
                p += m
                self._line_start = False
                continue
            m = self._cut_marker(rest)
            cut = len(rest) if m is None else m
            self._show_line(rest[:cut])
            out.append(rest[:cut])
            p += cut
            if cut:
                self._line_start = False
            break
        self._buf = buf[p:]
        return "".join(out)
