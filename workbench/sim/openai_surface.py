"""The OpenAI chat-completions surface: parse a request body, render an answer (JSON or SSE).

Served at /v1/chat/completions and at /v1beta/openai/chat/completions (Gemini's
OpenAI-compatible surface, whose stream sends parallel tool calls whole and without `index`
when the persona says `stream_tool_index = false`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

from workbench.sim.conversation import Answer, Conversation, Image, Tool, Turn
from workbench.sim.fleet import Persona
from workbench.sim.png import parse_data_url
from workbench.sim.streaming import CUT_AFTER_CHUNKS, Pacer, StreamCut, sse, text_chunks
from workbench.sim.vendor_errors import SimError, bad_request


def _text_of(content: Any) -> tuple[str, list[Image]]:
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise bad_request("message content must be a string or a list of parts", "messages")
    texts, images = [], []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text"):
            texts.append(str(part.get("text", "")))
        elif kind in ("image_url", "input_image"):
            ref = part.get("image_url")
            url = ref.get("url") if isinstance(ref, dict) else ref
            url = str(url or "")
            decoded = parse_data_url(url)
            if decoded:
                images.append(Image(mime=decoded[0], data=decoded[1]))
            else:
                images.append(Image(url=url))
    return "\n".join(texts), images


def parse(body: Any) -> Conversation:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty array", "messages")
    system_parts: list[str] = []
    turns: list[Turn] = []
    for m in messages:
        if not isinstance(m, dict):
            raise bad_request("each message must be an object", "messages")
        role = m.get("role")
        text, images = _text_of(m.get("content"))
        if role in ("system", "developer"):
            system_parts.append(text)
        elif role == "user":
            turns.append(Turn("user", text, images))
        elif role == "assistant":
            calls = []
            for c in m.get("tool_calls") or []:
                fn = (c or {}).get("function") or {}
                calls.append(
                    {"id": c.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}
                )
            turns.append(Turn("assistant", text, tool_calls=calls))
        elif role in ("tool", "function"):
            turns.append(
                Turn("tool", text, tool_name=m.get("name"), tool_call_id=m.get("tool_call_id"))
            )
        else:
            raise bad_request(f"unknown message role {role!r}", "messages")
    tools = []
    raw_tools = body.get("tools") or []
    if not isinstance(raw_tools, list):
        raise bad_request("'tools' must be an array", "tools")
    for t in raw_tools:
        fn = t.get("function", t) if isinstance(t, dict) else None
        if not isinstance(fn, dict) or not fn.get("name"):
            raise bad_request("each tool needs function.name", "tools")
        tools.append(
            Tool(
                name=str(fn["name"]),
                description=str(fn.get("description") or ""),
                parameters=fn.get("parameters") or {},
            )
        )
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        choice = (choice.get("function") or {}).get("name")
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    return Conversation(
        turns=turns,
        system="\n\n".join(system_parts) if system_parts else None,
        tools=tools,
        max_tokens=int(max_tokens) if isinstance(max_tokens, int | float) else None,
        stream=bool(body.get("stream")),
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
        tool_choice=choice if isinstance(choice, str) else None,
    )


def carries_images(body: Any) -> bool:
    for m in (body or {}).get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") in ("image_url", "input_image") for p in content
        ):
            return True
    return False


def usage(conv: Conversation, ans: Answer) -> dict[str, int]:
    p, c = conv.prompt_tokens, ans.completion_tokens
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def _tool_calls(ans: Answer) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in ans.calls
    ]


def render(ans: Answer, conv: Conversation, model: str, seq: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": ans.text if (ans.text or not ans.calls) else None,
    }
    if ans.reasoning:
        message["reasoning_content"] = ans.reasoning
    if ans.calls:
        message["tool_calls"] = _tool_calls(ans)
    return {
        "id": f"chatcmpl-sim-{seq}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": ans.finish}
        ],
        "usage": usage(conv, ans),
        "system_fingerprint": "fp_sim",
    }


async def stream(
    ans: Answer, conv: Conversation, persona: Persona, model: str, seq: int, cut: bool = False
) -> AsyncIterator[bytes]:
    created = int(time.time())
    pacer = Pacer(persona)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            {
                "id": f"chatcmpl-sim-{seq}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_sim",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
        )

    await pacer.before("")
    yield chunk({"role": "assistant", "content": ""})
    sent = 0
    for piece in text_chunks(ans.reasoning):
        await pacer.before(piece)
        yield chunk({"reasoning_content": piece})
    for piece in text_chunks(ans.text):
        if cut and sent >= CUT_AFTER_CHUNKS:
            raise StreamCut
        await pacer.before(piece)
        yield chunk({"content": piece})
        sent += 1
    if ans.calls:
        if cut:
            raise StreamCut
        if persona.stream_tool_index:
            for i, c in enumerate(ans.calls):
                yield chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": ""},
                            }
                        ]
                    }
                )
                args = c.arguments
                step = max(1, len(args) // 3)
                for j in range(0, len(args), step):
                    await pacer.before(args[j : j + step])
                    yield chunk(
                        {
                            "tool_calls": [
                                {"index": i, "function": {"arguments": args[j : j + step]}}
                            ]
                        }
                    )
        else:
            # Gemini's OpenAI-compatible stream: whole calls, own ids, no index.
            await pacer.before(ans.calls[0].arguments)
            if persona.stream_concat_args and len(ans.calls) > 1:
                first = ans.calls[0]
                joined = "".join(c.arguments for c in ans.calls)
                yield chunk(
                    {
                        "tool_calls": [
                            {
                                "id": first.id,
                                "type": "function",
                                "function": {"name": first.name, "arguments": joined},
                            }
                        ]
                    }
                )
            else:
                yield chunk({"tool_calls": _tool_calls(ans)})
    if cut:
        raise StreamCut
    yield chunk({}, ans.finish)
    if conv.include_usage:
        yield sse(
            {
                "id": f"chatcmpl-sim-{seq}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": usage(conv, ans),
            }
        )
    yield sse("[DONE]")


# 2026-01-01T00:00:00Z, in epoch seconds as OpenAI-shaped lists give it.
CREATED = 1_767_225_600


def models_list(personas: Iterable[Persona], prefix: str = "") -> dict[str, Any]:
    """An OpenAI-shaped model list of the listed personas (`prefix` is Google's `models/`)."""
    return {"object": "list", "data": [model_record(p, prefix) for p in personas if p.listed]}


def model_record(persona: Persona, prefix: str = "") -> dict[str, Any]:
    """One model as OpenRouter describes it, from what the persona declares: what the vendor
    claims, which is not what the probe observes (a prose caller still lists `tools`)."""
    params = ["max_tokens", "temperature", "top_p", "stop", "seed"]
    if persona.tool_style != "rejects_tools":
        params += ["tools", "tool_choice"]
    if persona.reasoning != "none":
        params += ["reasoning", "include_reasoning"]
    return {
        "id": f"{prefix}{persona.id}",
        "object": "model",
        "created": CREATED,
        "owned_by": "workbench-sim",
        "context_length": persona.context_window,
        "architecture": {
            "input_modalities": ["text", "image"] if persona.vision else ["text"],
            "output_modalities": ["text"],
        },
        "pricing": {"prompt": "0", "completion": "0"},
        "supported_parameters": params,
    }


__all__ = ["SimError", "carries_images", "model_record", "models_list", "parse", "render", "stream"]
