"""`workbench compare`: is run B worse than run A? The gate a CI job runs: items are paired,
and only a significant drop beyond the allowed margin exits 1."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workbench.cli.shared import Verb, add_db

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    compare = verbs.add_parser(
        "compare",
        help="is run B worse than run A? (items paired; exit 1 on a significant regression)",
    )
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    add_db(compare)
    compare.add_argument("--metric", default="pass", help="what is compared (pass)")
    compare.add_argument(
        "--fail-if-worse-by",
        type=float,
        default=0.0,
        metavar="X",
        help="the pass-rate drop allowed (0.05 = five points) before B fails, if significant",
    )
    compare.add_argument("--alpha", type=float, default=0.05, help="McNemar's significance level")
    compare.add_argument("--json", action="store_true", help="the comparison as JSON")


def run(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from workbench.eval.analysis.frames import RunFrames
    from workbench.eval.analysis.gate import SHOWN_FLIPS, compare_runs, describe

    with RunFrames.open(args.db, snapshot=True) as wb:
        c = compare_runs(
            wb,
            args.run_a,
            args.run_b,
            metric=args.metric,
            margin=args.fail_if_worse_by,
            alpha=args.alpha,
            max_flips=None if args.json else SHOWN_FLIPS,  # JSON lists every flip
        )
    if args.json:
        print(json.dumps(dataclasses.asdict(c) | {"worse": c.worse}, indent=2))
    else:
        print("\n".join(describe(c)))
    return 1 if c.worse else 0


VERB = Verb(add, run)
