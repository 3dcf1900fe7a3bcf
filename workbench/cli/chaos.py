"""`workbench chaos`: a prompt set under failure schedules, then the checks that nothing was
lost, exceeded or let escape."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from workbench.cli.shared import Verb

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    chaos = verbs.add_parser(
        "chaos",
        help="run a prompt set under failure schedules and check nothing is lost or exceeded",
        description="429 storms, 5xx bursts, hangs, empty and malformed replies (and Redis "
        "killed mid-run with --redis-url): checks every attempt is in DuckDB, no RPM is "
        "exceeded, every item ends answered or with a coded error, nothing escapes.",
    )
    chaos.add_argument("--db", default="chaos.duckdb", metavar="PATH")
    chaos.add_argument("--redis-url", metavar="URL", help="share the quotas through this Redis")
    chaos.add_argument("--items", type=int, default=120)
    chaos.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    from workbench.eval.diagnostics.chaos import run_chaos

    def phase(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    report = asyncio.run(
        run_chaos(
            args.db, redis_url=args.redis_url, items=args.items, seed=args.seed, on_phase=phase
        )
    )
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


VERB = Verb(add, run)
