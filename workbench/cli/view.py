"""`workbench view [RUN]`: a run's report served from its DuckDB file, for those who prefer a
server to a folder: the same page, each chunk read on request."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import Verb, add_db

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    view = verbs.add_parser(
        "view",
        help="serve a run's report straight from the DuckDB file (read-only, loopback)",
        description="Serve the report of a run over HTTP, read from the DuckDB file as it is "
        "browsed: the page `workbench report` writes for a big run, each chunk of rows and "
        "stories read on request by one bounded query. The file is opened read-only; the "
        "server listens on loopback unless --host says otherwise, and answers only at the "
        "address it prints (its path holds a secret made at launch).",
    )
    view.add_argument(
        "run_id",
        nargs="?",
        default="latest",
        help="a run id, a run's --name or `latest` (the default)",
    )
    add_db(view)
    view.add_argument("--host", default="127.0.0.1", help="default: loopback only")
    view.add_argument("--port", type=int, default=8790, help="default 8790; 0: any free port")


def run(args: argparse.Namespace) -> int:
    from workbench.eval.gateway.server import bind, is_loopback
    from workbench.eval.report.server import ViewAddress, ViewedRun, serve_view

    viewed = ViewedRun.open(args.db, args.run_id)  # no file, no run: refused before listening
    try:
        sock = bind(args.host, args.port, who="the report", code="VIEW_INVALID")
        if not is_loopback(args.host):
            print(wording.view_exposed_line(args.host), file=sys.stderr)
        # The URL holds the launch's token: printed here once, and nowhere else.
        address = ViewAddress.of(sock, args.host)

        def started() -> None:
            print(wording.serving_view_line(address.url, viewed.run_id, args.db), flush=True)

        serve_view(viewed, sock, address, started)
    finally:
        viewed.close()
    return 0


VERB = Verb(add, run)
