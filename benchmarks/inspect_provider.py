"""An Inspect AI task through `workbench/chain` against the same task through Inspect's own
`openai-api` provider, both pointed at the same simulator: what routing and logging every
attempt costs an Inspect eval.

Both arms run `inspect_ai.eval()` in this process on the same N one-message samples (a
`generate()` solver and an `includes()` scorer), `--max-connections C`, against the simulator
as its own process (one zero-latency persona), so every figure is software cost:

  openai-api   `--model openai-api/sim/<persona>` (SIM_BASE_URL at the simulator): Inspect's own
               OpenAI client, nothing logged but Inspect's log;
  workbench    `--model workbench/chain -M providers=FILE -M db=FILE`: each generate routed by
               a `LoggedRouter` over a one-model providers file, every attempt, route and output
               logged to a fresh DuckDB file (checked after each round: one attempt per sample).

Each arm: one untimed warm-up, then `--rounds` rounds alternating which goes first; the figure
is samples/s over the `eval()` call (its start-up included, as a user waits for it), the median
of each arm, and the ratio the median of the rounds' ratios (both arms of a round ran back to
back, so a drift of the shared machine falls on both).

    .venv/bin/python benchmarks/inspect_provider.py [--samples 300] [--connections 32] [--rounds 3]

Writes benchmarks/results/inspect_provider.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _sim_process import PERSONA, SimProcess, machine, write_json
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

import workbench.eval.inspect_model._registry  # noqa: F401 (what the entry point imports)
from workbench.eval.analysis.frames import RunFrames

API_KEY = "sk-bench"


def _task(n: int) -> Task:
    samples = [
        Sample(id=f"s{i}", input=f"Reply with exactly: pong {i}", target="pong") for i in range(n)
    ]
    return Task(name="bench", dataset=samples, solver=generate(), scorer=includes())


def _once(arm: str, sim: SimProcess, n: int, connections: int, folder: Path) -> float:
    logs = folder / "logs"
    if arm == "openai-api":
        model, args = f"openai-api/sim/{PERSONA}", {}
    else:
        providers = folder / "providers.toml"
        providers.write_text(
            f'[router]\nname = "bench"\n[[providers]]\nid = "sim"\nbase_url = "{sim.openai_url}"\n'
            f'key_env = "SIM_API_KEY"\nmodels = ["{PERSONA}"]\n'
        )
        db = folder / f"bench-{time.monotonic_ns()}.duckdb"
        model, args = "workbench/chain", {"providers": str(providers), "db": str(db)}
    started = time.perf_counter()
    [log] = eval(
        _task(n),
        model=model,
        model_args=args,
        max_connections=connections,
        log_dir=str(logs),
        display="none",
        log_samples=False,
    )
    seconds = time.perf_counter() - started
    if log.status != "success":
        raise SystemExit(f"{arm}: the eval ended {log.status}: {log.error}")
    if arm == "workbench":
        with RunFrames.open(args["db"], snapshot=True) as wb:
            attempts = len(wb.attempts())
        if attempts != n:
            raise SystemExit(f"workbench: {attempts} attempts logged for {n} samples")
    return n / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    arms = ["openai-api", "workbench"]
    rates: dict[str, list[float]] = {arm: [] for arm in arms}
    with SimProcess() as sim, tempfile.TemporaryDirectory() as tmp:
        os.environ["SIM_API_KEY"] = API_KEY  # openai-api/<service>/...: <SERVICE>_API_KEY
        os.environ["SIM_BASE_URL"] = sim.openai_url
        folder = Path(tmp)
        for arm in arms:  # warm-up: imports, Inspect's first eval, the first DuckDB file
            _once(arm, sim, min(20, options.samples), options.connections, folder)
        for round_ in range(options.rounds):
            for arm in arms if round_ % 2 == 0 else arms[::-1]:
                rate = _once(arm, sim, options.samples, options.connections, folder)
                rates[arm].append(rate)
                print(f"round {round_ + 1}: {arm:10s} {rate:8.1f} samples/s", file=sys.stderr)
    medians = {arm: statistics.median(r) for arm, r in rates.items()}
    ratios = [w / o for w, o in zip(rates["workbench"], rates["openai-api"], strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"{options.samples} samples, {options.connections} connections: "
        f"openai-api {medians['openai-api']:.1f} samples/s, "
        f"workbench/chain {medians['workbench']:.1f} samples/s ({ratio:.2f}× openai-api, "
        f"rounds {min(ratios):.2f}–{max(ratios):.2f}×)"
    )
    write_json(
        "inspect_provider.json",
        {
            "samples": options.samples,
            "connections": options.connections,
            "rounds": options.rounds,
            "samples_per_s": medians,
            "every_round": rates,
            "ratio_every_round": ratios,
            "workbench_vs_openai_api": ratio,
            "machine": machine(),
        },
    )


if __name__ == "__main__":
    main()
