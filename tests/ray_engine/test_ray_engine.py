"""`--engine ray` on a real local Ray cluster, a real redis-server and a real simulator process:
the same grades as the local engine, quotas exact across workers, a worker killed mid-run,
Redis killed mid-run, and the refusals that come before any request."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from ray_files import pong_items, providers_file, wait_for_cpus

from workbench.config.providers_file import load_config
from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.engines.ray.engine import RayEngine
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store

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


def start_clear_of_a_minute_boundary(margin_s: float) -> None:
    """Return at least `margin_s` before the next calendar minute (sleeping into it if need be)."""
    left = 60 - time.time() % 60
    if left < margin_s:
        time.sleep(left + 0.05)


def grades(store: Store, run_id: str) -> dict[str, str]:
    return dict(rows(store, "SELECT item_id, grade FROM outputs WHERE run_id = ?", run_id))


def test_the_same_grades_per_item_as_the_local_engine(ray_cluster, sim, redis_url, tmp_path):
    """The tool-calling set (tool loops, proposals, prose and native calls) on both engines."""
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    dataset = ROOT / "datasets" / "tool_calling.jsonl"
    with Store.open(tmp_path / "local.duckdb") as store:
        local = run(dataset, config, store, concurrency=4)
        want = grades(store, local.run_id)
    with Store.open(tmp_path / "ray.duckdb") as store:
        summary = run(dataset, config, store, RayEngine(workers=2), concurrency=4)
        got = grades(store, summary.run_id)
        proposals = rows(store, "SELECT count(*) FROM actions WHERE run_id = ?", summary.run_id)
        engine = rows(
            store, "SELECT settings->>'engine' FROM runs WHERE run_id = ?", summary.run_id
        )
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
    # The quota counts calendar minutes when a request is reserved; the simulator logs when it
    # arrives. Twelve reserved in a minute's last milliseconds arrive in the next one, beside
    # that minute's own twelve (a CI run saw 24): the run starts clear of the boundary.
    start_clear_of_a_minute_boundary(margin_s=20)
    with Store.open(tmp_path / "rpm.duckdb") as store:
        summary = run(pong_items(tmp_path, 60), config, store, RayEngine(workers=2), concurrency=16)
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
        summary = run(
            pong_items(tmp_path, items), config, store, engine, concurrency=4, on_item=on_item
        )
        outputs = rows(
            store,
            "SELECT item_id, count(*) FROM outputs WHERE run_id = ? GROUP BY ALL",
            summary.run_id,
        )
        attempts = rows(
            store,
            "SELECT count(*), count(DISTINCT attempt_id), "
            "count(*) FILTER (outcome = 'ok') FROM attempts "
            "WHERE run_id = ?",
            summary.run_id,
        )
        replies = rows(store, "SELECT count(*) FROM replies WHERE run_id = ?", summary.run_id)
    assert killed, "the run ended before a worker could be killed"
    assert summary.status == "finished" and summary.done == items
    assert len(outputs) == items and {n for _, n in outputs} == {1}
    logged, distinct, answered = attempts[0]
    assert logged == distinct  # no attempt logged twice
    # Every answer the driver holds has its attempt; only what the lost worker had in flight
    # (its 4 jobs) or had not yet sent (its last batch: a few jobs at 60 ms each) was asked
    # again.
    assert answered == replies[0][0] >= items
    received = len(model_requests(sim, "slow"))
    assert items <= received <= items + 12
    assert any("was lost" in line for line in said)
    assert any("unfinished job(s) go to worker" in line for line in said)
    # Both workers are in the summary, the lost one's share counted by the driver.
    assert [(w["worker"], w["lost"]) for w in summary.workers] == [(0, True), (1, False)]
    assert sum(w["outputs"] for w in summary.workers) == items
    assert "seconds" in summary.workers[1] and "seconds" not in summary.workers[0]


def test_redis_killed_mid_run_keeps_the_workers_going(
    ray_cluster, sim, redis_server, redis_url, tmp_path
):
    """Redis dies once the run has begun: every worker has reached it and built its routers on
    it, and every worker still has all its requests to make. Killing it after the driver had
    counted some outputs raced a fast worker that had already made its whole share (the driver
    takes a worker's outputs in batches): that worker never asked again, so it had no window.
    """
    limited = {"id": "fast", "rpm": 100000}
    config = load_config(providers_file(tmp_path, sim, [limited], redis_url=redis_url))
    said: list[str] = []

    class RedisDiesAsTheJobsBegin(RayEngine):
        async def run(self, *args, **kwargs):
            assert all(w.info for w in self._pool)  # each worker reached Redis (`ready`)
            redis_server.kill()
            return await super().run(*args, **kwargs)

    items = 60
    with Store.open(tmp_path / "redis.duckdb") as store:
        summary = run(
            pong_items(tmp_path, items),
            config,
            store,
            RedisDiesAsTheJobsBegin(workers=2, say=said.append),
            concurrency=2,
        )
        outputs = rows(
            store, "SELECT count(*) FROM outputs WHERE run_id = ? AND passed", summary.run_id
        )
    assert not redis_server.alive
    assert summary.status == "finished" and summary.done == items and summary.errors == 0
    assert outputs[0][0] == items
    # Both workers asked after Redis died: each said so, and each has its one window.
    assert all(len(w["memory_windows"]) == 1 for w in summary.workers), summary.workers
    for w in summary.workers:
        start, end, reason = w["memory_windows"][0]
        assert end is None and start > 0 and reason
        assert any(f"worker {w['worker']} (ray): Redis failed" in line for line in said), said
    from workbench.cli.wording import run_summary_lines

    assert any("quotas per worker, not shared" in line for line in run_summary_lines(summary))


# ------------------------------------------------------------------ refused before any request
def refused(tmp_path, sim, engine, redis_url, **kw) -> tuple[WorkbenchError, int]:
    """Run 3 items on `engine` expecting a refusal: the error, and the runs the file holds."""
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    with Store.open(tmp_path / "refused.duckdb") as store:
        with pytest.raises(WorkbenchError) as caught:
            run(pong_items(tmp_path, 3), config, store, engine, **kw)
        return caught.value, rows(store, "SELECT count(*) FROM runs")[0][0]


def test_an_unreachable_ray_address_is_refused_before_any_request(sim, redis_url, tmp_path):
    pytest.importorskip("ray")
    error, runs = refused(tmp_path, sim, RayEngine(workers=2, address="127.0.0.1:1"), redis_url)
    assert isinstance(error, ConfigError) and error.code == "RAY_UNREACHABLE"
    assert "127.0.0.1:1" in str(error) and "\n" not in str(error)
    assert runs == 0 and sim.requests() == []


def test_a_remote_cluster_without_redis_is_refused(sim, tmp_path):
    pytest.importorskip("ray")
    error, runs = refused(tmp_path, sim, RayEngine(workers=2, address="127.0.0.1:1"), None)
    assert isinstance(error, ConfigError) and error.code == "RAY_NEEDS_REDIS"
    assert runs == 0 and sim.requests() == []


def test_a_redis_the_workers_cannot_reach_is_refused_before_any_request(ray_cluster, sim, tmp_path):
    from redis_server import free_port

    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    error, runs = refused(tmp_path, sim, RayEngine(workers=2), url)
    assert error.code == "RAY_REDIS_UNREACHABLE"
    assert "hunter2" not in str(error) and "***@127.0.0.1" in str(error)
    assert runs == 0 and sim.requests() == []


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
    monkeypatch.setattr(ray, "shutdown", lambda: None)  # the session's cluster is not ours to stop
    server = socket_server()
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    with Store.open(tmp_path / "d.duckdb") as store:
        with pytest.raises(ConfigError) as caught:
            run(
                pong_items(tmp_path, 3),
                config,
                store,
                RayEngine(workers=1, address=f"127.0.0.1:{server.getsockname()[1]}"),
            )
    server.close()
    assert caught.value.code == "RAY_VERSION_MISMATCH"
    assert str(caught.value) == (
        "RAY_VERSION_MISMATCH: Ray version mismatch: the cluster runs Ray 2.59.0 on Python 3.12.1, this process Ray "
        "2.60.0 on Python 3.11.7; install the cluster's versions"
    )
    assert sim.requests() == []


def test_router_objects_are_refused(sim, redis_url, tmp_path):
    pytest.importorskip("ray")
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    with Store.open(tmp_path / "e.duckdb") as store:
        with pytest.raises(ConfigError) as caught:
            run(pong_items(tmp_path, 3), config.build_router(), store, RayEngine(workers=1))
        assert caught.value.code == "RAY_INVALID"
    assert sim.requests() == []


def socket_server():
    """A listening TCP socket: an address that answers, so the check reaches `ray.init`."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server


def steps_by_output(store: Store, run_id: str) -> Counter:
    return Counter(
        rows(store, "SELECT item_id, ok IS NOT NULL FROM tool_steps WHERE run_id = ?", run_id)
    )


def test_every_worker_killed_on_tool_loops_logs_what_the_local_engine_logs(
    ray_cluster, sim, redis_url, tmp_path
):
    """Tool loops (several turns, tools run between them) with BOTH workers killed at once
    mid-run: a new worker finishes, replaying the answered turns; the outputs, grades and tool
    steps are those of the local engine's run, none twice."""
    config = load_config(providers_file(tmp_path, sim, ["slow"], redis_url=redis_url))
    dataset = ROOT / "datasets" / "tool_calling.jsonl"
    with Store.open(tmp_path / "local.duckdb") as store:
        local = run(dataset, config, store, concurrency=4)
        want_grades = grades(store, local.run_id)
        want_steps = steps_by_output(store, local.run_id)
    said: list[str] = []
    engine = RayEngine(workers=2, say=said.append)
    done: list[str] = []

    def on_item(item_id, repeat, config_name):
        done.append(item_id)
        if len(done) == 12:
            for worker in engine._pool:
                ray_cluster.kill(worker.handle, no_restart=True)

    with Store.open(tmp_path / "ray.duckdb") as store:
        summary = run(dataset, config, store, engine, concurrency=4, on_item=on_item)
        got_grades = grades(store, summary.run_id)
        got_steps = steps_by_output(store, summary.run_id)
        ids = rows(store, "SELECT count(*) = count(DISTINCT attempt_id) FROM attempts")
    assert summary.status == "finished" and summary.done == local.done
    assert got_grades == want_grades
    assert got_steps == want_steps  # every step once: none lost, none logged twice
    assert ids == [(True,)]
    assert [w["lost"] for w in summary.workers] == [True, True, False]  # a third one finished
    assert sum(w["outputs"] for w in summary.workers) == summary.done
    assert sum("was lost" in line for line in said) == 2


def test_a_bad_resume_leaves_nothing_running(ray_cluster, sim, tmp_path):
    """An unknown --resume is refused before the engine starts anything: no redis-server, no
    worker, every CPU free."""
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=None))
    engine = RayEngine(workers=2, say=lambda line: None)
    started: list[int] = []
    real_redis_for = engine._redis_for

    def watched(configs):
        url = real_redis_for(configs)
        started.append(engine._redis.port)
        return url

    engine._redis_for = watched  # type: ignore[method-assign]
    with Store.open(tmp_path / "f.duckdb") as store:
        with pytest.raises(ConfigError) as caught:
            run(pong_items(tmp_path, 3), config, store, engine, resume="no-such-run")
    assert caught.value.code == "RUN_UNKNOWN"
    assert started == []  # the engine never started its redis-server
    assert engine._pool == [] and engine._redis is None
    assert wait_for_cpus(ray_cluster, 2) == 2  # both workers' CPUs back
    assert sim.requests() == []


