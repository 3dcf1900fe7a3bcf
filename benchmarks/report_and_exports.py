"""What writing a run's report and exports costs, on a run of a few thousand outputs.

One real run on the built-in simulator (smoke × `--repeats`, every attempt, route, verdict and
output logged to a fresh DuckDB file), then, per round, each writer on that file:

  report (now)     `write_report`: the interactive page, every item's story inline;
  report (before)  the static report as it was before the viewer (loaded from git at
                   BASELINE_REV, run on the same file): the baseline of the ratio;
  comparison       `write_comparison` of the run against a second one like it (both run
                   pages and the comparison page);
  inspect          `export_inspect` (inspect_ai's own writer), when the `inspect` extra is in;
  otel             `export_otel(out=FILE)`: OTLP/JSON spans, when the `otel` extra is in.

The figures to quote: seconds per writer and µs per output, the page's size in bytes per
output, and the new report's time ÷ the old one's. One untimed warm-up, then `--rounds`
rounds alternating which report goes first; medians over rounds.

    .venv/bin/python benchmarks/report_and_exports.py [--repeats 100] [--rounds 5]

Writes benchmarks/results/report_and_exports.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _sim_process import machine, write_json

from workbench.cli import main as cli
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.report.page import write_comparison, write_report

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BASELINE_REV = "24b6df0"  # the last commit with the static report
DATASET = REPO / "datasets" / "smoke.jsonl"


def _old_report() -> types.ModuleType:
    source = subprocess.run(
        ["git", "show", f"{BASELINE_REV}:workbench/eval/report/page.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    spec = importlib.util.spec_from_loader("report_before", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, "report_before.py", "exec"), module.__dict__)
    return module


def _run(db: Path, repeats: int) -> str:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli(
            [
                "run",
                str(DATASET),
                "--repeats",
                str(repeats),
                "--no-local",
                "--no-report",
                "--quiet",
                "--db",
                str(db),
                "--concurrency",
                "32",
            ]
        )
    assert code == 0
    with RunFrames.open(db) as wb:
        run = wb.latest_run()
    assert run is not None
    return run


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100, help="smoke × N (20 items each)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    old = _old_report()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        db = root / "run.duckdb"
        other = _run(db, args.repeats)  # the comparison's A
        run = _run(db, args.repeats)
        with RunFrames.open(db) as wb:
            count = "SELECT count(*) FROM {} WHERE run_id = ?"
            outputs = int(wb.con.execute(count.format("outputs"), [run]).fetchone()[0])
            attempts = int(wb.con.execute(count.format("attempts"), [run]).fetchone()[0])

        def old_report() -> None:
            with RunFrames.open(db) as wb:
                (root / "old.html").write_text(old.render(wb, run), encoding="utf-8")

        writers: dict[str, Callable[[], Any]] = {
            "report (now)": lambda: write_report(db, run, root / "new"),
            "report (before)": old_report,
            "comparison": lambda: write_comparison(db, other, run, root / "cmp"),
        }
        try:
            from workbench.eval.export.inspect import export_inspect

            writers["inspect"] = lambda: export_inspect(db, run, root / "inspect")
        except ImportError:
            print("inspect: the `inspect` extra is not installed — skipped", file=sys.stderr)
        try:
            from workbench.eval.export.otel import export_otel

            writers["otel"] = lambda: export_otel(db, run, out=root / "spans.json")
        except ImportError:
            print("otel: the `otel` extra is not installed — skipped", file=sys.stderr)

        for fn in writers.values():  # warm-up: imports, DuckDB's caches
            fn()
        times: dict[str, list[float]] = {name: [] for name in writers}
        for r in range(args.rounds):
            names = list(writers)
            if r % 2:
                names[0], names[1] = names[1], names[0]
            for name in names:
                times[name].append(_timed(writers[name]))
        page = (root / "new" / f"{run}.html").stat().st_size
        before = (root / "old.html").stat().st_size

    med = {name: statistics.median(ts) for name, ts in times.items()}
    figures = {
        name: {
            "median_s": med[name],
            "min_s": min(ts),
            "max_s": max(ts),
            "us_per_output": med[name] / outputs * 1e6,
        }
        for name, ts in times.items()
    }
    ratio = med["report (now)"] / med["report (before)"]
    result = {
        "settings": vars(args) | {"baseline_rev": BASELINE_REV},
        "machine": machine(),
        "outputs": outputs,
        "attempts": attempts,
        "writers": figures,
        "page_bytes": page,
        "page_bytes_before": before,
        "report_ratio_vs_before": ratio,
    }
    path = write_json("report_and_exports.json", result)
    print(f"{outputs} outputs, {attempts} attempts; medians of {args.rounds} rounds\n")
    print("| writer | s | µs per output |")
    print("|---|---|---|")
    for name, f in figures.items():
        print(
            f"| {name} | {f['median_s']:.3f} [{f['min_s']:.3f}–{f['max_s']:.3f}] | "
            f"{f['us_per_output']:,.0f} |"
        )
    print(
        f"\nreport now ÷ before: {ratio:.2f}×; page {page / 1e6:.2f} MB "
        f"({page / outputs:,.0f} B per output) vs {before / 1e3:.0f} kB before"
    )
    print(f"written {path}")


if __name__ == "__main__":
    main()
