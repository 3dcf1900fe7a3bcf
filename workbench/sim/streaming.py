"""Pacing and cutting of simulated streams, shared by both surfaces."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from workbench.sim.conversation import estimate_tokens_from_chars
from workbench.sim.fleet import Persona

# A stream_cut failure closes the connection after this many text chunks.
CUT_AFTER_CHUNKS = 3


class StreamCut(Exception):
    """Raised inside a stream body: the server drops the connection without finishing it."""


def text_chunks(text: str) -> list[str]:
    """Word-sized pieces (each keeps its trailing whitespace), like tokens on the wire."""
    return re.findall(r"\S+\s*|\s+", text) if text else []


def sse(obj: Any) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


class Pacer:
    """Sleeps time-to-first-token once, then the inter-token time of each chunk."""

    def __init__(self, persona: Persona) -> None:
        self.persona = persona
        self.first = True

    async def before(self, piece: str) -> None:
        if self.first:
            self.first = False
            await asyncio.sleep(self.persona.ttft_ms / 1000)
            return
        tokens = estimate_tokens_from_chars(len(piece))
        await asyncio.sleep(tokens / self.persona.tokens_per_s)
