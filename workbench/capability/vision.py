"""Routing pictures: which models can see, before any request is sent.

A model's own `vision` flag answers first; without one, the provider's `vision_models` list
decides — listed means yes, declared in `models` but not listed means no, anything else (an env
override, an id nobody declared) is "unknown", which is kept: unknown is not blind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from workbench.errors import NoVisionLinkError
from workbench.types import Message, messages_carry_images

Sight = Literal["yes", "no", "unknown"]

__all__ = [
    "NoVisionLinkError",
    "Sight",
    "link_id",
    "messages_carry_images",
    "model_sees_images",
    "require_seeing_links",
    "seeing_links",
]


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _model_id(model: Any) -> str | None:
    value = model if isinstance(model, str) else _field(model, "id")
    return value.strip() if isinstance(value, str) else None


def _ids(items: Any) -> set[str]:
    if items is None or isinstance(items, str | bytes):
        return set()
    try:
        return {i for i in (_model_id(x) for x in items) if i}
    except TypeError:
        return set()


def _declared_flag(provider: Any, model: str) -> bool | None:
    models = _field(provider, "models")
    if models is None or isinstance(models, str | bytes):
        return None
    try:
        entries = list(models)
    except TypeError:
        return None
    for entry in entries:
        if not isinstance(entry, str) and _model_id(entry) == model:
            flag = _field(entry, "vision")
            if isinstance(flag, bool):
                return flag
    return None


def model_sees_images(provider: Any, model: Any) -> Sight:
    """Can `model` at `provider` see images: "yes" | "no" | "unknown"? `provider` is any
    object or mapping with optional `vision_models` and `models`; `model` is an id, or an
    object or mapping with an `id` and an optional `vision` flag."""
    own = None if isinstance(model, str) else _field(model, "vision")
    mid = _model_id(model)
    if not mid:
        return "unknown"
    if not isinstance(own, bool):
        own = _declared_flag(provider, mid)
    if own is not None:
        return "yes" if own else "no"
    vision_models = _field(provider, "vision_models")
    if vision_models is None:
        return "unknown"
    if mid in _ids(vision_models):
        return "yes"
    if mid in _ids(_field(provider, "models")):
        return "no"
    return "unknown"


def _unpack(link: Any) -> tuple[Any, Any]:
    if isinstance(link, tuple | list) and len(link) == 2:
        return link[0], link[1]
    return _field(link, "provider"), _field(link, "model")


def link_id(link: Any) -> str:
    """`provider:model` for a `(provider, model)` link; the provider's `name` (or `id`) if it
    is an object."""
    provider, model = _unpack(link)
    name = (
        provider
        if isinstance(provider, str)
        else (_field(provider, "name") or _field(provider, "id") or "?")
    )
    return f"{name}:{_model_id(model) or '?'}"


def seeing_links(links: Iterable[Any]) -> list[Any]:
    """Every link whose model is not known to be blind ("yes" or "unknown"), in order."""
    return [link for link in links if model_sees_images(*_unpack(link)) != "no"]


def require_seeing_links(links: Iterable[Any], messages: list[Message]) -> list[Any]:
    """The links this request may use. Without images, all of them; with images, those that
    may see — and NoVisionLinkError (naming the blind ones) before any request when none can."""
    links = list(links)
    if not messages_carry_images(messages):
        return links
    seeing = seeing_links(links)
    if not seeing:
        raise NoVisionLinkError([link_id(link) for link in links])
    return seeing
