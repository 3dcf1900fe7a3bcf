"""How many chat completions per second the simulator serves, at several concurrency levels.

The simulator runs in a separate process (`workbench sim serve`) with one zero-latency
persona. At each level, that many asyncio tasks loop one request after another for
`--seconds`, after a short warm-up that is not counted, with one of two clients:

  httpx  the tasks share one `httpx.AsyncClient` (a connection each) and call `client.post`
         — what workbench itself does, so the figure a workbench user would see
  raw    each task holds one keep-alive HTTP/1.1 connection (asyncio streams) and writes a
         pre-encoded request — so cheap on the client side that the figure is the server's

Reported per level: completed requests/s, median and p95 latency, and the CPU each process
used (as a share of one core), which shows whether the server or the client was the
bottleneck. The client and the simulator are separate processes, but share the machine's
cores.

    .venv/bin/python benchmarks/sim_throughput.py [--seconds 5] [--levels 1,8,32]
                                                  [--client both|httpx|raw]
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


async def httpx_worker(
    sim: SimProcess,
    client: httpx.AsyncClient | None,
    deadline: float,
    latencies: list[float],
    errors: list[int],
) -> None:
    assert client is not None
    url = sim.openai_url + "/chat/completions"
    while time.perf_counter() < deadline:
        start = time.perf_counter_ns()
        resp = await client.post(url, json=BODY)
        elapsed = (time.perf_counter_ns() - start) / 1000
        if resp.status_code == 200:
            latencies.append(elapsed)
        else:
            errors.append(resp.status_code)


def raw_request(sim: SimProcess) -> bytes:
    payload = json.dumps(BODY).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{sim.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


async def raw_worker(
    sim: SimProcess,
    _client: httpx.AsyncClient | None,
    deadline: float,
    latencies: list[float],
    errors: list[int],
) -> None:
    """One keep-alive connection; the simulator always answers with a Content-Length."""
    request = raw_request(sim)
    reader, writer = await asyncio.open_connection("127.0.0.1", sim.port)
    try:
        while time.perf_counter() < deadline:
            start = time.perf_counter_ns()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            elapsed = (time.perf_counter_ns() - start) / 1000
            if head.startswith(b"HTTP/1.1 200"):
                latencies.append(elapsed)
            else:
                errors.append(int(head.split()[1]))
    finally:
        writer.close()
        await writer.wait_closed()


WORKERS = {"httpx": httpx_worker, "raw": raw_worker}


async def run_level(
    sim: SimProcess, client_kind: str, concurrency: int, seconds: float, warmup: float
) -> dict[str, Any]:
    worker = WORKERS[client_kind]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits) as client:
        if warmup > 0:
            deadline = time.perf_counter() + warmup
            await asyncio.gather(
                *(worker(sim, client, deadline, [], []) for _ in range(concurrency))
            )
        sim.reset()
        latencies: list[float] = []
        errors: list[int] = []
        server_cpu0, client_cpu0 = sim.cpu_seconds(), time.process_time()
        start = time.perf_counter()
        await asyncio.gather(
            *(worker(sim, client, start + seconds, latencies, errors) for _ in range(concurrency))
        )
        wall = time.perf_counter() - start
        server_cpu = sim.cpu_seconds() - server_cpu0
        client_cpu = time.process_time() - client_cpu0
    sim.reset()
    return {
        "client": client_kind,
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
        "| client | concurrent clients | requests/s | median ms | p95 ms | requests | errors "
        "| server CPU | client CPU |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['client']} | {r['concurrency']} | {r['requests_per_s']:.0f} | {r['median_ms']:.2f} "
            f"| {r['p95_ms']:.2f} | {r['requests']} | {r['errors']} "
            f"| {r['server_cpu_share']:.0%} | {r['client_cpu_share']:.0%} |"
        )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    kinds = ["httpx", "raw"] if args.client == "both" else [args.client]
    with SimProcess() as sim:
        rows = [
            await run_level(sim, kind, level, args.seconds, args.warmup)
            for kind in kinds
            for level in args.levels
        ]
    print(
        f"simulator throughput: non-streaming chat completions to a zero-latency persona, "
        f"{args.seconds:g} s per level after {args.warmup:g} s warm-up; concurrent clients "
        "are asyncio tasks in one process, each with its own connection (httpx: one shared "
        "httpx.AsyncClient; raw: hand-written keep-alive HTTP/1.1)"
    )
    print(
        f"note: the simulator runs in a separate process (one uvicorn worker) but shares the "
        f"machine's {os.cpu_count()} cores with the client; CPU is a share of one core "
        "(100% = one core busy)"
    )
    print()
    print(table(rows))
    path = write_json(
        "sim_throughput.json",
        {
            "benchmark": "sim_throughput",
            "settings": {
                "seconds": args.seconds,
                "warmup": args.warmup,
                "levels": args.levels,
                "simulator": "separate process, zero-latency native persona",
                "clients": {
                    "httpx": "asyncio tasks sharing one httpx.AsyncClient",
                    "raw": "asyncio tasks, one keep-alive HTTP/1.1 stream each",
                },
            },
            "machine": machine(),
            "results": rows,
        },
    )
    print(f"\nJSON: {path}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per level")
    parser.add_argument("--warmup", type=float, default=0.5, help="uncounted seconds per level")
    parser.add_argument(
        "--levels", default="1,8,32", help="comma-separated concurrency levels (default 1,8,32)"
    )
    parser.add_argument(
        "--client",
        choices=("both", "httpx", "raw"),
        default="both",
        help="which client drives the load (default: both, one after the other)",
    )
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
