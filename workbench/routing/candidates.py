"""Which models a route may try, in which order, under which key.

The fallback order is the caller's decision (the order of providers, then of their models);
this module only filters it (availability, complexity, `select`, sight) and moves intent
favourites to the front and degraded models to the back, keeping the order otherwise stable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.capability.vision import model_sees_images
from workbench.errors import ConfigError
from workbench.providers.interface import Provider, as_provider, unwrap
from workbench.providers.spec import ModelSpec
from workbench.types import CallContext


@dataclass(slots=True, frozen=True)
class Candidate:
    """One model at one provider, as the walk tries it."""

    provider: Provider
    model: ModelSpec
    lane: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def provider_key(self) -> str:
        """The credential: quota-free state shared by all its models (breaker, daily refusal)."""
        return f"{self.provider.id}@{self.lane}" if self.lane else self.provider.id

    @property
    def key(self) -> str:
        """`provider:model[@lane]`: quotas, cooldowns and degradation live here."""
        base = f"{self.provider.id}:{self.model.id}"
        return f"{base}@{self.lane}" if self.lane else base


def refuse_duplicate_ids(providers: Sequence[Provider]) -> None:
    """Two providers under one id would share quotas, cooldowns and breakers by accident."""
    seen: set[str] = set()
    for provider in providers:
        if provider.id in seen:
            raise ConfigError(f"duplicate provider id {provider.id!r}", code="PROVIDERS_INVALID")
        seen.add(provider.id)


def _model_of(provider: Provider, model: str | ModelSpec | None) -> ModelSpec:
    specs = list(provider.models)
    if model is None:
        return specs[0]
    wanted = model.id if isinstance(model, ModelSpec) else model
    return next((m for m in specs if m.id == wanted), ModelSpec(wanted))


def chain(
    providers: Sequence[Provider],
    ctx: CallContext,
    *,
    candidates: Iterable[dict[str, Any]] | None = None,
    intent_routing: dict[str, Any] | None = None,
) -> list[Candidate]:
    """The caller's chain, providers that are not available skipped silently."""
    by_id = {p.id: p for p in providers}
    out: list[Candidate] = []
    if candidates is not None:
        for c in candidates:
            provider = _named(c["provider"], by_id)
            if not provider.available(ctx):
                continue
            out.append(
                Candidate(
                    provider,
                    _model_of(provider, c.get("model")),
                    provider.lane(ctx),
                    dict(c.get("extra") or {}),
                )
            )
        return out
    for provider in providers:
        if not provider.available(ctx):
            continue
        lane = provider.lane(ctx)
        for spec in provider.models:
            if ctx.complexity and spec.complexity and ctx.complexity not in spec.complexity:
                continue
            out.append(Candidate(provider, spec, lane))
    preferred = _preferred(intent_routing, ctx.intent)
    if preferred:
        first = [
            c
            for c in out
            if c.model.id in preferred or f"{c.provider.id}:{c.model.id}" in preferred
        ]
        out = first + [c for c in out if c not in first]
    return out


def _named(value: Any, by_id: dict[str, Provider]) -> Provider:
    """A candidate names its provider by id, or hands the object (one of the router's, or a
    new one, which must pass the same checks)."""
    if isinstance(value, str):
        if value not in by_id:
            raise ConfigError(f"unknown provider {value!r} in candidates", code="PROVIDERS_INVALID")
        return by_id[value]
    known = by_id.get(getattr(value, "id", None) or "")
    if known is not None and (known is value or unwrap(known) is value):
        return known
    return as_provider(value)


def _preferred(intent_routing: dict[str, Any] | None, intent: str | None) -> set[str]:
    if not intent_routing or not intent or intent not in intent_routing:
        return set()
    entry = intent_routing[intent]
    names = entry.get("preferred", ()) if isinstance(entry, dict) else entry
    return set(names)


def sighted(chain_: list[Candidate]) -> tuple[list[Candidate], list[str]]:
    """Models that may see (yes or unknown), and the ids of those declared blind."""
    keep = [c for c in chain_ if _sees(c) != "no"]
    blind = [c.key for c in chain_ if _sees(c) == "no"]
    return keep, blind


def _sees(c: Candidate) -> str:
    if c.model.vision is not None:
        return "yes" if c.model.vision else "no"
    return model_sees_images(c.provider, c.model.id)


def selected(
    chain_: list[Candidate], select: Callable[[ModelSpec, Any], bool] | None
) -> list[Candidate]:
    """`select(model, provider)` sees the provider object the caller gave the router."""
    if select is None:
        return chain_
    return [c for c in chain_ if select(c.model, unwrap(c.provider))]


def healthy_first(chain_: list[Candidate], degraded: Callable[[str], bool]) -> list[Candidate]:
    """A degraded model is tried after the healthy ones, in the caller's order otherwise."""
    return [c for c in chain_ if not degraded(c.key)] + [c for c in chain_ if degraded(c.key)]
