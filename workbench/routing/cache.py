"""The response cache step of the attempt pipeline: what a cached answer is keyed on, and what
a cache must offer.

The key is everything that decides an answer, computed on the request AS PLANNED for this
model, right before it is sent: provider, base URL (or, for a server this process started on a
free port, the name it was given: its port is new every run), model, system prompt, messages,
the tools as offered (natively, or only described in prose), generation settings, whether
personal data was masked, and the repeat number. A reply cached under one plan is therefore
never served to another: a model planned for prose tool calls is asked a different question
than the same model offered native tools. The key and the stored reply are the caller's own
words (taken before masking, after unmasking), with whether the request left masked in the
key: a cache is local, like the outputs it saves. Only successes are cached (an error is a
fact about a moment, not about the question); a hit is marked `cached`, logged as such, and
never counted as latency.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any, Protocol

from workbench.types import ChatRequest, Reply, ToolCall, Usage

__all__ = ["ResponseCache", "cache_key", "reply_from_dict", "reply_to_dict"]


class ResponseCache(Protocol):
    def get(self, cache_key: str, now_ms: int) -> dict[str, Any] | None: ...

    def put(
        self, cache_key: str, provider: str, model: str, reply: dict[str, Any], ttl_s: float | None
    ) -> None: ...


def cache_key(
    provider: str,
    origin: str,
    model: str,
    request: ChatRequest,
    *,
    repeat: int = 0,
    masked: bool = False,
) -> str:
    """A stable hash of what decides the answer (never the credential: it changes no answer).

    The repeat number is part of it, as evaluation tools put the epoch in theirs: repeats
    exist to measure variance, so repeat 2 must not be answered by repeat 1."""
    material = {
        # 2: a cached reply keeps `content` (the text as written); older entries lack it.
        # 3: replies read by every prose family, calls with their `family`; older entries
        # were read by fewer readers and would serve a prose call as text.
        "reply_format": 3,
        "repeat": repeat,
        "provider": provider,
        "base_url": origin,  # the endpoint's URL, or the name it was given (`cache_origin`)
        "model": model,
        "system": request.system,
        "messages": request.messages,
        "tools": request.tools if request.send_tools else None,
        "tool_names": [t.get("function", {}).get("name") for t in request.tools or []],
        "tool_protocol": request.tool_protocol,
        "prose_names": list(request.tools_in_prose.names) if request.tools_in_prose else None,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "extra": request.extra,
        "masked": masked,
    }
    text = json.dumps(
        material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, ToolCall):
        return asdict(value)
    return str(value)


def reply_to_dict(reply: Reply) -> dict[str, Any]:
    return {
        "text": reply.text,
        "tool_calls": [asdict(c) for c in reply.tool_calls],
        "cut": reply.cut,
        "usage": {
            "prompt_tokens": reply.usage.prompt_tokens,
            "completion_tokens": reply.usage.completion_tokens,
        },
        "raw_status": reply.raw_status,
        "latency_ms": reply.latency_ms,
        "provider": reply.provider,
        "model": reply.model,
        "protocol": reply.protocol,
        "finish_reason": reply.finish_reason,
    } | ({"content": reply.content} if reply.content is not None else {})


def reply_from_dict(data: dict[str, Any], *, cached: bool = True) -> Reply:
    return Reply(
        text=data["text"],
        tool_calls=[ToolCall(**c) for c in data.get("tool_calls", [])],
        cut=data.get("cut", False),
        usage=Usage(**data.get("usage", {})),
        raw_status=data.get("raw_status", 200),
        latency_ms=0.0,  # a hit took no provider time: the original latency is not ours to claim
        provider=data.get("provider", ""),
        model=data.get("model", ""),
        protocol=data.get("protocol", "none"),
        finish_reason=data.get("finish_reason"),
        cached=cached,
        content=data.get("content"),
    )
