"""`workbench probe`: one tool-bearing request (and one picture, where a model may see) to every
model, and the verdict each one earns.

A probe is just a real call whose classification is recorded with provenance `probe`: the
same observation step that watches routed traffic decides, so a probe can never claim more
than live traffic would.
"""

from __future__ import annotations

import asyncio
import struct
import time
import zlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from workbench.capability import CapabilityObserver, MemoryCapabilityStore, model_sees_images
from workbench.errors import ProviderError
from workbench.events import VerdictEvent
from workbench.providers.base import HttpProvider
from workbench.routing import attempt as steps
from workbench.types import CallContext, ChatRequest, user

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
TOOL_PROMPT = "What is the weather in Paris? Use a tool if you have one."
VISION_PROMPT = "What colour is this image? Answer with one word."
PROBE_COLOUR = ("red", (220, 20, 20))


def solid_png(rgb: tuple[int, int, int], size: int = 16) -> bytes:
    """A tiny PNG of one colour, made here: the probe needs no image file and no download."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    row = b"\x00" + bytes(rgb) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * size))
        + chunk(b"IEND", b"")
    )


@dataclass(slots=True)
class ProbeRow:
    provider: str
    model: str
    capability: str
    verdict: str
    recorded: bool
    evidence: str
    status: int | None
    latency_ms: float
    error: str | None = None
    protocol_family: str | None = None  # the prose format of a `text` tools verdict

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def _probe_one(
    provider: HttpProvider,
    model: str,
    capability: str,
    observer: CapabilityObserver,
    events: list[VerdictEvent],
    timeout_s: float,
) -> ProbeRow:
    if capability == "tools":
        request = ChatRequest(messages=[user(TOOL_PROMPT)], tools=[WEATHER_TOOL], max_tokens=200)
        ctx = CallContext(timeout_s=timeout_s, purpose="probe")
    else:
        name, rgb = PROBE_COLOUR
        request = ChatRequest(messages=[user(VISION_PROMPT, solid_png(rgb))], max_tokens=50)
        ctx = CallContext(timeout_s=timeout_s, purpose="probe", expect_image=name)
    started = time.perf_counter()
    status: int | None = None
    error: str | None = None
    attempt = steps.single(provider, model, request, ctx)
    try:
        reply = await provider.call(request, ctx, model)
        status = reply.raw_status
        await steps.observe_reply(observer, attempt, reply)
    except ProviderError as exc:
        status = exc.status_code or None
        error = str(exc)
        await steps.observe_failure(observer, attempt, exc)
    latency = (time.perf_counter() - started) * 1000
    mine = [
        e
        for e in events
        if e.provider == provider.id and e.model == model and e.capability == capability
    ]
    if mine:
        event = mine[-1]
        return ProbeRow(
            provider.id,
            model,
            capability,
            event.verdict,
            event.recorded,
            event.evidence,
            status,
            round(latency, 1),
            error,
            event.protocol_family,
        )
    # No classification at all (e.g. a transport failure before any status): nothing observed.
    return ProbeRow(
        provider.id,
        model,
        capability,
        "unobserved",
        False,
        error or "no response",
        status,
        round(latency, 1),
        error,
    )


async def probe_models(
    providers: Iterable[HttpProvider],
    *,
    vision: bool = True,
    concurrency: int = 8,
    timeout_s: float = 30.0,
    observer: CapabilityObserver | None = None,
) -> list[ProbeRow]:
    """Probe every model of every provider; rows come back in the providers' order.

    Every call is observed with provenance `probe` into one store (returned rows carry the
    classification, recorded or not)."""
    events: list[VerdictEvent] = []
    observer = observer or CapabilityObserver(MemoryCapabilityStore(), via="probe")
    observer.sinks = (*observer.sinks, events.append)
    models: list[tuple[HttpProvider, str, list[str]]] = []
    for provider in providers:
        for spec in provider.models:
            kinds = ["tools"]
            if vision and model_sees_images(provider, spec.id) != "no":
                kinds.append("vision")
            models.append((provider, spec.id, kinds))
    gate = asyncio.Semaphore(concurrency)

    async def run(provider: HttpProvider, model: str, kinds: list[str]) -> list[ProbeRow]:
        # One model's probes go in order (tools, then the picture): a vendor's per-model
        # schedule of failures or limits then reads the same on every run.
        async with gate:
            return [
                await _probe_one(provider, model, k, observer, events, timeout_s) for k in kinds
            ]

    per_model = await asyncio.gather(*(run(*m) for m in models))
    return [row for rows in per_model for row in rows]


def _verdict_cell(row: ProbeRow) -> str:
    """`text (mistral)`: which format a model writes its calls in is half of a text verdict."""
    family = f" ({row.protocol_family})" if row.protocol_family else ""
    return row.verdict + family + ("" if row.recorded else " ·")


def verdict_table(rows: list[ProbeRow]) -> str:
    """A plain-text table for the terminal: provider, model, capability, verdict, evidence."""
    head = ("provider", "model", "kind", "verdict", "latency", "evidence")
    body = [
        (r.provider, r.model, r.capability, _verdict_cell(r), f"{r.latency_ms:.0f} ms", r.evidence)
        for r in rows
    ]
    widths = [max(len(str(x[i])) for x in [head, *body]) for i in range(len(head) - 1)]
    lines = []
    for row in [head, *body]:
        cells = [str(c).ljust(w) for c, w in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, str(row[-1])]).rstrip())
    lines.insert(1, "-" * min(120, max(len(line) for line in lines)))
    lines.append("· = not recorded (no evidence either way)")
    return "\n".join(lines)
