"""The masking audit: did any sensitive value of any item leave the machine?

The simulator keeps every request it received; the audit looks for each item's `sensitive`
values in every body, as whole words (a name inside a longer word is not that name), and
records each hit in the `leaks` table with the request and the place in its body. The value
itself is stored only as a hash: the audit must not become the leak. The expected count is 0.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from workbench.eval.dataset.prompt_set import Dataset
from workbench.eval.store.database import Store


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON body, with where it is (`messages[1].content`)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


def _pattern(value: str) -> re.Pattern[str]:
    # Whole words, Unicode-aware: "Grace" leaks in "Grace said", not in "Gracefully".
    return re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")


def find_leaks(dataset: Dataset, requests: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every (item, sensitive value, request, place) where a value appears in a request."""
    watched = [
        (item.id, value, _pattern(value))
        for item in dataset.items
        for value in item.sensitive
        if len(value) >= 3  # names under 3 letters are never masked: not auditable
    ]
    leaks: list[dict[str, Any]] = []
    for request in requests:
        places = list(_strings(request.get("body") or {}))
        for item_id, value, pattern in watched:
            for path, text in places:
                if pattern.search(text):
                    leaks.append(
                        {
                            "item_id": item_id,
                            "kind": "sensitive",
                            "value_sha": hashlib.sha256(value.encode()).hexdigest()[:16],
                            "value_len": len(value),
                            "request_seq": request.get("seq"),
                            "model": request.get("model") or request.get("persona"),
                            "path": path,
                        }
                    )
    return leaks


def audit_leaks(
    store: Store, run_id: str, dataset: Dataset, requests: Iterable[dict[str, Any]]
) -> int:
    """Record the run's leaks in `leaks`; returns how many (the expected number is 0)."""
    leaks = find_leaks(dataset, requests)
    now = int(time.time() * 1000)
    store.add_leaks([{"run_id": run_id, "at_ms": now, **leak} for leak in leaks])
    return len(leaks)
