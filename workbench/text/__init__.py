"""Privacy and text: the reversible masker, and what cleans and shapes model text.

What leaves the machine is masked as it leaves (`masker`); what a person reads is cleaned
(`cleaner`), shaped for the surface it lands on (`formatting`, `markdown`), in the right
language (`language`), and tied to the sources it really used (`passages`, `sources`).
What a model may cite is a list of `facts`, each field shown even when nothing is recorded.

Each name is imported from its module on first use: a run needs the masker, the cleaner and
the language detector, not the markdown, passage and source helpers the serving side uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names

if TYPE_CHECKING:
    from workbench.text.cleaner import ResponseCleaner, Vocabulary, load_vocabulary
    from workbench.text.facts import (
        FACT_KINDS,
        NOT_RECORDED,
        Fact,
        assign_fact_ids,
        declared_fields,
        fact_ids,
        make_fact,
        render_facts,
        unrecorded_fields,
    )
    from workbench.text.formatting import FormatInstructions
    from workbench.text.language import LanguageDetector, default_detector, same_language
    from workbench.text.markdown import (
        plain_text,
        tidy_markdown,
        verify_quotations,
        whole_sentences,
    )
    from workbench.text.masker import Detection, ReversibleMasker
    from workbench.text.passages import build_passages_context
    from workbench.text.sources import (
        SourceLedger,
        find_contradiction,
        rerank_results,
        used_sources,
    )

# public name → the module of this package that defines it
_HOMES: dict[str, str] = {
    "ResponseCleaner": "cleaner",
    "Vocabulary": "cleaner",
    "load_vocabulary": "cleaner",
    "FACT_KINDS": "facts",
    "NOT_RECORDED": "facts",
    "Fact": "facts",
    "assign_fact_ids": "facts",
    "declared_fields": "facts",
    "fact_ids": "facts",
    "make_fact": "facts",
    "render_facts": "facts",
    "unrecorded_fields": "facts",
    "FormatInstructions": "formatting",
    "LanguageDetector": "language",
    "default_detector": "language",
    "same_language": "language",
    "plain_text": "markdown",
    "tidy_markdown": "markdown",
    "verify_quotations": "markdown",
    "whole_sentences": "markdown",
    "Detection": "masker",
    "ReversibleMasker": "masker",
    "build_passages_context": "passages",
    "SourceLedger": "sources",
    "find_contradiction": "sources",
    "rerank_results": "sources",
    "used_sources": "sources",
}

__all__ = [
    "FACT_KINDS",
    "NOT_RECORDED",
    "Detection",
    "Fact",
    "FormatInstructions",
    "LanguageDetector",
    "ResponseCleaner",
    "ReversibleMasker",
    "SourceLedger",
    "Vocabulary",
    "assign_fact_ids",
    "build_passages_context",
    "declared_fields",
    "default_detector",
    "fact_ids",
    "find_contradiction",
    "load_vocabulary",
    "make_fact",
    "plain_text",
    "render_facts",
    "rerank_results",
    "same_language",
    "tidy_markdown",
    "unrecorded_fields",
    "used_sources",
    "verify_quotations",
    "whole_sentences",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
