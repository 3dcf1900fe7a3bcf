"""`workbench runs` and `workbench verdicts`: what a DuckDB file already holds, read only."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import Verb, add_db

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add_runs(verbs: Subcommands) -> None:
    runs = verbs.add_parser("runs", help="list the runs in a DuckDB file")
    add_db(runs)


def runs(args: argparse.Namespace) -> int:
    from workbench.eval.analysis.frames import RunFrames

    with RunFrames.open(args.db) as wb:
        # The row's whole `config` is there to re-make a run; the listing stays the one a
        # person reads (its `settings`, as before the row kept the config).
        table = wb.runs().drop(columns=["config"], errors="ignore")
    print(table.to_string(index=False) if len(table) else wording.nothing_line("runs yet"))
    return 0


def add_verdicts(verbs: Subcommands) -> None:
    verdicts = verbs.add_parser("verdicts", help="the capability verdicts observed so far")
    add_db(verdicts)
    verdicts.add_argument("--run", metavar="RUN_ID", help="every classification of one run")


def verdicts(args: argparse.Namespace) -> int:
    """Without --run, the current record of each capability; with it, every classification
    that run made, counted."""
    from workbench.eval.analysis.frames import RunFrames

    with RunFrames.open(args.db) as wb:
        table = wb.verdict_rows(args.run) if args.run else wb.capability_rows()
    print(table.to_string(index=False) if len(table) else wording.nothing_line("verdicts yet"))
    return 0


RUNS = Verb(add_runs, runs)
VERDICTS = Verb(add_verdicts, verdicts)
