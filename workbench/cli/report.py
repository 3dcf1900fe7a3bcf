"""`workbench report`: the self-contained interactive HTML page of a run, or of B against A."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workbench.cli.shared import Verb, add_db

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    report = verbs.add_parser(
        "report",
        help="write the self-contained interactive HTML report of a run (or of B against A)",
        description="Write a page that opens from disk, offline: summary cards, charts, "
        "a sortable and filterable item table, and each item's story (every attempt of its "
        "chain, the request as it left the machine, the raw and cleaned reply, tool calls, "
        "verdicts, grade). A small run's report is one HTML file; a big run's (more than "
        "5,000 rows, or more than 8 MB of stories: long prompts and answers) a folder: "
        "index.html and its data files, read as the table scrolls and "
        "a story opens. With a second run, also a comparison page: pass-rate differences "
        "with paired intervals and every flipped item. Prints the page's path.",
    )
    report.add_argument(
        "run_id",
        nargs="?",
        default="latest",
        help="a run id, a run's --name or `latest` (the default)",
    )
    report.add_argument("run_b", nargs="?", help="a second run: compare it against the first")
    add_db(report)
    report.add_argument(
        "--out",
        default="reports",
        metavar="DIR",
        help="the folder to write into (default: reports): RUN_ID.html (or the folder "
        "RUN_ID/), and with RUN_B also RUN_B_ID's and RUN_ID_vs_RUN_B_ID.html",
    )


def run(args: argparse.Namespace) -> int:
    from workbench.eval.report.page import write_comparison, write_report

    if args.run_b:
        path = write_comparison(args.db, args.run_id, args.run_b, args.out)
    else:
        path = write_report(args.db, args.run_id, args.out)
    print(path.resolve())
    return 0


VERB = Verb(add, run)
