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

import os
import tomllib
from pathlib import Path

from workbench.cassettes.cassette import FILE_NAME, MODES, Cassette, CassetteMode, cassette_file
from workbench.cassettes.format import VERSION, Exchange
from workbench.errors import ConfigError


def notebook_mode(providers_file: str | Path) -> CassetteMode:
    """`record_missing` when every key the providers file's external providers name
    (`key_env`) is set in the environment, else `replay`: CI, where real keys should not be,
    replays; a machine with the keys records what the cassette lacks."""
    path = Path(providers_file)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})", code="PROVIDERS_INVALID") from None
    names = [
        p["key_env"]
        for p in data.get("providers", [])
        if isinstance(p, dict) and p.get("external", True) and isinstance(p.get("key_env"), str)
    ]
    keyed = bool(names) and all(os.environ.get(n, "").strip() for n in names)
    return "record_missing" if keyed else "replay"


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
