"""How a provider is described: its models and limits, and where its key and URL come from.

Keys and URLs are sources, not values: a callable is read on every call, so a rotated key,
a per-purpose key or a per-request URL works without rebuilding the provider.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from workbench.errors import ConfigError
from workbench.types import CallContext

KeySource = Callable[[CallContext], str | None] | str | None
UrlSource = Callable[[CallContext], str] | str


def from_env(name: str) -> Callable[[CallContext], str | None]:
    """A key read from the environment on every call, so a rotated key needs no restart."""

    def read(_ctx: CallContext) -> str | None:
        value = os.environ.get(name, "").strip()
        return value or None

    read.__name__ = f"from_env({name})"
    return read


@dataclass(slots=True)
class ModelSpec:
    """A model a provider serves, with the limits the router enforces for it."""

    id: str
    rpm: int | None = None
    rpd: int | None = None
    tpd: int | None = None
    tpm: int | None = None  # tokens per calendar minute (LiteLLM's per-deployment `tpm`)
    complexity: tuple[str, ...] = ()
    vision: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Refused at construction: a typo in a quota must not surface as a 3 a.m. overrun.
        if not isinstance(self.id, str) or not self.id.strip():
            raise ConfigError("a model needs a non-empty id", code="PROVIDERS_INVALID")
        for name in ("rpm", "rpd", "tpd", "tpm"):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 0
            ):
                raise ConfigError(
                    f"model {self.id!r}: {name} must be a non-negative integer, got {value!r}",
                    code="PROVIDERS_INVALID",
                )
        if self.vision not in (None, True, False):
            raise ConfigError(
                f"model {self.id!r}: vision must be true, false or unset", code="PROVIDERS_INVALID"
            )

    @classmethod
    def of(cls, value: str | dict[str, Any] | ModelSpec) -> ModelSpec:
        if isinstance(value, ModelSpec):
            return value
        if isinstance(value, str):
            return cls(id=value)
        data = dict(value)
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(
                f"model {data.get('id')!r}: unknown field(s) {sorted(unknown)}",
                code="PROVIDERS_INVALID",
            )
        complexity = data.get("complexity", ())
        if isinstance(complexity, str) or not isinstance(complexity, list | tuple):
            raise ConfigError(
                f"model {data.get('id')!r}: complexity must be a list of names",
                code="PROVIDERS_INVALID",
            )
        data["complexity"] = tuple(complexity)
        return cls(**data)


def check_base_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        parts.hostname  # noqa: B018 — parses the host: "http://[::1" raises here
    except (ValueError, TypeError, AttributeError):
        raise ConfigError(f"base URL {url!r} cannot be parsed", code="BAD_BASE_URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"base URL {url!r} is not an http(s) URL with a host", code="BAD_BASE_URL"
        )
    return url.rstrip("/")
