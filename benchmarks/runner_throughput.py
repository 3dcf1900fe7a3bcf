"""How many items/s `run_prompt_set` gets through, and what the runner and its logging add.

The simulator runs in a separate process with one zero-latency native persona (`bench`). The
configuration is one OpenAI-compatible provider pointing at it with that one model:
`ProvidersConfig("bench", [openai_compatible_provider("sim", URL, None, ["bench"])], {})`.

At each concurrency level (default 1, 8, 32), for each of `--rounds` rounds (default 3):

  runner   `run_prompt_set(smoke, config, store, concurrency=C, repeats=N, progress=False)`
           into a fresh DuckDB file (temp dir): smoke has 20 items, so N=10 → 200 items.
           Afterwards: outputs rows for the run must equal the items, and attempt rows must
           equal the simulator's `/sim/requests` count (reset before the run).
  direct   the same 200 requests (`item.request()` of every smoke item × N) through
           `provider.call(request, CallContext(), "bench")` of a fresh provider, C at a time
           (an asyncio.Semaphore, as the runner does), no router, no store, no grading.

The two alternate (runner first in rounds 1, 3, …; direct first in rounds 2, 4, …). Items/s
is items over the wall time of the whole call (for the runner: `run_prompt_set` including opening the
run, adding items and the final flush; opening and closing the store are outside). Per-item
latency is the outputs table's `latency_ms` (route + grade, timed inside the concurrency gate)
for the runner and the time around `provider.call` inside the gate for direct.

`--big` then runs a synthetic dataset of `--big-n` items (default 100,000 one-message "hi"
items, built as a `Dataset` in memory) at concurrency `--big-concurrency` (default 32) in a
CHILD process, so its peak RSS (`ru_maxrss`) is its own: before building the dataset, after
building it, and after the run.

    .venv/bin/python benchmarks/runner_throughput.py [--repeats 10] [--levels 1,8,32] [--rounds 3]
    .venv/bin/python benchmarks/runner_throughput.py --big [--big-n 100000] [--big-only]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sim_process import PERSONA, RESULTS, SimProcess, machine, median, percentile, write_json

from workbench.config.providers_file import ProvidersConfig
from workbench.eval.dataset.prompt_set import Dataset, Item, load_dataset
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.types import CallContext

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "datasets" / "smoke.jsonl"
JSON_NAME = "runner_throughput.json"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def sim_count(base_url: str) -> int:
    resp = httpx.get(base_url + "/sim/requests", timeout=120)
    resp.raise_for_status()
    return len(resp.json())


def sim_reset(base_url: str) -> None:
    httpx.post(base_url + "/sim/reset", timeout=30).raise_for_status()


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def config(openai_url: str) -> ProvidersConfig:
    provider = openai_compatible_provider("sim", openai_url, None, [PERSONA])
    return ProvidersConfig("bench", [provider], {})


def db_bytes(path: Path) -> int:
    wal = path.with_name(path.name + ".wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


# ------------------------------------------------------------------ one runner run
async def runner_run(
    dataset: Dataset, base_url: str, db: Path, concurrency: int, repeats: int
) -> dict[str, Any]:
    items = len(dataset) * repeats
    sim_reset(base_url)
    store = Store.open(db)
    cpu0, sim_cpu0 = time.process_time(), proc_cpu_seconds(SIM_PID) if SIM_PID else 0.0
    start = time.perf_counter()
    summary = await run_prompt_set(
        dataset,
        config(base_url + "/v1"),
        store,
        concurrency=concurrency,
        repeats=repeats,
        progress=False,
    )
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    sim_cpu = (proc_cpu_seconds(SIM_PID) - sim_cpu0) if SIM_PID else float("nan")
    run_id = summary.run_id
    q = store.con.execute
    outputs = q("SELECT count(*) FROM outputs WHERE run_id = ?", [run_id]).fetchall()[0][0]
    attempts = q("SELECT count(*) FROM attempts WHERE run_id = ?", [run_id]).fetchall()[0][0]
    ok_attempts = q(
        "SELECT count(*) FROM attempts WHERE run_id = ? AND outcome = 'ok'", [run_id]
    ).fetchall()[0][0]
    rows = q("SELECT latency_ms FROM outputs WHERE run_id = ?", [run_id]).fetchall()
    latencies = [r[0] for r in rows]
    store.close()
    requests = sim_count(base_url)
    return {
        "items": items,
        "seconds": wall,
        "items_per_s": items / wall,
        "status": summary.status,
        "errors": summary.errors,
        "passed": summary.passed,
        "graded": summary.graded,
        "outputs_rows": outputs,
        "attempt_rows": attempts,
        "attempt_rows_ok": ok_attempts,
        "sim_requests": requests,
        "check_outputs": outputs == items,
        "check_attempts": attempts == requests,
        "median_ms": median(latencies),
        "mean_ms": sum(latencies) / len(latencies) if latencies else float("nan"),
        "p95_ms": percentile(latencies, 95),
        "db_bytes": db_bytes(db),
        "client_cpu_share": cpu / wall,
        "server_cpu_share": sim_cpu / wall,
    }


# ------------------------------------------------------------------ the direct reference
async def direct_run(
    dataset: Dataset, base_url: str, concurrency: int, repeats: int
) -> dict[str, Any]:
    jobs = [item for item in dataset.items for _ in range(repeats)]
    provider = openai_compatible_provider("sim", base_url + "/v1", None, [PERSONA])
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    failures = 0

    async def one(item: Item) -> None:
        nonlocal failures
        async with gate:
            t0 = time.perf_counter()
            try:
                await provider.call(item.request(), CallContext(), PERSONA)
            except Exception:  # counted, never hidden
                failures += 1
            latencies.append((time.perf_counter() - t0) * 1000)

    sim_reset(base_url)
    cpu0, sim_cpu0 = time.process_time(), proc_cpu_seconds(SIM_PID) if SIM_PID else 0.0
    start = time.perf_counter()
    await asyncio.gather(*(one(item) for item in jobs))
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    sim_cpu = (proc_cpu_seconds(SIM_PID) - sim_cpu0) if SIM_PID else float("nan")
    await provider.aclose()
    requests = sim_count(base_url)
    return {
        "items": len(jobs),
        "seconds": wall,
        "items_per_s": len(jobs) / wall,
        "errors": failures,
        "sim_requests": requests,
        "check_requests": requests == len(jobs),
        "median_ms": median(latencies),
        "mean_ms": sum(latencies) / len(latencies) if latencies else float("nan"),
        "p95_ms": percentile(latencies, 95),
        "client_cpu_share": cpu / wall,
        "server_cpu_share": sim_cpu / wall,
    }


SIM_PID = 0  # set in run_all: the simulator process, for its CPU time


async def levels_part(args: argparse.Namespace, sim: SimProcess, tmp: Path) -> list[dict[str, Any]]:
    dataset = load_dataset(SMOKE)
    # Warm-up, not counted: imports, DuckDB's first file, the adapter's first connections.
    await runner_run(dataset, sim.base_url, tmp / "warmup.duckdb", 8, 1)
    await direct_run(dataset, sim.base_url, 8, 1)
    rows = []
    for level in args.levels:
        rounds: list[dict[str, Any]] = []
        for n in range(args.rounds):
            db = tmp / f"c{level}-r{n}.duckdb"
            if n % 2 == 0:
                runner = await runner_run(dataset, sim.base_url, db, level, args.repeats)
                direct = await direct_run(dataset, sim.base_url, level, args.repeats)
            else:
                direct = await direct_run(dataset, sim.base_url, level, args.repeats)
                runner = await runner_run(dataset, sim.base_url, db, level, args.repeats)
            ok = runner["check_outputs"] and runner["check_attempts"] and direct["check_requests"]
            print(
                f"concurrency {level}, round {n + 1}: runner {runner['items_per_s']:.0f} items/s "
                f"({runner['outputs_rows']} outputs / {runner['items']} items, "
                f"{runner['attempt_rows']} attempts / {runner['sim_requests']} sim requests), "
                f"direct {direct['items_per_s']:.0f} calls/s "
                f"({direct['sim_requests']} sim requests / {direct['items']} calls) → "
                f"{'OK' if ok else 'FAIL'}",
                flush=True,
            )
            rounds.append({"round": n + 1, "runner": runner, "direct": direct, "ok": ok})
        r_ips = [r["runner"]["items_per_s"] for r in rounds]
        d_ips = [r["direct"]["items_per_s"] for r in rounds]
        rows.append(
            {
                "concurrency": level,
                "items": len(dataset) * args.repeats,
                "runner_items_per_s": median(r_ips),
                "direct_items_per_s": median(d_ips),
                "ratio": median(d_ips) / median(r_ips),
                "runner_median_ms": median([r["runner"]["median_ms"] for r in rounds]),
                "direct_median_ms": median([r["direct"]["median_ms"] for r in rounds]),
                "runner_mean_ms": median([r["runner"]["mean_ms"] for r in rounds]),
                "direct_mean_ms": median([r["direct"]["mean_ms"] for r in rounds]),
                "attempt_rows": [r["runner"]["attempt_rows"] for r in rounds],
                "db_bytes": median([r["runner"]["db_bytes"] for r in rounds]),
                "runner_client_cpu": median([r["runner"]["client_cpu_share"] for r in rounds]),
                "runner_server_cpu": median([r["runner"]["server_cpu_share"] for r in rounds]),
                "ok": all(r["ok"] for r in rounds),
                "rounds": rounds,
            }
        )
    return rows


def levels_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| concurrency | items | runner items/s | direct calls/s | direct ÷ runner "
        "| runner median / mean ms per item | direct median / mean ms per call "
        "| attempts logged | DuckDB file | runner CPU | sim CPU | checks |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        attempts = ", ".join(str(a) for a in r["attempt_rows"])
        lines.append(
            f"| {r['concurrency']} | {r['items']} | {r['runner_items_per_s']:.0f} "
            f"| {r['direct_items_per_s']:.0f} | {r['ratio']:.2f}× "
            f"| {r['runner_median_ms']:.2f} / {r['runner_mean_ms']:.2f} "
            f"| {r['direct_median_ms']:.2f} / {r['direct_mean_ms']:.2f} | {attempts} "
            f"| {r['db_bytes'] / 1024:.0f} KiB "
            f"| {r['runner_client_cpu']:.0%} | {r['runner_server_cpu']:.0%} "
            f"| {'OK' if r['ok'] else 'FAIL'} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------ the big run (child)
def synthetic(n: int) -> Dataset:
    message = {"role": "user", "content": "hi"}
    items = tuple(Item(id=f"b{i:06d}", messages=(dict(message),)) for i in range(n))
    sha = hashlib.sha256(f"synthetic hi x{n}".encode()).hexdigest()
    return Dataset(name=f"synthetic-{n}", path=Path(f"<synthetic {n}>"), items=items, sha256=sha)


async def big_child(base_url: str, n: int, concurrency: int, db: Path) -> dict[str, Any]:
    rss_start = rss_mb()
    t0 = time.perf_counter()
    dataset = synthetic(n)
    build_s = time.perf_counter() - t0
    rss_dataset = rss_mb()
    result = await runner_run(dataset, base_url, db, concurrency, 1)
    result.update(
        n=n,
        concurrency=concurrency,
        build_s=build_s,
        peak_rss_mb_start=rss_start,
        peak_rss_mb_after_dataset=rss_dataset,
        peak_rss_mb_after_run=rss_mb(),
    )
    return result


def big_part(args: argparse.Namespace, sim: SimProcess, tmp: Path) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--big-child",
        sim.base_url,
        "--big-n",
        str(args.big_n),
        "--big-concurrency",
        str(args.big_concurrency),
        "--sim-pid",
        str(sim.pid),
        "--db",
        str(tmp / "big.duckdb"),
    ]
    print(
        f"big run: {args.big_n} items at concurrency {args.big_concurrency} in a child process…",
        flush=True,
    )
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the big run failed ({out.returncode}):\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["child_wall_s"] = time.perf_counter() - start
    result["sim_peak_rss_mb"] = proc_status_mb(sim.pid, "VmHWM")
    return result


def big_table(r: dict[str, Any]) -> str:
    ok = r["check_outputs"] and r["check_attempts"]
    return "\n".join(
        [
            "| items | concurrency | run s | items/s | median ms/item | attempts logged "
            "| sim requests | DuckDB file | peak RSS at start | after dataset | after run "
            "| runner CPU | sim CPU | checks |",
            "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
            f"| {r['n']:,} | {r['concurrency']} | {r['seconds']:.1f} | {r['items_per_s']:.0f} "
            f"| {r['median_ms']:.2f} | {r['attempt_rows']:,} | {r['sim_requests']:,} "
            f"| {r['db_bytes'] / 2**20:.1f} MiB | {r['peak_rss_mb_start']:.0f} MiB "
            f"| {r['peak_rss_mb_after_dataset']:.0f} MiB | {r['peak_rss_mb_after_run']:.0f} MiB "
            f"| {r['client_cpu_share']:.0%} | {r['server_cpu_share']:.0%} "
            f"| {'OK' if ok else 'FAIL'} |",
        ]
    )


# ------------------------------------------------------------------ main
def run_all(args: argparse.Namespace) -> int:
    global SIM_PID
    out: dict[str, Any] = {
        "benchmark": "runner_throughput",
        "settings": {
            "repeats": args.repeats,
            "levels": args.levels,
            "rounds": args.rounds,
            "dataset": "datasets/smoke.jsonl",
            "big": args.big,
            "big_n": args.big_n,
            "big_concurrency": args.big_concurrency,
            "simulator": "separate process, zero-latency native persona",
            "config": 'one openai_compatible_provider("sim", URL, None, ["bench"])',
        },
        "machine": machine(),
    }
    ok = True
    with SimProcess() as sim, tempfile.TemporaryDirectory(prefix="workbench-runner-") as d:
        SIM_PID = sim.pid
        tmp = Path(d)
        if not args.big_only:
            rows = asyncio.run(levels_part(args, sim, tmp))
            out["levels"] = rows
            ok &= all(r["ok"] for r in rows)
        if args.big:
            out["big"] = big_part(args, sim, tmp)
            ok &= out["big"]["check_outputs"] and out["big"]["check_attempts"]
    print()
    if "levels" in out:
        print(
            f"runner throughput: datasets/smoke.jsonl ({len(load_dataset(SMOKE))} items) × "
            f"repeats={args.repeats}, median of {args.rounds} rounds per level, a fresh DuckDB "
            "file per round; simulator in a separate process (zero-latency persona) on the same "
            f"{os.cpu_count()} cores; direct = provider.call at the same concurrency, no "
            "router/store/grading; CPU = share of one core during the runner's run"
        )
        print()
        print(levels_table(out["levels"]))
    if "big" in out:
        print()
        print(
            f"big run: {args.big_n:,} synthetic 'hi' items, concurrency {args.big_concurrency}, "
            "in a child process; peak RSS = ru_maxrss of that process (high-water mark); "
            f"simulator peak RSS {out['big']['sim_peak_rss_mb']:.0f} MiB (it keeps every "
            "request in its log)"
        )
        print()
        print(big_table(out["big"]))
    else:
        print(
            f"\nbig run not done; for peak memory of a {args.big_n:,}-attempt run: "
            ".venv/bin/python benchmarks/runner_throughput.py --big --big-only"
        )
    # Keep the other part of an earlier run's JSON when only one part ran this time.
    previous = RESULTS / JSON_NAME
    if previous.exists() and (args.big_only or not args.big):
        try:
            old = json.loads(previous.read_text(encoding="utf-8"))
        except ValueError:
            old = {}
        keep = "levels" if args.big_only else "big"
        if keep in old:
            out[keep] = old[keep]
            out.setdefault("kept_from_earlier_run", []).append(keep)
            print(f"(the JSON keeps the '{keep}' figures of an earlier run)")
    path = write_json(JSON_NAME, out)
    print(f"\nJSON: {path}")
    print("all checks OK" if ok else "SOME CHECK FAILED")
    return 0 if ok else 1


def main() -> int:
    global SIM_PID
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="repeats of smoke (default 10)")
    parser.add_argument("--levels", default="1,8,32", help="concurrency levels (default 1,8,32)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per level (default 3)")
    parser.add_argument("--big", action="store_true", help="also run the big memory run")
    parser.add_argument("--big-only", action="store_true", help="with --big: skip the levels")
    parser.add_argument("--big-n", type=int, default=100_000, help="items in the big run")
    parser.add_argument("--big-concurrency", type=int, default=32)
    parser.add_argument("--big-child", metavar="SIM_URL", help=argparse.SUPPRESS)
    parser.add_argument("--sim-pid", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.big_child:
        SIM_PID = args.sim_pid
        result = asyncio.run(
            big_child(args.big_child, args.big_n, args.big_concurrency, Path(args.db))
        )
        print(json.dumps(result))
        return 0
    try:
        args.levels = [int(x) for x in args.levels.split(",") if x.strip()]
    except ValueError:
        parser.error("--levels is a comma-separated list of integers")
    if not args.levels or min(args.levels) < 1 or args.repeats < 1 or args.rounds < 1:
        parser.error("levels, --repeats and --rounds must be >= 1")
    if args.big_only and not args.big:
        args.big = True
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())
