"""What Ray's actors buy over the local engine when the model is slow, and what Ray costs.

The simulator runs as `SimProcess(fleet_toml=FLEET, workers=4)`: four uvicorn processes on one
port, one native persona (`bench`) answering every request after exactly 50 ms (`latency_ms =
50`, no jitter, no time to first token), so a run's rate is set by how many requests are in
flight, as against a real provider, and not by the simulator's CPU. The configuration is one
OpenAI-compatible provider pointing at it with that one model and `router_options =
{"redis_url": URL}` of a `redis-server` the script starts (`RedisServer().start()`): every
router of every engine reserves its quota in that Redis (one Lua call per attempt, plus the
capability records in the Ray workers), the local engine included, so both pay for the Redis
round trips and the difference between them is the engine. The prompt set is built in memory:
`--n` one-message items (default 480), "Reply with exactly: pong{i}", graded by `contains`.

The script starts ONE local Ray itself and times it: `import ray`, then `ray.init(num_cpus=4,
include_dashboard=False, log_to_driver=False, logging_level=ERROR, object_store_memory=200 MB)`
(the cluster's cold start: GCS, raylet, the worker pool). `RayEngine` uses an initialized Ray as
it is, so every Ray run below pays for its workers, not for Ray. An uncounted warm-up (a local
run, then a Ray run with one worker, of 48 items) loads the imports and the file cache; the
warm-up's worker start-up is reported as "first worker".

Then `--rounds` rounds (default 3), each running, in this order (reversed every other round,
so drift of the machine falls on all alike), into a fresh DuckDB file each (temp dir, default
durability):

  local C       `run_prompt_set(ds, config, store, concurrency=C)` (C = `--concurrency`, 16)
  ray 1, 2, 4   the same with `engine=RayEngine(workers=W, redis_url=URL)`: W actors, each with
                C jobs in flight (so W × C in all)
  local 4C      the local engine with C × 4 jobs in flight: as many in flight as 4 actors, in
                one process; whether more actors beat simply more concurrency

Figures per run:
  items/s (wall)   items ÷ the wall time of `run_prompt_set` (opening the run, for Ray spawning
                   the workers (`RayEngine.startup_s`, reported beside it), every output, the
                   final flush, for Ray stopping the workers)
  items/s (run)    items ÷ (the last `on_item` − `on_start`): `on_start` fires once the run is
                   opened, after `engine.prepare`, so this is the rate without worker spawn or
                   teardown; the same window for the local engine
  ideal            jobs in flight ÷ 50 ms: what the latency alone allows
  other s          wall − workers ready − run phase: opening the run, the final flush, for Ray
                   stopping the actors
  CPU              over the run phase: the driver process (`time.process_time()`), the actors
                   together (the `ray::ShardWorker` processes in /proc) and the simulator's four
                   processes, each as a share of one core; engine CPU ms/item = (driver +
                   actors) CPU ÷ items; the whole machine (`/proc/stat`) as a share of all its
                   cores: Ray's own processes, Redis and anything else running on the machine
                   (other people's work too) are the rest. The JSON also has each over the wall.
  Redis            commands the redis-server processed (INFO `total_commands_processed`) per item;
                   the commands inside the Lua scripts count too (~13 in a reservation, ~4 in a
                   reconcile): about 19 commands are 2 round trips per item
Checks after every run: status finished, outputs rows = attempt rows = passed = n, no errors,
for Ray every worker's stats back and their outputs summing to n. Each figure is the median
over rounds; the ratio "÷ local C" is taken within each round, then the median of those.

Start-up, besides `ray.init` and the workers' `startup_s` above: whole processes, as a user
runs them, `python -m workbench.cli run datasets/smoke.jsonl --no-local --no-report --quiet
--db TMP` with `--engine local` and with `--engine ray --workers 2` (`--cli-runs` each, default
3, alternating, after one uncounted run of each; median wall seconds). They run after this
script's own Ray is shut down, so the CLI starts its own Ray (and its own redis-server, the
providers naming none), as a user's does: the difference is what starting Ray costs from the CLI.

What limits the figures: the VM has 2 cores, and a Ray run puts the driver, 1–4 actors, the
raylet, GCS, Redis and the simulator's 4 processes on them (Ray is told it has 4 CPUs, so 4
actors fit: oversubscribed on purpose). With 50 ms per request the simulator is cheap, but
every item still costs CPU in the driver (logging the rows the actors ship, DuckDB), in its
actor (routing, grading, Redis round trips, Arrow batches, Ray's calls) and in Redis; an actor
spends more CPU per item than the local engine does, and a fresh actor's first jobs pay for
what its process loads on first use (in the run phase, not in "workers ready"; it weighs more
with a smaller `--n`). So once the machine is busy (the CPU columns) more actors add contention,
not cores (here the local engine with 4× the concurrency did better): the figures say what the
engine costs on this machine, not what Ray gains on many cores or nodes, where each actor has a
core of its own. A 480-item run is short (the run phase well under 3 s), so single rounds are
noisy; `--n 2000` steadies the run-phase figures.

    .venv/bin/python benchmarks/ray_engine.py [--n 480] [--concurrency 16] [--rounds 3]
        [--workers 1,2,4] [--cli-runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sim_process import PERSONA, SimProcess, machine, median, write_json

from workbench._redis_server import RedisServer, redis_server_binary
from workbench.config.providers_file import ProvidersConfig
from workbench.eval.dataset.prompt_set import Dataset, Expect, Item
from workbench.eval.engines.ray.engine import RayEngine  # imports ray only when a run starts
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers.openai_compat import openai_compatible_provider

ROOT = Path(__file__).resolve().parents[1]
JSON_NAME = "ray_engine.json"
LATENCY_MS = 50
SIM_WORKERS = 4
RAY_CPUS = 4
WARMUP_N = 48

FLEET = f"""\
seed = 1
description = "ray engine benchmark: one native persona, {LATENCY_MS} ms a request"

