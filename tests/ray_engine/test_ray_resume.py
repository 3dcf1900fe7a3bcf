"""`--resume` across engines, and a driver killed with SIGKILL: its journal makes the run
resumable, by either engine, asking no answered item again."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import duckdb
import pytest
from ray_files import pong_items, providers_file, wait_for_cpus

from workbench.config.providers_file import load_config
from workbench.eval.engines.ray.engine import RayEngine
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store

pytestmark = pytest.mark.ray

CONCURRENCY = 4


def asked(sim, model: str) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in sim.requests() if r.get("model") == model]


class Stop(Exception):
    pass


def test_a_local_run_cut_short_is_finished_by_the_ray_engine(ray_cluster, sim, redis_url, tmp_path):
    config = load_config(providers_file(tmp_path, sim, ["slow"], redis_url=redis_url))
    dataset = pong_items(tmp_path, 40)
    seen: list[str] = []

    def stop_after_ten(item_id, repeat, config_name):
        seen.append(item_id)
        if len(seen) == 10:
            raise Stop

    with Store.open(tmp_path / "mixed.duckdb") as store:
        with pytest.raises(Stop):
            asyncio.run(
                run_prompt_set(
                    dataset,
                    config,
                    store,
                    concurrency=CONCURRENCY,
                    progress=False,
                    on_item=stop_after_ten,
                )
            )
        run_id = store.con.execute("SELECT run_id FROM runs").fetchall()[0][0]
        answered = {item for (item, _, _) in store.replies(run_id)}
        before = len(asked(sim, "slow"))
        sim.reset()
        summary = asyncio.run(
            run_prompt_set(
                dataset,
                config,
                store,
                concurrency=CONCURRENCY,
                progress=False,
                resume=run_id,
                engine=RayEngine(workers=2),
            )
        )
        outputs = store.con.execute(
            "SELECT count(*), count(DISTINCT item_id) FROM outputs WHERE run_id = ?", [run_id]
        ).fetchall()[0]
        attempts = store.con.execute(
            "SELECT count(*), count(DISTINCT attempt_id) FROM attempts WHERE run_id = ?", [run_id]
        ).fetchall()[0]
    assert summary.status == "finished" and summary.skipped >= 10
    assert outputs == (40, 40)
    assert attempts[0] == attempts[1]  # the resumed outputs numbered their tries after the first's
    again = {p.removeprefix("Reply with exactly: ") for p in asked(sim, "slow")}
    assert not {f"pong{int(i.split('-')[1])}" for i in answered} & again  # none asked twice
    assert before + len(again) >= 40


def test_a_killed_ray_driver_resumes_on_the_local_engine(ray_cluster, sim, redis_url, tmp_path):
    """The driver (`workbench run --engine ray`, joining this cluster by its address) is
    SIGKILLed mid-run; `--resume` with the local engine finishes it."""
    items = 240
    providers = providers_file(tmp_path, sim, ["slow"], redis_url=redis_url)
    data = pong_items(tmp_path, items)
    db = tmp_path / "driver.duckdb"
    address = ray_cluster.get_runtime_context().gcs_address

    def command(*extra: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "workbench.cli",
            "run",
            str(data),
            "--providers",
            str(providers),
            "--db",
            str(db),
            "--concurrency",
            str(CONCURRENCY),
            "--quiet",
            "--no-report",
            *extra,
        ]

    driver = subprocess.Popen(
        command("--engine", "ray", "--workers", "2", "--ray-address", address),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 90
    while len(asked(sim, "slow")) < 60:  # well into the run
        assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    driver.stderr.close()
    # The workers die with their owner (their CPUs come back); what they had in flight lands.
    assert wait_for_cpus(ray_cluster, 2) == 2
    time.sleep(0.3)
    received = asked(sim, "slow")

    with Store.open(db) as store:  # replays the journal the killed driver left
        run_id = store.con.execute("SELECT run_id FROM runs").fetchall()[0][0]
        attempts = store.con.execute("SELECT count(*) FROM attempts").fetchall()[0][0]
        answered = {item for (item, _, _) in store.replies(run_id)}
    # Every answer the driver had taken was journaled; the rest were in the workers' outboxes
    # or in flight (at most a batch each, and 2 × CONCURRENCY requests).
    assert 0 < attempts <= len(received)
    assert len(answered) >= 1

    sim.reset()
    resumed = subprocess.run(
        command("--resume", run_id), capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    again = asked(sim, "slow")
    assert not {f"Reply with exactly: pong{int(i.split('-')[1])}" for i in answered} & set(again)
    assert len(again) == len(set(again)) == items - len(answered)
    con = duckdb.connect(str(db), read_only=True)
    outputs = con.execute(
        "SELECT count(*), count(DISTINCT item_id), count(error_code) FROM outputs"
    ).fetchall()[0]
    ids = con.execute("SELECT count(*) = count(DISTINCT attempt_id) FROM attempts").fetchall()[0]
    con.close()
    assert outputs == (items, items, 0)
    assert ids == (True,)
