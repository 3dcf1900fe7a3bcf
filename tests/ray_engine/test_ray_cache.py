"""`--cache` with the Ray engine: the workers answer from the driver's file and send back what
they cache, so a second run, on either engine, asks nothing again."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from ray_files import pong_items, providers_file

from workbench.config.providers_file import load_config
from workbench.errors import WorkbenchError
from workbench.eval.engines.ray.engine import RayEngine
from workbench.eval.engines.ray.worker import CacheSeed, Outbox, ShardWorker, _ShippedCache
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store

pytestmark = pytest.mark.ray

HOUR_S = 3600.0


def run(dataset, config, store, engine=None):
    return asyncio.run(
        run_prompt_set(dataset, config, store, engine=engine, progress=False, cache_ttl_s=HOUR_S)
    )


def cached_of(store: Store, run_id: str) -> tuple[int, int]:
    store.flush()
    sql = "SELECT count(*) FILTER (WHERE cached), count(*) FROM outputs WHERE run_id = ?"
    return store.con.execute(sql, [run_id]).fetchone()


def test_a_ray_runs_cache_answers_the_next_run_on_either_engine(
    ray_cluster, sim, redis_url, tmp_path
):
    config = load_config(providers_file(tmp_path, sim, ["fast"], redis_url=redis_url))
    items = pong_items(tmp_path, 12)
    with Store.open(tmp_path / "cache.duckdb") as store:
        first = run(items, config, store, RayEngine(workers=2))
        asked = len(sim.requests())
        entries = store.con.execute(
            "SELECT provider, model, expires_at_ms - created_at_ms FROM response_cache"
        ).fetchall()
        again = run(items, config, store, RayEngine(workers=2))
        local = run(items, config, store)
        counts = [cached_of(store, s.run_id) for s in (first, again, local)]
        passed = [
            dict(
                store.con.execute(
                    "SELECT item_id, passed FROM outputs WHERE run_id = ?", [s.run_id]
                ).fetchall()
            )
            for s in (first, again, local)
        ]
    assert first.done == again.done == local.done == 12
    assert asked == 12 and len(sim.requests()) == 12  # neither later run sent a request
    assert entries == [("simp", "fast", HOUR_S * 1000)] * 12  # written by the driver, with the TTL
    assert counts == [(0, 12), (12, 12), (12, 12)]
    assert passed[0] == passed[1] == passed[2] and set(passed[0].values()) == {True}


def test_a_worker_answers_from_live_entries_and_ships_what_it_caches(tmp_path):
    """The file's entries of the run's models (provider and model) that are still valid; a worker's own entries
    answer it at once and go to the driver as rows."""
    with Store.open(tmp_path / "entries.duckdb") as store:
        reply = {"text": "pong"}
        store.cache_put("live", "simp", "fast", reply, HOUR_S, now_ms=1_000)
        store.cache_put("forever", "simp", "fast", reply, None, now_ms=1_000)
        store.cache_put("expired", "simp", "fast", reply, 1.0, now_ms=1_000)
        store.cache_put("other", "elsewhere", "fast", reply, HOUR_S, now_ms=1_000)
        store.cache_put("another model", "simp", "slow", reply, HOUR_S, now_ms=1_000)
        live = store.cache_live([("simp", "fast")], now_ms=5_000)
    assert [key for key, _, _ in live] == ["forever", "live"]
    outbox = Outbox()
    cache = _ShippedCache(live, outbox)
    assert cache.get("live", 5_000) == reply and cache.get("live", 1_000 + 3_600_000) is None
    assert cache.get("forever", 10**13) == reply and cache.get("expired", 5_000) is None
    hit = cache.get("live", 5_000)
    assert hit is not None
    hit["text"] = "changed"  # each hit is its own dict: a caller cannot spoil the entry
    assert cache.get("live", 5_000) == reply
    cache.put("new", "simp", "fast", {"text": "new"}, None)
    assert cache.get("new", 10**13) == {"text": "new"}
    assert outbox.counts == {"response_cache": 1}


def test_cache_entries_a_worker_cannot_read_fail_it_in_one_line():
    """Ray's object store never hands the entries over: the worker fails (the driver then
    stops the run with RAY_WORKER_FAILED) rather than waiting without a word."""
    worker = SimpleNamespace(outbox=Outbox(), _configs=[])

    async def read() -> None:
        never = asyncio.get_running_loop().create_future()
        await ShardWorker._use_cache(worker, CacheSeed(HOUR_S, never), wait_s=0.05)  # type: ignore[arg-type]

    with pytest.raises(WorkbenchError) as caught:
        asyncio.run(read())
    assert caught.value.code == "RAY_WORKER_FAILED"
    assert str(caught.value) == (
        "RAY_WORKER_FAILED: could not read the run's cache entries (TimeoutError: not read in "
        "0.05 s)"
    )
