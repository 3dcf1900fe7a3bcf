"""The `-M` model args of `inspect eval --model workbench/...`, checked before any request.

Inspect hands a provider every `-M key=value` as a keyword argument, the values already read
as YAML (`-M mask=false` arrives as False); an arg we do not know is refused, naming the ones
we do, rather than ignored: a misspelt `-M provider=...` must not run on the default file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from workbench.cassettes import CassetteMode
from workbench.errors import ConfigError
from workbench.eval.run.options import parse_duration
from workbench.types import ToolsMode

#: The model name that routes through the whole chain (any other is `provider:model`).
CHAIN = "chain"
DEFAULT_DB = "workbench.duckdb"
KNOWN = (
    "providers",
    "db",
    "mask",
    "tools_mode",
    "max_wait",
    "record",
    "replay",
    "record_missing",
    "name",
)
#: As `workbench run --max-wait`: 15 minutes a sample may be held for the provider.
DEFAULT_MAX_WAIT_S = 900.0


@dataclass(frozen=True, slots=True)
class ModelArgs:
    """What one `workbench/...` model routes through and logs to.

    `pinned` is the one `provider:model` the model name pins, or None for the chain; the
    tools mode is the router's planning unless told (as `workbench run`); masking is on unless
    told (as `workbench run`)."""

    providers: Path
    db: Path
    pinned: str | None = None
    mask: bool = True
    tools_mode: ToolsMode = "plan"
    max_wait_s: float = DEFAULT_MAX_WAIT_S  # the longest a sample is held for the provider
    # A cassette (`workbench.cassettes`), as `workbench run --record / --replay
    # [--record-missing]`: every provider exchange recorded to it, or answered from it.
    cassette: Path | None = None
    cassette_mode: CassetteMode = "replay"
    name: str | None = None  # the run's name, as `workbench run --name` (none by default)

    @classmethod
    def parse(cls, model_name: str, args: Mapping[str, Any]) -> ModelArgs:
        unknown = sorted(set(args) - set(KNOWN))
        if unknown:
            raise _invalid(
                f"unknown model arg {unknown[0]!r} (known: {', '.join(KNOWN)})",
            )
        providers = args.get("providers")
        if not providers:
            raise _invalid(
                f"workbench/{model_name} needs -M providers=FILE (the providers file to route "
                "through)"
            )
        if not Path(str(providers)).is_file():
            raise _invalid(f"-M providers={providers}: no such file")
        cassette, cassette_mode = _cassette(args)
        mode = args.get("tools_mode", "plan")
        if mode == "probe":  # as `workbench run`: the first call to an unknown model probes it
            mode = "plan"
        if mode not in ("plan", "native", "text"):
            raise _invalid(f"-M tools_mode must be plan, native or text, not {mode!r}")
        return cls(
            providers=Path(str(providers)),
            db=Path(str(args.get("db") or DEFAULT_DB)),
            pinned=None if model_name == CHAIN else _pinned(model_name),
            mask=_flag("mask", args.get("mask", True)),
            tools_mode=cast(ToolsMode, mode),
            max_wait_s=_seconds("max_wait", args.get("max_wait", DEFAULT_MAX_WAIT_S)),
            cassette=cassette,
            cassette_mode=cassette_mode,
            name=str(args["name"]) if args.get("name") else None,
        )


def _pinned(model_name: str) -> str:
    provider, sep, model = model_name.partition(":")
    if not sep or not provider or not model:
        raise _invalid(
            f"workbench/{model_name}: the model is `chain` or one `provider:model` of the "
            "providers file"
        )
    return model_name


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    raise _invalid(f"-M {name} must be true or false, not {value!r}")


def _cassette(args: Mapping[str, Any]) -> tuple[Path | None, CassetteMode]:
    """The cassette's folder and mode from -M record, -M replay and -M record_missing."""
    record, replay = args.get("record"), args.get("replay")
    missing = _flag("record_missing", args.get("record_missing", False))
    if record and replay:
        raise _invalid(
            "-M record and -M replay together: an eval records or replays one cassette — to "
            "replay it and record only what it lacks, use -M replay=DIR -M record_missing=true"
        )
    if missing and not replay:
        raise _invalid(
            "-M record_missing fills the gaps of a cassette: it needs -M replay=DIR (to record "
            "a new cassette, use -M record=DIR)"
        )
    if record:
        return Path(str(record)), "record"
    if replay:
        return Path(str(replay)), "record_missing" if missing else "replay"
    return None, "replay"


def _seconds(name: str, value: Any) -> float:
    """Seconds, as a number or as `workbench run --max-wait` writes them (`90s`, `15m`, `1h`)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < math.inf:
        return float(value)
    try:
        return parse_duration(str(value), option=f"-M {name}")
    except ConfigError as exc:
        raise _invalid(exc.message) from None


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code="INSPECT_MODEL_INVALID")


__all__ = ["CHAIN", "DEFAULT_DB", "DEFAULT_MAX_WAIT_S", "ModelArgs"]
