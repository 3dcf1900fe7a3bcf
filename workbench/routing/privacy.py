"""Whatever leaves the machine is masked as it leaves: the router applies a
conversation's masker at the edge of each attempt, by direction.

An `external` provider (the default) gets the request masked — system prompt, message text,
the arguments of earlier tool calls — and its reply comes back unmasked, streams included
(a token split across two chunks is held back until it is whole). A provider marked
`external=False` (a local model) gets clear text: nothing leaves. Only the places a person's
data can be are touched: roles, ids and image data are never rewritten.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any, Protocol

from workbench.providers.interface import Provider
from workbench.types import ChatRequest, Message, Reply, ToolCall


class Masker(Protocol):
    def mask(self, text: str) -> str: ...

    def unmask(self, text: str) -> str: ...

    def mask_value(self, value: Any) -> Any: ...

    def unmask_value(self, value: Any) -> Any: ...

    def unmasker(self) -> Any: ...


def leaves_the_machine(provider: Provider) -> bool:
    """Only a provider outside the machine is sent masked text; a local model gets it clear."""
    return provider.external


def mask_request(masker: Masker, request: ChatRequest) -> ChatRequest:
    return dataclasses.replace(
        request,
        system=masker.mask(request.system) if request.system else request.system,
        messages=[_mask_message(masker, m) for m in request.messages],
    )


def _mask_message(masker: Masker, message: Message) -> Message:
    out = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        out["content"] = masker.mask(content)
    elif isinstance(content, list):
        out["content"] = [
            {**part, "text": masker.mask(part["text"])}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
    if message.get("tool_calls"):
        out["tool_calls"] = [_mask_call(masker, c) for c in message["tool_calls"]]
    return out


def _mask_call(masker: Masker, call: Any) -> Any:
    if isinstance(call, ToolCall):
        return dataclasses.replace(
            call,
            arguments=masker.mask_value(call.arguments),
            raw_arguments=masker.mask(call.raw_arguments),
        )
    if isinstance(call, dict) and isinstance(call.get("function"), dict):
        fn = dict(call["function"])
        if isinstance(fn.get("arguments"), str):
            fn["arguments"] = masker.mask(fn["arguments"])
        return {**call, "function": fn}
    return call


def unmask_reply(masker: Masker, reply: Reply) -> Reply:
    return dataclasses.replace(
        reply,
        text=masker.unmask(reply.text),
        tool_calls=[
            dataclasses.replace(
                c,
                arguments=masker.unmask_value(c.arguments),
                raw_arguments=masker.unmask(c.raw_arguments),
            )
            for c in reply.tool_calls
        ],
    )


async def unmask_stream(masker: Masker, stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """Text deltas unmasked as they stream (a partial token waits for its end), then the Reply."""
    unmasker = masker.unmasker()
    async for item in stream:
        if isinstance(item, Reply):
            tail = unmasker.finish()
            if tail:
                yield tail
            yield unmask_reply(masker, item)
            return
        shown = unmasker.feed(item)
        if shown:
            yield shown
    tail = unmasker.finish()
    if tail:
        yield tail
