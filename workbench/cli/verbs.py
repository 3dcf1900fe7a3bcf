"""The `workbench` command: the table of verbs, and the one place errors become exit codes.

Each verb lives in its own module (`cli/run.py`, `cli/probe.py`, ...), which adds its
subcommand and runs it; this module only parses and dispatches. An error prints one line
with its stable code, never a traceback (the wording is in `cli/wording.py`).

Exit codes: 0 success, 1 the job ran and failed, 2 the user's input (flags, files) is wrong.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys
from collections.abc import Sequence

from workbench.cli import (
    actions,
    bfcl,
    catalog,
    chaos,
    compare,
    export,
    probe,
    regrade,
    report,
    run,
    servers,
    stored,
    view,
    wording,
)
from workbench.cli.shared import Verb
from workbench.errors import CassetteError, ConfigError, WorkbenchError

# Verb name -> how it adds its subcommand and how it runs; `--help` lists them in this order.
VERBS: dict[str, Verb] = {
    "probe": probe.VERB,
    "catalog": catalog.VERB,
    "sim": servers.SIM,
    "local": servers.LOCAL,
    "serve": servers.SERVE,
    "run": run.VERB,
    "report": report.VERB,
    "view": view.VERB,
    "runs": stored.RUNS,
    "verdicts": stored.VERDICTS,
    "actions": actions.VERB,
    "chaos": chaos.VERB,
    "bfcl": bfcl.VERB,
    "compare": compare.VERB,
    "regrade": regrade.VERB,
    "export": export.VERB,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Route LLM traffic across providers, read every tool-call protocol, "
        "observe what each model can really do, and measure it.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb in VERBS.values():
        verb.add(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # At exit the collector's last passes walk and free every object pandas, numpy and DuckDB
    # made (~0.1 s of a one-item run) for memory the OS takes back anyway; frozen, they are
    # left alone. Harmless in a longer-lived process: it only acts when that process ends.
    atexit.register(gc.freeze)
    args = build_parser().parse_args(argv)
    try:
        return VERBS[args.verb].run(args)
    except ConfigError as exc:
        print(wording.error_line(exc), file=sys.stderr)
        return 2
    except CassetteError as exc:  # a cassette the user named is wrong: a usage error
        print(wording.error_line(exc), file=sys.stderr)
        return 1 if exc.code == "REPLAY_MISS" else 2
    except WorkbenchError as exc:
        print(wording.error_line(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(wording.INTERRUPTED, file=sys.stderr)
        return 1
    except Exception as exc:  # a bug of ours: still one line; the traceback only on request
        if os.environ.get("WORKBENCH_DEBUG"):
            raise
        print(wording.internal_error_line(exc), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
