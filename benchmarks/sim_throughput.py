"""How many chat completions per second the simulator serves, at several concurrency levels.

The simulator runs in a separate process (`workbench sim serve`) with one zero-latency
persona. At each level, that many asyncio tasks share one `httpx.AsyncClient` (with a
connection for each) and loop `client.post(...)` for `--seconds`, after a short warm-up that
is not counted. Reported per level: completed requests/s, median and p95 latency, and the CPU
each process used (as a share of one core), which tells whether the server or the client was
the bottleneck. The client and the simulator are separate processes, but share the machine's
cores.

    .venv/bin/python benchmarks/sim_throughput.py [--seconds 5] [--levels 1,8,32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

import httpx
from _sim_process import PERSONA, SimProcess, machine, median, percentile, write_json

BODY = {
    "model": PERSONA,
    "messages": [{"role": "user", "content": "Say hello in one short sentence."}],
}


async def worker(client: httpx.AsyncClient, url: str, deadline: float,
                 latencies: list[float], errors: list[int]) -> None:
    while time.perf_counter() < deadline:
        start = time.perf_counter_ns()
        resp = await client.post(url, json=BODY)
        elapsed = (time.perf_counter_ns() - start) / 1000
        if resp.status_code == 200:
            latencies.append(elapsed)
        else:
            errors.append(resp.status_code)


async def run_level(sim: SimProcess, client: httpx.AsyncClient, concurrency: int,
                    seconds: float, warmup: float) -> dict[str, Any]:
    url = sim.openai_url + "/chat/completions"
    if warmup > 0:
        await asyncio.gather(*(worker(client, url, time.perf_counter() + warmup, [], [])
                               for _ in range(concurrency)))
    sim.reset()
    latencies: list[float] = []
    errors: list[int] = []
    server_cpu0, client_cpu0 = sim.cpu_seconds(), time.process_time()
    start = time.perf_counter()
    await asyncio.gather(*(worker(client, url, start + seconds, latencies, errors)
                           for _ in range(concurrency)))
    wall = time.perf_counter() - start
    server_cpu, client_cpu = sim.cpu_seconds() - server_cpu0, time.process_time() - client_cpu0
    sim.reset()
    return {
        "concurrency": concurrency,
        "seconds": wall,
        "requests": len(latencies),
        "errors": len(errors),
        "requests_per_s": len(latencies) / wall,
        "median_ms": median(latencies) / 1000,
        "p95_ms": percentile(latencies, 95) / 1000,
        "server_cpu_share": server_cpu / wall,
        "client_cpu_share": client_cpu / wall,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| concurrent clients | requests/s | median ms | p95 ms | requests | errors "
        "| server CPU | client CPU |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['concurrency']} | {r['requests_per_s']:.0f} | {r['median_ms']:.2f} "
            f"| {r['p95_ms']:.2f} | {r['requests']} | {r['errors']} "
            f"| {r['server_cpu_share']:.0%} | {r['client_cpu_share']:.0%} |"
        )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    top = max(args.levels)
    limits = httpx.Limits(max_connections=top, max_keepalive_connections=top)
    with SimProcess() as sim:
        async with httpx.AsyncClient(limits=limits) as client:
            rows = [await run_level(sim, client, level, args.seconds, args.warmup)
                    for level in args.levels]
    print(f"simulator throughput: non-streaming chat completions to a zero-latency persona, "
          f"{args.seconds:g} s per level after {args.warmup:g} s warm-up; clients are asyncio "
          "tasks sharing one httpx.AsyncClient (a connection each)")
    print(f"note: the simulator runs in a separate process (one uvicorn worker) but shares the "
          f"machine's {os.cpu_count()} cores with the client; CPU is a share of one core "
          "(100% = one core busy)")
    print()
    print(table(rows))
    path = write_json("sim_throughput.json", {
        "benchmark": "sim_throughput",
        "settings": {"seconds": args.seconds, "warmup": args.warmup, "levels": args.levels,
                     "simulator": "separate process, zero-latency native persona",
                     "client": "asyncio tasks sharing one httpx.AsyncClient"},
        "machine": machine(),
        "results": rows,
    })
    print(f"\nJSON: {path}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per level")
    parser.add_argument("--warmup", type=float, default=0.5, help="uncounted seconds per level")
    parser.add_argument("--levels", default="1,8,32",
                        help="comma-separated concurrency levels (default 1,8,32)")
    args = parser.parse_args()
    try:
        args.levels = [int(x) for x in args.levels.split(",") if x.strip()]
    except ValueError:
        parser.error("--levels is a comma-separated list of integers")
    if not args.levels or min(args.levels) < 1 or args.seconds <= 0 or args.warmup < 0:
        parser.error("levels must be >= 1, --seconds > 0, --warmup >= 0")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
