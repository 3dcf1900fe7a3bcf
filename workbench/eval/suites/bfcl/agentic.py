"""BFCL's agentic entries (memory, web search) as items: graded on the final answer."""

from __future__ import annotations

from typing import Any

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import Item
from workbench.eval.suites.bfcl.source import BfclSource


def agentic_items(
    found: BfclSource, category: str, digest: Any, limit: int | None, docs: dict[str, list]
) -> list[Item]:
    raise ConfigError(f"BFCL category {category!r} cannot be run yet", code="BFCL_CATEGORY_UNKNOWN")
