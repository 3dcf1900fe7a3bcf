"""The masker a workbench run gives each item: registry names, e-mail and phone patterns, and
a small local name detector (`workbench.text.detectors`) — so the masking set exercises every
way a value is caught."""

from __future__ import annotations

from collections.abc import Iterable

from workbench.eval.dataset.prompt_set import Item
from workbench.text.detectors import PATTERNS, detect_names
from workbench.text.masker import ReversibleMasker


def masker_for(item: Item) -> ReversibleMasker:
    """One masker per item (a conversation): its registry is the item's sensitive values,
    unless the item is tagged `unregistered` (then patterns and the detector must catch them)."""
    names = () if "unregistered" in item.tags else item.sensitive
    return conversation_masker(names)


def conversation_masker(names: Iterable[str] = ()) -> ReversibleMasker:
    """The masker of one conversation that is no item of a prompt set (a gateway's request,
    an Inspect sample): the same patterns and detector as a run's, with `names` registered."""
    return ReversibleMasker(names=names, patterns=PATTERNS, detect=detect_names)
