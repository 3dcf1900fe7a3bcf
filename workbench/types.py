"""The small typed records every module shares: requests, replies, tool calls, usage, context.

Messages stay in the OpenAI chat shape (plain dicts) because that is the lingua franca of
every endpoint we talk to and of every dataset users bring; the adapters translate to other
wire formats (Gemini) at the edge.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx

if TYPE_CHECKING:
    from workbench.capability.classify import Classification
    from workbench.providers.meter import QuotaReading

Protocol = Literal["native", "text", "none"]
# How a route offers tools: "native" sends them as the caller wrote them; "text" describes them
# in the system prompt and reads the calls from prose; "plan" lets each model's observed
# verdict decide (a model seen calling only in prose gets "text", one that cannot gets neither).
ToolsMode = Literal["plan", "native", "text"]
InvalidReason = Literal["not_json", "not_object", "truncated"]
Message = dict[str, Any]


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_part(data: bytes | str, mime: str = "image/png") -> dict[str, Any]:
    """An image part in the OpenAI shape: bytes become a data: URL, a str is taken as a URL."""
    if isinstance(data, bytes):
        url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    else:
        url = data
    return {"type": "image_url", "image_url": {"url": url}}


def user(text: str, *images: bytes | str, mime: str = "image/png") -> Message:
    """A user message; with images, content becomes a list of parts."""
    if not images:
        return {"role": "user", "content": text}
    return {
        "role": "user",
        "content": [text_part(text), *(image_part(i, mime) for i in images)],
    }


def messages_carry_images(messages: list[Message]) -> bool:
    """True when any message has list content with an `image_url` part (the OpenAI shape)."""
    for m in messages:
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "image_url" for p in content
        ):
            return True
    return False


@dataclass(frozen=True, slots=True)
class ToolsInProse:
    """How a request's tools are described to a model that gets them in prose, when the
    caller has its own words for it (a benchmark's prompt-mode system prompt) instead of
    workbench's protocol hint and listing; `names` are the names that description gives the
    tools (BFCL's dotted `math.factorial`), read as calls beside the tools' own names."""

    prompt: str
    names: tuple[str, ...] = ()


@dataclass(slots=True)
class ChatRequest:
    """One chat turn to send. `extra` holds vendor body fields, merged last (over everything)."""

    messages: list[Message]
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # "both": native tool calls and calls written in prose are read; "native" opts out of prose.
    tool_protocol: Literal["both", "native"] = "both"
    # False: the tools are not sent natively (a model known to ignore them), but their names
    # still decide which calls written in prose count.
    send_tools: bool = True
    tools_in_prose: ToolsInProse | None = None

    @classmethod
    def of(cls, prompt: str, **kw: Any) -> ChatRequest:
        return cls(messages=[user(prompt)], **kw)


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str
    invalid: bool = False
    invalid_reason: InvalidReason | None = None
    source: Literal["native", "text"] = "native"
    # The prose format a text call was read in (hermes, mistral, qwen3_xml, …); None if native.
    family: str | None = None


@dataclass(slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


@dataclass(slots=True)
class Reply:
    """What a model said, read the same way whatever the vendor. `text` never holds reasoning
    or tool-call protocol lines."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    cut: bool = False
    usage: Usage = field(default_factory=Usage)
    raw_status: int = 200
    latency_ms: float = 0.0
    provider: str = ""
    model: str = ""
    protocol: Protocol = "none"
    finish_reason: str | None = None
    quota: list[QuotaReading] = field(default_factory=list)  # from the vendor's headers
    # What this attempt taught about the model (tools, vision), filled by the router's observer.
    verdicts: list[Classification] = field(default_factory=list)
    cached: bool = False  # served by a response cache: no provider was asked
    raw: Any = field(default=None, repr=False)
    # The text as the model wrote it (reasoning removed) when calls written in prose were taken
    # out of `text`: a benchmark's prompting mode decodes the reply whole, as written.
    content: str | None = None


@dataclass(slots=True)
class CallContext:
    """Per-call (and per-route) settings. Keys and URLs are resolved from this on every call,
    so a rotated key, a per-purpose key or a per-request client works without rebuilding the
    provider. The router reads the routing fields; adapters ignore what they do not need."""

    client: httpx.AsyncClient | None = None
    timeout_s: float | None = None
    purpose: str | None = None
    lane: str | None = None
    # Set it to cancel a route at once: no next model is asked and nothing is cooled.
    signal: asyncio.Event | None = None
    # Observers of this call only (in addition to the router's own sinks).
    sinks: tuple[Callable[[Any], Any], ...] = ()
    # Routing: which models fit, how many tokens to reserve, which intent prefers whom.
    complexity: str | None = None
    estimated_tokens: int | None = None
    intent: str | None = None
    # The caller's overall deadline for a whole route (seconds from the start of the route).
    deadline_s: float | None = None
    # How tools are offered to each model of the route (see `ToolsMode`).
    tools_mode: ToolsMode = "native"
    # Which repeat of an evaluation item this is: part of the cache key, so that repeat 2,
    # which exists to measure variance, is never answered by repeat 1.
    repeat: int = 0
    # For a request carrying a picture: what a model that sees it must mention (a word or any of
    # several), so the vision verdict can tell sight from a guess.
    expect_image: str | tuple[str, ...] | None = None
    # What a cancelled route reports to its caller.
    cancel_reason: str | None = None
    # Anything else the caller's own policies read (e.g. who is asking, for admission).
    values: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A typed setting put in the untyped bag (`values={"tools_mode": "text"}`) means the
        # field: lifted, so that it is never silently ignored.
        if not self.values:
            return
        typed = self.values.keys() & (self.__dataclass_fields__.keys() - {"values"})
        if typed:
            for name in typed:
                setattr(self, name, self.values[name])
            self.values = {k: v for k, v in self.values.items() if k not in typed}

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    @classmethod
    def of(cls, value: CallContext | dict[str, Any] | None) -> CallContext:
        """A context from a dict (`{"complexity": "hard", "user": "ana"}`): known fields are
        set, anything else lands in `values` (e.g. who is asking, for admission)."""
        if value is None:
            return cls()
        if isinstance(value, CallContext):
            return value
        names = set(cls.__dataclass_fields__) - {"values"}
        known = {k: v for k, v in value.items() if k in names}
        values = {k: v for k, v in value.items() if k not in names}
        values.update(value.get("values") or {})
        return cls(**known, values=values)

    def replace(self, **changes: Any) -> CallContext:
        return dataclasses.replace(self, **changes)
