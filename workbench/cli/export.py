"""`workbench export`: a logged run for other tools, as Inspect AI eval logs or OpenTelemetry
GenAI spans. What a person or a model wrote is masked with the run's own maskers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import Verb, add_db

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    export = verbs.add_parser(
        "export",
        help="a logged run for other tools: Inspect AI eval logs, OpenTelemetry GenAI spans",
        description="Export a run (its id, its --name, or `latest`). Content that a person or a "
        "model wrote is masked with the run's own maskers (which needs the prompt set the run "
        "read: --dataset when it has moved).",
    )
    export_verbs = export.add_subparsers(dest="export_verb", metavar="VERB", required=True)
    inspect_ = export_verbs.add_parser(
        "inspect",
        help="Inspect AI eval logs, one per configuration, for `inspect view` and "
        "inspect_ai.analysis (the `inspect` extra)",
    )
    inspect_.add_argument("--out", required=True, metavar="DIR", help="the folder of the logs")
    otel = export_verbs.add_parser(
        "otel",
        help="OpenTelemetry GenAI spans, a trace per sample (its routes, their attempts, its "
        "tool steps), to an OTLP/HTTP endpoint or a JSON file (the `otel` extra)",
    )
    where = otel.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--endpoint",
        metavar="URL",
        help="an OTLP/HTTP collector, e.g. http://127.0.0.1:4318 (/v1/traces is added)",
    )
    where.add_argument("--out", metavar="FILE", help="write the spans as one OTLP/JSON file")
    otel.add_argument(
        "--content",
        action="store_true",
        help="include the messages (masked, as they left the machine); off by default",
    )
    otel.add_argument(
        "--service-name", default="workbench", metavar="NAME", help="the service.name resource"
    )
    otel.add_argument("--timeout", type=float, default=5.0, metavar="S", help="per request")
    for parser_ in (inspect_, otel):
        parser_.add_argument("run", nargs="?", default="latest", help="a run (default: latest)")
        add_db(parser_)
        parser_.add_argument(
            "--dataset", metavar="FILE", help="the prompt set the run read, if it has moved"
        )


def run(args: argparse.Namespace) -> int:
    from workbench.eval.analysis.frames import RunFrames

    if args.export_verb == "inspect":
        from workbench.eval.export.inspect import export_inspect

        with RunFrames.open(args.db, snapshot=True) as wb:
            paths = export_inspect(wb, args.run, args.out, dataset=args.dataset)
        for path in paths:
            print(path)
        return 0
    from workbench.eval.export.otel import export_otel

    with RunFrames.open(args.db, snapshot=True) as wb:
        n = export_otel(
            wb,
            args.run,
            endpoint=args.endpoint,
            out=args.out,
            content=args.content,
            dataset=args.dataset,
            service_name=args.service_name,
            timeout_s=args.timeout,
        )
    print(wording.spans_sent_line(n, args.out or args.endpoint))
    return 0


VERB = Verb(add, run)
