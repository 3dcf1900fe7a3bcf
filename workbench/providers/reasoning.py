"""Keep reasoning and tool-call protocol out of the text a reader sees.

`strip_reasoning` is the rule for a whole reply; `ReasoningFilter` applies it to a stream,
chunk by chunk, releasing text as soon as it is safe (`protocols.stream.ProtocolFilter` does
the same for tool-call markup).

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

__all__ = ["ReasoningFilter", "strip_reasoning"]

# (open, close) of every reasoning convention: DeepSeek-R1/Qwen `<think>`, Seed-OSS, Cohere
# Command, and gpt-oss harmony's analysis channel.
_PAIRS = (
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|channel|>analysis<|message|>", "<|end|>"),
)
_OPENS = {o.lower(): k for k, (o, _) in enumerate(_PAIRS)}
_CLOSES = {c.lower(): k for k, (_, c) in enumerate(_PAIRS)}
_TAG = re.compile("|".join(re.escape(t) for pair in _PAIRS for t in pair), re.I)
_TAGS = tuple(t.lower() for pair in _PAIRS for t in pair)
# A close with no open hides everything before it (the template opened the block), except
# harmony's `<|end|>`, which also ends messages that are not reasoning.
_LONE_HIDES = {k for k, (_, c) in enumerate(_PAIRS) if c != "<|end|>"}


class _Scan:
    """The one reading of reasoning tags both the whole-text and the streaming forms share: an
    open tag starts a hidden block (other opens inside are ignored), its own close ends it, a
    lone close hides everything before it, and an unterminated block hides to the end."""

    def __init__(self) -> None:
        self.block: int | None = None
        self.visible: list[str] = []

    @property
    def in_think(self) -> bool:
        return self.block is not None

    def run(self, text: str) -> bool:
        """Scan `text`; True when a lone close discarded what was visible so far."""
        lone = False
        pos = 0
        for m in _TAG.finditer(text):
            tag = m.group(0).lower()
            if self.block is None:
                self.visible.append(text[pos : m.start()])
                if tag in _OPENS:
                    self.block = _OPENS[tag]
                elif _CLOSES[tag] in _LONE_HIDES:
                    self.visible.clear()
                    lone = True
                else:
                    self.visible.append(m.group(0))
            elif _CLOSES.get(tag) == self.block:
                self.block = None
            pos = m.end()
        if self.block is None:
            self.visible.append(text[pos:])
        return lone


def strip_reasoning(text: str) -> str:
    """`text` without reasoning blocks — `<think>…</think>`, `<seed:think>…</seed:think>`,
    `<|START_THINKING|>…<|END_THINKING|>`, harmony's `<|channel|>analysis<|message|>…<|end|>`
    (case-insensitive, across lines) — without an unterminated block to the end, and without
    everything before a lone close (but harmony's `<|end|>`). Leading whitespace is dropped
    (a reply never starts with meaningful whitespace)."""
    scan = _Scan()
    scan.run(text)
    return "".join(scan.visible).lstrip()


_LONGEST_TAG = max(len(t) for t in _TAGS)


def _partial_tag_start(buf: str) -> int:
    """Where a possibly partial reasoning tag begins at the end of `buf`, else len(buf)."""
    for i in range(max(0, len(buf) - _LONGEST_TAG + 1), len(buf)):
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
