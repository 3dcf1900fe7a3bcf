"""Reading one real response for what it proves about a model's capability.

The design rests on one asymmetry. A positive is cheap: one response carrying `tool_calls`
proves, beyond argument, that this model on this provider with this key can call tools. A
negative is expensive and sticky: a 400 recorded as "no tools" cripples a capable model until
the record expires, with nothing in the product explaining why. So a negative needs the vendor
to *say* it is about tools (or images), and every other failure is recorded as nothing at all
(`record=False`): the right response to an uninformative failure is to learn nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from workbench.capability.decide import Verdict

_SEP = r"[\s_-]?"
_APOS = r"['’]?"  # doesn't, doesnt, doesn’t
_TOOLS = r"`?tools?`?"
_FUNCTIONS = r"`?functions?`?"

# ai-kit's 14 templates of a refusal of tools. Every entry names tools or functions explicitly: "invalid
# request", "bad parameter" or "unsupported" alone appear in vendor 400s for a dozen unrelated
# reasons, and matching one of them would silently disable a working model.
TOOLS_UNSUPPORTED_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # 1. "tool use is not supported", "tool calls are unsupported", "tool_calling not supported"
        rf"\btool{_SEP}(?:use|calls|calling|call)\s+(?:(?:is|are)\s+)?(?:not|un){_SEP}support",
        # 2.
        r"does\s+not\s+support\s+tool",
        # 3.
        rf"doesn{_APOS}t\s+support\s+tool",
        # 4.
        r"no\s+support\s+for\s+tool",
        # 5. "function calling is not supported", "function calls are unsupported"
        rf"\bfunction{_SEP}call(?:s|ing)?\s+(?:(?:is|are)\s+)?(?:not|un){_SEP}support",
        # 6.
        r"does\s+not\s+support\s+function",
        # 7.
        rf"doesn{_APOS}t\s+support\s+function",
        # 8. "model X does not support (the) `tools`"
        rf"model.{{0,60}}?does\s+not\s+support\s+(?:the\s+)?{_TOOLS}",
        # 9. "model X does not support (the) `functions`"
        rf"model.{{0,60}}?does\s+not\s+support\s+(?:the\s+)?{_FUNCTIONS}",
        # 10. "Unsupported parameter: 'tools'" (not 'tool_choice': that is a knob, not the ability)
        r"unsupported\s+parameter:?\s*['\"`]?tools?\b",
        # 11. "Unknown field: tools", "unknown parameter 'tool'"
        r"unknown\s+(?:field|parameter):?\s*['\"`]?tools?\b",
        # 12. "`tools` is not a valid ...", "functions are unsupported"
        rf"(?:\b{_TOOLS}|\b{_FUNCTIONS})\s+(?:is|are)\s+"
        r"(?:not\s+(?:a\s+)?(?:valid|supported|allowed|available)|unsupported)",
        # 13. "cannot use tools", "can't call functions", "is unable to execute tools"
        rf"(?:cannot|can{_APOS}t|is\s+unable\s+to)\s+(?:use|call|handle|execute)\s+"
        r"(?:tools?|functions?)\b",
        # 14. "no tool support", "no functions support"
        r"\bno\s+(?:tools?|functions?)\s+support",
    )
)

# What a size, format or encoding complaint looks like after "images": those are about one
# picture, not about the model's eyes ("does not support images larger than 20MB").
_UNQUALIFIED = (
    r"(?!\s*(?:/|format|type|size|larger|bigger|greater|smaller|over|above|exceeding|"
    r"more\s+than|less\s+than|with|of\b|from|that|than|encoded|in\s+(?:this|that|the)\s+format))"
)

# A conservative phrase set for "this model does not take images" in an error body.
IMAGES_UNSUPPORTED_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bimage\s+inputs?\s+(?:is\s+|are\s+)?(?:not\s+supported|unsupported)",
        rf"(?:does\s+not|doesn{_APOS}t|do\s+not|don{_APOS}t)\s+support\s+"
        rf"(?:images?|vision|image[\s_]inputs?|image_url)\b{_UNQUALIFIED}",
        rf"(?:cannot|can{_APOS}t|is\s+unable\s+to)\s+(?:see|process|read|view|accept|handle)"
        rf"\s+images\b{_UNQUALIFIED}",
        r"unsupported\s+(?:content|input)(?:[\s_-]?part)?[\s_-]?type:?\s*['\"`]?image",
        r"['\"`]?\bimage_url['\"`]?\s+(?:is\s+)?(?:not\s+supported|unsupported"
        r"|is\s+only\s+supported\s+by\s+certain\s+models)",
        r"\bvision\s+(?:is\s+)?(?:not\s+supported|unsupported)",
        r"\bno\s+(?:vision|image)\s+support",
    )
)

_OBJECT = (
    r"(?:images?|pictures?|photos?|attachments?|visual\s+content|visuals"
    r"|(?:the|this|that|your|any)\s+(?:image|picture|photo|attachment|file)s?)\b"
)
# What a model that never received the picture answers.
CANNOT_SEE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"(?:cannot|can{_APOS}t|can\s+not|unable\s+to|not\s+able\s+to|no\s+ability\s+to)\s+"
        rf"(?:see|view|process|read|access|interpret|analy[sz]e|look\s+at|open)\s+{_OBJECT}",
        rf"(?:do\s+not|don{_APOS}t)\s+have\s+(?:the\s+)?(?:ability|capability)\s+to\s+"
        r"(?:see|view|process|interpret|analy[sz]e)",
        rf"(?:do\s+not|don{_APOS}t)\s+see\s+(?:an?|any)\s+(?:image|picture|photo|attachment)",
        r"no\s+(?:image|picture|photo)\s+(?:was|has\s+been|is|were)\s+"
        r"(?:attached|provided|included|shared|uploaded)",
        r"\bas\s+an?\s+text[\s-](?:based|only)\b",
        r"\bonly\s+(?:process|read|understand|handle|work\s+with)\s+text\b",
    )
)


@dataclass(frozen=True, slots=True)
class Classification:
    """What one real response proved. `record` says whether it is worth writing down: a 429, a
    500, a timeout or a 400 about something else proves nothing and must not be stored."""

    verdict: Verdict
    record: bool
    evidence: str


def _text(body: Any) -> str:
    if isinstance(body, str):
        return body
    if isinstance(body, bytes | bytearray):
        return bytes(body).decode("utf-8", errors="replace")
    return ""


def _any(patterns: Iterable[re.Pattern[str]], text: str) -> bool:
    return bool(text) and any(p.search(text) for p in patterns)


def says_tools_unsupported(body: Any) -> bool:
    """Does this error body explicitly say the model cannot do tools?

    Conservative on purpose: a false positive is a model downgraded for a reason nobody sees;
    a false negative means we ask again next time, which costs one request."""
    return _any(TOOLS_UNSUPPORTED_PATTERNS, _text(body))


def says_images_unsupported(body: Any) -> bool:
    """Does this error body explicitly say the model does not take images? Size, format and
    download complaints are about one picture, not the model, and do not count."""
    return _any(IMAGES_UNSUPPORTED_PATTERNS, _text(body))


def says_cannot_see(answer: Any) -> bool:
    """Does this answer say the model could not see the picture ("I can't see images")?"""
    return _any(CANNOT_SEE_PATTERNS, _text(answer))


def _status(status: Any) -> int | None:
    """An HTTP status as an int, or None for a transport failure (absent, 0, NaN, not a number)."""
    if isinstance(status, bool) or not isinstance(status, int | float):
        return None
    if isinstance(status, float) and not math.isfinite(status):
        return None
    code = int(status)
    return code or None


def _first_choice(parsed: Any) -> dict[str, Any]:
    if not isinstance(parsed, dict):
        return {}
    choices = parsed.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return {}
    return choices[0]


def classify_tool_attempt(
    status: Any,
    parsed: Any = None,
    body_text: Any = "",
    text_protocol_found: bool = False,
) -> Classification:
    """What does this attempt prove about tool support? Call it after every request that
    carried tool definitions: real traffic then classifies every model a user brings, on its
    first message, at no extra request.

    `parsed` is an OpenAI-shaped body (the router's attempt pipeline builds one from any
    vendor's reply: its native calls and finish reason); `text_protocol_found` is whether the caller's prose parser found a tool call."""
    code = _status(status)
    if code is None:
        return Classification("unobserved", False, "no response")
    if code >= 400:
        if says_tools_unsupported(body_text):
            return Classification(
                "none", True, f"{code}: the vendor says this model does not support tools"
            )
        # 429, 401, 500, a 400 about context length: nothing about tools. Learn nothing.
        return Classification("unobserved", False, f"{code}: not a statement about tool support")
    choice = _first_choice(parsed)
    message = choice.get("message")
    tool_calls = message.get("tool_calls") if isinstance(message, dict) else None
    if isinstance(tool_calls, list) and tool_calls:
        return Classification("native", True, "returned tool_calls")
    if choice.get("finish_reason") == "tool_calls":
        return Classification("native", True, "finish_reason was tool_calls")
    if text_protocol_found is True:
        # The text protocol is a real capability: many free models answer tools only in prose.
        return Classification(
            "text", True, "no tool_calls, but a tool call was parsed from the text"
        )
    # A plain answer is ambiguous: the model may simply not have needed a tool. Reading it as
    # incapacity would mark almost every model `none` within a few turns of ordinary chat.
    return Classification(
        "unobserved",
        False,
        "answered without calling a tool, which is not evidence either way",
    )


def _expected_terms(expected: Any) -> list[str]:
    if isinstance(expected, str):
        items: list[Any] = [expected]
    elif isinstance(expected, Iterable):
        items = list(expected)
    else:
        return []
    return [t.strip() for t in items if isinstance(t, str) and t.strip()]


def _mentions(answer: str, term: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(term)}(?!\w)", answer, re.IGNORECASE) is not None


def classify_vision_attempt(
    status: Any,
    body_text: Any = "",
    answer_text: Any = None,
    expected: str | Iterable[str] | None = None,
) -> Classification:
    """What does a request that carried an image prove about vision?

    `expected` is what a probe knows its test picture shows (a word, or several accepted
    words). A plain answer without it proves nothing: an answer is not proof the model saw."""
    code = _status(status)
    if code is None:
        return Classification("unobserved", False, "no response")
    if code >= 400:
        if says_images_unsupported(body_text):
            return Classification(
                "none", True, f"{code}: the vendor says this model does not accept images"
            )
        return Classification("unobserved", False, f"{code}: not a statement about image support")
    answer = _text(answer_text)
    blind = says_cannot_see(answer)
    terms = _expected_terms(expected)
    if terms:
        hit = next((t for t in terms if _mentions(answer, t)), None)
        if hit is not None and not blind:
            return Classification("native", True, f"described the test image correctly: {hit}")
        if hit is not None:
            # "I can't see images, but it might be red": the two readings contradict each
            # other, and a guess is not an observation either way.
            return Classification(
                "unobserved",
                False,
                f"named {hit} but also said it cannot see images, which proves nothing",
            )
    if blind:
        return Classification("none", True, "answered that it cannot see images")
    if terms:
        return Classification(
            "unobserved",
            False,
            f"answered without describing the test image (expected {' or '.join(terms)})",
        )
    return Classification("unobserved", False, "answered, which is not proof that it saw the image")
