"""What the router needs of a provider, and nothing more: the boundary between routing and
the vendors.

A provider speaks to one vendor: it builds the body, sends it, reads the reply, and raises a
`ProviderError` for any failure. It plans nothing, caches nothing and classifies nothing;
the router's attempt pipeline does that around every call, the same way for every provider.

`HttpProvider` (the two HTTP adapters) implements the whole `Provider` protocol. A user's own
provider may be any object with `id`, `models` and `call()`: `as_provider` gives it the rest
(always available, no lane, external; it streams if it has a `stream()`), once, when the
router is built.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol, TypeGuard, runtime_checkable

from workbench.errors import ConfigError
from workbench.providers.spec import ModelSpec
from workbench.types import CallContext, ChatRequest, Reply

__all__ = ["Provider", "ProviderLike", "as_provider", "unwrap"]


@runtime_checkable
class Provider(Protocol):
    """One endpoint with a credential and its models, as the router sees it."""

    id: str
    # False for a model on this machine: the router masks personal data only on the way out.
    external: bool

    @property
    def models(self) -> Sequence[ModelSpec]:
        """The models in the caller's fallback order."""
        ...

    def available(self, ctx: CallContext) -> bool:
        """False skips the provider silently for this request (e.g. no key configured)."""
        ...

    def lane(self, ctx: CallContext | None = None) -> str | None:
        """A separate key for some traffic (e.g. background work): its own quota and cooldown."""
        ...

    def key(self, ctx: CallContext) -> str | None:
        """The credential this call would use: only ever hashed into a capability scope."""
        ...

    def base_url(self, ctx: CallContext) -> str:
        """Where the call goes: part of the cache key ("" for a provider without a URL),
        unless the provider has a `cache_origin(ctx)` naming the endpoint instead."""
        ...

    async def call(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> Reply: ...

    def stream(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> AsyncIterator[str | Reply]: ...

    async def aclose(self) -> None: ...


class ProviderLike(Protocol):
    """The least a user's own provider must have; `as_provider` fills in the rest."""

    id: str

    @property
    def models(self) -> Sequence[str | dict[str, Any] | ModelSpec]: ...

    async def call(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> Reply: ...


class _Given:
    """A user's duck-typed provider with the protocol's defaults filled in.

    Attributes the protocol does not name (e.g. `vision_models`) read through to the object."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.id: str = inner.id
        self._models: list[ModelSpec] = [ModelSpec.of(m) for m in inner.models]
        self.external: bool = bool(getattr(inner, "external", True))

    @property
    def models(self) -> list[ModelSpec]:
        return self._models

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return repr(self._inner)

    def available(self, ctx: CallContext) -> bool:
        available = getattr(self._inner, "available", None)
        return True if available is None else bool(available(ctx))

    def lane(self, ctx: CallContext | None = None) -> str | None:
        lane = getattr(self._inner, "lane", None)
        if callable(lane):
            value = lane(ctx or CallContext())
            return value if isinstance(value, str) else None
        return lane if isinstance(lane, str) else None

    def key(self, ctx: CallContext) -> str | None:
        key = getattr(self._inner, "key", None)
        value = key(ctx) if callable(key) else key
        return value if isinstance(value, str) else None

    def base_url(self, ctx: CallContext) -> str:
        url = getattr(self._inner, "base_url", "")
        value = url(ctx) if callable(url) else url
        return value if isinstance(value, str) else ""

    async def call(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> Reply:
        result: Reply = await self._inner.call(request, ctx, model)
        return result

    def stream(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> AsyncIterator[str | Reply]:
        stream = getattr(self._inner, "stream", None)
        if stream is None:
            raise TypeError(f"provider {self.id!r} cannot stream")
        result: AsyncIterator[str | Reply] = stream(request, ctx, model)
        return result

    async def aclose(self) -> None:
        closer = getattr(self._inner, "aclose", None)
        if closer is not None:
            await closer()


def unwrap(provider: Provider) -> object:
    """The object the user gave (a duck-typed provider is wrapped by `as_provider`)."""
    return provider._inner if isinstance(provider, _Given) else provider


def _complete(value: object) -> TypeGuard[Provider]:
    """A full provider as it is: the protocol's members present, models already `ModelSpec`s,
    and the per-call members callable (a `lane = "bg"` attribute is read through the wrapper)."""
    if not isinstance(value, Provider):
        return False
    members = (value.available, value.lane, value.key, value.base_url, value.stream)
    return all(isinstance(m, ModelSpec) for m in value.models) and all(map(callable, members))


def as_provider(value: object) -> Provider:
    """`value` as a full `Provider`, refusing at construction what would fail mid-traffic."""
    pid = getattr(value, "id", None)
    if not isinstance(pid, str) or not pid.strip():
        raise ConfigError("every provider needs a non-empty string id", code="PROVIDERS_INVALID")
    if not callable(getattr(value, "call", None)):
        raise ConfigError(f"provider {pid!r} has no call()", code="PROVIDERS_INVALID")
    models = list(getattr(value, "models", None) or ())
    if not models:
        raise ConfigError(f"provider {pid!r} declares no model", code="PROVIDERS_INVALID")
    try:
        specs = [ModelSpec.of(m) for m in models]
    except (TypeError, ValueError, KeyError) as exc:
        raise ConfigError(f"provider {pid!r}: bad model {exc}", code="PROVIDERS_INVALID") from None
    ids = [m.id for m in specs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(
            f"provider {pid!r}: duplicate model id(s) {dupes}", code="PROVIDERS_INVALID"
        )
    if _complete(value):
        return value
    return _Given(value)
