"""The cost of a run with and without `workbench run --batch`, and the wall time a batch adds.

The same prompt sets run twice through `workbench run` against one simulator process, once
through the synchronous chat endpoint and once with `--batch` (the vendor's batch API, billed
at a discount, answered after a delay):

  smoke   datasets/smoke.jsonl (20 items)
  bfcl    bfcl:simple_python --limit L (`--limit`, 50; needs `workbench bfcl fetch` once: without
          the cached wheel the set is reported as skipped)

    workbench run SET --providers FILE --db FRESH.duckdb --concurrency C --quiet --no-report
        [--batch] [--limit L]

The providers file names one model at the simulator with a price table, as a user prices
one (USD per 1M tokens, `--price-in` 0.15 and `--price-out` 0.60):

    [[providers]]
    id = "sim"
    adapter = "openai"
    base_url = "<the simulator>/v1"
    key_env = "SIM_KEY"
    models = [{ id = "priced-model", price_in = 0.15, price_out = 0.60 }]

The simulator's persona `priced-model` answers every item natively (tools, images) in
`--latency-ms` (50); when the simulator has batch endpoints, its fleet's `[batch] delay_s`
(`--batch-delay-s`, 5 s) is how long a batch takes from submission to completion (a real
one takes minutes to 24 hours: the figure to read is what the delay adds, not its size).

Per set and mode, from the run's own DuckDB file (`RunFrames`): items, answered outputs,
passed, tokens in and out, and the cost as workbench bills it (`RunFrames.usage` with the
file's prices: a batch's tokens at the batch price, half the list price, what OpenAI's Batch
API and Gemini's batch mode charge), beside the list price of the same tokens, and the
process's wall time. Then per set: batch cost ÷ synchronous cost, and the wall time the batch
adds (batch wall − synchronous wall).

On a checkout whose `workbench run --help` does not list `--batch`, the batch half of every
set is reported as "--batch not available" and the synchronous half still runs.

    .venv/bin/python benchmarks/batch_cost.py [--limit 50] [--concurrency 8] [--latency-ms 50]
        [--batch-delay-s 5] [--price-in 0.15] [--price-out 0.60]
        [--quick]

`--quick`: --limit 10. Writes benchmarks/results/batch_cost.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import math
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from _sim_process import SimProcess, machine, write_json
from _whole_process import run_process, workbench_cmd

from workbench.config.providers_file import load_config
from workbench.eval.analysis.frames import RunFrames

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
JSON_NAME = "batch_cost.json"
MODEL = "priced-model"
API_KEY = "x"
SMOKE = REPO / "datasets" / "smoke.jsonl"
BFCL_SET = "bfcl:simple_python"
NOT_AVAILABLE = "--batch not available"

PERSONA_TOML = """\
seed = 1
description = "batch cost benchmark fleet"

