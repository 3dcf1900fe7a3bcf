"""Cassettes: every provider HTTP exchange recorded, and replayed with no network.

    from workbench.cassettes import Cassette

    router = load_config("providers.toml").build_router()
    with Cassette("cassettes/smoke", "record") as cassette:   # or "replay", "record_missing"
        router.use_cassette(cassette)
        reply = await router.route(request)

`workbench run --record DIR` / `--replay DIR [--record-missing]` do the same for a run; the
pytest plugin (`workbench_cassette` fixture, `@pytest.mark.cassette(path)`) for a test; and
`for_notebook` picks replay or record-missing from whether the providers' keys are set, so
one notebook runs in CI from its cassette and records what is new on a machine with keys.
The format (`format.py`), the matching (`matching.py`) and the transport (`transport.py`)
each say their rules.
"""

from __future__ import annotations

from pathlib import Path

from workbench.cassettes.cassette import FILE_NAME, MODES, Cassette, CassetteMode, cassette_file
from workbench.cassettes.format import VERSION, Exchange
from workbench.errors import ConfigError


def notebook_mode(providers_file: str | Path) -> CassetteMode:
    """`record_missing` when every external provider of the providers file (TOML, or a
    LiteLLM `config.yaml`, read by `load_config` as `--providers` reads it) has its key in
    the environment, else `replay`: CI, where real keys should not be, replays; a machine
    with the keys records what the cassette lacks."""
    from workbench.config.providers_file import load_config
    from workbench.types import CallContext

    try:
        config = load_config(providers_file)
    except ConfigError as exc:
        if exc.code == "LITELLM_ENV_MISSING":  # a LiteLLM file names a key that is not set
            return "replay"
        raise
    keyed = [p for p in config.providers if p.external and p.keyed]
    ready = bool(keyed) and all(p.key(CallContext()) for p in keyed)
    return "record_missing" if ready else "replay"


def for_notebook(where: str | Path, providers_file: str | Path) -> Cassette:
    """The cassette at `where`, replayed when the providers' keys are absent and filled in
    (record-missing) when they are all present (`notebook_mode`)."""
    return Cassette(where, notebook_mode(providers_file))


__all__ = [
    "FILE_NAME",
    "MODES",
    "VERSION",
    "Cassette",
    "CassetteMode",
    "Exchange",
    "cassette_file",
    "for_notebook",
    "notebook_mode",
]
