"""The providers file (SPEC 10.2): which real endpoints to use, in which order.

    [[providers]]
    id = "groq"
    adapter = "openai"                     # "openai" (any OpenAI-compatible) | "gemini" (native)
    base_url = "https://api.groq.com/openai/v1"
    key_env = "GROQ_API_KEY"               # the NAME of the variable; read at call time
    external = true
    models = ["openai/gpt-oss-120b", { id = "qwen/qwen3.8-27b", rpm = 30, vision = false }]

Keys are never in the file and never written anywhere: a provider holds only the variable's
name. The list order is the fallback order.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.events import Sink
from workbench.providers.base import HttpProvider
from workbench.providers.gemini import GEMINI_URL, GeminiProvider
from workbench.providers.openai_compat import OpenAICompatibleProvider
from workbench.providers.spec import ModelSpec, check_base_url, from_env

_ADAPTERS: dict[str, type[HttpProvider]] = {
    "openai": OpenAICompatibleProvider,
    "gemini": GeminiProvider,
}
_PROVIDER_KEYS = {
    "id", "adapter", "base_url", "key_env", "models", "external", "vision_models", "extra",
    "headers", "timeout_s", "lane",
}  # fmt: skip
_MODEL_KEYS = {"id", "rpm", "rpd", "tpd", "complexity", "vision", "extra", "price_in", "price_out"}


def _invalid(path: Path | str, where: str, reason: str) -> ConfigError:
    return ConfigError(f"{path}: {where}: {reason}", code="PROVIDERS_INVALID")


def _model(path: Path | str, where: str, value: Any) -> ModelSpec:
    if isinstance(value, str) and value.strip():
        return ModelSpec(id=value.strip())
    if not isinstance(value, dict):
        raise _invalid(path, where, "a model is a non-empty string or a table with an id")
    unknown = set(value) - _MODEL_KEYS
    if unknown:
        raise _invalid(path, where, f"unknown field(s) {sorted(unknown)}")
    if not isinstance(value.get("id"), str) or not value["id"].strip():
        raise _invalid(path, f"{where}.id", "missing or empty")
    for limit in ("rpm", "rpd", "tpd"):
        n = value.get(limit)
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
            raise _invalid(path, f"{where}.{limit}", "must be a non-negative integer")
    if value.get("vision") not in (None, True, False):
        raise _invalid(path, f"{where}.vision", "must be true or false")
    data = {
        k: v
        for k, v in value.items()
        if k in {"id", "rpm", "rpd", "tpd", "complexity", "vision", "extra"}
    }
    return ModelSpec.of(data)


def parse_providers(
    data: dict[str, Any], path: Path | str = "<providers>", **provider_kw: Any
) -> list[HttpProvider]:
    entries = data.get("providers")
    if not isinstance(entries, list) or not entries:
        raise _invalid(path, "providers", "expected at least one [[providers]] table")
    seen: set[str] = set()
    providers: list[HttpProvider] = []
    for n, entry in enumerate(entries):
        where = f"providers[{n}]"
        if not isinstance(entry, dict):
            raise _invalid(path, where, "must be a table")
        unknown = set(entry) - _PROVIDER_KEYS
        if unknown:
            raise _invalid(path, where, f"unknown field(s) {sorted(unknown)}")
        pid = entry.get("id")
        if not isinstance(pid, str) or not pid.strip():
            raise _invalid(path, f"{where}.id", "missing or empty")
        if pid in seen:
            raise _invalid(path, f"{where}.id", f"duplicate provider id {pid!r}")
        seen.add(pid)
        adapter = entry.get("adapter", "openai")
        if adapter not in _ADAPTERS:
            raise _invalid(
                path, f"{where}.adapter", f"{adapter!r} is not one of {sorted(_ADAPTERS)}"
            )
        url = entry.get("base_url", GEMINI_URL if adapter == "gemini" else None)
        if not isinstance(url, str):
            raise _invalid(path, f"{where}.base_url", "missing")
        try:
            check_base_url(url)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {where}.base_url: {exc.message}", code=exc.code) from None
        key_env = entry.get("key_env")
        if key_env is not None and (not isinstance(key_env, str) or not key_env.isidentifier()):
            raise _invalid(path, f"{where}.key_env", "must be an environment variable NAME")
        models = entry.get("models")
        if not isinstance(models, list) or not models:
            raise _invalid(path, f"{where}.models", "expected a non-empty list")
        specs = [_model(path, f"{where}.models[{i}]", m) for i, m in enumerate(models)]
        providers.append(
            _ADAPTERS[adapter](
                pid,
                url,
                from_env(key_env) if key_env else None,
                specs,
                external=bool(entry.get("external", True)),
                vision_models=entry.get("vision_models"),
                extra=entry.get("extra"),
                headers=entry.get("headers"),
                timeout_s=float(entry.get("timeout_s", 30.0)),
                lane=entry.get("lane"),
                **provider_kw,
            )
        )
    return providers


def load_providers(
    path: str | Path, *, sinks: Iterable[Sink] = (), **provider_kw: Any
) -> list[HttpProvider]:
    """Read and validate a providers file; every error names the file and the field."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _invalid(path, "file", "not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _invalid(path, "TOML", str(exc)) from None
    return parse_providers(data, path, sinks=tuple(sinks), **provider_kw)
