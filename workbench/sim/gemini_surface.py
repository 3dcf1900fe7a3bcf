"""The native Gemini surface: `models/{model}:generateContent` and `:streamGenerateContent`.

Reads contents/parts (text, inlineData, fileData, functionCall, functionResponse),
systemInstruction, tools[].functionDeclarations, toolConfig and generationConfig, in camelCase
or snake_case; writes GenerateContentResponse JSON (thought parts, functionCall parts,
usageMetadata, finishReason), or an SSE stream of them for `?alt=sse`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Iterable
from typing import Any

from workbench.sim.answers import json_or_text
from workbench.sim.conversation import Answer, Conversation, Image, Tool, Turn
from workbench.sim.fleet import Persona
from workbench.sim.streaming import CUT_AFTER_CHUNKS, Pacer, StreamCut, sse, text_chunks
from workbench.sim.vendor_errors import bad_request


def _get(d: dict[str, Any], camel: str, snake: str | None = None) -> Any:
    if camel in d:
        return d[camel]
    return d.get(snake) if snake else None


def _lower_types(schema: Any) -> Any:
    """Gemini schemas spell types in upper case ("STRING"); the engine reads JSON Schema."""
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "type" and isinstance(v, str):
                out[k] = v.lower()
            else:
                out[k] = _lower_types(v)
        return out
    if isinstance(schema, list):
        return [_lower_types(x) for x in schema]
    return schema


def _parts_text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    if isinstance(parts, dict):
        parts = _get(parts, "parts") or []
    return "\n".join(
        str(p.get("text", ""))
        for p in parts or []
        if isinstance(p, dict) and "text" in p and not p.get("thought")
    )


def parse(body: Any) -> Conversation:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    contents = body.get("contents")
    if isinstance(contents, dict):
        contents = [contents]
    if not isinstance(contents, list) or not contents:
        raise bad_request("* GenerateContentRequest.contents: contents is not specified")
    turns: list[Turn] = []
    for content in contents:
        if not isinstance(content, dict):
            raise bad_request("each content must be an object")
        role = content.get("role") or "user"
        texts: list[str] = []
        images: list[Image] = []
        calls: list[dict[str, Any]] = []
        results: list[Turn] = []
        for part in content.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if "text" in part and not part.get("thought"):
                texts.append(str(part["text"]))
            inline = _get(part, "inlineData", "inline_data")
            if isinstance(inline, dict):
                try:
                    data = base64.b64decode(str(inline.get("data", "")), validate=False)
                except (binascii.Error, ValueError):
                    data = b""
                images.append(
                    Image(mime=str(_get(inline, "mimeType", "mime_type") or ""), data=data)
                )
            file_data = _get(part, "fileData", "file_data")
            if isinstance(file_data, dict):
                images.append(
                    Image(
                        mime=str(_get(file_data, "mimeType", "mime_type") or ""),
                        url=str(_get(file_data, "fileUri", "file_uri") or ""),
                    )
                )
            call = _get(part, "functionCall", "function_call")
            if isinstance(call, dict):
                calls.append(
                    {
                        "id": call.get("id"),
                        "name": call.get("name"),
                        "arguments": json_or_text(call.get("args") or {}),
                    }
                )
            response = _get(part, "functionResponse", "function_response")
            if isinstance(response, dict):
                results.append(
                    Turn(
                        "tool",
                        json_or_text(response.get("response")),
                        tool_name=response.get("name"),
                        tool_call_id=response.get("id"),
                    )
                )
        if role == "model":
            turns.append(Turn("assistant", "\n".join(texts), tool_calls=calls))
        elif results:
            turns.extend(results)
            if texts or images:
                turns.append(Turn("user", "\n".join(texts), images))
        else:
            turns.append(Turn("user", "\n".join(texts), images))
    system = _get(body, "systemInstruction", "system_instruction")
    tools: list[Tool] = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        for fd in _get(t, "functionDeclarations", "function_declarations") or []:
            params = (
                _get(fd, "parameters")
                or _get(fd, "parametersJsonSchema", "parameters_json_schema")
                or {}
            )
            tools.append(
                Tool(
                    name=str(fd.get("name", "")),
                    description=str(fd.get("description") or ""),
                    parameters=_lower_types(params),
                )
            )
    gen = _get(body, "generationConfig", "generation_config") or {}
    max_tokens = _get(gen, "maxOutputTokens", "max_output_tokens")
    tool_cfg = _get(body, "toolConfig", "tool_config") or {}
    fcc = _get(tool_cfg, "functionCallingConfig", "function_calling_config") or {}
    mode = str(fcc.get("mode") or "").upper()
    allowed = _get(fcc, "allowedFunctionNames", "allowed_function_names") or []
    choice = "none" if mode == "NONE" else (allowed[0] if mode == "ANY" and allowed else None)
    return Conversation(
        turns=turns,
        system=(_parts_text(system) or None) if system else None,
        tools=tools,
        max_tokens=int(max_tokens) if isinstance(max_tokens, int | float) else None,
        tool_choice=choice,
    )


def carries_images(body: Any) -> bool:
    for content in (body or {}).get("contents") or []:
        for part in (content or {}).get("parts") or [] if isinstance(content, dict) else []:
            if isinstance(part, dict):
                inline = _get(part, "inlineData", "inline_data") or _get(
                    part, "fileData", "file_data"
                )
                if isinstance(inline, dict) and str(
                    _get(inline, "mimeType", "mime_type") or "image/"
                ).startswith("image/"):
                    return True
    return False


def has_system(body: Any) -> bool:
    system = _get(body or {}, "systemInstruction", "system_instruction")
    return bool(system) and bool(_parts_text(system).strip())


def _finish(ans: Answer) -> str:
    return "MAX_TOKENS" if ans.finish == "length" else "STOP"


def _usage(conv: Conversation, ans: Answer) -> dict[str, int]:
    p = conv.prompt_tokens
    thoughts = (len(ans.reasoning) + 3) // 4 if ans.reasoning else 0
    c = max(0, ans.completion_tokens - thoughts)
    out = {"promptTokenCount": p, "candidatesTokenCount": c, "totalTokenCount": p + c + thoughts}
    if thoughts:
        out["thoughtsTokenCount"] = thoughts
    return out


def _call_part(call: Any) -> dict[str, Any]:
    return {"functionCall": {"id": call.id, "name": call.name, "args": call.args}}


def _response(
    parts: list[dict[str, Any]],
    model: str,
    seq: int,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    content: dict[str, Any] = {"role": "model"}
    if parts:
        content["parts"] = parts
    cand: dict[str, Any] = {"content": content, "index": 0}
    if finish:
        cand["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [cand], "modelVersion": model, "responseId": f"sim-{seq}"}
    if usage:
        out["usageMetadata"] = usage
    return out


def render(ans: Answer, conv: Conversation, model: str, seq: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if ans.reasoning:
        parts.append({"text": ans.reasoning, "thought": True})
    if ans.text:
        parts.append({"text": ans.text})
    parts.extend(_call_part(c) for c in ans.calls)
    return _response(parts, model, seq, _finish(ans), _usage(conv, ans))


async def stream(
    ans: Answer, conv: Conversation, persona: Persona, model: str, seq: int, cut: bool = False
) -> AsyncIterator[bytes]:
    pacer = Pacer(persona)
    pending: list[dict[str, Any]] = []
    for piece in text_chunks(ans.reasoning):
        await pacer.before(piece)
        yield sse(_response([{"text": piece, "thought": True}], model, seq))
    sent = 0
    for piece in text_chunks(ans.text):
        if cut and sent >= CUT_AFTER_CHUNKS:
            raise StreamCut
        await pacer.before(piece)
        yield sse(_response([{"text": piece}], model, seq))
        sent += 1
    if cut:
        raise StreamCut
    pending = [_call_part(c) for c in ans.calls]
    await pacer.before("")
    yield sse(_response(pending, model, seq, _finish(ans), _usage(conv, ans)))


def models_list(personas: Iterable[Persona]) -> dict[str, Any]:
    """Google's ListModels page: every listed persona, whole (no `nextPageToken`)."""
    return {"models": [model_info(p) for p in personas if p.listed]}


def model_info(persona: Persona) -> dict[str, Any]:
    return {
        "name": f"models/{persona.id}",
        "version": "sim",
        "displayName": persona.id,
        "inputTokenLimit": persona.context_window,
        "outputTokenLimit": 8192,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent"],
    }
