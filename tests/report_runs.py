"""Two real runs of the tool-calling set on the built-in simulator, for the report's tests:
A offers tools as planned per model, B describes them in the prompt to every model, so some
items flip between the runs, some routes fall back, and a few attempts fail."""

from __future__ import annotations

from pathlib import Path

import duckdb

from workbench.cli import main

DATASET = Path(__file__).resolve().parents[1] / "datasets" / "tool_calling.jsonl"


def make_two_runs(db: Path) -> tuple[str, str]:
    for name, mode in (("plan", "plan"), ("text", "text")):
        code = main(
            [
                "run",
                str(DATASET),
                "--no-local",
                "--no-report",
                "--quiet",
                "--db",
                str(db),
                "--name",
                name,
                "--tools-mode",
                mode,
                "--concurrency",
                "4",
            ]
        )
        assert code == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT run_id FROM runs ORDER BY started_at").fetchall()
    finally:
        con.close()
    return rows[0][0], rows[1][0]
