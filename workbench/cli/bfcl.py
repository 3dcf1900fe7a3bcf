"""`workbench bfcl`: the Berkeley Function Calling Leaderboard's data (fetched into a cache,
never installed) and the leaderboard table of BFCL runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import Verb, add_db

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    bfcl = verbs.add_parser(
        "bfcl", help="the Berkeley Function Calling Leaderboard's data and scores"
    )
    bfcl_verbs = bfcl.add_subparsers(dest="bfcl_verb", metavar="VERB", required=True)
    fetch = bfcl_verbs.add_parser(
        "fetch",
        help="download the bfcl-eval wheel (pip download --no-deps: nothing is installed) into "
        "the cache",
    )
    fetch.add_argument(
        "--source",
        metavar="PATH",
        help="take the data from a bfcl-eval wheel, an unpacked wheel or a BFCL checkout instead",
    )
    fetch.add_argument("--into", metavar="DIR", help="the cache folder (default: the user cache)")
    scores = bfcl_verbs.add_parser(
        "scores",
        help="BFCL's leaderboard row of BFCL runs: Overall Acc with BFCL's weights, then each "
        "summary and category",
    )
    scores.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    scores.add_argument(
        "--out",
        metavar="DIR",
        help="also write BFCL's score files and leaderboard CSVs (data_overall.csv, ...) there, "
        "for BFCL's own tools",
    )
    scores.add_argument(
        "--bfcl-source",
        metavar="PATH",
        help="BFCL's data (wheel, unpacked wheel or checkout) for the sizes of the categories "
        "not run (default: the fetched cache)",
    )
    add_db(scores)


def run(args: argparse.Namespace) -> int:
    if args.bfcl_verb == "fetch":
        from workbench.eval.suites.bfcl.source import fetch_bfcl

        print(wording.bfcl_data_line(fetch_bfcl(args.source, into=args.into)))
        return 0
    from workbench.eval.analysis.frames import RunFrames
    from workbench.eval.suites.bfcl.scores import CATEGORY_COLUMNS, OVERALL_WEIGHTS, SECTIONS

    with RunFrames.open(args.db, snapshot=True) as wb:
        table = wb.bfcl_scores(args.run_ids, source=args.bfcl_source)
        written = []
        if args.out:
            written = wb.write_bfcl_scores(args.run_ids, args.out, source=args.bfcl_source)
    categories = list(CATEGORY_COLUMNS.values())
    for n, row in enumerate(table.to_dict("records")):
        lines = wording.bfcl_leaderboard_lines(row, OVERALL_WEIGHTS, SECTIONS, categories)
        print("\n".join(([""] if n else []) + lines))
    if args.out:
        print(wording.bfcl_score_files_line(args.out, len(written)))
    return 0


VERB = Verb(add, run)
