"""What a cassette costs and saves: `run_prompt_set` items/s replaying a cassette (no network)
against the same run on the simulator, recording's cost, and cassette bytes per item.

The simulator runs in a separate process (`SimProcess`, one zero-latency persona), so the
run on it pays for real HTTP over loopback and nothing else. The configuration is one
OpenAI-compatible provider pointing at it: `ProvidersConfig("bench",
[openai_compatible_provider("sim", URL, None, ["bench"])], {})`. Two prompt sets: smoke × N
repeats (one request per item; a repeat replays the n-th recorded answer) and tool_calling ×
N (its tool loops: two requests per item, the second carrying the tool's result).

For each prompt set, `--rounds` rounds (default 3) of three runs, each into a fresh DuckDB
file, the order rotating each round:

  sim      `run_prompt_set(dataset, config, store, concurrency=C, repeats=N)` on the simulator
  record   the same with `cassette=DIR, cassette_mode="record"` (a fresh folder each round)
  replay   the same with `cassette_mode="replay"` from the last recording and the provider's
           URL pointing at a port nothing listens on: a request that left would fail the run

Every run must finish with the same number of outputs; replay's outputs must equal sim's
(cleaned text and verdicts). Items/s is items over the wall time of `run_prompt_set`
(opening and closing the store outside it). Figures: medians over the rounds, and the ratios
replay ÷ sim and record ÷ sim of each round (medians).

    .venv/bin/python benchmarks/cassette_replay.py [--repeats 10] [--concurrency 8] [--rounds 3]

On the project's 2-core machine, shared with other jobs (figures move ±30 % between runs;
the ratios, each taken within one round, move less), `--repeats 10 --concurrency 8 --rounds 3`
(~50 s): smoke × 10 (200 items): sim 481 items/s, record 436, replay 810 — replay 1.42× sim,
record 0.76×; 1,275 cassette bytes per item. tool_calling × 10 (640 items, two requests for
most): sim 335 items/s, record 285, replay 470 — replay 1.20×, record 0.75× (an earlier
run, before matches normalised tool-call ids: 1.31× and 0.57×, 0.95× in a quieter rerun:
recording costs ~10 % more CPU per request); 3,096 bytes per item. Replay is
bounded by the runner itself (routing, the tool loop, grading, DuckDB), not by the cassette:
against the zero-latency simulator on loopback, HTTP is the cheap part; against a real
provider's seconds per answer, replay is what makes a run take seconds instead.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sim_process import PERSONA, SimProcess, machine, median, write_json

from workbench.config.providers_file import ProvidersConfig
from workbench.eval.dataset.prompt_set import load_dataset
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers.openai_compat import openai_compatible_provider

ROOT = Path(__file__).resolve().parents[1]
SETS = {
    "smoke": ROOT / "datasets" / "smoke.jsonl",
    "tool_calling": ROOT / "datasets" / "tool_calling.jsonl",
}
NOWHERE = "http://127.0.0.1:9/v1"
JSON_NAME = "cassette_replay.json"


def config(url: str) -> ProvidersConfig:
    return ProvidersConfig("bench", [openai_compatible_provider("sim", url, None, [PERSONA])], {})


async def one_run(
    dataset: Any, url: str, db: Path, concurrency: int, repeats: int, **cassette: Any
) -> dict[str, Any]:
    with Store.open(db) as store:
        start = time.perf_counter()
        summary = await run_prompt_set(
            dataset,
            config(url),
            store,
            concurrency=concurrency,
            repeats=repeats,
            progress=False,
            **cassette,
        )
        seconds = time.perf_counter() - start
        outputs = store.con.execute(
            "SELECT item_id, repeat, cleaned, passed FROM outputs WHERE run_id = ? ORDER BY ALL",
            [summary.run_id],
        ).fetchall()
    if summary.status != "finished":
        raise SystemExit(f"a run did not finish: {summary.status}")
    items = len(outputs)
    return {"items": items, "seconds": seconds, "items_per_s": items / seconds, "rows": outputs}


async def bench_set(
    name: str, path: Path, url: str, args: argparse.Namespace, tmp: Path
) -> dict[str, Any]:
    dataset = load_dataset(path)
    kinds = ["sim", "record", "replay"]
    rounds: list[dict[str, dict[str, Any]]] = []
    tape: Path | None = None
    for r in range(args.rounds):
        done: dict[str, dict[str, Any]] = {}
        order = kinds[r % 3 :] + kinds[: r % 3]
        if tape is None and order[0] == "replay":  # replay needs a recording first
            order = ["record", "sim", "replay"]
        for kind in order:
            db = tmp / f"{name}-{r}-{kind}.duckdb"
            if kind == "sim":
                done[kind] = await one_run(dataset, url, db, args.concurrency, args.repeats)
            elif kind == "record":
                tape = tmp / f"{name}-{r}-tape"
                done[kind] = await one_run(
                    dataset, url, db, args.concurrency, args.repeats,
                    cassette=str(tape), cassette_mode="record",
                )  # fmt: skip
                done[kind]["bytes"] = (tape / "cassette.jsonl").stat().st_size
            else:
                assert tape is not None
                done[kind] = await one_run(
                    dataset, NOWHERE, db, args.concurrency, args.repeats,
                    cassette=str(tape), cassette_mode="replay",
                )  # fmt: skip
        if done["replay"]["rows"] != done["sim"]["rows"]:
            raise SystemExit(f"{name}: replay's outputs differ from the simulator's")
        rounds.append(done)
    items = rounds[0]["sim"]["items"]
    figures = {
        "items": items,
        **{f"{k}_items_per_s": median([r[k]["items_per_s"] for r in rounds]) for k in kinds},
        "replay_over_sim": median(
            [r["replay"]["items_per_s"] / r["sim"]["items_per_s"] for r in rounds]
        ),
        "record_over_sim": median(
            [r["record"]["items_per_s"] / r["sim"]["items_per_s"] for r in rounds]
        ),
        "cassette_bytes": median([r["record"]["bytes"] for r in rounds]),
    }
    figures["bytes_per_item"] = figures["cassette_bytes"] / items
    return figures


async def main(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with SimProcess() as sim, tempfile.TemporaryDirectory() as tmp:
        for name, path in SETS.items():
            out[name] = await bench_set(name, path, sim.openai_url, args, Path(tmp))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = asyncio.run(main(args))
    print("| prompt set | items | sim items/s | record items/s | replay items/s | replay ÷ sim "
          "| record ÷ sim | cassette bytes per item |")  # fmt: skip
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, f in results.items():
        print(
            f"| {name} × {args.repeats} | {f['items']} | {f['sim_items_per_s']:.0f} | "
            f"{f['record_items_per_s']:.0f} | {f['replay_items_per_s']:.0f} | "
            f"{f['replay_over_sim']:.2f}× | {f['record_over_sim']:.2f}× | "
            f"{f['bytes_per_item']:,.0f} |"
        )
    settings = vars(args)
    print(write_json(JSON_NAME, {"settings": settings, "machine": machine(), "results": results}))
