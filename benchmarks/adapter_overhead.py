"""What the OpenAI-compatible adapter adds on top of a bare HTTP round trip.

The simulator runs in a separate process with one zero-latency persona. Against the same
endpoint, with one shared `httpx.AsyncClient`, the same chat-completions request is made
`--n` times in two ways:

  bare     `client.post(url, json=body)` then `resp.json()`
  adapter  `provider.call(request, CallContext(client=client), model)`, which also builds
           the body and headers, checks the status, reads quota headers, strips reasoning,
           reads prose tool calls, observes capability (when tools are sent) and builds a Reply

The two alternate in blocks (`--block`, the order flipped every round) after a warm-up, so
drift of a noisy machine falls on both alike. Run once for a plain text prompt and once for a
tool-bearing request.

    .venv/bin/python benchmarks/adapter_overhead.py [--n 500] [--block 50] [--warmup 50]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from _sim_process import PERSONA, SimProcess, machine, median, percentile, write_json

from workbench.providers.openai_compat import openai_compatible_provider, wire_messages
from workbench.types import CallContext, ChatRequest

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}

CASES = {
    "text": ChatRequest.of("Say hello in one short sentence."),
    "tools": ChatRequest.of(
        "What is the weather in Paris? Use a tool if you have one.", tools=[WEATHER_TOOL]
    ),
}


def wire_body(request: ChatRequest) -> dict[str, Any]:
    """The body the adapter sends for `request` (checked against it below)."""
    body: dict[str, Any] = {"model": PERSONA, "messages": wire_messages(request)}
    if request.tools:
        body["tools"] = request.tools
    return body


async def timed(fn: Callable[[], Awaitable[Any]], count: int, into: list[float]) -> None:
    for _ in range(count):
        start = time.perf_counter_ns()
        await fn()
        into.append((time.perf_counter_ns() - start) / 1000)  # microseconds


async def run_case(
    name: str,
    request: ChatRequest,
    sim: SimProcess,
    client: httpx.AsyncClient,
    n: int,
    block: int,
    warmup: int,
) -> dict[str, Any]:
    provider = openai_compatible_provider("bench", sim.openai_url, None, [PERSONA])
    ctx = CallContext(client=client)
    url = sim.openai_url + "/chat/completions"
    body = wire_body(request)
    assert body == provider._body(request, provider.model_spec(PERSONA), False), "body differs"

    async def bare() -> Any:
        resp = await client.post(url, json=body)
        return resp.json()

    async def adapter() -> Any:
        return await provider.call(request, ctx, PERSONA)

    # Sanity: both succeed and the reply is what the case means to exercise.
    resp = await client.post(url, json=body)
    assert resp.status_code == 200, resp.text
    reply = await adapter()
    if request.tools:
        # Classifying is the router's attempt pipeline's job, not the provider's: not timed here.
        assert reply.tool_calls and reply.protocol == "native", reply
    else:
        assert reply.text and not reply.tool_calls, reply

    sim.reset()
    sink: list[float] = []
    await timed(bare, warmup, sink)
    await timed(adapter, warmup, sink)

    samples: dict[str, list[float]] = {"bare": [], "adapter": []}
    fns = {"bare": bare, "adapter": adapter}
    done = 0
    rounds = 0
    while done < n:
        count = min(block, n - done)
        order = ("bare", "adapter") if rounds % 2 == 0 else ("adapter", "bare")
        for which in order:
            await timed(fns[which], count, samples[which])
        done += count
        rounds += 1
    sim.reset()

    stats = {
        which: {
            "n": len(values),
            "median_us": median(values),
            "p95_us": percentile(values, 95),
            "mean_us": sum(values) / len(values),
            "min_us": min(values),
        }
        for which, values in samples.items()
    }
    b, a = stats["bare"], stats["adapter"]
    return {
        "case": name,
        **stats,
        "ratio_median": a["median_us"] / b["median_us"],
        "ratio_p95": a["p95_us"] / b["p95_us"],
        "added_us_median": a["median_us"] - b["median_us"],
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| request | bare median µs | bare p95 µs | adapter median µs | adapter p95 µs "
        "| ratio median | ratio p95 | added µs/call (median) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        b, a = r["bare"], r["adapter"]
        lines.append(
            f"| {r['case']} | {b['median_us']:.0f} | {b['p95_us']:.0f} | {a['median_us']:.0f} "
            f"| {a['p95_us']:.0f} | {r['ratio_median']:.2f}× | {r['ratio_p95']:.2f}× "
            f"| {r['added_us_median']:+.0f} |"
        )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    with SimProcess() as sim:
        async with httpx.AsyncClient() as client:
            rows = [
                await run_case(name, request, sim, client, args.n, args.block, args.warmup)
                for name, request in CASES.items()
            ]
    print(
        f"adapter overhead: n={args.n} calls per way per request, blocks of {args.block} "
        f"alternating, {args.warmup} warm-up calls per way; sequential, one shared "
        "httpx.AsyncClient; simulator in a separate process (zero-latency persona) on the "
        "same machine"
    )
    print()
    print(table(rows))
    path = write_json(
        "adapter_overhead.json",
        {
            "benchmark": "adapter_overhead",
            "settings": {
                "n": args.n,
                "block": args.block,
                "warmup": args.warmup,
                "simulator": "separate process, zero-latency native persona",
            },
            "machine": machine(),
            "results": rows,
        },
    )
    print(f"\nJSON: {path}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="calls per way per request")
    parser.add_argument("--block", type=int, default=50, help="calls per alternating block")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up calls per way")
    args = parser.parse_args()
    if args.n < 1 or args.block < 1 or args.warmup < 0:
        parser.error("--n and --block must be >= 1, --warmup >= 0")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
