"""Inspect's side of a generate and ours: Inspect's messages, tools and config in, our
`ChatRequest`; our `Reply` out, Inspect's `ModelOutput`.

Pure conversions, no routing. What they keep in mind:

- Tools both ways. Inspect's `ToolInfo` becomes an OpenAI function spec (our lingua franca);
  every call we read comes back as an Inspect `ToolCall`, the calls a model wrote in prose
  included: that is the point of routing Inspect through us, Inspect reads native calls only.
- A prose call's history goes back as the model wrote it. Inspect keeps the conversation and
  sends it whole on the next generate, its tool results as role-`tool` messages; a model that
  calls in prose does not understand that role, so the calls it wrote are written again in its
  own format and the results go in a user message — as our own tool loop feeds them back
  (`feed_back_messages`). How each call was read rides in the assistant message's metadata
  (`PROSE_CALLS`), which Inspect keeps with the message.
- Inspect's `tool_choice`: "none" offers no tool; "auto", "any" and a named function offer
  them all, the router planning per model (a model that calls in prose cannot be forced, and
  each wire format forces differently), so a forced choice is not forwarded.
- Of the generate config, `max_tokens` and `temperature` are forwarded (the two every wire
  format of a chain has); the other sampling knobs are not.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentReasoning,
    ContentText,
    GenerateConfig,
    ModelFallback,
    ModelOutput,
    ModelUsage,
    StopReason,
)
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolChoice, ToolInfo

from workbench.errors import ConfigError
from workbench.tools.tool_loop import ToolOutcome, as_written, feed_back_messages
from workbench.types import ChatRequest, Message, Reply, ToolCall

#: The assistant message's metadata key naming the calls that were read from prose, with the
#: format each was written in: {call id: family or None}.
PROSE_CALLS = "workbench_prose_calls"


# ------------------------------------------------------------------------------ Inspect → us
def chat_request(
    messages: list[ChatMessage],
    tools: list[ToolInfo],
    tool_choice: ToolChoice | None,
    config: GenerateConfig,
) -> ChatRequest:
    """The request Inspect's generate asks for. System messages join in `system` (where the
    router adds its prose-tools hint for a model that calls in prose)."""
    system = [m.text for m in messages if isinstance(m, ChatMessageSystem) and m.text]
    offered = [function_spec(t) for t in tools] if tools and tool_choice != "none" else None
    return ChatRequest(
        messages=conversation(messages),
        system="\n\n".join(system) or None,
        tools=offered,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
    )


def function_spec(tool: ToolInfo) -> dict[str, Any]:
    """An Inspect tool as an OpenAI function spec."""
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters.model_dump(exclude_none=True),
    }
    return {"type": "function", "function": function}


def conversation(messages: list[ChatMessage]) -> list[Message]:
    """Inspect's messages (system ones aside) in our OpenAI shape: an assistant turn that
    called tools and the tool results after it are fed back as our tool loop feeds them."""
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if isinstance(message, ChatMessageSystem):
            continue
        if isinstance(message, ChatMessageUser):
            out.append({"role": "user", "content": _content(message.content)})
        elif isinstance(message, ChatMessageAssistant):
            results: list[ChatMessageTool] = []
            while message.tool_calls and i < len(messages):
                following = messages[i]
                if not isinstance(following, ChatMessageTool):
                    break
                results.append(following)
                i += 1
            out.extend(_assistant_turn(message, results))
        elif isinstance(message, ChatMessageTool):  # a result without its call before it
            out.append(_tool_message(message.tool_call_id or "", message.function, message))
    return out


def _assistant_turn(message: ChatMessageAssistant, results: list[ChatMessageTool]) -> list[Message]:
    text = _text(message.content)
    if not message.tool_calls:
        return [{"role": "assistant", "content": text}]
    prose: dict[str, str | None] = dict((message.metadata or {}).get(PROSE_CALLS) or {})
    calls = [_our_call(c, prose) for c in message.tool_calls]
    by_id = {r.tool_call_id: r for r in results}
    answered = [(c, _outcome(c, by_id[c.id])) for c in calls if c.id in by_id]
    if not answered:  # calls Inspect never ran (the conversation stopped there)
        native = [c for c in calls if c.source == "native"]
        written = "\n".join(as_written(c) for c in calls if c.source == "text")
        said = f"{text}\n{written}".strip() if written else text
        turn: Message = {"role": "assistant", "content": said or None}
        if native:
            turn["tool_calls"] = [_wire_call(c) for c in native]
        return [turn]
    reply = Reply(text=text, tool_calls=[c for c, _ in answered])
    fed = feed_back_messages(reply, [c for c, _ in answered], [o for _, o in answered])
    stray = [r for r in results if r.tool_call_id not in {c.id for c, _ in answered}]
    return fed + [_tool_message(r.tool_call_id or "", r.function, r) for r in stray]


def _our_call(call: InspectToolCall, prose: dict[str, str | None]) -> ToolCall:
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    return ToolCall(
        id=call.id,
        name=call.function,
        arguments=arguments,
        raw_arguments=json.dumps(arguments, ensure_ascii=False),
        invalid=call.parse_error is not None,
        source="text" if call.id in prose else "native",
        family=prose.get(call.id),
    )


def _outcome(call: ToolCall, result: ChatMessageTool) -> ToolOutcome:
    if result.error is not None:
        content = f"Error: {result.error.message}"
        return ToolOutcome(call.id, call.name, False, content, error=result.error.type)
    return ToolOutcome(call.id, call.name, True, _text(result.content))


def _tool_message(call_id: str, name: str | None, result: ChatMessageTool) -> Message:
    content = f"Error: {result.error.message}" if result.error else _text(result.content)
    return {"role": "tool", "tool_call_id": call_id, "name": name or "", "content": content}


def _wire_call(call: ToolCall) -> dict[str, Any]:
    arguments = "{}" if call.invalid else call.raw_arguments
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def _text(content: str | list[Content]) -> str:
    """The text of a message (reasoning left out: our messages do not carry it back)."""
    if isinstance(content, str):
        return content
    return "\n".join(c.text for c in content if isinstance(c, ContentText))


def _content(content: str | list[Content]) -> str | list[dict[str, Any]]:
    """A user message's content: text stays a string; with an image, OpenAI's parts."""
    if isinstance(content, str):
        return content
    for c in content:  # refused whole, before any image is read
        if not isinstance(c, ContentText | ContentImage | ContentReasoning):
            raise _unsupported(c)
    if not any(isinstance(c, ContentImage) for c in content):
        return _text(content)
    parts: list[dict[str, Any]] = []
    for c in content:
        if isinstance(c, ContentText):
            parts.append({"type": "text", "text": c.text})
        elif isinstance(c, ContentImage):
            parts.append({"type": "image_url", "image_url": {"url": _image_url(c.image)}})
    return parts


def _image_url(image: str) -> str:
    """An image as a URL: http(s) and data: URLs as they are, a local file as a data: URL."""
    if image.startswith(("http://", "https://", "data:")):
        return image
    path = Path(image)
    if not path.is_file():
        raise ConfigError(
            f"an image is neither a URL nor a readable file: {image[:80]}",
            code="INSPECT_CONTENT_UNSUPPORTED",
        )
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _unsupported(content: Content) -> ConfigError:
    return ConfigError(
        f"a message holds {content.type} content, which workbench does not send (text and "
        "images only)",
        code="INSPECT_CONTENT_UNSUPPORTED",
    )


# ------------------------------------------------------------------------------ us → Inspect
def model_output(reply: Reply, *, answered: str, asked: str | None = None) -> ModelOutput:
    """Our reply as Inspect's output: the cleaned text, every call read (prose ones too) as
    Inspect's ToolCalls, the usage, the stop reason. `answered` is the `provider:model` that
    answered (the output's model); when the route fell back from `asked`, the first model it
    asked, Inspect records the fallback."""
    prose = {c.id: c.family for c in reply.tool_calls if c.source == "text"}
    message = ChatMessageAssistant(
        content=reply.text,
        tool_calls=[inspect_call(c) for c in reply.tool_calls] or None,
        model=answered,
        source="generate",
        metadata={PROSE_CALLS: prose} if prose else None,
    )
    usage = reply.usage
    return ModelOutput(
        model=answered,
        choices=[ChatCompletionChoice(message=message, stop_reason=stop_reason(reply))],
        usage=ModelUsage(
            input_tokens=usage.prompt_tokens or 0,
            output_tokens=usage.completion_tokens or 0,
            total_tokens=usage.total_tokens or 0,
        ),
        time=reply.latency_ms / 1000 if reply.latency_ms else None,
        fallback=ModelFallback(model=asked, fallback_model=answered)
        if asked and asked != answered
        else None,
    )


def inspect_call(call: ToolCall) -> InspectToolCall:
    """One of our calls as Inspect's: unreadable arguments become Inspect's parse error (its
    tool runner tells the model, as it does for a native call it cannot parse)."""
    error = None
    if call.invalid:
        error = f"the arguments are not a JSON object ({call.invalid_reason}): {call.raw_arguments[:200]}"
    return InspectToolCall(
        id=call.id,
        function=call.name,
        arguments={} if call.invalid else dict(call.arguments),
        parse_error=error,
    )


def stop_reason(reply: Reply) -> StopReason:
    if reply.tool_calls:
        return "tool_calls"
    if reply.cut or reply.finish_reason in ("length", "max_tokens", "MAX_TOKENS"):
        return "max_tokens"
    if reply.finish_reason in ("content_filter", "SAFETY"):
        return "content_filter"
    return "stop"


__all__ = [
    "PROSE_CALLS",
    "chat_request",
    "conversation",
    "function_spec",
    "inspect_call",
    "model_output",
    "stop_reason",
]
