"""Classify → record → tell the sinks, for one real attempt.

The router's attempt pipeline (and the probe command, with `via="probe"`) calls this after
every request that carried tools or an image. Every classification becomes a `VerdictEvent`, recorded or not, so a
notebook can see the 429s that taught us nothing; only a classification worth writing down
reaches the store. The credential is turned into `scope_key(secret)` at the door: neither the
event nor the record ever holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from workbench.capability.classify import (
    Classification,
    classify_tool_attempt,
    classify_vision_attempt,
)
from workbench.capability.decide import (
    PROVENANCE_RANK,
    CapabilityRecord,
    ToolPlan,
    Verdict,
    is_stale,
    make_record,
    plan_tool_attempt,
    scope_key,
)
from workbench.capability.store import CapabilityStore
from workbench.errors import ConfigError
from workbench.events import Sink, VerdictEvent, emit, now_ms


class CapabilityObserver:
    def __init__(
        self,
        store: CapabilityStore | None = None,
        sinks: Iterable[Sink] = (),
        via: str = "live",
        clock_ms: Callable[[], int] | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        if via not in PROVENANCE_RANK:
            raise ConfigError(
                f"unknown provenance {via!r}; expected one of {tuple(PROVENANCE_RANK)}",
                code="CAPABILITY_INVALID",
            )
        self.store = store
        self.sinks = tuple(sinks)
        self.via = via
        self.clock_ms = clock_ms or now_ms
        self.ttl = ttl

    async def observe_tools(
        self,
        provider: str,
        model: str,
        secret: str | None,
        *,
        status: Any,
        parsed: Any = None,
        body_text: Any = "",
        text_protocol_found: bool = False,
        protocol_family: str | None = None,
        via: str | None = None,
        sinks: Iterable[Sink] = (),
        offered_natively: bool = True,
    ) -> Classification:
        """Classify an attempt that carried tool definitions, emit it, store it if it proved
        something. `sinks` adds observers for this call only (e.g. `CallContext.sinks`).

        `protocol_family` is the format the prose calls were written in (the first one's): a
        `text` verdict keeps it, on the event and the record, so that the next request in
        prose asks for the format the model already writes.

        `offered_natively=False`: the tools were only described in prose (a text-protocol or
        prompting-mode request), so the model had no way to call natively: calls in prose, or
        none, prove nothing about what it does with a `tools` field. Nothing is recorded (a
        `text` verdict would keep the planner from ever offering it tools natively)."""
        found = classify_tool_attempt(status, parsed, body_text, text_protocol_found)
        if not offered_natively and found.record and found.verdict != "native":
            found = Classification(found.verdict, False, f"{found.evidence}; offered in prose only")
        family = (protocol_family or None) if found.verdict == "text" else None
        await self._note(provider, model, secret, "tools", found, via, sinks, family)
        return found

    async def observe_vision(
        self,
        provider: str,
        model: str,
        secret: str | None,
        *,
        status: Any,
        body_text: Any = "",
        answer_text: Any = None,
        expected: str | Iterable[str] | None = None,
        via: str | None = None,
        sinks: Iterable[Sink] = (),
    ) -> Classification:
        """Classify an attempt that carried an image, emit it, store it if it proved something."""
        found = classify_vision_attempt(status, body_text, answer_text, expected)
        await self._note(provider, model, secret, "vision", found, via, sinks)
        return found

    async def record(
        self, provider: str, model: str, secret: str | None, capability: str = "tools"
    ) -> CapabilityRecord | None:
        """The stored record while it is fresh, else None (also without a store). The planner
        needs more of it than the verdict: the prose format a `text` verdict was seen in."""
        if self.store is None:
            return None
        record = await self.store.get(provider, model, scope_key(secret), capability)
        if record is None or is_stale(record, self.clock_ms(), self.ttl):
            return None
        return record

    async def verdict(
        self, provider: str, model: str, secret: str | None, capability: str = "tools"
    ) -> Verdict:
        """The stored verdict while it is fresh, else `unobserved` (also without a store)."""
        record = await self.record(provider, model, secret, capability)
        return "unobserved" if record is None else record.verdict

    async def plan(
        self, provider: str, model: str, secret: str | None, declared: str | None = None
    ) -> ToolPlan:
        """What to send to this model with this key: `plan_tool_attempt` over the stored verdict."""
        record = await self.record(provider, model, secret, "tools")
        if record is None:
            return plan_tool_attempt("unobserved", declared)
        return plan_tool_attempt(record.verdict, declared, record.protocol_family)

    async def _note(
        self,
        provider: str,
        model: str,
        secret: str | None,
        capability: str,
        found: Classification,
        via: str | None,
        extra_sinks: Iterable[Sink],
        protocol_family: str | None = None,
    ) -> None:
        via = via or self.via
        if via not in PROVENANCE_RANK:
            raise ConfigError(
                f"unknown provenance {via!r}; expected one of {tuple(PROVENANCE_RANK)}",
                code="CAPABILITY_INVALID",
            )
        scope = scope_key(secret)  # the secret goes no further than this line
        at = self.clock_ms()
        if found.record and self.store is not None:
            record = make_record(
                provider,
                model,
                scope,
                capability,
                found.verdict,
                via,
                found.evidence,
                at,
                protocol_family,
            )
            await self.store.put(record)
        event = VerdictEvent(
            provider=provider,
            model=model,
            scope=scope,
            capability=capability,  # type: ignore[arg-type]
            verdict=found.verdict,
            recorded=found.record,
            evidence=found.evidence,
            via=via,
            at_ms=at,
            protocol_family=protocol_family,
        )
        await emit((*self.sinks, *extra_sinks), event)
