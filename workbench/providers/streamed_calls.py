"""Reading server-sent events and assembling streamed tool calls.

Two wire facts shape this module: OpenAI, Groq and OpenRouter send each tool call in
fragments keyed by `index` (the first carries id and name, the rest argument pieces), while
Gemini's OpenAI-compatible stream sends parallel calls whole, each with its own id and NO
index — and may concatenate several argument objects into one string.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any

from workbench.providers.protocols import match_object, native_tool_call
from workbench.types import ToolCall

__all__ = ["SseCut", "ToolSlots", "iter_sse_json", "split_json_objects", "sse_frames"]


class SseCut(ValueError):
    """The byte stream ended inside a frame: the connection broke mid-event, which is an
    interruption, unlike a stream that simply ends after whole frames."""


def sse_frames(buffer: str) -> tuple[list[str], str]:
    """(payloads, remainder): complete lines of `buffer` read as SSE. Comments (`:`), `event:`
    lines, blank lines, empty payloads and `[DONE]` are skipped; a `data:` prefix is removed and
    a line without one is taken whole. The last, unterminated piece is the remainder."""
    pieces = buffer.split("\n")
    rest = pieces.pop()
    frames: list[str] = []
    for raw in pieces:
        line = raw.strip()
        if not line or line.startswith(":") or line.startswith("event:"):
            continue
        payload = line[5:].strip() if line.startswith("data:") else line
        if payload and payload != "[DONE]":
            frames.append(payload)
    return frames, rest


def split_json_objects(args: str) -> list[str]:
    """Split `{"a":1}{"b":2}` into its objects; anything else (one object, a fragment, text
    that does not parse) comes back whole as `[args]`."""
    if not args.strip().startswith("{"):
        return [args]
    parts: list[str] = []
    start = len(args) - len(args.lstrip())
    while start < len(args):
        end = match_object(args, start)
        if end is None:
            return [args]  # an object that never closes: a fragment, not a list of calls
        parts.append(args[start:end])
        start = end + (len(args[end:]) - len(args[end:].lstrip()))
        if start < len(args) and args[start] != "{":
            return [args]
    if len(parts) < 2:
        return [args]
    for p in parts:
        try:
            json.loads(p)
        except ValueError:
            return [args]
    return parts


@dataclass(slots=True)
class _Slot:
    id: str | None = None
    name: str | None = None
    args: str = ""


class ToolSlots:
    """Streamed tool-call fragments, assembled into calls. One slot per wire index; a fragment
    with a NEW id on a slot that already holds a named call with another id opens a new slot
    numbered max(next_slot, index) — that is how Gemini's un-indexed parallel calls stay apart."""

    def __init__(self) -> None:
        self._slots: dict[int, _Slot] = {}
        self._route: dict[int, int] = {}  # wire index -> slot currently receiving it
        self._next = 0

    def absorb(self, index: int | None, id: str | None, name: str | None, args: str | None) -> None:
        wire = index if isinstance(index, int) and index >= 0 else 0
        n = self._route.get(wire, wire)
        slot = self._slots.get(n)
        if slot is not None and id and slot.name and slot.id and slot.id != id:
            n = max(self._next, wire)
            slot = None
        if slot is None:
            slot = self._slots[n] = _Slot()
            self._next = max(self._next, n + 1)
        self._route[wire] = n
        if id:
            slot.id = id
        if name:
            slot.name = name
        if args:
            slot.args += args

    def calls(self) -> list[ToolCall]:
        out: list[ToolCall] = []
        for n in sorted(self._slots):
            slot = self._slots[n]
            if not slot.name:
                continue
            for i, part in enumerate(split_json_objects(slot.args)):
                if i == 0:
                    call_id = slot.id or f"call_{n}"
                else:
                    call_id = f"{slot.id or 'call'}-{i}"
                out.append(native_tool_call(call_id, slot.name, part))
        return out


async def iter_sse_json(byte_iter: AsyncIterable[bytes | str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of an SSE byte stream. Decoding is incremental, so a multi-byte
    character split across chunks survives; whole frames that are not JSON objects are skipped.
    Errors of the underlying iterator propagate; the one error of its own is `SseCut`, when the
    stream ends on an unterminated frame that does not parse (a frame cut in the middle)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    buffer = ""
    async for chunk in byte_iter:
        buffer += chunk if isinstance(chunk, str) else decoder.decode(chunk)
        frames, buffer = sse_frames(buffer)
        for frame in _objects(frames):
            yield frame
    buffer += decoder.decode(b"", final=True)
    frames, _ = sse_frames(buffer + "\n")
    objects = _objects(frames)
    if frames and not objects:
        raise SseCut(f"{len(buffer)} byte(s) of an unfinished frame")
    for frame in objects:
        yield frame


def _objects(frames: list[str]) -> list[dict[str, Any]]:
    out = []
    for f in frames:
        try:
            value = json.loads(f)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out
