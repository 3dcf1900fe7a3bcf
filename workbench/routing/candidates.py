"""Which models a route may try, in which order, under which key.

The fallback order is the caller's decision (the order of providers, then of their models);
this module only filters it (availability, complexity, `select`, sight) and moves intent
favourites to the front and degraded models to the back, keeping the order otherwise stable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.capability import model_sees_images
from workbench.errors import ConfigError
from workbench.providers.spec import ModelSpec
from workbench.types import CallContext


@dataclass(slots=True, frozen=True)
class Candidate:
    """One model at one provider, as the walk tries it."""

    provider: Any
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


def validate_providers(providers: Sequence[Any]) -> None:
    """Refuse at construction what would otherwise surface mid-traffic."""
    seen: set[str] = set()
    for provider in providers:
        pid = getattr(provider, "id", None)
        if not isinstance(pid, str) or not pid.strip():
            raise ConfigError(
                "every provider needs a non-empty string id", code="PROVIDERS_INVALID"
            )
        if pid in seen:
            raise ConfigError(f"duplicate provider id {pid!r}", code="PROVIDERS_INVALID")
        seen.add(pid)
        if not callable(getattr(provider, "call", None)):
            raise ConfigError(f"provider {pid!r} has no call()", code="PROVIDERS_INVALID")
        models = [ModelSpec.of(m) for m in getattr(provider, "models", ())]
        if not models:
            raise ConfigError(f"provider {pid!r} declares no model", code="PROVIDERS_INVALID")
        ids = [m.id for m in models]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ConfigError(
                f"provider {pid!r}: duplicate model id(s) {dupes}", code="PROVIDERS_INVALID"
            )


def lane_of(provider: Any, ctx: CallContext) -> str | None:
    lane = getattr(provider, "lane", None)
    if callable(lane):
        return lane(ctx)
    return lane if isinstance(lane, str) else None


def is_available(provider: Any, ctx: CallContext) -> bool:
    available = getattr(provider, "available", None)
    return True if available is None else bool(available(ctx))


def _model_of(provider: Any, model: str | ModelSpec | None) -> ModelSpec:
    specs = [ModelSpec.of(m) for m in provider.models]
    if model is None:
        return specs[0]
    wanted = model.id if isinstance(model, ModelSpec) else model
    return next((m for m in specs if m.id == wanted), ModelSpec(wanted))


def chain(
    providers: Sequence[Any],
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
            provider = c["provider"]
            provider = by_id.get(provider, provider) if isinstance(provider, str) else provider
            if isinstance(provider, str):
                raise ConfigError(
                    f"unknown provider {provider!r} in candidates", code="PROVIDERS_INVALID"
                )
            if not is_available(provider, ctx):
                continue
            out.append(
                Candidate(
                    provider,
                    _model_of(provider, c.get("model")),
                    lane_of(provider, ctx),
                    dict(c.get("extra") or {}),
                )
            )
        return out
    for provider in providers:
        if not is_available(provider, ctx):
            continue
        lane = lane_of(provider, ctx)
        for spec in (ModelSpec.of(m) for m in provider.models):
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
    if select is None:
        return chain_
    return [c for c in chain_ if select(c.model, c.provider)]


def healthy_first(chain_: list[Candidate], degraded: Callable[[str], bool]) -> list[Candidate]:
    """A degraded model is tried after the healthy ones, in the caller's order otherwise."""
    return [c for c in chain_ if not degraded(c.key)] + [c for c in chain_ if degraded(c.key)]
