"""Keep reasoning and tool-call protocol out of the text a reader sees.

`strip_reasoning` is the rule for a whole reply; `ReasoningFilter` and `ProtocolLineFilter`
apply the same rules to a stream, chunk by chunk, releasing text as soon as it is safe.

Why the reasoning filter holds the start of a stream: some models (DeepSeek-R1 style) are
prompted with `<think>` by their template and emit only the closing `</think>`, so everything
before a *lone* `</think>` is reasoning — but that is only known once the tag arrives. Holding
the whole stream until the end would defeat streaming, so the filter holds the visible text
until the stream has produced `lone_close_window` characters (default 400, about 100 tokens),
then releases it and streams normally. The trade-off, stated once: a lone `</think>` that
ends within the window is honoured exactly (the stream equals `strip_reasoning` of the
whole); one arriving later cannot take back text already shown, so only the tag itself is
dropped. A model whose reasoning runs past the window will leak it to a streaming reader;
the final `Reply.text` (built with `strip_reasoning`) is always right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from workbench.providers.protocol import (
    LINE_RE,
    find_protocol_spans,
    match_object,
    read_text_tool_calls,
    remove_spans,
)

__all__ = ["ProtocolLineFilter", "ReasoningFilter", "strip_reasoning"]

_TAG = re.compile(r"<(/?)think>", re.I)
_TAGS = ("<think>", "</think>")


class _Scan:
    """The one reading of think tags both the whole-text and the streaming forms share:
    `<think>` opens a hidden block (nested opens are ignored), `</think>` closes it, a lone
    `</think>` hides everything before it, and an unterminated block hides to the end."""

    def __init__(self) -> None:
        self.in_think = False
        self.visible: list[str] = []

    def run(self, text: str) -> bool:
        """Scan `text`; True when a lone `</think>` discarded what was visible so far."""
        lone = False
        pos = 0
        for m in _TAG.finditer(text):
            if not self.in_think:
                self.visible.append(text[pos : m.start()])
            if m.group(1):
                if self.in_think:
                    self.in_think = False
                else:
                    self.visible.clear()
                    lone = True
            else:
                self.in_think = True
            pos = m.end()
        if not self.in_think:
            self.visible.append(text[pos:])
        return lone


def strip_reasoning(text: str) -> str:
    """`text` without `<think>…</think>` blocks (case-insensitive, across lines), without an
    unterminated `<think>` to the end, and without everything before a lone `</think>`.
    Leading whitespace is dropped (a reply never starts with meaningful whitespace)."""
    scan = _Scan()
    scan.run(text)
    return "".join(scan.visible).lstrip()


def _partial_tag_start(buf: str) -> int:
    """Where a possibly partial think tag begins at the end of `buf`, else len(buf)."""
    for i in range(max(0, len(buf) - 8), len(buf)):
        if buf[i] == "<":
            tail = buf[i:].lower()
            if any(t.startswith(tail) and t != tail for t in _TAGS):
                return i
    return len(buf)


class ReasoningFilter:
    """Stream form of `strip_reasoning`: `feed(chunk)` returns the text safe to show now,
    `finish()` the rest. See the module docstring for the `lone_close_window` trade-off."""

    def __init__(self, lone_close_window: int = 400) -> None:
        self.window = lone_close_window
        self._scan = _Scan()
        self._pending = ""
        self._consumed = 0
        self._released = False
        self._started = False

    def _take(self) -> str:
        out = "".join(self._scan.visible)
        self._scan.visible.clear()
        if not self._started:
            out = out.lstrip()
            self._started = bool(out)
        return out

    def feed(self, chunk: str) -> str:
        self._consumed += len(chunk)
        buf = self._pending + chunk
        cut = _partial_tag_start(buf)
        self._pending = buf[cut:]
        # Before the release a lone close clears the held text; after it, it cannot take back
        # what was shown, so only the tag goes.
        self._scan.run(buf[:cut])
        if not self._released and self._consumed >= self.window:
            self._released = True
        return self._take() if self._released else ""

    def finish(self) -> str:
        self._scan.run(self._pending)
        self._pending = ""
        self._released = True
        return self._take()


# --------------------------------------------------------------------------- protocol lines

_TAG_MARKERS = ("<tool_call", "</tool_call", "<function=", "</function")
_FENCE_LINE = re.compile(r"^[ \t]*```[\w-]*[ \t]*\r?$")
# A superset of the prefixes of a TOOL/ARGS line: while a partial line matches, it may still
# become one.
_MAYBE_KEY = re.compile(
    r"^[ \t]*(?:[-*>][ \t]*)?\**[ \t]*(?:t(?:o(?:o(?:l)?)?)?|a(?:r(?:g(?:s)?)?)?)?\**[ \t]*$", re.I
)
_TC_OPEN = re.compile(r"<tool_call\b[^>]*>", re.I)
_TC_CLOSE = re.compile(r"</tool_call\s*>", re.I)
_FN_OPEN = re.compile(r"<function=[^>\s]+\s*>", re.I)
_FN_CLOSE = re.compile(r"</function\s*>", re.I)


def _first_marker(s: str, partial: bool) -> int | None:
    """Index of the first tag marker in `s` (or, when `partial`, of a marker cut off at the end)."""
    low = s.lower()
    best = None
    for mk in _TAG_MARKERS:
        i = low.find(mk)
        if i >= 0 and (best is None or i < best):
            best = i
    if partial:
        for i in range(max(0, len(s) - 12), len(s)):
            if s[i] == "<" and any(mk.startswith(low[i:]) for mk in _TAG_MARKERS):
                return i if best is None else min(best, i)
    return best


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


class ProtocolLineFilter:
    """Stream form of `read_text_tool_calls(...)[1]`: prose is released line by line, lines that
    may be tool-call protocol are held until their call is complete and read.

    Held: TOOL/ARGS lines (with the 8 lines after the last one, where their ARGS may run), any
    text from a `<tool_call`/`</tool_call>`/`<function=` marker until its tag closes, a line
    starting with `{` until its object closes and the next line shows whether `</tool_call>`
    follows, fence lines until the next line, and — because a reply that is only a call object
    or a pythonic list is one shape — a whole reply that starts with `{` or `[` (or a fence
    followed by one), decided at `finish()`."""

    def __init__(self, valid_names: Iterable[str]) -> None:
        self._names = {n for n in valid_names if isinstance(n, str) and n}
        self._mode = "start" if self._names else "pass"
        self._buf = ""
        self._line_start = True
        self._region: str | None = None
        self._tidy = _Tidy()

    def feed(self, chunk: str) -> str:
        if self._mode == "pass":
            return chunk
        self._buf += chunk
        if self._mode == "start":
            self._decide()
        if self._mode != "lines":
            return ""
        return self._tidy.take(self._process())

    def finish(self) -> str:
        if self._mode == "pass":
            return ""
        if self._mode != "lines":
            text, self._buf = self._buf, ""
            return self._tidy.take(read_text_tool_calls(text, self._names)[1])
        out = self._process()
        rest = (self._region or "") + self._buf
        self._region, self._buf = None, ""
        return self._tidy.take(out + self._clean(rest))

    # -- internals

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

    def _clean(self, region: str) -> str:
        _, spans = find_protocol_spans(region, self._names)
        return remove_spans(region, spans)

    def _closed(self, region: str) -> bool:
        if len(_TC_OPEN.findall(region)) > len(_TC_CLOSE.findall(region)):
            return False
        if len(_FN_OPEN.findall(region)) > len(_FN_CLOSE.findall(region)):
            return False
        lines = region.split("\n")[:-1]  # the region ends with a newline when checked
        offset = 0
        last_p = -1
        keyed = braced = False
        for i, line in enumerate(lines):
            stripped = line.lstrip()
            if stripped.startswith("{"):
                braced = True
                end = match_object(region, offset + len(line) - len(stripped))
                if end is None:
                    return False
                last_p = max(last_p, region[: end - 1].count("\n"))
            if LINE_RE.match(line.rstrip("\r")):
                keyed = True
            if _FENCE_LINE.match(line):
                braced = True
            if _line_marker(line) or _first_marker(line, False) is not None:
                last_p = max(last_p, i)
            offset += len(line) + 1
        after = lines[last_p + 1 :]
        if keyed and len(after) < 8:
            return False
        return not (braced and not any(a.strip() for a in after))

    def _process(self) -> str:
        out: list[str] = []
        while True:
            if self._region is not None:
                while "\n" in self._buf:
                    i = self._buf.index("\n") + 1
                    self._region += self._buf[:i]
                    self._buf = self._buf[i:]
                    if self._closed(self._region):
                        out.append(self._clean(self._region))
                        self._region = None
                        self._line_start = True
                        break
                if self._region is not None:
                    break
                continue
            if "\n" in self._buf:
                i = self._buf.index("\n") + 1
                line, self._buf = self._buf[:i], self._buf[i:]
                if self._line_start and _line_marker(line):
                    self._region = ""
                    self._buf = line + self._buf
                    continue
                self._line_start = True
                m = _first_marker(line, False)
                if m is None:
                    out.append(line)
                    continue
                out.append(line[:m])
                self._region = ""
                self._buf = line[m:] + self._buf
                self._line_start = False
                continue
            # A partial last line: held only while it could still become protocol.
            if self._line_start and (
                _MAYBE_KEY.match(self._buf)
                or _line_marker(self._buf)
                or self._buf.lstrip().startswith("`")
            ):
                break
            m = _first_marker(self._buf, True)
            cut = len(self._buf) if m is None else m
            out.append(self._buf[:cut])
            self._buf = self._buf[cut:]
            if cut:
                self._line_start = False
            break
        return "".join(out)
