"""How fast the DuckDB store logs attempts, and what that costs in memory.

`--n` `AttemptEvent`s (default 100,000, built before the clock starts) go through
`Store.write(event, run_id=..., item_id=..., config=...)` — the path every router attempt
takes — with the store's default batching (`flush_rows=2000`, `flush_s=1.0`), then one final
`flush()`. Rows/s is n over that wall time; the row count read back must equal n. Peak RSS is
`resource.getrusage(RUSAGE_SELF).ru_maxrss` after that part (the process's high-water mark,
imports and the pre-built events included), next to the same figure before it.

Then, for the record of why the store writes with DuckDB 2.0's appender, the same rows (as
tuples) are inserted in 2,000-row batches, one transaction each, four ways: the appender,
a pandas DataFrame registered and `INSERT … SELECT`, `INSERT … SELECT unnest($1), …` with one
list parameter per column, and `executemany` (on 2,000 rows only: it is that slow).

    .venv/bin/python benchmarks/duckdb_logging.py [--n 100000] [--no-compare]
"""

from __future__ import annotations

import argparse
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sim_process import write_json

from workbench.eval.store.database import Store
from workbench.eval.store.schema import COLUMNS
from workbench.events import AttemptEvent

BATCH = 2000


def events(n: int) -> list[AttemptEvent]:
    keys = ["sim:fast@a", "sim:slow", "gem:flash", "oa:mini"]
    out = []
    for i in range(n):
        ok = i % 7 != 0
        out.append(
            AttemptEvent(
                key=keys[i % 4],
                lane="a" if i % 4 == 0 else None,
                outcome="ok" if ok else "error",
                start_ms=1_767_225_600_000 + i,
                latency_ms=100.0 + (i % 97),
                status=200 if ok else 429,
                error_kind=None if ok else "rate_limit",
                tokens=42 if ok else None,
                position=i % 3,
                route_id=f"r{i // 2}",
                error_code=None if ok else "PROVIDER_RATE_LIMIT",
                error_message=None if ok else "sim:slow: 429 too many requests",
                cached=i % 11 == 0,
            )
        )
    return out


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def bench_store(n: int, tmp: Path) -> dict[str, Any]:
    evs = events(n)
    rss_before = rss_mb()
    store = Store.open(tmp / "store.duckdb")
    start = time.perf_counter()
    for i, e in enumerate(evs):
        store.write(e, run_id="bench", item_id=f"i{i // 4}", config="c")
    store.flush()
    seconds = time.perf_counter() - start
    count = store.con.execute("SELECT count(*) FROM attempts").fetchall()[0][0]
    store.close()
    assert count == n, (count, n)
    return {
        "n": n,
        "seconds": seconds,
        "rows_per_s": n / seconds,
        "peak_rss_mb_before": rss_before,
        "peak_rss_mb_after": rss_mb(),
        "db_bytes": (tmp / "store.duckdb").stat().st_size,
    }


def bench_methods(n: int, tmp: Path) -> dict[str, dict[str, float]]:
    cols = list(COLUMNS["attempts"])
    ddl = ", ".join(f'"{c}" {t}' for c, t in COLUMNS["attempts"].items())
    from workbench.eval.store.rows import _attempt

    rows = [_attempt(e, ("bench", f"i{i}", 0, "c")) for i, e in enumerate(events(n))]
    results: dict[str, dict[str, float]] = {}

    def run(name: str, insert: Any, total: int) -> None:
        con = duckdb.connect(str(tmp / f"{name}.duckdb"))
        con.execute(f"CREATE TABLE attempts ({ddl})")
        start = time.perf_counter()
        for s in range(0, total, BATCH):
            con.execute("BEGIN TRANSACTION")
            insert(con, rows[s : s + BATCH])
            con.execute("COMMIT")
        seconds = time.perf_counter() - start
        assert con.execute("SELECT count(*) FROM attempts").fetchall()[0][0] == total
        con.close()
        results[name] = {"n": total, "seconds": seconds, "rows_per_s": total / seconds}

    def appender(con: Any, batch: list[tuple[Any, ...]]) -> None:
        app = con.appender("attempts", columns=cols)
        app.append_rows(batch)
        app.flush()

    def unnest(con: Any, batch: list[tuple[Any, ...]]) -> None:
        types = list(COLUMNS["attempts"].values())
        select = ", ".join(f"unnest(${i + 1}::{t}[])" for i, t in enumerate(types))
        con.execute(
            f"INSERT INTO attempts SELECT {select}", [list(c) for c in zip(*batch, strict=True)]
        )

    def executemany(con: Any, batch: list[tuple[Any, ...]]) -> None:
        marks = ", ".join("?" for _ in cols)
        con.executemany(f"INSERT INTO attempts VALUES ({marks})", batch)

    run("appender", appender, n)
    try:
        import pandas as pd

        def pandas_register(con: Any, batch: list[tuple[Any, ...]]) -> None:
            con.register("_batch", pd.DataFrame.from_records(batch, columns=cols))
            con.execute("INSERT INTO attempts SELECT * FROM _batch")
            con.unregister("_batch")

        run("pandas_register", pandas_register, n)
    except ImportError:
        pass
    run("unnest_lists", unnest, n)
    run("executemany", executemany, min(n, BATCH))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--no-compare", action="store_true", help="skip the insert-method table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wb-duckdb-bench-") as tmp:
        store = bench_store(args.n, Path(tmp))
        methods = {} if args.no_compare else bench_methods(args.n, Path(tmp))
    print(f"\nStore.write(AttemptEvent) + flush, {args.n:,} attempts, flush_rows=2000\n")
    print("| attempts | seconds | rows/s | peak RSS before | peak RSS after | file |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {store['n']:,} | {store['seconds']:.3f} | {store['rows_per_s']:,.0f} | "
        f"{store['peak_rss_mb_before']:.0f} MiB | {store['peak_rss_mb_after']:.0f} MiB | "
        f"{store['db_bytes'] / 2**20:.1f} MiB |"
    )
    if methods:
        print(f"\nInsert methods, {BATCH:,}-row batches, one transaction each (rows pre-built)\n")
        print("| method | rows | seconds | rows/s |")
        print("|---|---:|---:|---:|")
        for name, r in methods.items():
            print(f"| {name} | {r['n']:,} | {r['seconds']:.3f} | {r['rows_per_s']:,.0f} |")
    path = write_json(
        "duckdb_logging.json",
        {
            "benchmark": "duckdb_logging",
            "settings": {"n": args.n, "flush_rows": 2000, "flush_s": 1.0, "batch": BATCH},
            "machine": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "duckdb": duckdb.__version__,
            },
            "store": store,
            "insert_methods": methods,
        },
    )
    print(f"\nJSON: {path}")


if __name__ == "__main__":
    main()
