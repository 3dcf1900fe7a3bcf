"""One BFCL question as the grader needs it: its category, language, function docs and
possible answers, kept exactly as BFCL's files give them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Language = Literal["python", "java", "javascript"]
# How a category is graded: by the AST checker, or only on whether a call was made.
Kind = Literal["ast", "irrelevance", "relevance"]

CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
    "live_relevance",
)


def language_of(category: str) -> Language:
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else "python"


def kind_of(category: str) -> Kind:
    if "irrelevance" in category:
        return "irrelevance"
    return "relevance" if "relevance" in category else "ast"


@dataclass(frozen=True, slots=True)
class BfclCase:
    """What BFCL grades an answer against. `functions` are BFCL's own docs (dotted names,
    BFCL types), untouched by what was sent; `ground_truth` is the possible-answer list, empty
    for (ir)relevance; `sent_names` maps a name as sent to a vendor (`math_factorial`) back to
    BFCL's (`math.factorial`)."""

    id: str
    category: str
    functions: tuple[dict[str, Any], ...]
    ground_truth: tuple[dict[str, Any], ...] = ()
    sent_names: dict[str, str] = field(default_factory=dict)

    @property
    def language(self) -> Language:
        return language_of(self.category)

    @property
    def kind(self) -> Kind:
        return kind_of(self.category)


class Undecodable(Exception):
    """A reply is not a call list BFCL's decoder can read (BFCL's decoder raised)."""
