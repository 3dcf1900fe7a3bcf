"""`RunConfig`: every setting of a run, in one frozen record; `RunHooks`: what the caller's
code does while it runs.

A run is re-made from its row: the store writes `RunConfig.to_json()` when the run starts and
`RunConfig.from_row` reads it back, equal field for field. So every setting lives here and
nowhere else (`run_prompt_set` takes it whole or field by field), and what cannot be written
to a row (a progress bar, callbacks, the cleaner, which are code) is kept apart in `RunHooks`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from workbench.cassettes.cassette import MODES as CASSETTE_MODES
from workbench.cassettes.cassette import CassetteMode
from workbench.errors import CassetteError, ConfigError
from workbench.types import ToolsMode

if TYPE_CHECKING:  # the store's reads import duckdb: a run's options must not
    from workbench.eval.store.reads import RunRecord

# "probe" is accepted for "plan": the first call to an unknown model is its probe.
RunToolsMode = Literal["plan", "probe", "native", "text"]
Cleaner = Callable[[str, str | None], str]  # (text, language) → what a person reads


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """How a run is made. Checked when built, so a bad setting is refused before any request
    is sent (`RUN_INVALID`)."""

    concurrency: int = 8  # jobs in flight at once (per Ray worker with the Ray engine)
    repeats: int = 1  # each item is asked this many times, per configuration
    tools_mode: RunToolsMode = "plan"
    # Seconds a cached answer is reused by a providers config's router; None: no cache.
    cache_ttl_s: float | None = None
    mask: bool = True  # each item's sensitive values are masked before they leave the machine
    tool_loop: bool = True  # an item that offers tools runs them (write tools only propose)
    run_name: str | None = None
    resume: str | None = None  # the id of an interrupted run to finish
    limit: int | None = None  # the first N items of the prompt set (per category for BFCL)
    # Every request through its configuration's first model's batch API (half the price, no
    # fallback, answers within the vendor's window): see `workbench.eval.run.batch_mode`.
    batch: bool = False
    # The longest one item may be held, in all, for the provider's reasons (a 429, a spent
    # window, an outage) before it is logged unanswered (`RUN_MAX_WAIT`): wall time from a
    # turn's first refused route until it is answered, sleeps and routes alike. 15 minutes: a
    # free tier's minute window refills a dozen times over, and an outage longer than that is
    # no longer worth a benchmark's wait (resume asks the item again later).
    max_wait_s: float = 900.0
    # Routes of one item refused for the provider's reasons before it is logged unanswered:
    # a cap for a provider that keeps promising to be free soon and keeps refusing.
    max_tries: int = 10
    # BFCL's web search answered offline by this simulator's fixed web (its base URL; a run on
    # the embedded default sets it); None: SerpAPI, with SERPAPI_API_KEY. Offline scores are
    # not leaderboard scores.
    bfcl_web: str | None = None
    # Every provider exchange through a cassette in this folder (`workbench.cassettes`):
    # "record" (a new recording), "replay" (no network; REPLAY_MISS stops the run) or
    # "record_missing" (replayed where recorded, recorded where not).
    cassette: str | None = None
    cassette_mode: CassetteMode = "replay"

    def __post_init__(self) -> None:
        if self.tools_mode not in ("plan", "probe", "native", "text"):
            raise ConfigError(
                f"tools_mode must be plan, native or text, not {self.tools_mode!r}",
                code="RUN_INVALID",
            )
        if self.concurrency < 1 or self.repeats < 1:
            raise ConfigError("concurrency and repeats must be at least 1", code="RUN_INVALID")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("--limit must be at least 1", code="RUN_INVALID")
        # A bool is an int to Python: `max_wait_s=True` must not pass as one second.
        wait = self.max_wait_s
        if isinstance(wait, bool) or not (isinstance(wait, int | float) and 0 < wait < math.inf):
            raise ConfigError(
                f"max_wait_s (--max-wait) must be a positive number of seconds, not {self.max_wait_s!r}",
                code="RUN_INVALID",
            )
        if self.cassette_mode not in CASSETTE_MODES:
            raise ConfigError(
                f"cassette_mode must be one of {', '.join(CASSETTE_MODES)}, not "
                f"{self.cassette_mode!r}",
                code="RUN_INVALID",
            )
        if self.cassette is not None and self.batch:
            raise CassetteError(
                "a cassette records one request at a time: a batch's uploads and polls are "
                "not recorded — leave out --batch, or the cassette",
                code="CASSETTE_UNSUPPORTED",
            )
        tries = self.max_tries
        if isinstance(tries, bool) or not isinstance(tries, int) or tries < 1:
            raise ConfigError(
                f"max_tries (--max-tries) must be at least 1, not {self.max_tries!r}",
                code="RUN_INVALID",
            )

    @property
    def mode(self) -> ToolsMode:
        """The tools mode the router is asked for ("probe" is "plan")."""
        return "plan" if self.tools_mode == "probe" else self.tools_mode

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with `changes`, checked again; a name that is no setting is `RUN_INVALID`."""
        unknown = sorted(set(changes) - FIELDS)
        if unknown:
            raise ConfigError(
                f"unknown run option(s) {', '.join(unknown)}; a run takes "
                f"{', '.join(sorted(FIELDS | HOOKS))}",
                code="RUN_INVALID",
            )
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        """The row's `config` column: every field, by name."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | Mapping[str, Any]) -> RunConfig:
        """A config from its row. A setting this version does not know (a row written by a
        newer workbench: settings are added without a migration) is left out rather than
        refused, so an older workbench still reads, and can resume, the run."""
        data = json.loads(text) if isinstance(text, str) else dict(text)
        return cls().replace(**{k: v for k, v in data.items() if k in FIELDS})

    @classmethod
    def from_row(cls, row: Mapping[str, Any] | RunRecord) -> RunConfig:
        """The config a run was made with, from its `runs` row (`Store.run`'s `RunRecord`, or
        `Store.get_run`'s dict). A run logged before the row kept its config has only its
        `settings` and name: what they say, the rest at the defaults of today."""
        if not isinstance(row, Mapping):  # a RunRecord
            row = {"config": row.config, "settings": row.settings, "name": row.name}
        if row.get("config") is not None:
            return cls.from_json(row["config"])
        settings = row.get("settings") or {}
        if isinstance(settings, str):
            settings = json.loads(settings)
        kept = ("concurrency", "repeats", "tools_mode", "cache_ttl_s")
        known = {k: settings[k] for k in kept if k in settings}
        return cls(run_name=row.get("name"), **known)


@dataclass(frozen=True, slots=True)
class RunHooks:
    """The caller's code in a run: none of it is a setting, so none of it is in the row."""

    progress: bool = True  # a tqdm bar on the terminal
    on_item: Callable[[str, int, str], Any] | None = None  # (item id, repeat, configuration)
    on_start: Callable[[str, int], Any] | None = None  # (run id, jobs to make)
    # (text, language) → what a person reads; None: the vocabulary beside the prompt set.
    clean: Cleaner | None = None


DEFAULT_CONFIG = RunConfig()  # every default: what `run_prompt_set` runs with unless told
FIELDS = frozenset(f.name for f in dataclasses.fields(RunConfig))
HOOKS = frozenset(f.name for f in dataclasses.fields(RunHooks))


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(s|m|h)?")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str, option: str = "--max-wait") -> float:
    """Seconds from `90s`, `10m`, `1h` or a bare number of seconds (`120`, `2.5`). Anything
    else, zero included, is `RUN_INVALID` in one line: a typo must not become a run that
    gives up at once or never."""
    found = _DURATION.fullmatch(text.strip().lower())
    seconds = float(found.group(1)) * _UNIT_S[found.group(2)] if found else 0.0
    if not (0 < seconds < math.inf):
        raise ConfigError(
            f"{option} takes a positive duration such as 90s, 10m, 1h or a number of "
            f"seconds, not {text!r}",
            code="RUN_INVALID",
        )
    return seconds


def settle(
    config: RunConfig, hooks: RunHooks | None, overrides: Mapping[str, Any]
) -> tuple[RunConfig, RunHooks]:
    """`run_prompt_set`'s keywords laid over its `config` and `hooks`: a keyword names a
    setting or a hook; anything else is `RUN_INVALID`, before the run starts."""
    hooks = hooks or RunHooks()
    hook_changes = {k: v for k, v in overrides.items() if k in HOOKS}
    config = config.replace(**{k: v for k, v in overrides.items() if k not in HOOKS})
    return config, dataclasses.replace(hooks, **hook_changes)


__all__ = [
    "DEFAULT_CONFIG",
    "Cleaner",
    "RunConfig",
    "RunHooks",
    "RunToolsMode",
    "parse_duration",
    "settle",
]
