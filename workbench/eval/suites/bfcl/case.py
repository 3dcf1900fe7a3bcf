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
# Played over several turns through the tool loop, against BFCL's own backends.
MULTI_TURN_CATEGORIES: tuple[str, ...] = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
MEMORY_CATEGORIES: tuple[str, ...] = ("memory_kv", "memory_vector", "memory_rec_sum")
WEB_SEARCH_CATEGORIES: tuple[str, ...] = ("web_search_base", "web_search_no_snippet")
# Graded on the final answer (BFCL's "agentic" categories), not on the calls.
AGENTIC_CATEGORIES: tuple[str, ...] = (*MEMORY_CATEGORIES, *WEB_SEARCH_CATEGORIES)
ALL_CATEGORIES: tuple[str, ...] = (*CATEGORIES, *MULTI_TURN_CATEGORIES, *AGENTIC_CATEGORIES)


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


@dataclass(frozen=True, slots=True)
class BfclEntry:
    """A BFCL entry played over turns against BFCL's backends: multi-turn, memory, web search.

    `turns` are the user messages of each turn as BFCL's file gives them (a held-back turn
    of miss_func is empty: the held-back docs, `missed`, are added then with BFCL's own
    prompt). `functions` are the docs offered from the first turn. `ground_truth` is, for a
    multi-turn entry, each turn's calls as BFCL writes them (`cd(folder='document')`); for an
    agentic entry, `answers` are the accepted final answers. `initial_config` loads each
    backend instance (`involved_classes`) as BFCL loads it."""

    id: str
    category: str
    turns: tuple[tuple[dict[str, Any], ...], ...]
    functions: tuple[dict[str, Any], ...]
    involved_classes: tuple[str, ...]
    initial_config: dict[str, Any] = field(default_factory=dict)
    missed: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)  # turn → docs
    ground_truth: tuple[tuple[str, ...], ...] = ()
    answers: tuple[str, ...] = ()
    scenario: str | None = None  # a memory entry's scenario (customer, finance, ...)
    prerequisite: bool = False  # a memory conversation that writes the memory others read
    source: str = ""  # the BFCL data it was read from: its backends are imported from there

    @property
    def kind(self) -> Literal["multi_turn", "agentic"]:
        return "multi_turn" if self.category in MULTI_TURN_CATEGORIES else "agentic"

    @property
    def language(self) -> Language:
        return "python"  # BFCL's multi-turn and agentic functions are Python's

    @property
    def long_context(self) -> bool:
        """BFCL's flag for loading a backend with its long-context padding."""
        return "long_context" in self.category
