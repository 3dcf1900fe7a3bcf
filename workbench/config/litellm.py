"""A LiteLLM proxy `config.yaml`, read as a providers file.

Someone who already runs LiteLLM should not have to rewrite their fleet to try the
workbench, so `--providers config.yaml` is mapped onto the dict a providers TOML parses
into, and from there goes through the very same validation (`config.parse_providers` and the
`[router]` checks). Nothing here builds a provider.

Mapped
- Each `model_list` entry (a LiteLLM *deployment*) becomes one provider. Its id is the entry's
  `model_name` (`-2`, `-3`... for further deployments of the same group): LiteLLM keeps rpm,
  tpm and cooldowns per deployment, and so do we per provider.
- `litellm_params.model` is `<vendor>/<model id>`: `openai/`, `groq/`, `openrouter/` and
  `hosted_vllm/` speak through our OpenAI-compatible adapter (`api_base` defaults to the
  vendor's URL; hosted_vllm has none, so it needs one), `gemini/` through the native Gemini
  adapter. `api_base` is the base URL.
- `api_key: os.environ/VAR` is `key_env = VAR`. The variable must be set when the file is
  read: LiteLLM resolves it at start-up, and a missing one is a typo better caught before a
  run than as a 401 per item. Its value is still read at call time, never kept. Without
  `api_key`, LiteLLM's own default variable for the vendor (`GROQ_API_KEY`...) is used, as our
  TOML reads keys: at call time. A key written in the file is refused, unread and unechoed.
- `rpm` and `tpm`, at the entry's top level, in `litellm_params` or in `model_info` (LiteLLM
  reads them in that order; so do we, and a shadowed one is reported as ignored). They are
  hard limits here, reserved before each call; under LiteLLM's default `simple-shuffle` they
  only weight its random pick among deployments (they are limits there with usage-based
  routing or pre-call checks), so the same file is stricter here, never looser. `litellm_params.timeout`
  is the provider's `timeout_s`.
- The chain: groups that are nobody's fallback come first, in file order, each followed by
  its `fallbacks` (breadth first, in the order listed); `default_fallbacks` go last. Inside a
  group, deployments go by `order` (LiteLLM's priority: lower first, unordered last), then
  file order. A fallback may also name a deployment by its `model_info.id`.
- `router_settings`: `fallbacks`, `default_fallbacks`, `cooldown_time` (→ `cooldown_s`),
  `timeout` (→ `attempt_timeout_s`), and `redis_url` or `redis_host`/`redis_port`/
  `redis_password` (→ `redis_url`: our quotas are shared through it). The first three may sit
  in `litellm_settings` instead, as LiteLLM also reads them there; `router_settings` wins.
  Any value LiteLLM lets you write as `os.environ/VAR` may be written so here, except keys
  and passwords, which must be.

Ignored, and listed (paths only, never values) in `LiteLLMConfig.ignored` for the caller to
report once: every other field. Load-balancing strategies, retries and `allowed_fails`
describe a router that picks among deployments; ours walks one chain in order and decides
cooling from what each refusal says. Per-call parameters (`temperature`...) belong to the
request, not to the route. `model_info` capabilities are not declared here: they are
observed. `general_settings`, `environment_variables` and the rest configure LiteLLM's own
server.
"""

from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from workbench.errors import ConfigError
from workbench.providers.spec import check_base_url

ENV_PREFIX = "os.environ/"


@dataclass(frozen=True, slots=True)
class Vendor:
    """What a LiteLLM provider prefix means here."""

    adapter: str  # our adapter: "openai" or "gemini"
    base_url: str | None  # None: the adapter's default (gemini) or none at all (hosted_vllm)
    key_env: str | None  # LiteLLM's default key variable when `api_key` is absent


