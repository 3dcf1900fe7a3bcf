"""The surface-neutral shape of one request and one answer inside the simulator.

Each surface (OpenAI chat completions, Gemini generateContent) parses its wire body into a
`Conversation`; the answer engine writes an `Answer`; the surface renders it back.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(slots=True)
class Image:
    mime: str = ""
    data: bytes | None = None
    url: str | None = None


@dataclass(slots=True)
class Turn:
    role: Literal["user", "assistant", "tool"]
    text: str = ""
    images: list[Image] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, arguments}
    tool_name: str | None = None  # role == "tool": which tool answered
    tool_call_id: str | None = None


@dataclass(slots=True)
class Tool:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Conversation:
    turns: list[Turn]
    system: str | None = None
    tools: list[Tool] = field(default_factory=list)
    max_tokens: int | None = None
    stream: bool = False
    include_usage: bool = False
    tool_choice: str | None = None  # "auto" | "none" | "required" | a tool name

    @property
    def has_images(self) -> bool:
        return any(t.images for t in self.turns)

    @property
    def prompt_chars(self) -> int:
        n = len(self.system or "")
        for t in self.turns:
            n += len(t.text) + sum(len(json.dumps(c)) for c in t.tool_calls)
            n += 300 * len(t.images)
        n += sum(
            len(json.dumps(x.parameters)) + len(x.name) + len(x.description) for x in self.tools
        )
        return n

    @property
    def prompt_tokens(self) -> int:
        return estimate_tokens_from_chars(self.prompt_chars)

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None


@dataclass(slots=True)
class OutCall:
    id: str
    name: str
    args: dict[str, Any]
    arguments: str  # the wire string: compact JSON, or broken JSON when malformed


@dataclass(slots=True)
class Answer:
    text: str = ""
    reasoning: str = ""  # separate reasoning (thought parts / reasoning_content)
    calls: list[OutCall] = field(default_factory=list)
    finish: Literal["stop", "tool_calls", "length"] = "stop"

    @property
    def completion_chars(self) -> int:
        return (
            len(self.text)
            + len(self.reasoning)
            + sum(len(c.name) + len(c.arguments) for c in self.calls)
        )

    @property
    def completion_tokens(self) -> int:
        return estimate_tokens_from_chars(self.completion_chars) if self.completion_chars else 0


def estimate_tokens_from_chars(chars: int) -> int:
    return max(1, math.ceil(chars / 4))


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
