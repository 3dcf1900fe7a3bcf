"""Google's native Gemini API (`generateContent` / `streamGenerateContent`).

ai-kit reached Google only through its OpenAI surface; that surface works with
`openai_compatible_provider`. The native API is here because it is the only way to see
Gemini's thought parts for what they are, and its `functionCall` parts carry no index at all.
The key travels in the `x-goog-api-key` header, never in the URL, so it cannot leak into logs.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from workbench.providers.base import FrameRead, HttpProvider
from workbench.providers.protocols import compact_json, native_tool_call
from workbench.providers.spec import KeySource, ModelSpec, UrlSource, from_env
from workbench.types import CallContext, ChatRequest, ToolCall, Usage

GEMINI_URL = "https://generativelanguage.googleapis.com"
DEFAULT_MODELS = ("gemini-flash-latest", "gemini-flash-lite-latest", "gemma-4-31b-it")


def is_gemma(model: str) -> bool:
    """Gemma models on the Gemini API refuse `systemInstruction` ("Developer instruction is not
    enabled"), so their system prompt rides in the first user message instead."""
    return "gemma" in model.lower()


def _bare(model: str) -> str:
    return model.removeprefix("models/")


def _part_from_openai(part: Any) -> dict[str, Any]:
    if isinstance(part, str):
        return {"text": part}
    if part.get("type") == "image_url":
        url = (part.get("image_url") or {}).get("url", "")
        if url.startswith("data:") and ";base64," in url:
            mime, data = url[5:].split(";base64,", 1)
            return {"inlineData": {"mimeType": mime, "data": data}}
        return {"fileData": {"fileUri": url, "mimeType": "image/*"}}
    return {"text": part.get("text", "")}


def _parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content else []
    return [_part_from_openai(p) for p in content]


def _call_args(call: Any) -> dict[str, Any]:
    if isinstance(call, ToolCall):
        return {} if call.invalid else call.arguments
    raw = (call.get("function") or {}).get("arguments") or "{}"
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _call_name(call: Any) -> tuple[str, str]:
    if isinstance(call, ToolCall):
        return call.id, call.name
    return call.get("id", ""), (call.get("function") or {}).get("name", "")


def contents_from(request: ChatRequest, model: str) -> tuple[list[dict[str, Any]], str | None]:
    """OpenAI-shaped messages → Gemini `contents`, and the system text left to send apart."""
    system = request.system
    names_by_id: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for message in request.messages:
        role = message.get("role")
        if role == "system":
            system = "\n\n".join(s for s in (system, message.get("content")) if s)
            continue
        if role == "assistant":
            parts = _parts(message.get("content"))
            for call in message.get("tool_calls") or []:
                call_id, name = _call_name(call)
                names_by_id[call_id] = name
                parts.append({"functionCall": {"name": name, "args": _call_args(call)}})
            contents.append({"role": "model", "parts": parts})
        elif role == "tool":
            name = message.get("name") or names_by_id.get(message.get("tool_call_id", ""), "tool")
            raw = message.get("content")
            try:
                result = json.loads(raw) if isinstance(raw, str) else raw
            except json.JSONDecodeError:
                result = raw
            response = result if isinstance(result, dict) else {"result": result}
            contents.append(
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": name, "response": response}}],
                }
            )
        else:
            contents.append({"role": "user", "parts": _parts(message.get("content"))})
    if system and is_gemma(model):
        for content in contents:
            if content["role"] == "user" and content["parts"] and "text" in content["parts"][0]:
                first = content["parts"][0]
                content["parts"][0] = {"text": f"{system}\n\n{first['text']}"}
                break
        else:
            contents.insert(0, {"role": "user", "parts": [{"text": system}]})
        system = None
    return contents, system


class GeminiProvider(HttpProvider):
    default_url = GEMINI_URL

    def _endpoint(self, base: str, model: str, stream: bool) -> str:
        verb = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{base}/v1beta/models/{_bare(model)}:{verb}"

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": key} if key else {}

    def _body(self, request: ChatRequest, spec: ModelSpec, stream: bool) -> dict[str, Any]:
        contents, system = contents_from(request, spec.id)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if request.tools and request.send_tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {
                            k: v
                            for k, v in t["function"].items()
                            if k in ("name", "description", "parameters")
                        }
                        for t in request.tools
                        if t.get("function")
                    ]
                }
            ]
        config: dict[str, Any] = {}
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if config:
            body["generationConfig"] = config
        body.update(self.extra)
        body.update(spec.extra)
        body.update(request.extra)
        return body

    @staticmethod
    def _read_candidate(data: dict[str, Any]) -> FrameRead:
        got = FrameRead()
        meta = data.get("usageMetadata")
        if meta:
            got.usage = Usage(meta.get("promptTokenCount"), meta.get("candidatesTokenCount"))
        candidates = data.get("candidates") or []
        if not candidates:
            return got
        candidate = candidates[0]
        texts = []
        for part in (candidate.get("content") or {}).get("parts") or []:
            if part.get("thought"):
                continue  # reasoning never reaches the reader
            if "functionCall" in part:
                call = part["functionCall"]
                name = call.get("name") or ""
                # Gemini gives each parallel call whole, without an index: one slot each.
                got.fragments.append(
                    (None, call.get("id"), name, compact_json(call.get("args") or {}))
                )
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
        got.text = "".join(texts)
        got.finish_reason = candidate.get("finishReason")
        return got

    def _read(self, parsed: Any) -> tuple[str, list[ToolCall], str | None, Usage]:
        if not isinstance(parsed, dict):
            raise TypeError("the body is not a GenerateContentResponse")
        got = self._read_candidate(parsed)
        calls = [
            native_tool_call(i or f"gemini_{k}_{n}", n or "", a)
            for k, (_x, i, n, a) in enumerate(got.fragments)
        ]
        return got.text, calls, got.finish_reason, got.usage or Usage()

    def _read_frame(self, frame: dict[str, Any]) -> FrameRead:
        got = self._read_candidate(frame)
        # Without ids, calls from different frames would share a slot: give each its own.
        got.fragments = [
            (x, i or f"gemini_{secrets.token_hex(4)}_{n}", n, a) for (x, i, n, a) in got.fragments
        ]
        return got

    @staticmethod
    def _is_cut(finish_reason: str | None) -> bool:
        return (finish_reason or "").upper() == "MAX_TOKENS"


def gemini_provider(
    get_key: KeySource = None,
    lane: str | Callable[[CallContext], str | None] | None = None,
    *,
    id: str = "google",
    url: UrlSource = GEMINI_URL,
    models: Iterable[str | dict[str, Any] | ModelSpec] = DEFAULT_MODELS,
    client: httpx.AsyncClient | None = None,
    **kw: Any,
) -> GeminiProvider:
    """The constructor for Google's native Gemini API; the key defaults to $GEMINI_API_KEY,
    read on every call."""
    return GeminiProvider(
        id,
        url,
        get_key if get_key is not None else from_env("GEMINI_API_KEY"),
        models,
        client=client,
        lane=lane,
        **kw,
    )
