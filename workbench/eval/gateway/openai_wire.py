"""OpenAI's chat.completions wire, as the gateway's clients speak it: a request body read into
a `ChatRequest`, and a `Reply` written back as a completion or as SSE chunks.

The messages stay in OpenAI's shape (the library's own: `ChatRequest.messages` are OpenAI
messages, which every adapter reads); system and developer messages become the request's
system text, so an adapter that sends it apart (Gemini's) gets it whole. What a chain of
models cannot honour is refused with the field named, never dropped in silence: `n` above 1,
a `tool_choice` that forces a call (a model that writes its calls in prose cannot be forced),
a malformed message, and any field it does not know. `stop` and `response_format` change what
comes back: they are sent to the model as written (`ChatRequest.extra`), which only an
OpenAI-compatible provider takes (the app refuses them for a route that may reach another).
The fields in `IGNORED` only tune sampling or label the request: the router's models do not
all take them, and a vendor that refuses one would fail the route.

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
    "IGNORED",
    "PASSED",
    "ChatCall",
    "chunk",
    "completion",
    "error_body",
    "finish_reason",
    "invalid",
    "read_chat",
    "tool_call_chunks",
    "usage_chunk",
]

_ROLES = ("system", "developer", "user", "assistant", "tool")
# The fields read (and honoured, or refused when they cannot be).
_READ = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "n",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
    }
)
# Sent on to the model as written: they change what comes back, so never dropped. Only an
# OpenAI-compatible provider takes them in this shape (the gateway refuses them for others).
PASSED = ("stop", "response_format")
# Ignored, and said so here: they tune sampling or label the request, the chain's models do
# not all take them, and a vendor that refused one would fail the route. Any other field is
# refused, with its name: a client relying on it would otherwise not learn it had no effect.
IGNORED = frozenset(
    {
        "top_p",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "parallel_tool_calls",
        "user",
        "metadata",
        "store",
        "service_tier",
    }
)
# What a message may carry on: anything else (a vendor's own field) stays on the client side.
_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


@dataclass(frozen=True, slots=True)
class ChatCall:
    """One chat.completions request: the model asked for, the request, how to answer it."""

    model: str
    request: ChatRequest
    stream: bool = False
    include_usage: bool = False


def invalid(param: str, why: str) -> ConfigError:
    """`GATEWAY_REQUEST_INVALID` (400) naming the field `param`."""
    return ConfigError(
        f"{param}: {why}",
        code="GATEWAY_REQUEST_INVALID",
        status=400,
        details={"param": param},
    )


def read_chat(body: Any) -> ChatCall:
    """A chat.completions body as a `ChatCall`; `GATEWAY_REQUEST_INVALID` names the field."""
    if not isinstance(body, dict):
        raise invalid("body", "must be a JSON object")
    model = body.get("model", CHAIN)
    if not isinstance(model, str) or not model:
        raise invalid("model", f"must be {CHAIN} (the whole chain) or provider:model")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise invalid("messages", "must be a non-empty list")
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for n, message in enumerate(raw):
        where = f"messages[{n}]"
        if not isinstance(message, dict):
            raise invalid(where, "must be an object")
        if message.get("role") not in _ROLES:
            raise invalid(f"{where}.role", f"must be one of {', '.join(_ROLES)}")
        if message["role"] in ("system", "developer"):
            system.append(_text(message.get("content"), where))
            continue
        _check_message(message, where)
        kept = {k: message[k] for k in _MESSAGE_KEYS if message.get(k) is not None}
        if message["role"] == "assistant" and "content" not in kept:
            kept["content"] = None  # a message of calls only: OpenAI's own shape
        messages.append(kept)
    if not messages:
        raise invalid("messages", "hold no user, assistant or tool message")
    tools = _tools(body.get("tools"))
    choice = body.get("tool_choice")
    if choice == "none":
        tools = None  # offered nothing: no model is told of the tools
    elif choice not in (None, "auto"):
        raise invalid(
            "tool_choice",
            "only auto or none: a chain that includes models calling tools in prose cannot be "
            "forced to call one",
        )
    n = body.get("n", 1)
    if n not in (1, None):
        raise invalid("n", "only 1: each request is one route")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise invalid("stream", "must be true or false")
    options = body.get("stream_options") or {}
    unknown = sorted(set(body) - _READ - IGNORED - set(PASSED))
    if unknown:
        raise invalid(
            unknown[0],
            "not a field the gateway takes (it reads model, messages, tools, tool_choice, "
            "stream, stream_options, max_tokens, max_completion_tokens, temperature, stop, "
            "response_format, and ignores " + ", ".join(sorted(IGNORED)) + ")",
        )
    request = ChatRequest(
        messages=messages,
        system="\n\n".join(s for s in system if s) or None,
        tools=tools,
        max_tokens=_count(body, "max_completion_tokens") or _count(body, "max_tokens"),
        temperature=_temperature(body.get("temperature")),
        extra=_passed(body),
    )
    include = bool(isinstance(options, dict) and options.get("include_usage"))
    return ChatCall(model, request, stream, include)


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        _parts(content, f"{where}.content", ("text",))
        return "".join(p["text"] for p in content)
    raise invalid(f"{where}.content", "must be text or a list of text parts")


def _check_message(message: dict[str, Any], where: str) -> None:
    """A user, assistant or tool message as OpenAI takes it: checked here, so that a client's
    mistake is its 400 and never a request every model of the chain is billed to refuse."""
    role, content = message["role"], message.get("content")
    if message.get("name") is not None and not isinstance(message["name"], str):
        raise invalid(f"{where}.name", "must be text")
    if role == "assistant":
        calls = message.get("tool_calls")
        if calls is not None:
            _check_calls(calls, f"{where}.tool_calls")
        if content is None and not calls:
            raise invalid(f"{where}.content", "an assistant message holds content or tool_calls")
    elif message.get("tool_calls") is not None:
        raise invalid(f"{where}.tool_calls", "only an assistant message makes calls")
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise invalid(f"{where}.tool_call_id", "a tool message names the call it answers")
    if content is None and role == "assistant":
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise invalid(f"{where}.content", "must be text or a list of content parts")
    _parts(content, f"{where}.content", ("text", "image_url") if role == "user" else ("text",))


def _parts(parts: list[Any], where: str, kinds: tuple[str, ...]) -> None:
    for n, part in enumerate(parts):
        at = f"{where}[{n}]"
        if not isinstance(part, dict) or part.get("type") not in kinds:
            raise invalid(at, f"must be a part of type {' or '.join(kinds)}")
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise invalid(f"{at}.text", "must be text")
        if part["type"] == "image_url":
            image = part.get("image_url")
            if not isinstance(image, dict) or not isinstance(image.get("url"), str):
                raise invalid(f"{at}.image_url", 'must be {"url": ...}')


def _check_calls(calls: Any, where: str) -> None:
    if not isinstance(calls, list):
        raise invalid(where, "must be a list")
    for n, call in enumerate(calls):
        at = f"{where}[{n}]"
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(call.get("id"), str):
            raise invalid(at, 'must be {"id": ..., "type": "function", "function": {...}}')
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise invalid(f"{at}.function.name", "must be text")
        if not isinstance(fn.get("arguments"), str):
            raise invalid(f"{at}.function.arguments", "must be JSON text")


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise invalid("tools", "must be a list")
    for n, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(fn, dict) or not fn.get("name"):
            raise invalid(f"tools[{n}]", 'must be {"type": "function", "function": {"name": ...}}')
    return tools or None


def _count(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid(name, "must be a positive integer")
    return value


def _passed(body: dict[str, Any]) -> dict[str, Any]:
    """`stop` and `response_format`, checked, to be sent as written."""
    out: dict[str, Any] = {}
    stop = body.get("stop")
    if stop is not None:
        words = [stop] if isinstance(stop, str) else stop
        if not isinstance(words, list) or not 1 <= len(words) <= 4:
            raise invalid("stop", "must be text or a list of 1 to 4 texts")
        if not all(isinstance(w, str) and w for w in words):
            raise invalid("stop", "must be text or a list of 1 to 4 texts")
        out["stop"] = stop
    shape = body.get("response_format")
    if shape is not None:
        kinds = ("text", "json_object", "json_schema")
        if not isinstance(shape, dict) or shape.get("type") not in kinds:
            raise invalid("response_format", f"must be an object whose type is {', '.join(kinds)}")
        if shape["type"] == "json_schema" and not isinstance(shape.get("json_schema"), dict):
            raise invalid("response_format.json_schema", "must be an object")
        if shape["type"] != "text":  # text is what every model answers anyway
            out["response_format"] = shape
    return out


def _temperature(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
        raise invalid("temperature", "must be a number from 0 to 2")
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
