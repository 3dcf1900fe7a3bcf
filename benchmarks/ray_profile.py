"""Where a Ray run's extra CPU per item goes: py-spy samples of one actor and of the driver,
against the local engine's process sampled the same way.

The set-up is `ray_engine.py`'s (its fleet, prompt set and configuration): a simulator of 4
processes answering every request after 50 ms, every router's quotas in one redis-server the
script starts. Two runs of `--n` items (default 3,000) at concurrency 16: the local engine,
then `RayEngine(workers=1)` on a local Ray the script starts (`num_cpus=4`). `--delay` seconds
into each run (default 4, past the start-up), `py-spy record --format raw --rate 200
--duration 8 --nonblocking` samples the local engine's process; in the Ray run the actor (the
`ray::ShardWorker` process) and the driver at once. py-spy leaves idle threads out.

Printed per process: its samples per item (samples ÷ (seconds sampled × the run's items/s):
comparable between processes at the same rate), and the share of its samples in each group of
frames (`GROUPS`, in priority order, a frame anywhere on the stack; the rest is "other": native
threads with no Python frame). Needs
py-spy (`pip install py-spy`) and the right to trace a process (root, or ptrace allowed).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ray_engine as bench  # this folder's: run as a script, it is on the path
from _sim_process import SimProcess, write_json

from workbench._redis_server import RedisServer
from workbench.eval.engines.ray.engine import RayEngine
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store

RATE_HZ = 200
# (group, a substring of a frame), in priority order: a sample goes to the first group with a
# frame anywhere on its stack (so the runner's work under the event loop is the runner's, and
# the event loop's own polling is what has no frame of ours above it).
GROUPS = [
    ("ray: (de)serializing pulls", "ray/_private/serialization.py"),
    ("ray: (de)serializing pulls", "ray/cloudpickle"),
    ("ray: (de)serializing pulls", "deserialize_objects"),
    ("outbox: Arrow batches", "Outbox."),
    ("outbox: Arrow batches", "to_batch"),
    ("duckdb + journal (the writer)", "workbench/eval/store/database.py"),
    ("duckdb + journal (the writer)", "workbench/eval/store/journal.py"),
    ("the driver's collector and pulls", "engines/ray/collect.py"),
    ("the driver's collector and pulls", "engines/ray/engine.py"),
    ("runner, router, HTTP, Redis", "workbench/"),
    ("runner, router, HTTP, Redis", "httpx"),
    ("runner, router, HTTP, Redis", "aiohttp"),
    ("runner, router, HTTP, Redis", "redis/"),
    ("event loop: polling, socket writes", "asyncio/"),
    ("event loop: polling, socket writes", "selectors.py"),
    ("ray: its own threads and loop", "ray/"),
]


def spy(pid: int, out: Path, seconds: float) -> subprocess.Popen[bytes]:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return subprocess.Popen(
        [
            py_spy,
            "record",
            "-p",
            str(pid),
            "-d",
            str(int(seconds)),
            "-r",
            str(RATE_HZ),
            "--format",
            "raw",
            "-o",
            str(out),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def groups(path: Path) -> tuple[int, dict[str, int]]:
    """(samples, samples per group) of a py-spy raw file (one `frame;frame;... count` a line)."""
    total, found = 0, collections.Counter[str]()
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        group = next((g for g, needle in GROUPS if any(needle in f for f in frames)), "other")
        found[group] += n
    return total, dict(found)


def sampled(
    kind: str,
    pids: dict[str, int] | Callable[[], dict[str, int]],
    tmp: Path,
    delay: float,
    seconds: float,
    run: Callable[[], tuple[int, float]],
) -> list[dict[str, Any]]:
    """Run `run()` (returns (items, wall s)); sample `pids` (name → pid, or a callable giving
    them once the run is under way) from `delay` to `delay + seconds`."""
    files: dict[str, Path] = {}

    def sample() -> None:
        time.sleep(delay)
        targets = pids() if callable(pids) else pids
        procs = []
        for name, pid in targets.items():
            files[name] = tmp / f"{kind}-{name}.txt"
            procs.append(spy(pid, files[name], seconds))
        for proc in procs:
            proc.wait()

    thread = threading.Thread(target=sample)
    thread.start()
    items, wall = run()
    thread.join()
    rate = items / wall
    rows = []
    for name, path in files.items():
        total, found = groups(path) if path.exists() else (0, {})
        rows.append(
            {
                "run": kind,
                "process": name,
                "items_per_s": rate,
                "samples": total,
                "samples_per_item": total / (seconds * rate) if rate else 0.0,
                "groups": found,
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="items per run (default 3000)")
    parser.add_argument("--delay", type=float, default=4.0, help="seconds before sampling")
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds sampled")
    args = parser.parse_args()
    import ray

    tmp = Path(tempfile.mkdtemp())
    dataset = bench.prompt_set(args.n)
    redis = RedisServer()
    redis.start()
    rows: list[dict[str, Any]] = []
    try:
        with SimProcess(fleet_toml=bench.FLEET, workers=bench.SIM_WORKERS) as sim:
            cfg = bench.config(sim.openai_url, redis.url)

            def run(engine: RayEngine | None, db: str) -> tuple[int, float]:
                with Store.open(tmp / db) as store:
                    started = time.perf_counter()
                    summary = asyncio.run(
                        run_prompt_set(
                            dataset, cfg, store, engine=engine, concurrency=16, progress=False
                        )
                    )
                    assert summary.done == args.n and summary.errors == 0, summary
                    return args.n, time.perf_counter() - started

            rows += sampled(
                "local",
                {"local engine": os.getpid()},
                tmp,
                args.delay,
                args.seconds,
                lambda: run(None, "local.duckdb"),
            )
            ray.init(
                num_cpus=4,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,
                object_store_memory=200 * 1024 * 1024,
            )

            def ray_pids() -> dict[str, int]:
                actors = list(bench.actor_cpu_seconds())
                return {"driver": os.getpid()} | {f"actor {pid}": pid for pid in actors}

            engine = RayEngine(workers=1, redis_url=redis.url)
            rows += sampled(
                "ray 1", ray_pids, tmp, args.delay, args.seconds, lambda: run(engine, "ray.duckdb")
            )
            ray.shutdown()
    finally:
        redis.cleanup()
    names = sorted({g for r in rows for g in r["groups"]})
    print(
        f"\nray profile: {args.n} items, concurrency 16, 50 ms a request; py-spy {RATE_HZ} Hz "
        f"for {args.seconds:g} s, {args.delay:g} s into each run; a group's share of the "
        "process's samples\n"
    )
    print("| run | process | items/s | samples/item | " + " | ".join(names) + " |")
    print("|---|---|--:|--:|" + "--:|" * len(names))
    for r in rows:
        shares = [r["groups"].get(g, 0) / r["samples"] if r["samples"] else 0.0 for g in names]
        print(
            f"| {r['run']} | {r['process'].split(' ')[0]} | {r['items_per_s']:.0f} | "
            f"{r['samples_per_item']:.3f} | " + " | ".join(f"{s:.0%}" for s in shares) + " |"
        )
    print(f"\nJSON: {write_json('ray_profile.json', {'rows': rows, 'n': args.n})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
