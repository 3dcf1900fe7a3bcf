"""What writing a comparison page costs as the runs grow: two runs of 20k, 100k and 1M items,
before and after its pairs were counted in DuckDB and its flips read a chunk at a time.

Each size is two finished runs synthesised straight into one DuckDB file (`synthesize_run`,
run ids `a` and `b`), B differing from A on every tenth item (its grade flipped: a tenth of
the pairs flip, both ways). The comparison page alone (`stage_comparison`: its figures, its
bootstrap, its flips as rows chunks; not the two runs' reports, which report_scale.py
measures) is written in a fresh process per measurement under the report's DuckDB cap (its
wall time and peak RSS, `os.wait4`'s `ru_maxrss`, imports included):

  after    this checkout: per-item counts aggregated in DuckDB, the bootstrap a multinomial on
           the counts of each kind of item, the flips read and written a rows chunk at a time;
  before   the writer at `--before` (a checkout of the commit before, e.g.
           `git archive 048e991 | tar -x -C /tmp/cmp-before`): both runs read into pandas
           twice, a bootstrap array of 5,000 × items, a Python dict per pair. Measured up to
           `--before-max` items (20k by default: at 100k its bootstrap alone is 4 GB, at 1M 40 GB).

    .venv/bin/python benchmarks/comparison_scale.py --before /tmp/cmp-before [--sizes 20000,100000,1000000]

Writes benchmarks/results/comparison_scale.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from _sim_process import machine, write_json
from report_scale import REPO, _child, _size

_SYNTH = """
import sys
import duckdb
from workbench.eval.store.synthetic import synthesize_run
synthesize_run(sys.argv[1], int(sys.argv[2]), run_id="a")
synthesize_run(sys.argv[1], int(sys.argv[2]), run_id="b", started_ms=1_790_000_000_000)
con = duckdb.connect(sys.argv[1])
con.execute("UPDATE outputs SET passed = NOT passed WHERE run_id = 'b' "
            "AND passed IS NOT NULL AND hash(item_id) % 10 = 0")
con.close()
"""

_WRITE = """
import sys
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.report.comparison import stage_comparison
from workbench.eval.report.page import MEMORY_LIMIT
from workbench.output_files import staged, writable_dir
wb = RunFrames.open(sys.argv[1], memory_limit=MEMORY_LIMIT)
with staged(writable_dir(sys.argv[2])) as stage:
    name = stage_comparison(stage, wb, "a", "b")
flips = wb.con.execute(
    "SELECT count(*) FROM outputs a JOIN outputs b USING (item_id, repeat, config) "
    "WHERE a.run_id = 'a' AND b.run_id = 'b' AND a.passed <> b.passed"
).fetchone()[0]
print(flips, sys.argv[2] + "/" + name)
"""


def measure(size: int, db: Path, source: Path, out: Path) -> dict[str, Any]:
    wall, peak, said = _child(_WRITE, [str(db), str(out)], source)
    flips, page = said.split(" ", 1)
    written = Path(page)
    size_bytes, files = _size(written.parent if written.name == "index.html" else written)
    return {
        "items": size,
        "flips": int(flips),
        "seconds": round(wall, 2),
        "peak_mb": round(peak),
        "bytes": size_bytes,
        "files": files,
        "us_per_item": round(1e6 * wall / size, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000,1000000")
    parser.add_argument("--before", type=Path, help="a checkout of the comparison before")
    parser.add_argument("--before-max", type=int, default=20_000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {"machine": machine(), "after": [], "before": []}
    with tempfile.TemporaryDirectory(prefix="comparison-scale-") as tmp:
        for size in sizes:
            db = Path(tmp) / f"runs-{size}.duckdb"
            _child(_SYNTH, [str(db), str(size)], REPO)
            runs = [("after", REPO)]
            if args.before is not None and size <= args.before_max:
                runs.append(("before", args.before))
            for label, source in runs:
                row = measure(size, db, source, Path(tmp) / f"{label}-{size}")
                results[label].append(row)
                print(label, row, flush=True)
            db.unlink()
    path = write_json("comparison_scale.json", results)
    print(f"\n{path}\n")
    print(
        "| items per run | flips | writer | seconds | µs per item | peak RSS MB | written | files |"
    )
    print("|--:|--:|---|--:|--:|--:|--:|--:|")
    for label in ("before", "after"):
        for r in results[label]:
            print(
                f"| {r['items']:,} | {r['flips']:,} | {label} | {r['seconds']} | {r['us_per_item']} | "
                f"{r['peak_mb']} | {r['bytes'] / 1e6:.1f} MB | {r['files']} |"
            )


if __name__ == "__main__":
    main()
