"""What a persona does with one request once it is admitted: refuse it, or write its answer.

Shared by the synchronous endpoints and the batch endpoints, so a batch line gets exactly
the answer (or the refusal) the synchronous endpoint gives the same request at the same
ordinal: a batch changes when an answer arrives, never what it says.
"""

from __future__ import annotations

from typing import Any

from workbench.sim import gemini_surface, openai_surface
from workbench.sim.answers import answer as write_answer
from workbench.sim.bfcl_play import play as play_bfcl
from workbench.sim.conversation import Answer, Conversation
from workbench.sim.fleet import Persona
from workbench.sim.vendor_errors import (
    blind,
    context_length,
    system_refused,
    tools_rejected,
)


def parse(surface: str, body: Any) -> Conversation:
    """The conversation a request body carries (raises a 400 `SimError` when it carries none)."""
    return gemini_surface.parse(body) if surface == "gemini" else openai_surface.parse(body)


def refuse(persona: Persona, surface: str, model: str, body: Any, conv: Conversation) -> None:
    """Raise what the persona refuses, in the order a vendor checks."""
    has_system = (
        gemini_surface.has_system(body)
        if surface == "gemini"
        else bool(conv.system and conv.system.strip())
    )
    if persona.refuses_system and has_system:
        raise system_refused(model)
    if persona.tool_style == "rejects_tools" and conv.tools:
        raise tools_rejected(model)
    carries = (
        gemini_surface.carries_images(body)
        if surface == "gemini"
        else openai_surface.carries_images(body)
    )
    if carries and not persona.vision:
        raise blind(model)
    tokens = conv.prompt_tokens
    if tokens > persona.context_window:
        raise context_length(persona.context_window, tokens, surface)


def shaped_answer(
    persona: Persona, conv: Conversation, seed: int, ordinal: int, failure: str | None
) -> Answer:
    """The persona's answer, emptied or cut as the failure kind says, within max_tokens."""
    ans = play_bfcl(persona, conv) or write_answer(persona, conv, seed, ordinal)
    if failure == "empty":
        ans = Answer()
    elif failure == "truncated":
        ans = truncate(ans, max(1, len(ans.text) // 2))
    if conv.max_tokens and ans.completion_tokens > conv.max_tokens:
        ans = truncate(ans, conv.max_tokens * 4)
    return ans


def truncate(ans: Answer, chars: int) -> Answer:
    if ans.calls:
        for c in ans.calls:
            c.arguments = c.arguments[: max(1, len(c.arguments) // 2)]
        return Answer(text=ans.text, reasoning=ans.reasoning, calls=ans.calls, finish="length")
    return Answer(text=ans.text[:chars].rstrip(), reasoning=ans.reasoning, finish="length")


def render(surface: str, ans: Answer, conv: Conversation, model: str, seq: int) -> dict[str, Any]:
    """The JSON body the synchronous endpoint of `surface` returns for this answer."""
    if surface == "gemini":
        return gemini_surface.render(ans, conv, model, seq)
    return openai_surface.render(ans, conv, model, seq)