[[persona]]
id = "{model}"
description = "A priced model that answers every item natively"
tool_style = "native"
vision = true
latency_ms = {latency_ms}
latency_jitter_ms = 0
ttft_ms = 0
"""

BATCH_TOML = """
[batch]
delay_s = {delay_s}
"""


def sim_has_batches() -> bool:
    """The simulator serves OpenAI's Batch API (and reads a fleet's [batch] table)."""
    return importlib.util.find_spec("workbench.sim.batch_jobs") is not None


def fleet_toml(args: argparse.Namespace) -> str:
    text = PERSONA_TOML.format(model=MODEL, latency_ms=args.latency_ms)
    if sim_has_batches():
        text += BATCH_TOML.format(delay_s=args.batch_delay_s)
    return text


def providers_toml(sim: SimProcess, args: argparse.Namespace) -> str:
    return (
        '[router]\nname = "batch-cost"\n\n[[providers]]\nid = "sim"\nadapter = "openai"\n'
        f'base_url = "{sim.openai_url}"\nkey_env = "SIM_KEY"\nbatch = true\n'
        f'models = [{{ id = "{MODEL}", price_in = {args.price_in}, price_out = {args.price_out} }}]\n'
    )


def batch_available(env: dict[str, str], cwd: Path) -> bool:
    run = run_process([*workbench_cmd(), "run", "--help"], env, cwd)
    return "--batch" in run["stdout"].replace("--batch-", "")


def bfcl_cached() -> bool:
    cache = Path.home() / ".cache" / "workbench" / "bfcl"
    return any(cache.glob("bfcl_eval-*.whl"))


def read_run(db: Path, prices: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """Items, answers, grades, tokens and cost of the one run in `db`, from its own rows: the
    cost as workbench bills it (a batch's tokens at the batch price), beside the list price."""
    with RunFrames.open(db) as frames:
        run_id = frames.latest_run()
        if run_id is None:
            return {"error": "no run in the DuckDB file"}
        outputs = frames.outputs(run_id)
        usage = frames.usage(run_id, prices=prices)
        attempts = frames.attempts(run_id)
    tokens_in = int(usage["tokens_in"].sum()) if len(usage) else 0
    tokens_out = int(usage["tokens_out"].sum()) if len(usage) else 0
    cost = float(usage["cost_usd"].sum()) if len(usage) else 0.0
    p_in, p_out = next(iter(prices.values()))
    list_cost = (tokens_in * p_in + tokens_out * p_out) / 1e6
    answered = int(outputs["key"].notna().sum()) if len(outputs) else 0
    passed = int(outputs["passed"].fillna(False).astype(bool).sum()) if len(outputs) else 0
    return {
        "run_id": run_id,
        "outputs": len(outputs),
        "answered": answered,
        "passed": passed,
        "attempts": len(attempts),
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "list_cost_usd": list_cost,
        "cost_usd": cost,
    }


class Bench:
    def __init__(self, sim: SimProcess, tmp: Path, args: argparse.Namespace) -> None:
        self.sim, self.tmp, self.args = sim, tmp, args
        self.providers = tmp / "providers.toml"
        self.providers.write_text(providers_toml(sim, args), encoding="utf-8")
        self.prices = load_config(self.providers).prices
        self.cwd = tmp / "cwd"
        self.cwd.mkdir()
        self.env = {**os.environ, "SIM_KEY": API_KEY}
        self.commands: dict[str, str] = {}
        self._k = 0

    def run(self, name: str, dataset: str, extra: list[str], batch: bool) -> dict[str, Any]:
        self._k += 1
        db = self.tmp / f"run{self._k}.duckdb"
        args = [
            "run",
            dataset,
            "--providers",
            str(self.providers),
            "--db",
            str(db),
            "--concurrency",
            str(self.args.concurrency),
            "--quiet",
            "--no-report",
            *extra,
            *(["--batch"] if batch else []),
        ]
        mode = "batch" if batch else "sync"
        self.commands[f"{name} {mode}"] = shlex.join(["workbench", *args])
        self.sim.reset()
        run = run_process([*workbench_cmd(), *args], self.env, self.cwd, timeout=1800)
        row: dict[str, Any] = {
            "set": name,
            "mode": mode,
            "exit": run["exit"],
            "wall_s": round(run["wall"], 2),
            "summary": next(iter(run["stdout"].splitlines()), None),
        }
        if db.exists():
            row |= read_run(db, self.prices)
        if run["exit"] != 0 or not db.exists():
            row["output_tail"] = (run["stdout"][-800:] + "\n" + run["stderr"][-1500:]).strip()
        return row


def compare(sync: dict[str, Any], batch: dict[str, Any] | None) -> dict[str, Any]:
    if batch is None or "cost_usd" not in batch or "cost_usd" not in sync:
        return {}
    ratio = batch["cost_usd"] / sync["cost_usd"] if sync["cost_usd"] else math.nan
    return {
        "batch_over_sync_cost": ratio,
        "saved_usd": sync["cost_usd"] - batch["cost_usd"],
        "batch_adds_s": batch["wall_s"] - sync["wall_s"],
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    sets: list[tuple[str, str, list[str]]] = [("smoke", str(SMOKE), [])]
    skipped: dict[str, str] = {}
    if bfcl_cached():
        sets.append(("bfcl", BFCL_SET, ["--limit", str(args.limit)]))
    else:
        skipped["bfcl"] = "no cached bfcl-eval wheel: run `workbench bfcl fetch` once"
    results: dict[str, Any] = {}
    with (
        SimProcess(fleet_toml=fleet_toml(args)) as sim,
        tempfile.TemporaryDirectory(prefix="workbench-batch-cost-") as tmp,
    ):
        b = Bench(sim, Path(tmp), args)
        has_batch = batch_available(b.env, b.cwd)
        for name, dataset, extra in sets:
            print(f"{name}: synchronous …", flush=True)
            sync = b.run(name, dataset, extra, batch=False)
            print(f"  {sync['wall_s']:.1f} s, {sync.get('summary')}", flush=True)
            batch = None
            if has_batch:
                print(f"{name}: --batch …", flush=True)
                batch = b.run(name, dataset, extra, batch=True)
                print(f"  {batch['wall_s']:.1f} s, {batch.get('summary')}", flush=True)
            results[name] = {
                "dataset": dataset if name != "smoke" else "datasets/smoke.jsonl",
                "sync": sync,
                "batch": batch if batch is not None else NOT_AVAILABLE,
                **compare(sync, batch),
            }
        commands = b.commands
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "settings": {
            "limit": args.limit,
            "concurrency": args.concurrency,
            "latency_ms": args.latency_ms,
            "batch_delay_s": args.batch_delay_s if sim_has_batches() else None,
            "price_in": args.price_in,
            "price_out": args.price_out,
            "quick": args.quick,
        },
        "batch_available": has_batch,
        "sets": results,
        "skipped": skipped,
        "machine": machine(),
        "commands": commands,
    }


def table(data: dict[str, Any]) -> list[str]:
    s = data["settings"]
    lines = [
        f"Prices: ${s['price_in']:g} in / ${s['price_out']:g} out per 1M tokens; a batch at "
        f"half that. Concurrency {s['concurrency']}, "
        f"{s['latency_ms']:g} ms latency"
        + (f", batch delay {s['batch_delay_s']:g} s." if s["batch_delay_s"] is not None else "."),
        "",
        "| set | mode | wall s | answered | passed | tokens in | tokens out | cost USD |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for name, r in data["sets"].items():
        for mode in ("sync", "batch"):
            row = r[mode]
            if not isinstance(row, dict):
                lines.append(f"| {name} | {mode} | {row} | | | | | |")
                continue
            if "cost_usd" not in row:
                lines.append(f"| {name} | {mode} | failed (exit {row['exit']}) | | | | | |")
                continue
            lines.append(
                f"| {name} | {mode} | {row['wall_s']:.1f} | {row['answered']}/{row['outputs']} "
                f"| {row['passed']} | {row['tokens_in']:,} | {row['tokens_out']:,} "
                f"| {row['cost_usd']:.6f} |"
            )
    lines.append("")
    for name, r in data["sets"].items():
        if "batch_over_sync_cost" in r:
            lines.append(
                f"{name}: batch ÷ synchronous cost {r['batch_over_sync_cost']:.2f}×, "
                f"the batch adds {r['batch_adds_s']:.1f} s of wall time."
            )
        else:
            lines.append(f"{name}: {NOT_AVAILABLE if not data['batch_available'] else 'no ratio'}.")
    for name, why in data["skipped"].items():
        lines.append(f"{name}: skipped ({why}).")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help=f"items of {BFCL_SET} (default 50; --quick: 10)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--batch-delay-s", type=float, default=5.0)
    parser.add_argument("--price-in", type=float, default=0.15, help="USD per 1M input tokens")
    parser.add_argument("--price-out", type=float, default=0.60, help="USD per 1M output tokens")
    parser.add_argument("--quick", action="store_true", help="--limit 10")
    args = parser.parse_args()
    if args.limit is None:
        args.limit = 10 if args.quick else 50
    if args.limit < 1 or args.concurrency < 1:
        parser.error("--limit and --concurrency must be >= 1")
    if min(args.latency_ms, args.batch_delay_s, args.price_in, args.price_out) < 0:
        parser.error("--latency-ms, --batch-delay-s and the prices must be >= 0")

    data = measure(args)
    lines = ["## Batch cost: the smoke set and BFCL, with and without --batch", ""]
    lines += table(data)
    print("\n".join(lines))
    print(f"\nJSON: {write_json(JSON_NAME, data)}")
    failed = [
        f"{name} {mode}"
        for name, r in data["sets"].items()
        for mode in ("sync", "batch")
        if isinstance(r[mode], dict) and "cost_usd" not in r[mode]
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
