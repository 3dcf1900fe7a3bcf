"""The `workbench` command: `main` parses the verb and hands it to its module.

verbs.py      the table of verbs, `build_parser`, and the one place errors become exit codes
run.py        `run`: a prompt set through the router, logged to DuckDB, then the report
regrade.py    `regrade`: a run's logged outputs graded again
probe.py      `probe`: the verdict every model earns
catalog.py    `catalog`: pinned model ids against each vendor's list
report.py     `report`: a run's HTML page, or B against A
compare.py    `compare`: the regression gate
stored.py     `runs`, `verdicts`: what a DuckDB file holds
actions.py    `actions`: the pending actions a person approves or rejects
export.py     `export`: a run as Inspect AI logs or OpenTelemetry spans
bfcl.py       `bfcl`: BFCL's data and scores
chaos.py      `chaos`: failure schedules, and the checks that nothing was lost
servers.py    `sim serve`, `local serve`
wording.py    what the command says: the error line, the run's lines, the resume command
shared.py     what verbs share: `--db`, the providers file, the `Verb` record
"""

from workbench.cli.verbs import main

__all__ = ["main"]
