"""The chat format of `workbench local serve --tools`: llama.cpp's `chatml-function-calling`,
answering the way OpenAI's wire does.

It runs inside the server's child process (`python -m workbench.local.function_calling` with
llama_cpp.server's own flags), registers itself as CHAT_FORMAT, then hands over to
llama_cpp.server. llama-cpp-python's handler (0.3.x) produces real `tool_calls`: a forced
`tool_choice` prefixes `functions.<name>:` and constrains the arguments to the tool's JSON
schema; "auto" lets a grammar pick between `functions.<name>:` and `message:` at temperature 0.
Where it departs from OpenAI, this format steps in, each rule once, below:

- tools without a `tool_choice` mean "auto" (OpenAI's rule). The handler reads None as "none"
  and drops the tools, so a run, which never sends `tool_choice`, would never see a call.
- the handler lists the tools only inside a system message: a request without one gets an
  empty one, or under "auto" the model would pick among names it was never shown.
- an answer in words comes from the model's own chat template, exactly what the plain server
  answers: under "auto" the handler constrains the message to its follow-up grammar and
  returns "" (or a stray `functions.<name>:`), and without tools it uses a template that is
  not the model's.
- "auto" cannot stream (a ValueError after the 200 is sent, a broken stream): the call is
  computed whole and replayed as chunks.
- the legacy `function_call` field is dropped from whole answers (under "auto" its name keeps
  a trailing ":"): OpenAI sends `tool_calls` alone when tools were given.

llama_cpp is imported only inside the functions, so this module imports without the
`local` extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from workbench.local.server import CHAT_FORMAT

_MODEL_TEMPLATE = "chat_template.default"  # where llama.cpp keeps the GGUF's own template


def openai_tool_choice(tools: list[Any] | None, tool_choice: Any) -> Any:
    """The tool_choice OpenAI would apply: "auto" when tools come without one."""
    if tools and tool_choice is None:
        return "auto"
    return tool_choice


def with_system_message(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with a system message first (an empty one if they had none): the
    function-calling template lists the tools inside it, nowhere else."""
    if any(m.get("role") == "system" for m in messages):
        return messages
    return [{"role": "system", "content": ""}, *messages]


def without_legacy_call(answer: dict[str, Any]) -> dict[str, Any]:
    for choice in answer.get("choices") or []:
        message = choice.get("message") or {}
        if message.get("tool_calls"):
            message.pop("function_call", None)
    return answer


def replay_as_chunks(answer: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A whole chat.completion as the chunks OpenAI would have streamed: the role, every call
    (complete, each with its index), then the finish reason."""
    head = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = answer["choices"][0]
    message = choice["message"]
    calls = [{"index": i, **call} for i, call in enumerate(message.get("tool_calls") or [])]
    deltas: list[tuple[dict[str, Any], str | None]] = [
        ({"role": "assistant", "content": None}, None),
        ({"tool_calls": calls} if calls else {"content": message.get("content") or ""}, None),
        ({}, choice.get("finish_reason")),
    ]
    for delta, finish in deltas:
        yield head | {
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        }


def _in_words(llama: Any, messages: list[dict[str, Any]], stream: bool, kw: dict[str, Any]) -> Any:
    from llama_cpp.llama_chat_format import chatml_function_calling

    handlers = getattr(llama, "_chat_handlers", None) or {}
    own_template = handlers.get(_MODEL_TEMPLATE)
    if own_template is None:  # a GGUF without a template: the handler's plain path
        return chatml_function_calling(
            llama=llama, messages=messages, tool_choice="none", stream=stream, **kw
        )
    return own_template(llama=llama, messages=messages, stream=stream, **kw)


def openai_function_calling(
    *,
    llama: Any,
    messages: list[dict[str, Any]],
    tools: list[Any] | None = None,
    tool_choice: Any = None,
    stream: bool = False,
    **kw: Any,
) -> Any:
    """The registered handler: llama-cpp-python's chatml-function-calling, OpenAI-shaped."""
    from llama_cpp.llama_chat_format import chatml_function_calling

    if kw.get("functions") is not None or kw.get("function_call") is not None:
        # The legacy fields: left to the handler's own reading of them.
        return chatml_function_calling(
            llama=llama,
            messages=messages,
            tools=tools,
            tool_choice=tool_choice,
            stream=stream,
            **kw,
        )
    choice = openai_tool_choice(tools, tool_choice)
    if not tools or choice == "none":
        return _in_words(llama, messages, stream, kw)
    shown = with_system_message(messages)
    if choice != "auto":  # a named function (or "required", which the handler refuses)
        answer = chatml_function_calling(
            llama=llama, messages=shown, tools=tools, tool_choice=choice, stream=stream, **kw
        )
        return answer if stream else without_legacy_call(answer)
    answer = chatml_function_calling(
        llama=llama, messages=shown, tools=tools, tool_choice="auto", stream=False, **kw
    )
    if not answer["choices"][0]["message"].get("tool_calls"):
        return _in_words(llama, messages, stream, kw)
    answer = without_legacy_call(answer)
    return replay_as_chunks(answer) if stream else answer


def main() -> None:
    from llama_cpp.llama_chat_format import LlamaChatCompletionHandlerRegistry
    from llama_cpp.server.__main__ import main as serve

    # Typed loosely (plain dicts, not llama_cpp's TypedDicts): what the server hands over.
    handler = cast(Any, openai_function_calling)
    LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(CHAT_FORMAT, handler)
    serve()


if __name__ == "__main__":
    main()
