"""BFCL multi-turn entries through the runner: entries/s against the simulator's oracle.

A multi-turn entry is many model calls (a step per reply, several per turn), each step's calls
run against BFCL's backends in a sandboxed worker, then the whole trace graded by re-running
it and the ground truth in fresh backends. The figure to quote is the cost per model call of
that against the runner's own per-call cost on single-turn BFCL items, both measured in the
same run against the same zero-latency simulator process:

  multi-turn    `bfcl:multi_turn_base --limit N` against `bfcl-oracle` (every turn's ground
                truth, then a closing text): entries/s, model calls/s, backend calls/s;
  single-turn   `bfcl:simple_python --limit M` against a native persona: items/s (one model
                call each, graded by the AST checker).

Each: one untimed warm-up, then `--rounds` rounds alternating which goes first; medians.

    .venv/bin/python benchmarks/bfcl_multi_turn.py [--entries 50] [--items 200] [--rounds 3]

Writes benchmarks/results/bfcl_multi_turn.json. Needs BFCL's data (`workbench bfcl fetch`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _sim_process import SimProcess, machine, write_json

from workbench.config.providers_file import ProvidersConfig
from workbench.errors import ConfigError
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.eval.suites.bfcl.loader import bfcl_dataset
from workbench.providers.openai_compat import openai_compatible_provider

FLEET = """\
seed = 1
[[persona]]
id = "oracle"
tool_style = "native"
bfcl = "oracle"
latency_ms = 0
latency_jitter_ms = 0
ttft_ms = 0
context_window = 1000000

[[persona]]
id = "caller"
tool_style = "native"
latency_ms = 0
latency_jitter_ms = 0
ttft_ms = 0
"""


async def _once(url: str, persona: str, categories: str, limit: int) -> dict[str, float]:
    dataset = bfcl_dataset(categories, limit=limit)
    config = ProvidersConfig(persona, [openai_compatible_provider("sim", url, "k", [persona])])
    with tempfile.TemporaryDirectory() as tmp:
        with Store.open(Path(tmp) / "run.duckdb") as store:
            started = time.perf_counter()
            summary = await run_prompt_set(
                dataset, [config], store, tools_mode="native", progress=False, concurrency=8
            )
            seconds = time.perf_counter() - started
            calls, steps, passed = store.con.execute(
                "SELECT (SELECT count(*) FROM attempts WHERE run_id = $1), "
                "(SELECT count(*) FROM tool_steps WHERE run_id = $1 AND ok IS NOT NULL), "
                "(SELECT count(*) FROM outputs WHERE run_id = $1 AND passed)",
                [summary.run_id],
            ).fetchone()
    items = len(dataset.items)
    return {
        "seconds": seconds,
        "items": items,
        "passed": passed,
        "items_per_s": items / seconds,
        "model_calls": calls,
        "model_calls_per_s": calls / seconds,
        "backend_calls_per_s": steps / seconds,
        "ms_per_model_call": 1000 * seconds / calls,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=50)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    try:
        bfcl_dataset("multi_turn_base", limit=1)
    except ConfigError as exc:
        print(f"skipped: {exc}")
        return 0
    rounds: dict[str, list[dict[str, float]]] = {"multi": [], "single": []}
    with SimProcess(fleet_toml=FLEET) as sim:
        url = sim.openai_url
        jobs = {
            "multi": ("oracle", "multi_turn_base", args.entries),
            "single": ("caller", "simple_python", args.items),
        }
        for job in jobs.values():  # warm-up
            asyncio.run(_once(url, *job))
        for r in range(args.rounds):
            order = list(jobs) if r % 2 == 0 else list(reversed(jobs))
            for name in order:
                rounds[name].append(asyncio.run(_once(url, *jobs[name])))
    med = {
        name: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for name, runs in rounds.items()
    }
    ratio = med["multi"]["ms_per_model_call"] / med["single"]["ms_per_model_call"]
    print(
        "| run | items | passed | items/s | model calls/s | backend calls/s | ms per model call |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, label in (("multi", "multi_turn_base × oracle"), ("single", "simple_python")):
        m = med[name]
        print(
            f"| {label} | {m['items']:.0f} | {m['passed']:.0f} | {m['items_per_s']:.1f} | "
            f"{m['model_calls_per_s']:.0f} | {m['backend_calls_per_s']:.0f} | "
            f"{m['ms_per_model_call']:.2f} |"
        )
    print(f"\na multi-turn model call costs {ratio:.2f}× a single-turn one (sandbox + grading)")
    path = write_json(
        "bfcl_multi_turn",
        {"settings": vars(args), "machine": machine(), "rounds": rounds, "median": med,
         "ratio_per_model_call": ratio},
    )  # fmt: skip
    print(f"wrote {path}")
    return 0 if med["multi"]["passed"] >= 0.95 * med["multi"]["items"] else 1


if __name__ == "__main__":
    sys.exit(main())
