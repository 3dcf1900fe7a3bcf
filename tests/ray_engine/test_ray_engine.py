"""`--engine ray` on a real local Ray cluster, a real redis-server and a real simulator process:
the same grades as the local engine, quotas exact across workers, a worker killed mid-run,
Redis killed mid-run, and the refusals that come before any request."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from pathlib import Path

import pytest
from ray_files import pong_items, providers_file

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.config import load_config
from workbench.eval.ray_engine import RayEngine
from workbench.eval.runner import run_prompt_set
from workbench.eval.store import Store

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]


def run(dataset, config, store, engine=None, **kw):
    kw.setdefault("progress", False)
    return asyncio.run(run_prompt_set(dataset, config, store, engine=engine, **kw))


def rows(store: Store, sql: str, *params):
    store.flush()
    return store.con.execute(sql, list(params)).fetchall()


def model_requests(sim, model: str) -> list[dict]:
    return [r for r in sim.requests() if r.get("model") == model]


def test_the_same_grades_per_item_as_the_local_engine(ray_cluster, sim, redis_url, tmp_path):
    """The tool-calling set (tool loops, proposals, prose and native calls) on both engines."""
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    dataset = ROOT / "datasets" / "tool_calling.jsonl"
    with Store.open(tmp_path / "local.duckdb") as store:
        local = run(dataset, config, store, concurrency=4)
        want = dict(rows(store, "SELECT item_id, grade FROM outputs WHERE run_id = ?",
                         local.run_id))  # fmt: skip
    with Store.open(tmp_path / "ray.duckdb") as store:
        summary = run(dataset, config, store, RayEngine(workers=2), concurrency=4)
        got = dict(rows(store, "SELECT item_id, grade FROM outputs WHERE run_id = ?",
                        summary.run_id))  # fmt: skip
        proposals = rows(store, "SELECT count(*) FROM actions WHERE run_id = ?", summary.run_id)
        engine = rows(store, "SELECT settings->>'engine' FROM runs WHERE run_id = ?",
                      summary.run_id)  # fmt: skip
    assert summary.status == "finished" and summary.done == local.done == len(want)
    assert got == want
    assert summary.passed == local.passed
    assert proposals[0][0] > 0  # write tools proposed in the workers, held in the driver's file
    assert '"ray"' in engine[0][0]
    # Each worker's stats() came back and is summed in the summary.
    assert len(summary.workers) == 2
    assert sum(w["outputs"] for w in summary.workers) == summary.done


def test_two_workers_never_exceed_a_models_rpm(ray_cluster, sim, redis_url, tmp_path):
    """2 workers × 16 in flight against a model allowed 12 requests a minute: the simulator
    receives at most 12 in any minute (each worker alone would have allowed 12)."""
    limited = {"id": "limited", "rpm": 12}
    config = load_config(providers_file(tmp_path, sim, [limited, "fast"], redis_url=redis_url))
    with Store.open(tmp_path / "rpm.duckdb") as store:
        summary = run(pong_items(tmp_path, 60), config, store, RayEngine(workers=2),
                      concurrency=16)  # fmt: skip
    assert summary.done == 60 and summary.errors == 0
    per_minute = Counter(r["time"][:16] for r in model_requests(sim, "limited"))
    assert per_minute, "the limited model was never asked"
    assert max(per_minute.values()) <= 12, per_minute
    assert sum(per_minute.values()) >= 12  # the limit bound: the rest fell back to `fast`
    assert len(model_requests(sim, "fast")) >= 60 - sum(per_minute.values())


@pytest.mark.parametrize("how", ["ray.kill", "SIGKILL"])
def test_a_worker_killed_mid_run_leaves_every_item_exactly_once(
    ray_cluster, sim, redis_url, tmp_path, how
):
    config = load_config(providers_file(tmp_path, sim, ["slow"], redis_url=redis_url))
    engine = RayEngine(workers=2, say=lambda line: said.append(line))
    said: list[str] = []
    killed: list[int] = []

    def on_item(item_id, repeat, config_name):
        if len(killed) == 0 and len(done) >= 8:
            victim = engine._pool[0]
            killed.append(victim.index)
            if how == "ray.kill":
                ray_cluster.kill(victim.handle, no_restart=True)
            else:
                os.kill(victim.info["pid"], signal.SIGKILL)
        done.append(item_id)

    done: list[str] = []
    items = 60
    with Store.open(tmp_path / "kill.duckdb") as store:
        summary = run(pong_items(tmp_path, items), config, store, engine, concurrency=4,
                      on_item=on_item)  # fmt: skip
        outputs = rows(store, "SELECT item_id, count(*) FROM outputs WHERE run_id = ? "
                              "GROUP BY ALL", summary.run_id)  # fmt: skip
        attempts = rows(store, "SELECT count(*), count(DISTINCT attempt_id), "
                               "count(*) FILTER (outcome = 'ok') FROM attempts "
                               "WHERE run_id = ?", summary.run_id)  # fmt: skip
        replies = rows(store, "SELECT count(*) FROM replies WHERE run_id = ?", summary.run_id)
    assert killed, "the run ended before a worker could be killed"
    assert summary.status == "finished" and summary.done == items
    assert len(outputs) == items and {n for _, n in outputs} == {1}
    logged, distinct, answered = attempts[0]
    assert logged == distinct  # no attempt logged twice
    # Every answer the driver holds has its attempt; only what the lost worker had in flight
    # (at most its 4 jobs, not yet sent to the driver) was asked twice.
    assert answered == replies[0][0] >= items
    received = len(model_requests(sim, "slow"))
    assert items <= received <= items + 4 + 4
    assert any("was lost" in line for line in said)
    assert any("unfinished job(s) go to worker" in line for line in said)
    assert [w["worker"] for w in summary.workers] == [1]  # the survivor's stats


def test_redis_killed_mid_run_keeps_the_workers_going(
    ray_cluster, sim, redis_server, redis_url, tmp_path
):
    limited = {"id": "fast", "rpm": 100000}
    config = load_config(providers_file(tmp_path, sim, [limited], redis_url=redis_url))
    said: list[str] = []
    done: list[str] = []

    def on_item(item_id, repeat, config_name):
        done.append(item_id)
        if len(done) == 10:
            redis_server.kill()

    items = 60
    with Store.open(tmp_path / "redis.duckdb") as store:
        summary = run(pong_items(tmp_path, items), config, store,
                      RayEngine(workers=2, say=said.append), concurrency=2,
                      on_item=on_item)  # fmt: skip
        outputs = rows(store, "SELECT count(*) FROM outputs WHERE run_id = ? AND passed",
                       summary.run_id)  # fmt: skip
    assert not redis_server.alive
    assert summary.status == "finished" and summary.done == items and summary.errors == 0
    assert outputs[0][0] == items
    windows = [w for worker in summary.workers for w in worker["memory_windows"]]
    assert windows, "no worker said its quotas went to memory"
    assert any("its quotas are its own" in line for line in said)
    from workbench.eval.runner import describe

    assert any("quotas per worker, not shared" in line for line in describe(summary))


# ------------------------------------------------------------------ refused before any request
def test_an_unreachable_ray_address_is_refused_before_any_request(sim, redis_url, tmp_path):
    pytest.importorskip("ray")
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    with Store.open(tmp_path / "a.duckdb") as store:
        with pytest.raises(ConfigError) as caught:
            run(pong_items(tmp_path, 3), config, store,
                RayEngine(workers=2, address="127.0.0.1:1"))  # fmt: skip
        runs = rows(store, "SELECT count(*) FROM runs")
    assert caught.value.code == "RAY_UNREACHABLE"
    assert "127.0.0.1:1" in str(caught.value) and "\n" not in str(caught.value)
    assert runs[0][0] == 0 and sim.requests() == []


def test_a_remote_cluster_without_redis_is_refused(sim, tmp_path):
    pytest.importorskip("ray")
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=None))
    with Store.open(tmp_path / "b.duckdb") as store:
        with pytest.raises(ConfigError) as caught:
            run(pong_items(tmp_path, 3), config, store,
                RayEngine(workers=2, address="127.0.0.1:1"))  # fmt: skip
    assert caught.value.code == "RAY_NEEDS_REDIS"
    assert sim.requests() == []


def test_a_redis_the_workers_cannot_reach_is_refused_before_any_request(ray_cluster, sim, tmp_path):
    from redis_server import free_port

    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=url))
    with Store.open(tmp_path / "c.duckdb") as store:
        with pytest.raises(WorkbenchError) as caught:
            run(pong_items(tmp_path, 3), config, store, RayEngine(workers=2))
        runs = rows(store, "SELECT count(*) FROM runs")
    assert caught.value.code == "RAY_REDIS_UNREACHABLE"
    assert "hunter2" not in str(caught.value) and "***@127.0.0.1" in str(caught.value)
    assert runs[0][0] == 0 and sim.requests() == []


def test_a_ray_version_mismatch_is_one_line(monkeypatch, sim, redis_url, tmp_path):
    """Ray's own check raises this text (ray._private.utils.check_version_info); the cluster
    of another version cannot be had here, so its refusal is replayed."""
    ray = pytest.importorskip("ray")
    text = (
        "Version mismatch: The cluster was started with:\n    Ray: 2.59.0\n    Python: 3.12.1\n"
        "This process on node 127.0.0.1 was started with:\n    Ray: 2.60.0\n    Python: 3.11.7\n"
    )

    def refuse(*args, **kwargs):
        raise RuntimeError(text)

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    server = socket_server()
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    with Store.open(tmp_path / "d.duckdb") as store:
        with pytest.raises(ConfigError) as caught:
            run(pong_items(tmp_path, 3), config, store,
                RayEngine(workers=1, address=f"127.0.0.1:{server.getsockname()[1]}"))  # fmt: skip
    server.close()
    assert caught.value.code == "RAY_VERSION_MISMATCH"
    assert str(caught.value) == (
        "RAY_VERSION_MISMATCH: Ray version mismatch: the cluster runs Ray 2.59.0 on Python 3.12.1, this process Ray "
        "2.60.0 on Python 3.11.7; install the cluster's versions"
    )
    assert sim.requests() == []


def test_router_objects_and_the_cache_are_refused(sim, redis_url, tmp_path):
    pytest.importorskip("ray")
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    with Store.open(tmp_path / "e.duckdb") as store:
        for entries, kw in ((config.build_router(), {}), (config, {"cache_ttl_s": 60.0})):
            with pytest.raises(ConfigError) as caught:
                run(pong_items(tmp_path, 3), entries, store, RayEngine(workers=1), **kw)
            assert caught.value.code == "RAY_INVALID"
    assert sim.requests() == []


def socket_server():
    """A listening TCP socket: an address that answers, so the check reaches `ray.init`."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server
