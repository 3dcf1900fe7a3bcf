"""What several verbs share: the DuckDB flag, the providers file they read, and the shape
of a verb (how it adds its subcommand, how it runs)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from workbench.cli import wording

if TYPE_CHECKING:
    from workbench.config.providers_file import ProvidersConfig

    # What `add_parser` is called on; argparse names its type only privately.
    Subcommands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

DEFAULT_DB = "workbench.duckdb"
DB_HELP = f"the DuckDB file (default: {DEFAULT_DB})"


class Verb(NamedTuple):
    """One row of the command's table. `add` declares the verb's flags; `run` does the
    work and returns the exit code: 0 success, 1 the job ran and failed, 2 the user's input
    is wrong. A verb imports what it needs inside `run`, so that `workbench --help` and the
    other verbs never pay for it (a NamedTuple rather than a dataclass for the same reason:
    `--help` imports no `dataclasses`)."""

    add: Callable[[Subcommands], None]
    run: Callable[[argparse.Namespace], int]


def add_db(parser: argparse.ArgumentParser) -> None:
    """`--db PATH`, defaulting to the file `workbench run` writes."""
    parser.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=DB_HELP)


def providers_file(path: str) -> ProvidersConfig:
    """A providers file, ours or a LiteLLM `config.yaml`. What a LiteLLM file holds that
    means nothing here is said once, on one stderr line, so that no setting is dropped
    unseen; the library only returns the list."""
    from workbench.config.providers_file import load_config

    config = load_config(path)
    if config.ignored:
        print(wording.ignored_fields_line(path, config.ignored), file=sys.stderr)
    return config
