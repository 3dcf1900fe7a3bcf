"""The providers file: which real endpoints to use, in which order.

    [[providers]]
    id = "groq"
    adapter = "openai"                     # "openai" (any OpenAI-compatible) | "gemini" (native)
    base_url = "https://api.groq.com/openai/v1"
    key_env = "GROQ_API_KEY"               # the NAME of the variable; read at call time
    external = true
    models = ["openai/gpt-oss-120b", { id = "qwen/qwen3.8-27b", rpm = 30, vision = false }]

    [router]                               # optional: the Router's options
    redis_url = "redis://127.0.0.1:6379/0"  # quotas shared across processes
    chain = ["groq", "google"]             # fallback order (default: the file's order)
    cooldown_s = 60
    attempt_timeout_s = 30
    http_transport = "aiohttp"             # or "httpx": httpx's own connection pool

A model's limits are `rpm` and `tpm` (requests and tokens per calendar minute), `rpd` and
`tpd` (per UTC day). A model may carry `price_in` / `price_out` (USD per 1M tokens) for
`usage()` costs (a `--batch` run pays half), and a provider `lanes = { background =
"GROQ_BG_KEY" }`: requests whose purpose is `background` use that key, with their own quota
and cooldown. Keys are never in the file and never written anywhere: a provider holds only
the variable's name. A provider's `batch = true|false` says whether it serves its vendor's
batch API (`workbench run --batch`); left out, OpenAI's, Groq's and Google's hosts do.

A LiteLLM proxy `config.yaml` is read too (a `.yaml`/`.yml` file, or any file whose top
level has `model_list`): `workbench.config.litellm` maps it onto this same shape, and
everything below validates it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.config.litellm import from_litellm, looks_like_litellm, parse_yaml
from workbench.errors import ConfigError
from workbench.providers.base import HttpProvider
from workbench.providers.gemini import GEMINI_URL, GeminiProvider
from workbench.providers.http import HTTP_TRANSPORTS
from workbench.providers.openai_compat import OpenAICompatibleProvider

if TYPE_CHECKING:
    from workbench.routing import Router
from workbench.providers.spec import ModelSpec, check_base_url, from_env

_ADAPTERS: dict[str, type[HttpProvider]] = {
    "openai": OpenAICompatibleProvider,
    "gemini": GeminiProvider,
}
_PROVIDER_KEYS = {
    "id",
    "adapter",
    "base_url",
    "key_env",
    "models",
    "external",
    "vision_models",
    "extra",
    "headers",
    "timeout_s",
    "lanes",
    "batch",
}
_ROUTER_KEYS = {
    "redis_url",
    "cooldown_s",
    "cooldown_jitter_s",
    "degrade_after",
    "when_all_cooling",
    "attempt_timeout_s",
    "first_token_timeout_s",
    "chain",
    "name",
    "http_transport",
}
_MODEL_KEYS = {
    "id",
    "rpm",
    "rpd",
    "tpd",
    "tpm",
    "complexity",
    "vision",
    "extra",
    "price_in",
    "price_out",
}


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
    for limit in ("rpm", "rpd", "tpd", "tpm"):
        n = value.get(limit)
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
            raise _invalid(path, f"{where}.{limit}", "must be a non-negative integer")
    if value.get("vision") not in (None, True, False):
        raise _invalid(path, f"{where}.vision", "must be true or false")
    data = {
        k: v
        for k, v in value.items()
        if k in {"id", "rpm", "rpd", "tpd", "tpm", "complexity", "vision", "extra"}
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
        for field_name, kind in (("extra", dict), ("headers", dict), ("vision_models", list)):
            if entry.get(field_name) is not None and not isinstance(entry[field_name], kind):
                raise _invalid(path, f"{where}.{field_name}", f"must be a {kind.__name__}")
        timeout = entry.get("timeout_s", 30.0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise _invalid(path, f"{where}.timeout_s", "must be a positive number of seconds")
        for flag in ("external", "batch"):
            if entry.get(flag) is not None and not isinstance(entry[flag], bool):
                raise _invalid(path, f"{where}.{flag}", "must be true or false")
        lanes = entry.get("lanes") or {}
        if not isinstance(lanes, dict) or not all(
            isinstance(v, str) and v.isidentifier() for v in lanes.values()
        ):
            raise _invalid(path, f"{where}.lanes", "a table of purpose = KEY_ENV_NAME")
        providers.append(
            _ADAPTERS[adapter](
                pid,
                url,
                _lane_keys(key_env, lanes),
                specs,
                external=bool(entry.get("external", True)),
                vision_models=entry.get("vision_models"),
                extra=entry.get("extra"),
                headers=entry.get("headers"),
                timeout_s=float(timeout),
                lane=_lane_of(lanes),
                **provider_kw,
            )
        )
        # None: decided from the adapter and the host (`workbench.providers.batch_api`).
        providers[-1].batch = entry.get("batch")
    return providers


def _lane_of(lanes: dict[str, str]) -> Any:
    """A request whose purpose has its own key rides its own lane (own quota, own cooldown)."""
    if not lanes:
        return None
    return lambda ctx: ctx.purpose if ctx.purpose in lanes else None


def _lane_keys(key_env: str | None, lanes: dict[str, str]) -> Any:
    default = from_env(key_env) if key_env else None
    if not lanes:
        return default
    per_lane = {lane: from_env(env) for lane, env in lanes.items()}

    def key(ctx: Any) -> str | None:
        reader = (per_lane.get(ctx.lane) if ctx.lane else None) or default
        return reader(ctx) if reader else None

    return key


@dataclass(slots=True)
class ProvidersConfig:
    """A providers file read whole: the chain, the router's options, and model prices."""

    name: str
    providers: list[HttpProvider]
    # Kept out of repr: a redis_url may carry a password (LiteLLM's redis_password).
    router_options: dict[str, Any] = field(default_factory=dict, repr=False)
    # model id or "provider:model" → (USD per 1M input tokens, USD per 1M output tokens)
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    # What a LiteLLM config held that means nothing here (field paths, never values). The
    # library stays quiet; the CLI says it once.
    ignored: tuple[str, ...] = ()

    def build_router(self, **kw: Any) -> Router:
        from workbench.routing import Router

        return Router(self.providers, **{**self.router_options, **kw})


