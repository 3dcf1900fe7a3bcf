"""Tools asked together run together: two 200 ms tools in one turn of `run_tool_loop`, against
the same two run one after the other, measured in the same process (median of N rounds).

    .venv/bin/python benchmarks/tool_concurrency.py [--rounds 20] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from workbench.tools import Tool, run_tool_loop, tool_caller, tool_specs, validate_native_tools
from workbench.types import Reply, ToolCall, user


def _tools(delay: float) -> list[Tool]:
    async def slow(args, ctx):
        await asyncio.sleep(delay)
        return "done"

    return validate_native_tools(
        [Tool(n, "slow", {"type": "object"}, "read", slow) for n in ("slow_a", "slow_b")]
    )


async def _loop(tools: list[Tool]) -> float:
    calls = [ToolCall(f"c{i}", n, {}, "{}") for i, n in enumerate(("slow_a", "slow_b"))]
    replies = iter([Reply(text="", tool_calls=calls), Reply(text="both done")])

    async def turn(request):
        return next(replies)

    started = time.perf_counter()
    await run_tool_loop(None, [user("go")], tool_specs(tools), turn, tool_caller(tools))
    return time.perf_counter() - started


async def _sequential(tools: list[Tool]) -> float:
    started = time.perf_counter()
    for tool in tools:
        await tool.run({}, None)
    return time.perf_counter() - started


async def main(rounds: int, delay: float) -> None:
    tools = _tools(delay)
    together = [await _loop(tools) for _ in range(rounds)]
    apart = [await _sequential(tools) for _ in range(rounds)]
    t, a = statistics.median(together), statistics.median(apart)
    print(f"two {delay * 1000:.0f} ms tools, median of {rounds} rounds")
    print("| way | median ms |\n|---|--:|")
    print(f"| run_tool_loop, one turn asking both | {t * 1000:.1f} |")
    print(f"| the same two tools one after the other | {a * 1000:.1f} |")
    print(f"together / apart: {t / a:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.2)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.delay))
