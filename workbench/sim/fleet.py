"""A fleet of simulated model personas, read from TOML and validated strictly.

A fleet file::

    seed = 7                      # drives every seeded choice (failures, malformed args, jitter)
    require_key = false           # true: a request without a key gets 401/403

    [[persona]]
    id = "sim-native"             # the model id clients send
    tool_style = "native"         # native | none | rejects_tools, or a prose style (below)
    vision = true
    expect = { tools = "native", vision = "native" }
    listed = true                 # false: answers, but no model list names it

A `[batch]` table (optional) sets how the batch endpoints progress::

    [batch]
    delay_s = 1.0                 # submission to completion (validating, running, finalizing)
    expire_after_s = 0            # > 0: a batch unfinished by then expires (0: never)
    [batch.failures]              # per persona: seeded line failures, by line ordinal
    sim-native = [{ kind = "500", at = [2] }]

A prose style writes the calls into the message text: `text` (TOOL:/ARGS: lines), `hermes`,
`xml`, or one open model family's own markup as a server without a tool parser returns it
(`mistral`, `llama3_json`, `qwen3_xml`, `deepseek`, `glm`, `kimi`, `harmony`). Such a
persona's `expect` may also name the `family` a correct reader must report for its calls.

`bfcl = "oracle"` makes a persona play BFCL's multi-turn entries from their ground truth;
`skips_step`, `wrong_arg` and `asks_back` make one mistake on a seeded `bfcl_mistake_share`
of the entries (`bfcl_play.py`).

Every mistake (unknown key, wrong type, unknown enum value, malformed TOML) raises
`ConfigError` with code FLEET_INVALID naming the persona and the field.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

DEFAULT_FLEET_PATH = Path(__file__).with_name("fleet.toml")
# One free-tier persona per vendor style (per-minute and per-day limits, requests and tokens).
FREE_TIER_FLEET_PATH = Path(__file__).with_name("free_tier.toml")

# The open-model families whose raw markup a persona can write (named as the library's readers
# name them, so `expect.family` and `tool_style` agree for those personas).
FAMILY_TOOL_STYLES = ("mistral", "llama3_json", "qwen3_xml", "deepseek", "glm", "kimi", "harmony")
TOOL_STYLES = ("native", "text", "hermes", "xml", "none", "rejects_tools", *FAMILY_TOOL_STYLES)
REASONING = ("none", "think", "lone_think", "thought_parts")
RATE_LIMIT_STYLES = ("none", "groq", "openrouter", "gemini", "openai")
FAILURE_KINDS = (
    "429",
    "500",
    "502",
    "503",
    "408",
    "hang",
    "empty",
    "truncated",
    "malformed",
    "context_length",
    "stream_cut",
)
# How a persona plays BFCL's multi-turn entries ("" = it does not: every answer is ordinary).
BFCL_PLAYS = ("", "oracle", "skips_step", "wrong_arg", "asks_back")
EXPECT_TOOLS = ("native", "text", "none", "unobserved")
EXPECT_VISION = ("native", "none", "unobserved")

_FLEET_KEYS = {"seed", "require_key", "description", "persona", "batch"}
# What a batch line can fail with: an answer refused or cut, never a hang or a rate limit
# (a batch absorbs those; a line either runs or waits).
BATCH_FAILURE_KINDS = ("500", "502", "503", "408", "context_length", "empty", "truncated")
_BATCH_KEYS = {"delay_s", "expire_after_s", "failures"}


@dataclass(frozen=True, slots=True)
class FailureRule:
    """Fire `kind` at the listed 1-based request ordinals, or at a seeded `rate`."""

    kind: str
    at: tuple[int, ...] = ()
    rate: float | None = None


@dataclass(frozen=True, slots=True)
class Persona:
    id: str
    description: str = ""
    tool_style: str = "native"
    malformed_args_rate: float = 0.0
    reasoning: str = "none"
    vision: bool = True
    latency_ms: float = 2.0
    latency_jitter_ms: float = 1.0
    ttft_ms: float = 2.0
    tokens_per_s: float = 5000.0
    stream_tool_index: bool = True
    stream_concat_args: bool = False
    empty_after_tool_result: bool = False
    refuses_system: bool = False
    rate_limit_style: str = "none"
    rpm: int = 0
    rpd: int = 0
    tpm: int = 0
    tpd: int = 0  # tokens per day
    # The length of a "minute" and of a "day", in seconds: a free tier run in seconds, while
    # the headers, bodies and Retry-After state the real time left in these windows.
    window_s: float = 60.0
    day_s: float = 86400.0
    retry_after_s: float = 2.0
    hang_s: float = 30.0
    context_window: int = 8192
    # False: left out of every model list while it still answers, as a vendor does with a
    # model it has retired from its catalogue but not yet switched off.
    listed: bool = True
    failures: tuple[FailureRule, ...] = ()
    expect: Mapping[str, str] = field(default_factory=dict)
    # BFCL's multi-turn entries played from their ground truth (bfcl_play.py): the oracle, or
    # one mistake made on the share of entries a draw seeded by their opening message picks.
    bfcl: str = ""
    bfcl_mistake_share: float = 0.5


# field name -> (python types accepted, validator or None)
_NUM = (int, float)
_PERSONA_FIELDS: dict[str, tuple[tuple[type, ...], Any]] = {
    "id": ((str,), None),
    "description": ((str,), None),
    "tool_style": ((str,), TOOL_STYLES),
    "malformed_args_rate": (_NUM, (0.0, 1.0)),
    "reasoning": ((str,), REASONING),
    "vision": ((bool,), None),
    "latency_ms": (_NUM, (0.0, None)),
    "latency_jitter_ms": (_NUM, (0.0, None)),
    "ttft_ms": (_NUM, (0.0, None)),
    "tokens_per_s": (_NUM, (0.001, None)),
    "stream_tool_index": ((bool,), None),
    "stream_concat_args": ((bool,), None),
    "empty_after_tool_result": ((bool,), None),
    "refuses_system": ((bool,), None),
    "rate_limit_style": ((str,), RATE_LIMIT_STYLES),
    "rpm": ((int,), (0, None)),
    "rpd": ((int,), (0, None)),
    "tpm": ((int,), (0, None)),
    "tpd": ((int,), (0, None)),
    "window_s": (_NUM, (0.01, None)),
    "day_s": (_NUM, (0.01, None)),
    "retry_after_s": (_NUM, (0.0, None)),
    "hang_s": (_NUM, (0.0, None)),
    "context_window": ((int,), (1, None)),
    "listed": ((bool,), None),
    "failures": ((list,), None),
    "expect": ((dict,), None),
    "bfcl": ((str,), BFCL_PLAYS),
    "bfcl_mistake_share": (_NUM, (0.0, 1.0)),
}


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """How the simulator's batch endpoints progress. A real batch takes minutes to hours; a
    test wants each state observable in a fraction of a second, so the whole run is one
    `delay_s`, and `expire_after_s` (when shorter) makes it expire part-way."""

    delay_s: float = 1.0
    expire_after_s: float = 0.0
    failures: Mapping[str, tuple[FailureRule, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fleet:
    personas: dict[str, Persona]
    seed: int = 0
    require_key: bool = False
    description: str = ""
    source: str = "<dict>"
    batch: BatchSettings = field(default_factory=BatchSettings)

    def persona(self, model: str) -> Persona:
        """The persona serving `model` (a leading `models/` is ignored)."""
        found = self.get(model)
        if found is None:
            raise ConfigError(
                f"the fleet declares no persona {model!r} (known: {', '.join(self.personas)})",
                code="SIM_UNKNOWN_PERSONA",
                details={"persona": model, "known": list(self.personas)},
            )
        return found

    def get(self, model: str) -> Persona | None:
        return self.personas.get(strip_model_prefix(model))

    @property
    def ids(self) -> list[str]:
        return list(self.personas)


def strip_model_prefix(model: str) -> str:
    model = (model or "").strip()
    return model[len("models/") :] if model.startswith("models/") else model


def _bad(msg: str, source: str, **details: Any) -> ConfigError:
    return ConfigError(
        f"fleet {source}: {msg}", code="FLEET_INVALID", details={"source": source, **details}
    )


def _type_name(types: tuple[type, ...]) -> str:
    names = {
        int: "integer",
        float: "number",
        str: "string",
        bool: "boolean",
        list: "array",
        dict: "table",
    }
    return " or ".join(names.get(t, t.__name__) for t in types)


def _check_value(pid: str, name: str, value: Any, source: str) -> Any:
    types, rule = _PERSONA_FIELDS[name]
    # bool is an int subclass in Python: never accept it for a number field.
    if isinstance(value, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        raise _bad(
            f"persona {pid!r} field {name!r} must be a {_type_name(types)}, got {value!r}",
            source,
            persona=pid,
            field=name,
        )
    if isinstance(rule, tuple) and rule and isinstance(rule[0], str):
        if value not in rule:
            raise _bad(
                f"persona {pid!r} field {name!r} is {value!r}; expected one of {', '.join(rule)}",
                source,
                persona=pid,
                field=name,
            )
    elif isinstance(rule, tuple):
        lo, hi = rule
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise _bad(
                f"persona {pid!r} field {name!r} is {value!r}; must be {rng}",
                source,
                persona=pid,
                field=name,
            )
    return value


def _failures(pid: str, raw: list[Any], source: str) -> tuple[FailureRule, ...]:
    rules = []
    for i, item in enumerate(raw):
        where = f"persona {pid!r} field 'failures[{i}]'"
        if not isinstance(item, dict):
            raise _bad(
                f'{where} must be a table like {{kind = "503", at = [2]}}',
                source,
                persona=pid,
                field="failures",
            )
        unknown = set(item) - {"kind", "at", "rate"}
        if unknown:
            raise _bad(
                f"{where} has unknown key(s) {', '.join(sorted(unknown))}",
                source,
                persona=pid,
                field="failures",
            )
        kind = item.get("kind")
        if isinstance(kind, int) and not isinstance(kind, bool):
            kind = str(kind)
        if kind not in FAILURE_KINDS:
            raise _bad(
                f"{where} has unknown failure kind {item.get('kind')!r}; expected one of "
                f"{', '.join(FAILURE_KINDS)}",
                source,
                persona=pid,
                field="failures",
            )
        has_at, has_rate = "at" in item, "rate" in item
        if has_at == has_rate:
            raise _bad(
                f"{where} needs exactly one of 'at' (a list of ordinals) or 'rate'",
                source,
                persona=pid,
                field="failures",
            )
        if has_at:
            at = item["at"]
            if isinstance(at, int) and not isinstance(at, bool):
                at = [at]
            if not isinstance(at, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in at
            ):
                raise _bad(
                    f"{where} 'at' must be a list of request ordinals >= 1",
                    source,
                    persona=pid,
                    field="failures",
                )
            rules.append(FailureRule(kind=kind, at=tuple(at)))
        else:
            rate = item["rate"]
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
                raise _bad(
                    f"{where} 'rate' must be a number in 0..1",
                    source,
                    persona=pid,
                    field="failures",
                )
            rules.append(FailureRule(kind=kind, rate=float(rate)))
    return tuple(rules)


def _expect(pid: str, raw: dict[str, Any], source: str) -> dict[str, str]:
    allowed: dict[str, tuple[str, ...] | None] = {
        "tools": EXPECT_TOOLS,
        "vision": EXPECT_VISION,
        "family": None,  # free text: the simulator never imports the library's readers
    }
    for key, value in raw.items():
        if key not in allowed:
            raise _bad(
                f"persona {pid!r} field 'expect' has unknown key {key!r} "
                f"(expected {', '.join(allowed)})",
                source,
                persona=pid,
                field="expect",
            )
        choices = allowed[key]
        if choices is None:
            if not isinstance(value, str) or not value.strip():
                raise _bad(
                    f"persona {pid!r} field 'expect.{key}' must be a non-empty string, "
                    f"got {value!r}",
                    source,
                    persona=pid,
                    field="expect",
                )
        elif value not in choices:
            raise _bad(
                f"persona {pid!r} field 'expect.{key}' is {value!r}; expected one of "
                f"{', '.join(choices)}",
                source,
                persona=pid,
                field="expect",
            )
    return dict(raw)


def _persona(raw: Any, index: int, source: str) -> Persona:
    if not isinstance(raw, dict):
        raise _bad(f"persona #{index + 1} must be a table", source, field="persona")
    pid = raw.get("id")
    if not isinstance(pid, str) or not pid.strip():
        raise _bad(
            f"persona #{index + 1} needs a non-empty string 'id'",
            source,
            persona=f"#{index + 1}",
            field="id",
        )
    pid = pid.strip()
    if pid.startswith("models/"):
        raise _bad(
            f"persona {pid!r} field 'id' must not start with 'models/'",
            source,
            persona=pid,
            field="id",
        )
    unknown = sorted(set(raw) - set(_PERSONA_FIELDS))
    if unknown:
        raise _bad(
            f"persona {pid!r} has unknown field(s) {', '.join(unknown)}",
            source,
            persona=pid,
            field=unknown[0],
        )
    kw: dict[str, Any] = {}
    for name, value in raw.items():
        _check_value(pid, name, value, source)
        if name == "failures":
            kw[name] = _failures(pid, value, source)
        elif name == "expect":
            kw[name] = _expect(pid, value, source)
        elif name == "id":
            kw[name] = pid
        elif _PERSONA_FIELDS[name][0] == _NUM:
            kw[name] = float(value)
        else:
            kw[name] = value
    return Persona(**kw)


def fleet_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Fleet:
    if not isinstance(data, Mapping):
        raise _bad("the top level must be a table", source)
    unknown = sorted(set(data) - _FLEET_KEYS)
    if unknown:
        raise _bad(
            f"unknown top-level key(s) {', '.join(unknown)} (expected seed, require_key, "
            "description, [batch], [[persona]])",
            source,
            field=unknown[0],
        )
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _bad(f"'seed' must be an integer, got {seed!r}", source, field="seed")
    require_key = data.get("require_key", False)
    if not isinstance(require_key, bool):
        raise _bad(
            f"'require_key' must be a boolean, got {require_key!r}", source, field="require_key"
        )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _bad("'description' must be a string", source, field="description")
    raw_personas = data.get("persona", [])
    if not isinstance(raw_personas, list) or not raw_personas:
        raise _bad("declare at least one [[persona]]", source, field="persona")
    personas: dict[str, Persona] = {}
    for i, raw in enumerate(raw_personas):
        p = _persona(raw, i, source)
        if p.id in personas:
            raise _bad(f"persona {p.id!r} is declared twice", source, persona=p.id, field="id")
        personas[p.id] = p
    return Fleet(
        personas=personas,
        seed=seed,
        require_key=require_key,
        description=description,
        source=source,
        batch=_batch(data.get("batch", {}), personas, source),
    )


def _batch(raw: Any, personas: Mapping[str, Persona], source: str) -> BatchSettings:
    if not isinstance(raw, dict):
        raise _bad("[batch] must be a table", source, field="batch")
    unknown = sorted(set(raw) - _BATCH_KEYS)
    if unknown:
        raise _bad(
            f"[batch] has unknown key(s) {', '.join(unknown)} (expected "
            f"{', '.join(sorted(_BATCH_KEYS))})",
            source,
            field=f"batch.{unknown[0]}",
        )
    seconds: dict[str, float] = {}
    for name, default, least in (("delay_s", 1.0, 0.0), ("expire_after_s", 0.0, 0.0)):
        value = raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < least:
            raise _bad(
                f"[batch] {name!r} must be a number of seconds >= {least:g}, got {value!r}",
                source,
                field=f"batch.{name}",
            )
        seconds[name] = float(value)
    failures = raw.get("failures", {})
    if not isinstance(failures, dict):
        raise _bad(
            "[batch] 'failures' must be a table of persona = [{kind = \"500\", at = [2]}]",
            source,
            field="batch.failures",
        )
    rules: dict[str, tuple[FailureRule, ...]] = {}
    for pid, items in failures.items():
        if pid not in personas:
            raise _bad(
                f"[batch] failures name no persona {pid!r} (known: {', '.join(personas)})",
                source,
                persona=pid,
                field="batch.failures",
            )
        if not isinstance(items, list):
            raise _bad(
                f"[batch] failures for {pid!r} must be an array of tables",
                source,
                persona=pid,
                field="batch.failures",
            )
        parsed = _failures(pid, items, source)
        for rule in parsed:
            if rule.kind not in BATCH_FAILURE_KINDS:
                raise _bad(
                    f"[batch] failures for {pid!r}: a batch line cannot fail with "
                    f"{rule.kind!r}; expected one of {', '.join(BATCH_FAILURE_KINDS)}",
                    source,
                    persona=pid,
                    field="batch.failures",
                )
        rules[pid] = parsed
    return BatchSettings(
        delay_s=seconds["delay_s"], expire_after_s=seconds["expire_after_s"], failures=rules
    )


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+), column (\d+)", str(exc))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        where = f" at line {line}, column {col}" if m else ""
        raise _bad(f"malformed TOML{where}: {exc}", source, line=line, column=col) from None


def load_fleet(fleet: Fleet | Mapping[str, Any] | str | Path | None = None) -> Fleet:
    """A `Fleet` from a path, TOML text, a dict, an already-loaded Fleet, or None (default)."""
    if fleet is None:
        fleet = DEFAULT_FLEET_PATH
    if isinstance(fleet, Fleet):
        return fleet
    if isinstance(fleet, Mapping):
        return fleet_from_dict(fleet)
    if isinstance(fleet, str) and ("\n" in fleet or "=" in fleet or "[" in fleet):
        return fleet_from_dict(_parse_toml(fleet, "<toml text>"), "<toml text>")
    if isinstance(fleet, str | Path):
        path = Path(fleet)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise _bad(f"cannot read the file ({exc.strerror or exc})", str(path)) from None
        return fleet_from_dict(_parse_toml(text, str(path)), str(path))
    raise _bad(
        f"a fleet is a path, TOML text, a dict or a Fleet, not {type(fleet).__name__}", "<argument>"
    )