VENDORS: dict[str, Vendor] = {
    "openai": Vendor("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "groq": Vendor("openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "openrouter": Vendor("openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "hosted_vllm": Vendor("openai", None, None),
    "gemini": Vendor("gemini", None, "GEMINI_API_KEY"),
}

_ENTRY_KEYS = {"model_name", "litellm_params", "model_info", "rpm", "tpm"}
_PARAM_KEYS = {"model", "api_base", "api_key", "rpm", "tpm", "order", "timeout"}
_INFO_KEYS = {"id", "order", "rpm", "tpm"}
_ROUTER_KEYS = {
    "fallbacks",
    "default_fallbacks",
    "cooldown_time",
    "timeout",
    "redis_url",
    "redis_host",
    "redis_port",
    "redis_password",
}
_SHARED_KEYS = ("fallbacks", "default_fallbacks", "cooldown_time")  # also in litellm_settings


@dataclass(frozen=True, slots=True)
class LiteLLMConfig:
    """A LiteLLM config mapped: `data` is what a providers TOML parses into."""

    data: dict[str, Any]
    ignored: tuple[str, ...]


def looks_like_litellm(path: Path, data: Any = None) -> bool:
    """A `.yaml`/`.yml` file, or one whose top level has LiteLLM's `model_list`."""
    if path.suffix.lower() in (".yaml", ".yml"):
        return True
    return isinstance(data, dict) and "model_list" in data and "providers" not in data


def parse_yaml(path: Path | str, text: str) -> Any:
    """The YAML document, or LITELLM_INVALID naming the line (never quoting it: a line may
    hold a key). PyYAML is imported here: a run from a TOML file never needs it."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "YAML"
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise _invalid(path, where, f"not YAML: {problem}") from None


def from_litellm(raw: Any, path: Path | str = "<litellm config>") -> LiteLLMConfig:
    """Map a parsed LiteLLM config onto our providers data (pure but for reading os.environ)."""
    if not isinstance(raw, dict):
        raise _invalid(path, "file", "a LiteLLM config is a mapping with a model_list")
    entries = raw.get("model_list")
    if not isinstance(entries, list) or not entries:
        raise _invalid(path, "model_list", "expected a non-empty list of deployments")
    router = _section(path, raw, "router_settings")
    module = _section(path, raw, "litellm_settings")
    ignored: list[str] = []
    shared: dict[str, tuple[Any, str]] = {}
    for key in _SHARED_KEYS:  # router_settings wins, as LiteLLM's Router reads it first
        if router.get(key) is not None:
            shared[key] = (router[key], f"router_settings.{key}")
        elif module.get(key) is not None:
            shared[key] = (module[key], f"litellm_settings.{key}")
    for top, value in raw.items():
        if top == "model_list":
            ignored += _entry_ignores(entries)
        elif top in ("router_settings", "litellm_settings"):
            used = {where for _, where in shared.values()}
            known = _ROUTER_KEYS if top == "router_settings" else set()
            ignored += [
                f"{top}.{k}" for k in value or {} if k not in known and f"{top}.{k}" not in used
            ]
        elif isinstance(value, dict) and value:
            ignored += [f"{top}.{k}" for k in value]
        else:
            ignored.append(str(top))

    deployments = [_deployment(path, n, entry) for n, entry in enumerate(entries)]
    _name_providers(deployments)
    chain = _chain(path, deployments, shared)
    options: dict[str, Any] = {"chain": [deployments[n].pid for n in chain]}
    if "cooldown_time" in shared:
        value, where = shared["cooldown_time"]
        options["cooldown_s"] = _seconds(path, where, value, allow_zero=True)
    if router.get("timeout") is not None:
        value = router["timeout"]
        options["attempt_timeout_s"] = _seconds(path, "router_settings.timeout", value)
    redis_url = _redis_url(path, router)
    if redis_url is not None:
        options["redis_url"] = redis_url
    data = {"providers": [d.entry for d in deployments], "router": options}
    return LiteLLMConfig(data, tuple(dict.fromkeys(ignored)))


# --- one deployment ---------------------------------------------------------------------------
@dataclass(slots=True)
class _Deployment:
    index: int
    group: str
    order: int | None
    deployment_id: str | None
    entry: dict[str, Any]  # the [[providers]] table, id filled in by _name_providers
    pid: str = ""


def _deployment(path: Path | str, n: int, entry: Any) -> _Deployment:
    where = f"model_list[{n}]"
    if not isinstance(entry, dict):
        raise _invalid(path, where, "a deployment is a mapping with model_name and litellm_params")
    group = entry.get("model_name")
    if not isinstance(group, str) or not group.strip():
        raise _invalid(path, f"{where}.model_name", "missing or empty")
    params = entry.get("litellm_params")
    if not isinstance(params, dict):
        raise _invalid(path, f"{where}.litellm_params", "missing (a mapping with model)")
    info = entry.get("model_info") or {}
    if not isinstance(info, dict):
        raise _invalid(path, f"{where}.model_info", "must be a mapping")
    model = params.get("model")
    if not isinstance(model, str) or not model.strip():
        raise _invalid(path, f"{where}.litellm_params.model", "missing or empty")
    prefix, _, model_id = model.strip().partition("/")
    if not model_id or prefix not in VENDORS:
        said = f"provider {prefix!r}" if model_id else "no provider prefix"
        raise ConfigError(
            f"{path}: {where}.litellm_params.model: {group!r} has {said}; "
            f"known: {', '.join(f'{v}/' for v in sorted(VENDORS))}",
            code="LITELLM_UNKNOWN_PROVIDER",
        )
    if "*" in model_id or "*" in group:
        raise _invalid(path, where, "wildcard deployments have no fixed model to route to")
    vendor = VENDORS[prefix]
    table: dict[str, Any] = {"adapter": vendor.adapter}

    base_url = vendor.base_url
    if params.get("api_base") is not None:
        base_url = _base_url(path, f"{where}.litellm_params.api_base", params["api_base"])
    elif prefix == "hosted_vllm":
        raise _invalid(path, f"{where}.litellm_params.api_base", "hosted_vllm needs its URL")
    if base_url is not None:
        table["base_url"] = base_url

    key_env = vendor.key_env
    if params.get("api_key") is not None:
        key_env = _key_env(path, f"{where}.litellm_params.api_key", params["api_key"])
    if key_env is not None:
        table["key_env"] = key_env
    if params.get("timeout") is not None:
        table["timeout_s"] = _seconds(path, f"{where}.litellm_params.timeout", params["timeout"])

    spec: dict[str, Any] = {"id": model_id}
    for limit in ("rpm", "tpm"):
        # LiteLLM reads the entry's top level first, then litellm_params, then model_info.
        for source, at in _limit_sources(entry, params, info, where):
            if source.get(limit) is not None:
                spec[limit] = _count(path, f"{at}.{limit}", source[limit])
                break
    table["models"] = [spec]

    order = None
    for source, at in ((params, f"{where}.litellm_params"), (info, f"{where}.model_info")):
        if source.get("order") is not None:
            order = _integer(path, f"{at}.order", source["order"])
            break
    deployment_id = info.get("id")
    if deployment_id is not None and not isinstance(deployment_id, str | int):
        raise _invalid(path, f"{where}.model_info.id", "must be a string")
    named = None if deployment_id is None else str(deployment_id)
    return _Deployment(n, group, order, named, table)


def _limit_sources(
    entry: dict[str, Any], params: dict[str, Any], info: dict[str, Any], where: str
) -> list[tuple[dict[str, Any], str]]:
    """Where a deployment's rpm and tpm may be written, in the order LiteLLM reads them."""
    return [(entry, where), (params, f"{where}.litellm_params"), (info, f"{where}.model_info")]


def _entry_ignores(entries: list[Any]) -> list[str]:
    out: list[str] = []
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue  # refused by _deployment
        where = f"model_list[{n}]"
        params = _mapping(entry.get("litellm_params"))
        info = _mapping(entry.get("model_info"))
        out += [f"{where}.{k}" for k in entry if k not in _ENTRY_KEYS]
        out += [f"{where}.litellm_params.{k}" for k in params if k not in _PARAM_KEYS]
        out += [f"{where}.model_info.{k}" for k in info if k not in _INFO_KEYS]
        for limit in ("rpm", "tpm"):  # shadowed by an earlier one (LiteLLM's precedence)
            given = [
                at
                for source, at in _limit_sources(entry, params, info, where)
                if source.get(limit) is not None
            ]
            out += [f"{at}.{limit}" for at in given[1:]]
        if params.get("order") is not None and info.get("order") is not None:
            out.append(f"{where}.model_info.order")
    return out


def _name_providers(deployments: list[_Deployment]) -> None:
    """The group's name is the provider's id; `:` and `@` separate our keys' parts, so they
    become `-`, and further deployments of a group get `-2`, `-3`..."""
    taken: set[str] = set()
    for d in deployments:
        base = "-".join(d.group.replace(":", " ").replace("@", " ").split())
        pid, n = base, 1
        while pid in taken:
            n += 1
            pid = f"{base}-{n}"
        taken.add(pid)
        d.pid = pid
        d.entry = {"id": pid, **d.entry}


# --- the chain --------------------------------------------------------------------------------
def _chain(
    path: Path | str, deployments: list[_Deployment], shared: dict[str, tuple[Any, str]]
) -> list[int]:
    """Deployment indices in the order our router walks them (see the module docstring)."""
    groups: dict[str, list[_Deployment]] = {}
    for d in deployments:
        groups.setdefault(d.group, []).append(d)
    for members in groups.values():
        members.sort(key=lambda d: (d.order is None, d.order or 0, d.index))
    by_id: dict[str, _Deployment] = {}
    for d in deployments:
        if d.deployment_id is not None:
            if d.deployment_id in by_id:
                raise _invalid(
                    path,
                    f"model_list[{d.index}].model_info.id",
                    f"duplicate deployment id {d.deployment_id!r}",
                )
            by_id[d.deployment_id] = d

    def known(name: Any, where: str) -> str:
        if not isinstance(name, str) or (name not in groups and name not in by_id):
            raise _invalid(path, where, f"{name!r} is neither a model_name nor a model_info.id")
        return name

    fallbacks: dict[str, list[str]] = {}
    if "fallbacks" in shared:
        value, where = shared["fallbacks"]
        if not isinstance(value, list):
            raise _invalid(path, where, "a list of {model_name: [fallback, ...]}")
        for i, rule in enumerate(value):
            if not isinstance(rule, dict):
                raise _invalid(path, f"{where}[{i}]", "a mapping {model_name: [fallback, ...]}")
            for group, targets in rule.items():
                if not isinstance(group, str) or group not in groups:
                    raise _invalid(path, f"{where}[{i}]", f"{group!r} is not a model_name")
                if not isinstance(targets, list):
                    raise _invalid(path, f"{where}[{i}].{group}", "a list of fallbacks")
                names = [known(t, f"{where}[{i}].{group}") for t in targets]
                fallbacks.setdefault(group, []).extend(names)
    defaults: list[str] = []
    if "default_fallbacks" in shared:
        value, where = shared["default_fallbacks"]
        if not isinstance(value, list):
            raise _invalid(path, where, "a list of model_names")
        defaults = [known(t, where) for t in value]

    targets = {t for names in fallbacks.values() for t in names} | set(defaults)
    roots = [g for g in groups if g not in targets]
    rest = [g for g in groups if g not in defaults]
    placed: dict[int, None] = {}
    visited: set[str] = set()
    for start in [*roots, *rest, *defaults]:
        queue = deque([start])
        while queue:
            name = queue.popleft()
            if name in visited:
                continue
            visited.add(name)
            for d in groups.get(name) or [by_id[name]]:
                placed.setdefault(d.index)
            queue.extend(fallbacks.get(name, ()))
    return list(placed)


# --- values -----------------------------------------------------------------------------------
def _invalid(path: Path | str, where: str, reason: str) -> ConfigError:
    return ConfigError(f"{path}: {where}: {reason}", code="LITELLM_INVALID")


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _section(path: Path | str, raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _invalid(path, name, "must be a mapping")
    return value


def _env_name(path: Path | str, where: str, value: str) -> str:
    name = value[len(ENV_PREFIX) :].strip()
    if not name.isidentifier():
        raise _invalid(path, where, "os.environ/ must be followed by a variable name")
    if not os.environ.get(name, "").strip():
        raise ConfigError(
            f"{path}: {where}: environment variable {name} is not set",
            code="LITELLM_ENV_MISSING",
        )
    return name


def _resolved(path: Path | str, where: str, value: Any) -> tuple[Any, bool]:
    """The value, read from the environment when written `os.environ/VAR` (and whether it
    was: such a value is never echoed, it may be anything)."""
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        return os.environ[_env_name(path, where, value)].strip(), True
    return value, False


def _key_env(path: Path | str, where: str, value: Any) -> str:
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        return _env_name(path, where, value)
    raise ConfigError(
        f"{path}: {where}: a secret written in the file is refused; "
        "put it in an environment variable and write os.environ/VAR",
        code="LITELLM_LITERAL_KEY",
    )


def _base_url(path: Path | str, where: str, value: Any) -> str:
    url, from_env = _resolved(path, where, value)
    if not isinstance(url, str):
        raise _invalid(path, where, "must be a URL")
    try:
        return check_base_url(url)
    except ConfigError as exc:
        reason = (
            "the variable's value is not an http(s) URL with a host" if from_env else exc.message
        )
        raise ConfigError(f"{path}: {where}: {reason}", code=exc.code) from None


def _integer(path: Path | str, where: str, value: Any) -> int:
    value, _ = _resolved(path, where, value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(path, where, "must be an integer")
    return value


def _count(path: Path | str, where: str, value: Any) -> int:
    number = _integer(path, where, value)
    if number < 0:
        raise _invalid(path, where, "must be a non-negative integer")
    return number


def _seconds(path: Path | str, where: str, value: Any, *, allow_zero: bool = False) -> float:
    value, _ = _resolved(path, where, value)
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        number = None
    if (
        isinstance(number, bool)
        or not isinstance(number, int | float)
        or not math.isfinite(number)
        or number < 0
        or (number == 0 and not allow_zero)
    ):
        raise _invalid(path, where, "must be a positive number of seconds")
    return float(number)


def _redis_url(path: Path | str, router: dict[str, Any]) -> str | None:
    if router.get("redis_url") is not None:
        url, from_env = _resolved(path, "router_settings.redis_url", router["redis_url"])
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
            raise _invalid(path, "router_settings.redis_url", "must be a redis:// URL")
        if not from_env and "@" in url.split("://", 1)[1].split("/", 1)[0]:
            _key_env(path, "router_settings.redis_url (its password)", None)  # refused
        return url
    host = router.get("redis_host")
    if host is None:
        for key in ("redis_port", "redis_password"):
            if router.get(key) is not None:
                raise _invalid(path, f"router_settings.{key}", "given without redis_host")
        return None
    host, _ = _resolved(path, "router_settings.redis_host", host)
    if not isinstance(host, str) or not host.strip() or "/" in host or "@" in host:
        raise _invalid(path, "router_settings.redis_host", "must be a host name")
    port = 6379
    if router.get("redis_port") is not None:
        port = _integer(path, "router_settings.redis_port", router["redis_port"])
        if not 0 < port < 65536:
            raise _invalid(path, "router_settings.redis_port", "must be a port (1-65535)")
    auth = ""
    if router.get("redis_password") is not None:
        where = "router_settings.redis_password"
        password = os.environ[_key_env(path, where, router["redis_password"])].strip()
        auth = f":{quote(password, safe='')}@"
    host = host.strip()
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"redis://{auth}{host}:{port}"
