"""What `workbench serve gateway` adds per request: the gateway (its own process) → router →
simulator, against the same router in-process → simulator, in the same run.

The simulator runs in a separate process with one zero-latency persona; the gateway runs as
`python -m workbench.cli serve gateway` over a providers file naming that persona. The same
non-streaming chat-completions request is made `--n` times per way, one after another:

  bare       `httpx.AsyncClient.post(sim)` then `resp.json()`: the HTTP round trip alone
  router     `Router([openai_compatible_provider(...)]).route(request)` in this process
  logged     `LoggedRouter.route(...)` in this process: the router plus masking and every
             attempt, route and output written to a DuckDB file, as the gateway does
  gateway    `httpx.AsyncClient.post(gateway)` then `resp.json()`: client key, body read,
             the logged router, the OpenAI JSON written back, and a second HTTP hop

Interleaved in blocks (`--block`, the order flipped every round) after a warm-up, so every way
is measured in the same time window. The figures: median and p95 per request, each way's ratio
to the router in-process, and what the gateway adds to it (median and p95). After the run the
simulator's request log must count every call of every way, all 200 from the persona, and the
gateway's DuckDB file must hold one output per request it was sent.

LiteLLM's proxy is not measured: `litellm[proxy]` 1.110.2 pins `litellm-proxy==1.110.2`,
which the package index does not serve, so it does not install (LiteLLM's SDK does; its
`Router` is measured against ours in `router_overhead.py`).

    .venv/bin/python benchmarks/gateway_latency.py [--n 500] [--block 50] [--warmup 50]

Writes benchmarks/results/gateway_latency.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from _sim_process import PERSONA, SimProcess, machine, median, percentile, write_json

from workbench.eval.analysis.frames import RunFrames
from workbench.eval.gateway import LoggedRouter
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.routing import Router
from workbench.sim.process import _free_port
from workbench.types import ChatRequest

REPO = Path(__file__).resolve().parent.parent
PROMPT = "Say hello in one short sentence."
CLIENT_KEY = "bench-gateway-key-0123456789abcdef"
Fn = Callable[[], Awaitable[Any]]


async def timed(fn: Fn, count: int, into: list[float]) -> None:
    for _ in range(count):
        start = time.perf_counter_ns()
        await fn()
        into.append((time.perf_counter_ns() - start) / 1000)  # microseconds


async def interleaved(
    fns: dict[str, Fn], n: int, block: int, warmup: int
) -> dict[str, list[float]]:
    names = list(fns)
    for name in names:
        await timed(fns[name], warmup, [])
    samples: dict[str, list[float]] = {name: [] for name in names}
    done = rounds = 0
    while done < n:
        count = min(block, n - done)
        for name in names if rounds % 2 == 0 else names[::-1]:
            await timed(fns[name], count, samples[name])
        done += count
        rounds += 1
    return samples


def start_gateway(providers: Path, db: Path) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    flags = ["--providers", str(providers), "--db", str(db), "--port", str(port), "--no-mask"]
    env = os.environ | {"PYTHONPATH": str(REPO), "WORKBENCH_GATEWAY_KEYS": CLIENT_KEY}
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "serve", "gateway", *flags],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    out = proc.stdout
    assert out is not None
    threading.Thread(target=lambda: [lines.put(line) for line in out], daemon=True).start()
    first = lines.get(timeout=60)
    assert first.startswith("gateway at"), first
    return proc, f"http://127.0.0.1:{port}/v1"


async def measure(sim: SimProcess, folder: Path, n: int, block: int, warmup: int) -> dict:
    providers = folder / "providers.toml"
    providers.write_text(
        f'[router]\nname = "bench"\n[[providers]]\nid = "sim"\nbase_url = "{sim.openai_url}"\n'
        f'key_env = "BENCH_SIM_KEY"\nmodels = ["{PERSONA}"]\n'
    )
    os.environ["BENCH_SIM_KEY"] = "k"
    proc, gateway_url = start_gateway(providers, folder / "gateway.duckdb")
    router = Router([openai_compatible_provider("sim", sim.openai_url, "k", [PERSONA])])
    # Masking off, as the gateway here: both log the same rows, neither rewrites the prompt.
    logged = LoggedRouter.open(providers, folder / "logged.duckdb", dataset="bench", mask=False)
    body = {"model": "workbench/chain", "messages": [{"role": "user", "content": PROMPT}]}
    direct = {"model": PERSONA, "messages": body["messages"]}
    counter = iter(range(10**9))
    try:
        async with httpx.AsyncClient(timeout=30) as http:

            async def bare() -> Any:
                got = await http.post(
                    sim.openai_url + "/chat/completions",
                    json=direct,
                    headers={"authorization": "Bearer k"},
                )
                return got.json()

            async def routed() -> Any:
                return await router.route(ChatRequest.of(PROMPT))

            async def logged_route() -> Any:
                return await logged.route(ChatRequest.of(PROMPT), item_id=f"b{next(counter)}")

            async def gateway() -> Any:
                got = await http.post(
                    gateway_url + "/chat/completions",
                    json=body,
                    headers={"authorization": f"Bearer {CLIENT_KEY}"},
                )
                assert got.status_code == 200, got.text
                return got.json()

            sim.reset()
            samples = await interleaved(
                {"bare": bare, "router": routed, "logged": logged_route, "gateway": gateway},
                n,
                block,
                warmup,
            )
        asked = sim.requests()
    finally:
        await router.close()
        await logged.aclose()
        proc.terminate()
        code = proc.wait(timeout=60)
    with RunFrames.open(folder / "gateway.duckdb") as wb:
        gateway_outputs = len(wb.outputs())
    calls = 4 * (n + warmup)
    ok = [r for r in asked if r.get("status") == 200 and r.get("persona") == PERSONA]
    return {
        "samples": samples,
        "checks": {
            "sim_requests": len(asked),
            "expected": calls,
            "all_200_from_persona": len(ok) == len(asked) == calls,
            "gateway_outputs": gateway_outputs,
            "gateway_outputs_expected": n + warmup,
            "gateway_exit_code": code,
        },
    }


def stats(values: list[float]) -> dict[str, float]:
    return {"median_us": median(values), "p95_us": percentile(values, 95), "n": len(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    with SimProcess() as sim, tempfile.TemporaryDirectory() as tmp:
        got = asyncio.run(measure(sim, Path(tmp), args.n, args.block, args.warmup))
    figures = {name: stats(values) for name, values in got["samples"].items()}
    router = figures["router"]
    for fig in figures.values():
        fig["ratio_to_router_median"] = fig["median_us"] / router["median_us"]
    gateway = figures["gateway"]
    added = {
        "median_us": gateway["median_us"] - router["median_us"],
        "p95_us": gateway["p95_us"] - router["p95_us"],
        "logging_median_us": figures["logged"]["median_us"] - router["median_us"],
    }
    print("| way | median | p95 | ratio to router in-process (median) |")
    print("|---|--:|--:|--:|")
    for name, fig in figures.items():
        print(
            f"| {name} | {fig['median_us']:,.0f} µs | {fig['p95_us']:,.0f} µs "
            f"| {fig['ratio_to_router_median']:.2f}× |"
        )
    print(
        f"\nthe gateway adds {added['median_us']:,.0f} µs at the median and "
        f"{added['p95_us']:,.0f} µs at p95 to a routed request "
        f"(of which logging to DuckDB in-process: {added['logging_median_us']:,.0f} µs)"
    )
    print(f"checks: {got['checks']}")
    path = write_json(
        "gateway_latency.json",
        {
            "settings": vars(args),
            "figures": figures,
            "added": added,
            "checks": got["checks"],
            "machine": machine(),
        },
    )
    print(f"→ {path}")
    checks = got["checks"]
    if (
        not checks["all_200_from_persona"]
        or checks["gateway_outputs"] != checks["gateway_outputs_expected"]
    ):
        sys.exit("a check failed: see above")


if __name__ == "__main__":
    main()
