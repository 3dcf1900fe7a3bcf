"""Quota reservations per second: `RedisQuota` against a real redis-server, `MemoryQuota` for
reference.

The script starts its own throwaway `redis-server` on a free port (no persistence; the
`RedisServer` helper of `tests/redis_server.py`) and stops it at the end. Every level runs
for `--seconds` after an uncounted warm-up (`--warmup` seconds), all reservations on ONE key
(the router's case: many calls to the same model), with limits set high enough never to
refuse (`rpm`, `rpd`, `tpd` all set, so every counter is checked and incremented):

  sequential   one coroutine awaiting `q.reserve(...)` in a plain loop
  N tasks      N asyncio tasks (default 1, 8, 32) looping `reserve`, sharing ONE store
               (for Redis: one client, its blocking connection pool)
  P procs      P processes (default 4) x T tasks each (default 32), each process its own
               RedisQuota, started together; the throughput is their sum (Redis only: a
               MemoryQuota is per process, so there is nothing to share)

After each Redis level the server's own counter for the key is read back and must equal the
reservations made (warm-ups included); the database is flushed between levels.

    .venv/bin/python benchmarks/redis_reservations.py [--seconds 3] [--levels 1,8,32]
                                                      [--procs 4] [--proc-tasks 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _sim_process import machine, median, percentile, write_json

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from redis_server import RedisServer, redis_server_binary  # noqa: E402

from workbench.routing.quota import Limits, MemoryQuota, Reservation  # noqa: E402

KEY = "bench:model"
# Every cap set (so every check runs) and never reached.
LIMITS = Limits(rpm=10**12, rpd=10**12, tpd=10**15)
TOKENS = 100


# ------------------------------------------------------------------------ measuring


async def run_level(
    store: Any,
    tasks: int,
    seconds: float,
    warmup: float,
    *,
    sequential: bool = False,
    start_at: float | None = None,
) -> dict[str, Any]:
    """`tasks` coroutines reserving on one key: counts and latencies of the measured window."""
    latencies: list[list[float]] = [[] for _ in range(tasks)]
    made = [0] * tasks  # every reservation, warm-up included (checked against the server)
    refused = 0

    if start_at is not None:  # processes start together
        await asyncio.sleep(max(0.0, start_at - time.time()))
    t0 = time.perf_counter()
    measure_from = t0 + warmup
    measure_to = measure_from + seconds

    async def worker(i: int) -> None:
        nonlocal refused
        lat = latencies[i]
        while True:
            start = time.perf_counter()
            if start >= measure_to:
                return
            got = await store.reserve(KEY, LIMITS, TOKENS)
            end = time.perf_counter()
            made[i] += 1
            if not isinstance(got, Reservation):
                refused += 1
            if start >= measure_from and end <= measure_to:
                lat.append((end - start) * 1e6)

    cpu0 = None
    if sequential:
        # Same loop, no task: the coroutine is awaited directly.
        await asyncio.sleep(0)
        cpu0 = time.process_time()
        await worker(0)
    else:
        cpu0 = time.process_time()
        await asyncio.gather(*(worker(i) for i in range(tasks)))
    cpu = time.process_time() - cpu0
    flat = [v for lat in latencies for v in lat]
    return {
        "tasks": tasks,
        "counted": len(flat),
        "made": sum(made),
        "refused": refused,
        "seconds": seconds,
        "per_s": len(flat) / seconds,
        "median_us": median(flat),
        "p95_us": percentile(flat, 95),
        "client_cpu_share": cpu / (warmup + seconds),
        "latencies_us": flat,  # popped before the JSON is written
    }


def server_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def redis_counter(url: str) -> int:
    from workbench.routing.quota_redis import RedisQuota

    q = RedisQuota(url)
    try:
        return (await q.usage(KEY))["rpd"]
    finally:
        await q.close()


async def one_store(
    kind: str, url: str | None, level: str, tasks: int, args: Any
) -> dict[str, Any]:
    if kind == "redis":
        from workbench.routing.quota_redis import RedisQuota

        store: Any = RedisQuota(url, max_connections=max(64, tasks))
        await store.reserve("bench:prime", LIMITS, 0)  # load the script, open a connection
    else:
        store = MemoryQuota()
    try:
        row = await run_level(
            store, tasks, args.seconds, args.warmup, sequential=(level == "sequential")
        )
    finally:
        await store.close()
    return row


# ------------------------------------------------------------------------ processes


def child_main(args: argparse.Namespace) -> int:
    from workbench.routing.quota_redis import RedisQuota

    async def go() -> dict[str, Any]:
        store = RedisQuota(args.child_url, max_connections=max(64, args.proc_tasks))
        await store.reserve("bench:prime", LIMITS, 0)
        try:
            return await run_level(
                store, args.proc_tasks, args.seconds, args.warmup, start_at=args.child_start
            )
        finally:
            await store.close()

    row = asyncio.run(go())
    Path(args.child_out).write_text(json.dumps(row), encoding="utf-8")
    return 0


def run_procs(server: RedisServer, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    start_at = time.time() + 3.0  # every child imported and connected by then
    procs = []
    outs = []
    for i in range(args.procs):
        out = tmp / f"proc{i}.json"
        outs.append(out)
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child-url",
            server.url,
            "--child-start",
            repr(start_at),
            "--child-out",
            str(out),
            "--seconds",
            str(args.seconds),
            "--warmup",
            str(args.warmup),
            "--proc-tasks",
            str(args.proc_tasks),
        ]
        procs.append(subprocess.Popen(cmd))
    wait_s = max(0.0, start_at - time.time())
    time.sleep(wait_s)
    cpu0 = server_cpu(server._proc.pid) if server._proc else float("nan")
    for p in procs:
        if p.wait(timeout=120 + args.seconds) != 0:
            raise RuntimeError(f"a reservation process failed ({p.returncode})")
    cpu = (server_cpu(server._proc.pid) if server._proc else float("nan")) - cpu0
    rows = [json.loads(o.read_text(encoding="utf-8")) for o in outs]
    flat = [v for r in rows for v in r.pop("latencies_us")]
    return {
        "procs": args.procs,
        "tasks": args.proc_tasks,
        "counted": sum(r["counted"] for r in rows),
        "made": sum(r["made"] for r in rows),
        "refused": sum(r["refused"] for r in rows),
        "per_s": sum(r["per_s"] for r in rows),
        "median_us": median(flat),
        "p95_us": percentile(flat, 95),
        "client_cpu_share": sum(r["client_cpu_share"] for r in rows),
        "server_cpu_share": cpu / (args.warmup + args.seconds),
        "per_process": rows,
    }


# ------------------------------------------------------------------------ report


def check_text(counter: int, made: int, good: bool) -> str:
    if good:
        return f"{counter:,} = {made:,} made"
    return f"MISMATCH: server {counter:,}, made {made:,}"


def fmt_share(v: float | None) -> str:
    return "—" if v is None or v != v else f"{100 * v:.0f} %"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| store | level | reservations/s | median µs | p95 µs | counted | client CPU "
        "| redis-server CPU | server counter check |",
        "|---|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        check = r.get("check", "—")
        lines.append(
            f"| {r['store']} | {r['level']} | {r['per_s']:,.0f} | {r['median_us']:.0f} "
            f"| {r['p95_us']:.0f} | {r['counted']:,} | {fmt_share(r['client_cpu_share'])} "
            f"| {fmt_share(r.get('server_cpu_share'))} | {check} |"
        )
    return "\n".join(lines)


def main_parent(args: argparse.Namespace) -> int:
    import tempfile

    if redis_server_binary() is None:
        print("redis-server is not installed (it must be on PATH)", file=sys.stderr)
        return 2
    levels: list[tuple[str, int]] = [("sequential", 1)] + [
        (f"{n} task" + ("s" if n > 1 else ""), n) for n in args.levels
    ]
    rows: list[dict[str, Any]] = []
    ok = True
    server = RedisServer().start()
    version = server.version()
    try:
        pid = server._proc.pid if server._proc else None
        for kind in ("redis", "memory"):
            for label, tasks in levels:
                if kind == "redis":
                    server.flush()
                cpu0 = server_cpu(pid) if pid is not None else float("nan")
                row = asyncio.run(one_store(kind, server.url, label, tasks, args))
                row.update(store="RedisQuota" if kind == "redis" else "MemoryQuota", level=label)
                if kind == "redis":
                    used = (server_cpu(pid) if pid is not None else float("nan")) - cpu0
                    row["server_cpu_share"] = used / (args.warmup + args.seconds)
                    counter = asyncio.run(redis_counter(server.url))
                    row["server_counter"] = counter
                    good = counter == row["made"] and row["refused"] == 0
                    ok &= good
                    row["check"] = check_text(counter, row["made"], good)
                else:
                    ok &= row["refused"] == 0
                row.pop("latencies_us")
                rows.append(row)
        if args.procs > 0:
            server.flush()
            with tempfile.TemporaryDirectory(prefix="workbench-bench-") as tmp:
                row = run_procs(server, args, Path(tmp))
            counter = asyncio.run(redis_counter(server.url))
            good = counter == row["made"] and row["refused"] == 0
            ok &= good
            row.update(
                store="RedisQuota",
                level=f"{args.procs} procs × {args.proc_tasks} tasks",
                server_counter=counter,
                check=check_text(counter, row["made"], good),
            )
            rows.append(row)
    finally:
        server.cleanup()

    print(
        f"quota reservations: {args.seconds:g} s per level after {args.warmup:g} s warm-up, "
        f"one key, rpm/rpd/tpd all set (never reached), {TOKENS} tokens each; "
        f"{version.split(' sha=')[0]} on loopback, started by this script"
    )
    print()
    print(table(rows))
    print()
    print(
        "latency = wall time around one `await q.reserve(...)`, queueing for the event loop "
        "and the connection pool included; CPU = share of one core over the level "
        "(client: the measuring process(es); server: redis-server)"
    )
    path = write_json(
        "redis_reservations.json",
        {
            "benchmark": "redis_reservations",
            "settings": {
                "seconds": args.seconds,
                "warmup": args.warmup,
                "levels": args.levels,
                "procs": args.procs,
                "proc_tasks": args.proc_tasks,
                "key": KEY,
                "limits": {"rpm": LIMITS.rpm, "rpd": LIMITS.rpd, "tpd": LIMITS.tpd},
                "tokens": TOKENS,
                "redis_server": version,
            },
            "machine": {**machine(), "redis_py": _version("redis")},
            "results": rows,
        },
    )
    print(f"\nJSON: {path}")
    return 0 if ok else 1


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per level")
    parser.add_argument("--warmup", type=float, default=0.3, help="uncounted seconds per level")
    parser.add_argument(
        "--levels",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[1, 8, 32],
        help="concurrent asyncio tasks per level, comma-separated",
    )
    parser.add_argument("--procs", type=int, default=4, help="processes (0 = skip that row)")
    parser.add_argument("--proc-tasks", type=int, default=32, help="asyncio tasks per process")
    parser.add_argument("--child-url", help=argparse.SUPPRESS)
    parser.add_argument("--child-start", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seconds <= 0 or args.warmup < 0 or args.procs < 0 or args.proc_tasks < 1:
        parser.error("--seconds > 0, --warmup >= 0, --procs >= 0, --proc-tasks >= 1")
    if any(n < 1 for n in args.levels):
        parser.error("--levels must be positive integers")
    if args.child_url:
        return child_main(args)
    return main_parent(args)


if __name__ == "__main__":
    sys.exit(main())