def load_config(path: str | Path, **provider_kw: Any) -> ProvidersConfig:
    """The whole providers file: `[router]` options, `[[providers]]` in chain order, prices."""
    path = Path(path)
    data, ignored = _read(path)
    providers = parse_providers(data, path, **provider_kw)
    options = data.get("router") or {}
    if not isinstance(options, dict):
        raise _invalid(path, "router", "must be a table")
    unknown = set(options) - _ROUTER_KEYS
    if unknown:
        raise _invalid(path, "router", f"unknown field(s) {sorted(unknown)}")
    options = dict(options)
    name = str(options.pop("name", path.stem))
    chain = options.pop("chain", None)
    for option, value in options.items():
        if option == "redis_url":
            if not isinstance(value, str) or not value.startswith(
                ("redis://", "rediss://", "unix://")
            ):
                raise _invalid(path, "router.redis_url", "must be a redis:// URL")
        elif option == "when_all_cooling":
            if value not in ("fail", "try", "wait"):
                raise _invalid(path, "router.when_all_cooling", "must be fail, try or wait")
        elif option == "http_transport":
            if value not in HTTP_TRANSPORTS:
                raise _invalid(path, "router.http_transport", "must be aiohttp or httpx")
        elif isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise _invalid(path, f"router.{option}", "must be a non-negative number")
    if chain is not None and (
        not isinstance(chain, list) or not chain or not all(isinstance(c, str) for c in chain)
    ):
        raise _invalid(path, "router.chain", "must be a non-empty list of provider ids")
    if chain is not None:
        by_id = {p.id: p for p in providers}
        missing = [c for c in chain if c not in by_id]
        if missing:
            raise _invalid(path, "router.chain", f"unknown provider id(s) {missing}")
        providers = [by_id[c] for c in chain]
    prices: dict[str, tuple[float, float]] = {}
    for n, entry in enumerate(data["providers"]):
        for i, m in enumerate(entry.get("models", [])):
            if isinstance(m, dict) and ("price_in" in m or "price_out" in m):
                where = f"providers[{n}].models[{i}]"
                p_in, p_out = m.get("price_in", 0.0), m.get("price_out", 0.0)
                if not all(isinstance(x, int | float) and x >= 0 for x in (p_in, p_out)):
                    raise _invalid(
                        path, where, "prices are non-negative numbers (USD per 1M tokens)"
                    )
                prices[f"{entry['id']}:{m['id']}"] = (float(p_in), float(p_out))
    return ProvidersConfig(name, providers, options, prices, ignored)


def _read(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The file as providers data, and what of it was ignored: our TOML, or a LiteLLM config
    (YAML; JSON is YAML too) mapped onto the same shape."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _invalid(path, "file", "not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _invalid(path, "file", f"cannot be read ({type(exc).__name__})") from None
    if looks_like_litellm(path):
        mapped = from_litellm(parse_yaml(path, text), path)
        return mapped.data, mapped.ignored
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        try:  # not TOML: perhaps a LiteLLM config under another name (JSON is YAML too)
            raw = parse_yaml(path, text)
        except ConfigError:
            raw = None
        if not looks_like_litellm(path, raw):
            raise _invalid(path, "TOML", str(exc)) from None
        mapped = from_litellm(raw, path)
        return mapped.data, mapped.ignored
    if looks_like_litellm(path, data):
        mapped = from_litellm(data, path)
        return mapped.data, mapped.ignored
    return data, ()


def load_providers(path: str | Path, **provider_kw: Any) -> list[HttpProvider]:
    """Read and validate a providers file; every error names the file and the field."""
    path = Path(path)
    return parse_providers(_read(path)[0], path, **provider_kw)
