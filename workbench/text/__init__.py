"""Privacy and text: the reversible masker, and what cleans and shapes model text.

What leaves the machine is masked as it leaves (`masker`); what a person reads is cleaned
(`cleaner`), shaped for the surface it lands on (`formatting`, `markdown`), in the right
language (`language`), and tied to the sources it really used (`passages`, `sources`).
"""

from workbench.text.cleaner import ResponseCleaner, Vocabulary, load_vocabulary
from workbench.text.formatting import FormatInstructions
from workbench.text.language import LanguageDetector, default_detector, same_language
from workbench.text.markdown import plain_text, tidy_markdown, verify_quotations, whole_sentences
from workbench.text.masker import Detection, ReversibleMasker
from workbench.text.passages import build_passages_context
from workbench.text.sources import SourceLedger, find_contradiction, rerank_results, used_sources

__all__ = [
    "Detection",
    "FormatInstructions",
    "LanguageDetector",
    "ResponseCleaner",
    "ReversibleMasker",
    "SourceLedger",
    "Vocabulary",
    "build_passages_context",
    "default_detector",
    "find_contradiction",
    "load_vocabulary",
    "plain_text",
    "rerank_results",
    "same_language",
    "tidy_markdown",
    "used_sources",
    "verify_quotations",
    "whole_sentences",
]