[[persona]]
id = "{PERSONA}"
tool_style = "native"
latency_ms = {LATENCY_MS}
latency_jitter_ms = 0
ttft_ms = 0
"""


def prompt_set(n: int) -> Dataset:
    items = tuple(
        Item(
            id=f"p{i:05d}",
            messages=({"role": "user", "content": f"Reply with exactly: pong{i}"},),
            expect=Expect(contains=(f"pong{i}",)),
        )
        for i in range(n)
    )
    sha = hashlib.sha256(f"ray bench pong x{n}".encode()).hexdigest()
    return Dataset(name=f"pong-{n}", path=Path(f"<pong {n}>"), items=items, sha256=sha)


def config(openai_url: str, redis_url: str) -> ProvidersConfig:
    provider = openai_compatible_provider("sim", openai_url, None, [PERSONA])
    return ProvidersConfig("bench", [provider], {"redis_url": redis_url})


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot, from /proc/stat's first line."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already inside user
    return total - idle, total


def actor_cpu_seconds() -> dict[int, float]:
    """CPU seconds so far of this cluster's live actor processes, by pid. Ray titles them
    `ray::ShardWorker` (then the method running); only descendants of this process count (the
    local Ray's raylet is its child, the actors the raylet's), not another cluster's on the
    same machine."""
    stats: dict[int, tuple[int, float]] = {}  # pid → (parent pid, CPU seconds)
    actors: set[int] = set()
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            pid = int(entry.name)
            stats[pid] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
            if (entry / "cmdline").read_bytes().startswith(b"ray::ShardWorker"):
                actors.add(pid)
        except OSError:
            continue  # it ended while we looked
    me, found = os.getpid(), {}
    for pid in actors:
        up, hops = pid, 0
        while up in stats and up != me and hops < 16:
            up, hops = stats[up][0], hops + 1
        if up == me:
            found[pid] = stats[pid][1]
    return found


def redis_commands(redis: RedisServer) -> int:
    found = re.search(rb"total_commands_processed:(\d+)", redis.command("INFO", "stats"))
    return int(found.group(1)) if found else -1


class Kind:
    """One way of running the prompt set: an engine (None = local) and its concurrency."""

    def __init__(self, label: str, concurrency: int, workers: int | None) -> None:
        self.label = label
        self.concurrency = concurrency
        self.workers = workers

    @property
    def in_flight(self) -> int:
        return self.concurrency * (self.workers or 1)


# ------------------------------------------------------------------ one measured run
async def one_run(
    kind: Kind,
    dataset: Dataset,
    cfg: ProvidersConfig,
    db: Path,
    sim: SimProcess,
    redis: RedisServer,
) -> dict[str, Any]:
    said: list[str] = []
    engine = None
    if kind.workers is not None:
        engine = RayEngine(
            workers=kind.workers, redis_url=cfg.router_options["redis_url"], say=said.append
        )
    n = len(dataset)
    phase: dict[str, tuple[float, float, float, tuple[int, int], dict[int, float]]] = {}
    count = 0

    def mark(name: str) -> None:  # wall, driver CPU, simulator CPU, machine jiffies, actors
        actors = actor_cpu_seconds() if kind.workers else {}
        phase[name] = (
            time.perf_counter(),
            time.process_time(),
            sim.cpu_seconds(),
            machine_jiffies(),
            actors,
        )

    def started(run_id: str, jobs: int) -> None:
        mark("start")

    def item_done(item_id: str, repeat: int, config_name: str) -> None:
        nonlocal count
        count += 1
        if count == n:
            mark("last")

    store = Store.open(db)
    cmds0, busy0 = redis_commands(redis), machine_jiffies()
    cpu0, sim0 = time.process_time(), sim.cpu_seconds()
    t0 = time.perf_counter()
    summary = await run_prompt_set(
        dataset,
        cfg,
        store,
        concurrency=kind.concurrency,
        progress=False,
        on_start=started,
        on_item=item_done,
        engine=engine,
    )
    wall = time.perf_counter() - t0
    cpu, sim_cpu = time.process_time() - cpu0, sim.cpu_seconds() - sim0
    busy1, cmds1 = machine_jiffies(), redis_commands(redis)
    q = store.con.execute
    rid = [summary.run_id]
    outputs = q("SELECT count(*) FROM outputs WHERE run_id = ?", rid).fetchall()[0][0]
    attempts = q("SELECT count(*) FROM attempts WHERE run_id = ?", rid).fetchall()[0][0]
    store.close()
    if "start" in phase and "last" in phase:
        (w0, c0, s0, j0, a0), (w1, c1, s1, j1, a1) = phase["start"], phase["last"]
        run_s = w1 - w0
        actors = sum(a1[pid] - a0.get(pid, 0.0) for pid in a1)
        run_cpu = {
            "run_driver_cpu_share": (c1 - c0) / run_s,
            "run_actors_cpu_share": actors / run_s,
            "run_sim_cpu_share": (s1 - s0) / run_s,
            "run_machine_cpu_share": (j1[0] - j0[0]) / max(1, j1[1] - j0[1]),
            "engine_cpu_ms_per_item": (c1 - c0 + actors) * 1000 / n,
            "actors_seen": len(a1),
        }
    else:
        run_s, run_cpu = float("nan"), {}
    worker_outputs = [int(w.get("outputs", 0)) for w in summary.workers]
    checks = {
        "finished": summary.status == "finished",
        "outputs": outputs == n,
        "attempts": attempts == n,
        "passed": summary.passed == n,
        "no_errors": summary.errors == 0,
        "workers": kind.workers is None
        or (
            len(summary.workers) == kind.workers
            and sum(worker_outputs) == n
            and run_cpu.get("actors_seen") == kind.workers
        ),
    }
    return {
        "kind": kind.label,
        "items": n,
        "seconds": wall,
        "items_per_s": n / wall,
        "run_s": run_s,
        "run_items_per_s": n / run_s if run_s > 0 else float("nan"),
        "startup_s": engine.startup_s if engine is not None else 0.0,
        # the wall outside spawn and run phase: opening the run, the flush, stopping the actors
        "outside_s": wall - run_s - (engine.startup_s if engine is not None else 0.0),
        "outputs_rows": outputs,
        "attempt_rows": attempts,
        "passed": summary.passed,
        "errors": summary.errors,
        "worker_outputs": worker_outputs,
        "driver_cpu_share": cpu / wall,
        "sim_cpu_share": sim_cpu / wall,
        "machine_cpu_share": (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]),
        **run_cpu,
        "redis_commands_per_item": (cmds1 - cmds0) / n if cmds0 >= 0 and cmds1 >= 0 else -1,
        "said": said,
        "checks": checks,
        "ok": all(checks.values()) and bool(run_cpu),
    }


async def engines_part(
    args: argparse.Namespace,
    kinds: list[Kind],
    sim: SimProcess,
    redis: RedisServer,
    tmp: Path,
) -> dict[str, Any]:
    cfg = config(sim.openai_url, redis.url)
    dataset = prompt_set(args.n)
    warm = prompt_set(WARMUP_N)
    # Uncounted: imports, DuckDB's first file, the first actor process on a fresh cluster.
    local_warm = await one_run(
        Kind("warm-up local", args.concurrency, None),
        warm,
        cfg,
        tmp / "warm-local.duckdb",
        sim,
        redis,
    )
    ray_warm = await one_run(
        Kind("warm-up ray 1", args.concurrency, 1), warm, cfg, tmp / "warm-ray.duckdb", sim, redis
    )
    print(
        f"warm-up: local {local_warm['items_per_s']:.0f} items/s, ray 1 worker "
        f"{ray_warm['items_per_s']:.0f} items/s (first worker ready in "
        f"{ray_warm['startup_s']:.2f} s) → {'OK' if local_warm['ok'] and ray_warm['ok'] else 'FAIL'}",
        flush=True,
    )
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        order = kinds if r % 2 == 0 else list(reversed(kinds))
        runs: dict[str, dict[str, Any]] = {}
        for kind in order:
            result = await one_run(
                kind, dataset, cfg, tmp / f"r{r}-{kind.label}.duckdb", sim, redis
            )
            runs[kind.label] = result
            spawn = f", workers ready in {result['startup_s']:.2f} s" if kind.workers else ""
            failed = [k for k, v in result["checks"].items() if not v]
            print(
                f"round {r + 1}, {kind.label}: {result['items_per_s']:.0f} items/s wall, "
                f"{result['run_items_per_s']:.0f} in the run phase{spawn} "
                f"({result['outputs_rows']} outputs / {result['items']} items, "
                f"{result['errors']} errors) → {'OK' if result['ok'] else 'FAIL ' + ','.join(failed)}",
                flush=True,
            )
        rounds.append({"round": r + 1, "order": [k.label for k in order], "runs": runs})
    base = kinds[0].label
    rows = []
    for kind in kinds:
        per = [rd["runs"][kind.label] for rd in rounds]
        ref = [rd["runs"][base] for rd in rounds]

        def med(key: str, per: list[dict[str, Any]] = per) -> float:
            return median([float(p[key]) for p in per])

        rows.append(
            {
                "kind": kind.label,
                "workers": kind.workers,
                "concurrency": kind.concurrency,
                "in_flight": kind.in_flight,
                "ideal_items_per_s": kind.in_flight * 1000 / LATENCY_MS,
                "items_per_s": med("items_per_s"),
                "ratio": median(
                    [p["items_per_s"] / b["items_per_s"] for p, b in zip(per, ref, strict=True)]
                ),
                "run_items_per_s": med("run_items_per_s"),
                "run_ratio": median(
                    [
                        p["run_items_per_s"] / b["run_items_per_s"]
                        for p, b in zip(per, ref, strict=True)
                    ]
                ),
                "startup_s": med("startup_s"),
                "seconds": med("seconds"),
                "outside_s": med("outside_s"),
                "driver_cpu_share": med("driver_cpu_share"),
                "sim_cpu_share": med("sim_cpu_share"),
                "machine_cpu_share": med("machine_cpu_share"),
                "run_driver_cpu_share": med("run_driver_cpu_share"),
                "run_actors_cpu_share": med("run_actors_cpu_share"),
                "engine_cpu_ms_per_item": med("engine_cpu_ms_per_item"),
                "run_sim_cpu_share": med("run_sim_cpu_share"),
                "run_machine_cpu_share": med("run_machine_cpu_share"),
                "redis_commands_per_item": med("redis_commands_per_item"),
                "ok": all(p["ok"] for p in per),
            }
        )
    return {"warmup": {"local": local_warm, "ray": ray_warm}, "rows": rows, "rounds": rounds}


def engines_table(rows: list[dict[str, Any]], base: str) -> str:
    lines = [
        f"| engine | jobs in flight | items/s (wall) | ÷ {base} | items/s (run phase) | ÷ {base} "
        "| ideal items/s | run phase ÷ ideal | workers ready s | other s | driver CPU "
        "| actors CPU | engine CPU ms/item | sim CPU | machine CPU | Redis cmds/item | checks |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        flight = f"{r['workers']} × {r['concurrency']}" if r["workers"] else str(r["concurrency"])
        ready = f"{r['startup_s']:.2f}" if r["workers"] else "–"
        actors = f"{r['run_actors_cpu_share']:.0%}" if r["workers"] else "–"
        lines.append(
            f"| {r['kind']} | {flight} | {r['items_per_s']:.0f} | {r['ratio']:.2f}× "
            f"| {r['run_items_per_s']:.0f} | {r['run_ratio']:.2f}× | {r['ideal_items_per_s']:.0f} "
            f"| {r['run_items_per_s'] / r['ideal_items_per_s']:.0%} | {ready} "
            f"| {r['outside_s']:.2f} | {r['run_driver_cpu_share']:.0%} | {actors} "
            f"| {r['engine_cpu_ms_per_item']:.2f} "
            f"| {r['run_sim_cpu_share']:.0%} | {r['run_machine_cpu_share']:.0%} "
            f"| {r['redis_commands_per_item']:.1f} "
            f"| {'OK' if r['ok'] else 'FAIL'} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------ whole CLI processes
def cli_part(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    def cmd(db: Path, ray: bool) -> list[str]:
        extra = ["--engine", "ray", "--workers", "2"] if ray else ["--engine", "local"]
        return [
            sys.executable,
            "-m",
            "workbench.cli",
            "run",
            "datasets/smoke.jsonl",
            "--no-local",
            "--no-report",
            "--quiet",
            "--db",
            str(db),
            *extra,
        ]

    def timed(label: str, ray: bool, n: int) -> dict[str, Any]:
        db = tmp / f"cli-{label}-{n}.duckdb"
        t0 = time.perf_counter()
        out = subprocess.run(cmd(db, ray), cwd=ROOT, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        ok = (
            out.returncode == 0
            and "finished, 20 done, 20 answered, 0 failed (not held)" in out.stdout
        )
        if not ok:
            print(
                f"cli {label} run {n} FAILED ({out.returncode}): "
                f"{(out.stderr or out.stdout).strip().splitlines()[-1:]}",
                flush=True,
            )
        return {"seconds": wall, "ok": ok, "returncode": out.returncode}

    timed("local", False, -1)  # uncounted: the file cache
    timed("ray", True, -1)
    runs: dict[str, list[dict[str, Any]]] = {"local": [], "ray": []}
    for n in range(args.cli_runs):
        pair = [("local", False), ("ray", True)]
        for label, ray in pair if n % 2 == 0 else reversed(pair):
            runs[label].append(timed(label, ray, n))
        print(
            f"cli run {n + 1}: local {runs['local'][-1]['seconds']:.2f} s, ray --workers 2 "
            f"{runs['ray'][-1]['seconds']:.2f} s",
            flush=True,
        )
    local = median([r["seconds"] for r in runs["local"]])
    ray_s = median([r["seconds"] for r in runs["ray"]])
    return {
        "local_s": local,
        "ray_s": ray_s,
        "difference_s": ray_s - local,
        "ok": all(r["ok"] for v in runs.values() for r in v),
        "runs": runs,
    }


def startup_table(out: dict[str, Any]) -> str:
    rows = out["engines"]["rows"]
    lines = [
        "| start-up | s |",
        "|---|--:|",
        f"| `import ray` | {out['ray_import_s']:.2f} |",
        f"| `ray.init(num_cpus={RAY_CPUS})`, cold | {out['ray_init_s']:.2f} |",
        f"| first worker ready (warm-up run, 1 worker) "
        f"| {out['engines']['warmup']['ray']['startup_s']:.2f} |",
    ]
    for r in rows:
        if r["workers"]:
            lines.append(
                f"| {r['workers']} worker(s) ready (`RayEngine.prepare`, Ray up), median "
                f"| {r['startup_s']:.2f} |"
            )
    cli = out.get("cli")
    if cli:
        lines += [
            f"| `workbench run smoke --engine local`, whole process | {cli['local_s']:.2f} |",
            f"| `workbench run smoke --engine ray --workers 2`, whole process | {cli['ray_s']:.2f} |",
            f"| difference: starting Ray (+ redis-server, 2 workers) from the CLI "
            f"| {cli['difference_s']:.2f} |",
        ]
    return "\n".join(lines)


# ------------------------------------------------------------------ main
def run_all(args: argparse.Namespace) -> int:
    c = args.concurrency
    kinds = [Kind(f"local {c}", c, None)]
    kinds += [Kind(f"ray {w}", c, w) for w in args.workers]
    kinds.append(Kind(f"local {c * 4}", c * 4, None))
    out: dict[str, Any] = {
        "benchmark": "ray_engine",
        "settings": {
            "n": args.n,
            "concurrency": c,
            "rounds": args.rounds,
            "workers": args.workers,
            "cli_runs": args.cli_runs,
            "latency_ms": LATENCY_MS,
            "sim_workers": SIM_WORKERS,
            "ray_num_cpus": RAY_CPUS,
            "config": 'openai_compatible_provider("sim", URL, None, ["bench"]), '
            "router_options redis_url of one redis-server",
        },
        "machine": machine(),
    }
    t_import = time.perf_counter()
    import ray

    out["ray_import_s"] = time.perf_counter() - t_import
    out["machine"]["ray"] = ray.__version__
    ok = True
    with tempfile.TemporaryDirectory(prefix="workbench-ray-bench-") as d:
        tmp = Path(d)
        redis = RedisServer().start()
        try:
            with SimProcess(fleet_toml=FLEET, workers=SIM_WORKERS) as sim:
                t0 = time.perf_counter()
                ray.init(
                    num_cpus=RAY_CPUS,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.ERROR,
                    object_store_memory=200 * 1024 * 1024,
                )
                out["ray_init_s"] = time.perf_counter() - t0
                print(
                    f"import ray {out['ray_import_s']:.2f} s, ray.init {out['ray_init_s']:.2f} s",
                    flush=True,
                )
                try:
                    out["engines"] = asyncio.run(engines_part(args, kinds, sim, redis, tmp))
                finally:
                    ray.shutdown()
        finally:
            redis.cleanup()
        warm = out["engines"]["warmup"]
        ok &= warm["local"]["ok"] and warm["ray"]["ok"]
        ok &= all(r["ok"] for r in out["engines"]["rows"])
        if args.cli_runs > 0:
            out["cli"] = cli_part(args, tmp)
            ok &= out["cli"]["ok"]
    print()
    print(
        f"ray engine: {args.n} one-message items, each answered after {LATENCY_MS} ms by a "
        f"simulator of {SIM_WORKERS} processes; every router's quotas in one redis-server; "
        f"concurrency {c} per process (per actor for ray); median of {args.rounds} rounds, a "
        f"fresh DuckDB file per run; one local Ray (num_cpus={RAY_CPUS}) on {os.cpu_count()} "
        "cores; run phase = on_start to the last output (no worker spawn or teardown); ideal = "
        f"jobs in flight ÷ {LATENCY_MS} ms; other = wall − workers ready − run phase (opening "
        "the run, the flush, stopping the actors); CPU in the run phase: driver, actors (all "
        "together) and simulator as a share of one core, engine = (driver + actors) CPU per "
        "item, machine as a share of all cores (anything else running on it included)"
    )
    print()
    print(engines_table(out["engines"]["rows"], kinds[0].label))
    print()
    print(startup_table(out))
    path = write_json(JSON_NAME, out)
    print(f"\nJSON: {path}")
    print("all checks OK" if ok else "SOME CHECK FAILED")
    return 0 if ok else 1


def _positive_list(text: str) -> list[int]:
    values = [int(x) for x in text.split(",") if x.strip()]
    if not values or min(values) < 1:
        raise ValueError(text)
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=480, help="items per run (default 480)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=16,
        help="jobs in flight per process / per actor (default 16)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--workers", default="1,2,4", help="Ray actor counts (default 1,2,4)")
    parser.add_argument(
        "--cli-runs",
        type=int,
        default=3,
        help="whole `workbench run` processes per engine (default 3; 0 skips)",
    )
    args = parser.parse_args(argv)
    try:
        args.workers = _positive_list(args.workers)
    except ValueError:
        parser.error("--workers is a comma-separated list of integers >= 1")
    if args.n < 1 or args.concurrency < 1 or args.rounds < 1 or args.cli_runs < 0:
        parser.error("--n, --concurrency and --rounds must be >= 1, --cli-runs >= 0")
    # Looked up, not imported: `import ray` is one of the figures.
    missing = [m for m in ("ray", "pyarrow") if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"needs the `ray` extra (pip install -e '.[ray]'): {', '.join(missing)} missing",
            file=sys.stderr,
        )
        return 2
    if redis_server_binary() is None:
        print("needs redis-server on PATH (the shared quotas)", file=sys.stderr)
        return 2
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())
