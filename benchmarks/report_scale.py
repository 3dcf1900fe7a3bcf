"""What writing a run's report costs as the run grows: 10k, 100k and 1M items, before and after
the report became a folder of chunks.

Each size is a finished run synthesised straight into a DuckDB file (`synthesize_run`: one
output per item, a route, one or two attempts, a reply, a tool call and step and a verdict on
every fourth item), then written by `write_report` in a fresh process per measurement (its
wall time and peak RSS, `os.wait4`'s `ru_maxrss`, imports included):

  after    this checkout: a folder (index.html + data/rows-*.js, data/stories-*.js) past
           SINGLE_FILE_MAX rows, each chunk read by a bounded query and written one at a time;
  before   the writer at `--before` (a checkout of the commit before, e.g.
           `git worktree add /tmp/report-before 2dc8c24`): one HTML file holding every row and
           story, built in memory. Measured up to `--before-max` items (100k by default: at 1M
           it needs several GB, more than this machine's share).

Also the bytes and files written. How soon the page shows its first rows in a browser is
benchmarks/report_open.py's.

    .venv/bin/python benchmarks/report_scale.py --before /tmp/report-before [--sizes 10000,100000,1000000]

Writes benchmarks/results/report_scale.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _sim_process import machine, write_json

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

_WRITE = """
import sys
from workbench.eval.report.page import write_report
print(write_report(sys.argv[1], "synthetic", sys.argv[2]))
"""

_SYNTH = """
import sys
from workbench.eval.store.synthetic import synthesize_run
synthesize_run(sys.argv[1], int(sys.argv[2]))
"""


def _child(code: str, args: list[str], source: Path) -> tuple[float, float, str]:
    """Run `code` in a fresh interpreter importing workbench from `source`: (wall seconds,
    peak RSS in MB, its stdout)."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    start = time.perf_counter()
    # Run from `source`: `python -c` puts the working folder first on sys.path.
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=source,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{code.strip().splitlines()[1]} failed ({proc.returncode})")
    return wall, usage.ru_maxrss / 1024, out.strip()


def _size(path: Path) -> tuple[int, int]:
    """Bytes and files under `path` (a file or a folder)."""
    if path.is_file():
        return path.stat().st_size, 1
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def measure(size: int, db: Path, source: Path, out: Path) -> dict[str, Any]:
    wall, peak, page = _child(_WRITE, [str(db), str(out)], source)
    written = Path(page)
    where = written.parent if written.name == "index.html" else written
    size_bytes, files = _size(where)
    row: dict[str, Any] = {
        "items": size,
        "seconds": round(wall, 2),
        "peak_mb": round(peak),
        "bytes": size_bytes,
        "files": files,
        "us_per_item": round(1e6 * wall / size, 1),
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--before", type=Path, help="a checkout of the writer before")
    parser.add_argument("--before-max", type=int, default=100_000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {"machine": machine(), "after": [], "before": []}
    with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
        for size in sizes:
            db = Path(tmp) / f"run-{size}.duckdb"
            _child(_SYNTH, [str(db), str(size)], REPO)
            runs = [("after", REPO)]
            if args.before is not None and size <= args.before_max:
                runs.append(("before", args.before))
            for label, source in runs:
                out = Path(tmp) / f"{label}-{size}"
                row = measure(size, db, source, out)
                results[label].append(row)
                print(label, row, flush=True)
            db.unlink()
    path = write_json("report_scale.json", results)
    print(f"\n{path}\n")
    print("| items | writer | seconds | µs per item | peak RSS MB | written | files |")
    print("|--:|---|--:|--:|--:|--:|--:|")
    for label in ("before", "after"):
        for r in results[label]:
            print(
                f"| {r['items']:,} | {label} | {r['seconds']} | {r['us_per_item']} | "
                f"{r['peak_mb']} | {r['bytes'] / 1e6:.0f} MB | {r['files']} |"
            )


if __name__ == "__main__":
    main()
