"""`workbench regrade`: grade a run's logged outputs again against new expectations, without
calling a model."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import Verb, add_db

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    regrade = verbs.add_parser("regrade", help="grade a run's logged outputs again (no model call)")
    regrade.add_argument("run_id")
    regrade.add_argument(
        "dataset", help="the prompt set with the new expectations (or bfcl:CATEGORIES)"
    )
    regrade.add_argument("--bfcl-source", metavar="PATH", help="where BFCL's data is read from")
    add_db(regrade)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_regrade(args))


async def _regrade(args: argparse.Namespace) -> int:
    from workbench.eval.dataset.prompt_set import open_dataset
    from workbench.eval.run.runner import regrade
    from workbench.eval.store.database import Store

    with Store.open(args.db) as store:
        dataset = open_dataset(args.dataset, bfcl_source=args.bfcl_source)
        summary = await regrade(store, args.run_id, dataset)
    for line in wording.run_summary_lines(summary):
        print(line)
    return 0


VERB = Verb(add, run)
