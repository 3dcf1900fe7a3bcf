"""OpenAI's chat.completions wire, as the gateway's clients speak it: a request body read into
a `ChatRequest`, and a `Reply` written back as a completion or as SSE chunks.

The messages stay in OpenAI's shape (the library's own: `ChatRequest.messages` are OpenAI
messages, which every adapter reads); system and developer messages become the request's
system text, so an adapter that sends it apart (Gemini's) gets it whole. What a chain of
models cannot honour is refused with the field named, never dropped in silence: `n` above 1,
and a `tool_choice` that forces a call (a model that writes its calls in prose cannot be
forced). Fields that only tune sampling (`top_p`, `seed`, `stop`, ...) are ignored: the
router's models do not all take them, and a vendor that refuses one would fail the route.

Every call a model made comes back as `tool_calls`, whether it was native or written in prose:
routing through the gateway is how an OpenAI client reads a prose-calling model's calls.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from workbench.errors import ConfigError
from workbench.eval.gateway.logged_router import CHAIN
from workbench.types import ChatRequest, Reply, ToolCall

__all__ = [
    "ChatCall",
    "chunk",
    "completion",
    "error_body",
    "finish_reason",
    "read_chat",
    "tool_call_chunks",
    "usage_chunk",
]

_ROLES = ("system", "developer", "user", "assistant", "tool")
# What a message may carry on: anything else (a vendor's own field) stays on the client side.
_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


@dataclass(frozen=True, slots=True)
class ChatCall:
    """One chat.completions request: the model asked for, the request, how to answer it."""

    model: str
    request: ChatRequest
    stream: bool = False
    include_usage: bool = False


def _invalid(param: str, why: str) -> ConfigError:
    return ConfigError(
        f"{param}: {why}",
        code="GATEWAY_REQUEST_INVALID",
        status=400,
        details={"param": param},
    )


def read_chat(body: Any) -> ChatCall:
    """A chat.completions body as a `ChatCall`; `GATEWAY_REQUEST_INVALID` names the field."""
    if not isinstance(body, dict):
        raise _invalid("body", "must be a JSON object")
    model = body.get("model", CHAIN)
    if not isinstance(model, str) or not model:
        raise _invalid("model", f"must be {CHAIN} (the whole chain) or provider:model")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise _invalid("messages", "must be a non-empty list")
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for n, message in enumerate(raw):
        where = f"messages[{n}]"
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise _invalid(f"{where}.role", f"must be one of {', '.join(_ROLES)}")
        if message["role"] in ("system", "developer"):
            system.append(_text(message.get("content"), where))
            continue
        kept = {k: message[k] for k in _MESSAGE_KEYS if message.get(k) is not None}
        if message["role"] == "assistant" and "content" not in kept:
            kept["content"] = None  # a message of calls only: OpenAI's own shape
        messages.append(kept)
    if not messages:
        raise _invalid("messages", "hold no user, assistant or tool message")
    tools = _tools(body.get("tools"))
    choice = body.get("tool_choice")
    if choice == "none":
        tools = None  # offered nothing: no model is told of the tools
    elif choice not in (None, "auto"):
        raise _invalid(
            "tool_choice",
            "only auto or none: a chain that includes models calling tools in prose cannot be "
            "forced to call one",
        )
    n = body.get("n", 1)
    if n not in (1, None):
        raise _invalid("n", "only 1: each request is one route")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _invalid("stream", "must be true or false")
    options = body.get("stream_options") or {}
    request = ChatRequest(
        messages=messages,
        system="\n\n".join(s for s in system if s) or None,
        tools=tools,
        max_tokens=_count(body, "max_completion_tokens") or _count(body, "max_tokens"),
        temperature=_temperature(body.get("temperature")),
    )
    include = bool(isinstance(options, dict) and options.get("include_usage"))
    return ChatCall(model, request, stream, include)


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    raise _invalid(f"{where}.content", "must be text or a list of text parts")


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise _invalid("tools", "must be a list")
    for n, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(fn, dict) or not fn.get("name"):
            raise _invalid(f"tools[{n}]", 'must be {"type": "function", "function": {"name": ...}}')
    return tools or None


def _count(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _invalid(name, "must be a positive integer")
    return value


def _temperature(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
        raise _invalid("temperature", "must be a number from 0 to 2")
    return float(value)


# ------------------------------------------------------------------ replies
def finish_reason(reply: Reply) -> str:
    """OpenAI's finish reason: `tool_calls` when the model called, `length` when it was cut."""
    if reply.tool_calls:
        return "tool_calls"
    if reply.cut or reply.finish_reason in ("length", "max_tokens", "MAX_TOKENS"):
        return "length"
    return "stop"


def _arguments(call: ToolCall) -> str:
    """The call's arguments as JSON text: a native call's as the model wrote them, a prose
    call's as read (its markup may not be JSON); an unreadable one's as written, to be seen."""
    if call.source == "native" or call.invalid:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def _wire_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or f"call_{n}",
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments(call)},
        }
        for n, call in enumerate(reply.tool_calls)
    ]


def _usage(reply: Reply) -> dict[str, int]:
    p, c = reply.usage.prompt_tokens or 0, reply.usage.completion_tokens or 0
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def completion(reply: Reply, *, id: str, model: str, created: int | None = None) -> dict[str, Any]:
    """A whole chat.completion. `model` names who answered (provider:model)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if (reply.text or not reply.tool_calls) else None,
    }
    if reply.tool_calls:
        message["tool_calls"] = _wire_calls(reply)
    return {
        "id": id,
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason(reply),
            }
        ],
        "usage": _usage(reply),
    }


def chunk(
    delta: dict[str, Any], *, id: str, model: str, created: int, finish: str | None = None
) -> dict[str, Any]:
    """One chat.completion.chunk of choice 0."""
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def tool_call_chunks(reply: Reply, *, id: str, model: str, created: int) -> list[dict[str, Any]]:
    """The reply's calls as stream deltas, one chunk per call with its index (the router reads
    a stream whole before it knows the calls: they come after the text, each in one piece)."""
    return [
        chunk({"tool_calls": [{"index": n, **call}]}, id=id, model=model, created=created)
        for n, call in enumerate(_wire_calls(reply))
    ]


def usage_chunk(reply: Reply, *, id: str, model: str, created: int) -> dict[str, Any]:
    """The last chunk `stream_options.include_usage` asks for: no choices, the usage."""
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": _usage(reply),
    }


def error_body(message: str, type: str, code: str, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape, which its SDKs read into their exceptions."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}
