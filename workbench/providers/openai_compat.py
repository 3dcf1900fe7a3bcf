"""Any OpenAI-compatible chat-completions endpoint: OpenAI, Groq, OpenRouter, Gemini's
OpenAI surface, llama.cpp's server, the simulator: one wire format, many vendors."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import httpx

from workbench.providers.base import FrameRead, HttpProvider
from workbench.providers.protocols import native_tool_call
from workbench.providers.spec import KeySource, ModelSpec, UrlSource
from workbench.types import CallContext, ChatRequest, ToolCall, Usage

ToRequest = Callable[[dict[str, Any], ChatRequest, ModelSpec], dict[str, Any]]


def _content_text(content: Any) -> str:
    """Content is a string, or a list of parts whose `.text` strings are concatenated."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raise TypeError("content is neither a string nor a list of parts")


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()
    return Usage(data.get("prompt_tokens"), data.get("completion_tokens"))


def wire_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """The request's messages as OpenAI sends them. An invalid call's arguments go back as
    `{}`: the model reads that its call was unreadable rather than an echo of the garbage."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        calls = message.get("tool_calls")
        if calls and any(isinstance(c, ToolCall) for c in calls):
            message = {**message, "tool_calls": [_wire_call(c) for c in calls]}
        out.append(message)
    return out


def _wire_call(call: Any) -> dict[str, Any]:
    if not isinstance(call, ToolCall):
        return call
    arguments = "{}" if call.invalid else call.raw_arguments
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


class OpenAICompatibleProvider(HttpProvider):
    """Built by `openai_compatible_provider(id, url, get_key, models, ...)`, its public name."""

    def __init__(
        self,
        id: str,
        url: UrlSource,
        get_key: KeySource,
        models: Iterable[str | dict[str, Any] | ModelSpec],
        client: httpx.AsyncClient | None = None,
        detailed: bool = True,
        to_request: ToRequest | None = None,
        extra: dict[str, Any] | None = None,
        external: bool = True,
        **kw: Any,
    ) -> None:
        super().__init__(
            id, url, get_key, models, client=client, extra=extra, external=external, **kw
        )
        # detailed=False asks for no usage block in streams (some servers reject the option).
        self.detailed = detailed
        self.to_request = to_request

    def _endpoint(self, base: str, model: str, stream: bool) -> str:
        return f"{base}/chat/completions"

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key else {}

    def _body(self, request: ChatRequest, spec: ModelSpec, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": spec.id, "messages": wire_messages(request)}
        if stream:
            body["stream"] = True
            if self.detailed:
                body["stream_options"] = {"include_usage": True}
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools and request.send_tools:
            body["tools"] = request.tools
        body.update(self.extra)
        body.update(spec.extra)
        body.update(request.extra)
        if self.to_request is not None:
            body = self.to_request(body, request, spec)
        return body

    def _read(self, parsed: Any) -> tuple[str, list[ToolCall], str | None, Usage]:
        choice = parsed["choices"][0]
        message = choice.get("message") or {}
        native = [
            native_tool_call(
                c.get("id") or f"call_{i}",
                (c.get("function") or {}).get("name") or "",
                (c.get("function") or {}).get("arguments"),
            )
            for i, c in enumerate(message.get("tool_calls") or [])
        ]
        native = [c for c in native if c.name]
        return (
            _content_text(message.get("content")),
            native,
            choice.get("finish_reason"),
            _usage(parsed.get("usage")),
        )

    def _read_frame(self, frame: dict[str, Any]) -> FrameRead:
        got = FrameRead(usage=_usage(frame["usage"]) if frame.get("usage") else None)
        choices = frame.get("choices") or []
        if not choices:
            return got
        choice = choices[0]
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if isinstance(content, str):
            got.text = content
        for fragment in delta.get("tool_calls") or []:
            function = fragment.get("function") or {}
            args = function.get("arguments")
            if isinstance(args, dict):
                args = native_tool_call("", "", args).raw_arguments
            got.fragments.append(
                (fragment.get("index"), fragment.get("id"), function.get("name"), args)
            )
        got.finish_reason = choice.get("finish_reason")
        return got


openai_compatible_provider = OpenAICompatibleProvider


__all__ = ["CallContext", "OpenAICompatibleProvider", "openai_compatible_provider", "wire_messages"]
