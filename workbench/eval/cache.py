"""A response cache for evaluation runs, keyed the way evaluation tools key theirs.

The key is everything that decides an answer: provider, base URL, model, messages, tools,
generation settings. Only successes are cached (an error is a fact about a moment, not about
the question); a hit is marked `cached` on the Reply, logged as such, and never counted as
provider latency. The cache sits in front of one provider, so a hit still walks the router
(which releases the quota a hit did not use).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Any, Protocol

from workbench.types import CallContext, ChatRequest, Reply, ToolCall, Usage


class ResponseCache(Protocol):
    def get(self, cache_key: str, now_ms: int) -> dict[str, Any] | None: ...

    def put(
        self, cache_key: str, provider: str, model: str, reply: dict[str, Any], ttl_s: float
    ) -> None: ...


def cache_key(
    provider: Any, base_url: str, model: str, request: ChatRequest, repeat: int = 0
) -> str:
    """A stable hash of what decides the answer (never the key: it does not change answers).

    The repeat number is part of it, as evaluation tools put the epoch in theirs: repeats
    exist to measure variance, so repeat 2 must not be answered by repeat 1."""
    material = {
        "repeat": repeat,
        "provider": provider.id,
        "base_url": base_url,
        "model": model,
        "system": request.system,
        "messages": request.messages,
        "tools": request.tools if request.send_tools else None,
        "tool_names": [t.get("function", {}).get("name") for t in request.tools or []],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "extra": request.extra,
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
    }


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
    )


class CachedProvider:
    """A provider with a response cache in front of `call()`; everything else passes through."""

    def __init__(self, inner: Any, cache: ResponseCache, ttl_s: float) -> None:
        self._inner = inner
        self._cache = cache
        self._ttl_s = ttl_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _key(self, request: ChatRequest, ctx: CallContext | None, model: str | None) -> str:
        ctx = ctx or CallContext()
        base = self._inner.base_url(ctx) if hasattr(self._inner, "base_url") else ""
        spec = self._inner.model_spec(model) if hasattr(self._inner, "model_spec") else None
        return cache_key(
            self._inner, base, spec.id if spec else (model or ""), request, ctx.get("repeat", 0)
        )

    async def call(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> Reply:
        key = self._key(request, ctx, model)
        hit = self._cache.get(key, int(time.time() * 1000))
        if hit is not None:
            return reply_from_dict(hit)
        reply = await self._inner.call(request, ctx, model)
        self._cache.put(key, reply.provider, reply.model, reply_to_dict(reply), self._ttl_s)
        return reply

    def stream(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> AsyncIterator[str | Reply]:
        return self._inner.stream(request, ctx, model)