def test_a_batch_sent_twice_is_logged_once(tmp_path):
    """The pull protocol: a batch not acknowledged is sent again, and the driver's collector
    logs its rows once (attempt ids, output keys)."""
    pytest.importorskip("pyarrow")
    from workbench.eval.dataset.prompt_set import Item
    from workbench.eval.engines.ray.collect import Collector, WorkerTally
    from workbench.eval.engines.ray.worker import Outbox
    from workbench.eval.run.jobs import Job
    from workbench.eval.store.schema import OutputRow
    from workbench.events import AttemptEvent

    outbox = Outbox()
    sink = outbox.sink("r1", "i1", 0, "c")
    sink(AttemptEvent(key="p:m", lane=None, outcome="ok", start_ms=1, latency_ms=1.0))
    outbox.add_output(OutputRow(run_id="r1", item_id="i1", repeat=0, config="c", passed=True))

    async def take(after):
        return await outbox.take(after, wait_s=0.0, gather_s=0.0)

    first = asyncio.run(take(0))
    again = asyncio.run(take(0))  # the driver never acknowledged it
    assert [b[0] for b in first] == [b[0] for b in again] == [1]
    assert asyncio.run(take(1)) == []  # acknowledged: dropped

    with Store.open(tmp_path / "g.duckdb") as store:
        finished: list = []
        job = Job(Item(id="i1", messages=({"role": "user", "content": "hi"},)), 0, "c")
        collector = Collector(store, "r1", [job], finished.append, lambda line: None)
        worker = WorkerTally(0, None)
        for _seq, tables, other in first + again:
            collector.apply(worker, tables, other)
        counts = rows(
            store, "SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM outputs)"
        )
    assert counts == [(1, 1)] and len(finished) == 1
    assert (worker.outputs, worker.attempts) == (1, 1)


