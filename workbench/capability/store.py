"""Where capability records live. The Protocol is three calls so that a DuckDB table or a Redis
hash can implement it in a page; `put` applies `should_replace`, so every store keeps the same
rule (stronger provenance, then newer) and no caller can bypass it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from workbench.capability.decide import CapabilityRecord, should_replace


@runtime_checkable
class CapabilityStore(Protocol):
    async def get(
        self, provider: str, model: str, scope: str, capability: str
    ) -> CapabilityRecord | None: ...

    async def put(self, record: CapabilityRecord) -> bool:
        """Store `record` if `should_replace(existing, record)`; return whether it was stored."""
        ...

    async def all(self) -> list[CapabilityRecord]: ...


class MemoryCapabilityStore:
    """A dict keyed by (provider, model, scope, capability). Per process, lost on exit."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str, str, str], CapabilityRecord] = {}

    async def get(
        self, provider: str, model: str, scope: str, capability: str
    ) -> CapabilityRecord | None:
        return self._records.get((provider, model, scope, capability))

    async def put(self, record: CapabilityRecord) -> bool:
        # No await between read and write: atomic within one event loop.
        if not should_replace(self._records.get(record.key), record):
            return False
        self._records[record.key] = record
        return True

    async def all(self) -> list[CapabilityRecord]:
        return list(self._records.values())

    def __len__(self) -> int:
        return len(self._records)