def test_more_workers_than_free_cpus_is_refused_not_queued(ray_cluster, sim, redis_url, tmp_path):
    """Ray would queue a third worker on a 2-CPU cluster forever: refused, in one line."""
    import functools

    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    assert wait_for_cpus(ray_cluster, 2) == 2  # the previous test's workers are gone
    engine = RayEngine(workers=3)
    engine._cpus_free = functools.partial(RayEngine._cpus_free, engine, wait_s=0.5)  # type: ignore[method-assign]
    with Store.open(tmp_path / "h.duckdb") as store:
        with pytest.raises(ConfigError) as caught:
            run(pong_items(tmp_path, 3), config, store, engine)
    assert caught.value.code == "RAY_INVALID"
    assert "2 CPU(s) free for 3 worker(s)" in str(caught.value)
    assert sim.requests() == []


def test_capability_records_go_through_redis_and_stay_in_the_file(
    ray_cluster, sim, redis_url, tmp_path
):
    """What the DuckDB file already knew is in the shared Redis for the workers to plan
    from; what the workers observed is in the file at the end."""
    from workbench.capability.decide import CapabilityRecord
    from workbench.capability.store_redis import RedisCapabilityStore

    known = CapabilityRecord(
        "elsewhere",
        "old-model",
        "-",
        "tools",
        "native",
        "2026-11-01T00:00:00+00:00",
        "probe",
        "seeded",
    )
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    with Store.open(tmp_path / "caps.duckdb") as store:
        store.put_capability(known)
        run(ROOT / "datasets" / "smoke.jsonl", config, store, RayEngine(workers=2), concurrency=4)
        kept = {(r.provider, r.model, r.capability) for r in store.capability_records()}

    async def shared():
        redis = RedisCapabilityStore(redis_url)
        try:
            return {(r.provider, r.model, r.capability) for r in await redis.all()}
        finally:
            await redis.close()

    in_redis = asyncio.run(shared())
    assert ("elsewhere", "old-model", "tools") in in_redis  # seeded from the file
    observed = in_redis - {("elsewhere", "old-model", "tools")}
    assert any(model == "fast" for _, model, _ in observed)  # the workers' own observations
    assert observed <= kept  # ... kept in the DuckDB file


def test_a_workers_memory_window_spans_every_config_on_memory():
    """Two configurations' quotas fall back to memory, one comes back, then the other: the
    window in which the worker's quotas were its own closes with the last."""
    from workbench.eval.engines.ray.collect import WorkerTally

    w = WorkerTally(0, None)
    w.backend("a", True, 100, "ConnectionError")
    w.backend("b", True, 150, "ConnectionError")
    w.backend("a", False, 200, "")
    assert w.windows == [[100, None, "ConnectionError"]]
    w.backend("b", False, 300, "")
    w.backend("a", True, 400, "TimeoutError")
    assert w.windows == [[100, 300, "ConnectionError"], [400, None, "TimeoutError"]]
    assert w.summary()["memory_windows"] == w.windows


def test_an_output_lost_with_its_workers_is_made_again_by_a_resume(tmp_path):
    """`RAY_WORKER_LOST` says the job was never made: `done()` leaves it to the resume."""
    from workbench.eval.store.schema import OutputRow

    with Store.open(tmp_path / "i.duckdb") as store:
        run_id = store.start_run(
            name=None, dataset="d", dataset_sha="x", configs=["c"], settings={}
        )
        store.add_output(
            OutputRow(
                run_id=run_id, item_id="a", repeat=0, config="c", error_code="RAY_WORKER_LOST"
            )
        )
        store.add_output(
            OutputRow(
                run_id=run_id, item_id="b", repeat=0, config="c", error_code="PROVIDER_NETWORK"
            )
        )
        assert store.done(run_id) == {("b", 0, "c")}


def test_an_item_the_provider_refused_is_held_and_answered_on_a_worker(
    ray_cluster, redis_url, tmp_path
):
    """run_jobs is the loop of both engines: a worker holds a refused item and asks again."""
    from workbench.sim.process import SimProcess

    fleet = (
        'seed = 1\n[[persona]]\nid = "held"\ntool_style = "native"\nlatency_ms = 2\n'
        'retry_after_s = 0.2\nfailures = [{ kind = "429", at = [1, 2] }, { kind = "500", at = [4] }]\n'
    )
    with SimProcess(fleet_toml=fleet) as sim:
        extra = "cooldown_s = 0.2\ncooldown_jitter_s = 0\n"
        config = load_config(
            providers_file(tmp_path, sim, ["held"], redis_url=redis_url, extra=extra)
        )
        with Store.open(tmp_path / "held.duckdb") as store:
            summary = run(
                pong_items(tmp_path, 6), config, store, RayEngine(workers=2), concurrency=2
            )
            refused = rows(
                store,
                "SELECT count(*) FROM attempts WHERE run_id = ? AND status IN (429, 500)",
                summary.run_id,
            )
            held = rows(
                store,
                "SELECT count(*) FROM outputs WHERE unanswered IS NOT NULL AND run_id = ?",
                summary.run_id,
            )
    assert summary.status == "finished" and summary.answered == 6 and summary.unanswered == {}
    assert refused == [(3,)] and held == [(0,)]
