"""A run's settings are one `RunConfig`, recorded whole in its row: the run can be made again
from the row alone."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import open_dataset
from workbench.eval.run.options import RunConfig, RunHooks
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.sim import SimServer
from workbench.sim.fleet_providers import sim_chain_config

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "smoke.jsonl"

# Every setting off its default, so that a setting the row forgets reads back as the default
# and fails the round trip. `resume` is the exception: it names the run it finishes, whose row
# was written when that run started. A batch run takes no cassette: the cassette's two settings
# make their round trip in tests/cassettes/test_record_replay.py.
CHANGED = RunConfig(
    concurrency=3,
    repeats=2,
    tools_mode="text",
    cache_ttl_s=600.0,
    mask=False,
    tool_loop=False,
    run_name="remade",
    limit=3,
    batch=True,
    max_wait_s=120.0,
    max_tries=4,
    bfcl_web="http://127.0.0.1:8765",
)
NOT_IN_A_NEW_RUN = {"resume", "cassette", "cassette_mode"}


def test_the_changed_config_leaves_no_setting_at_its_default():
    defaults = RunConfig()
    for f in dataclasses.fields(RunConfig):
        if f.name not in NOT_IN_A_NEW_RUN:
            assert getattr(CHANGED, f.name) != getattr(defaults, f.name), f.name


async def test_a_run_is_made_again_from_its_row(tmp_path):
    async with SimServer() as sim:
        with Store.open(tmp_path / "run.duckdb") as store:
            first = await run_prompt_set(
                SMOKE, sim_chain_config(sim), store, config=CHANGED, progress=False
            )
            row = store.get_run(first.run_id)
            remade = RunConfig.from_row(row)
            for f in dataclasses.fields(RunConfig):
                assert getattr(remade, f.name) == getattr(CHANGED, f.name), f.name
            assert remade == CHANGED
            assert RunConfig.from_row(store.run(first.run_id)) == CHANGED  # the typed read too
            quiet = RunHooks(progress=False)
            again = await run_prompt_set(
                row["dataset"], sim_chain_config(sim), store, config=remade, hooks=quiet
            )
            second = store.get_run(again.run_id)
    assert again.run_id != first.run_id
    assert first.done == again.done == 3 * 2  # the limit and the repeats were made again
    assert second["config"] == row["config"]
    assert second["settings"] == row["settings"]
    assert (second["name"], second["dataset_sha"]) == (row["name"], row["dataset_sha"])


async def test_the_row_holds_every_setting(tmp_path):
    async with SimServer() as sim:
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                SMOKE, sim_chain_config(sim), store, limit=1, progress=False
            )
            stored = store.get_run(summary.run_id)["config"]
    assert set(stored) == {f.name for f in dataclasses.fields(RunConfig)}
    assert stored["limit"] == 1 and stored["concurrency"] == RunConfig().concurrency


async def test_keywords_name_settings_or_hooks_and_nothing_else(tmp_path):
    with Store.open(tmp_path / "run.duckdb") as store:
        with pytest.raises(ConfigError) as info:
            await run_prompt_set(SMOKE, [], store, concurency=4)
        assert info.value.code == "RUN_INVALID" and "concurency" in str(info.value)
        with pytest.raises(TypeError):  # settings are keywords: no two of them swap silently
            await run_prompt_set(SMOKE, [], store, 8)  # type: ignore[misc]
        assert store.con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"concurrency": 0}, "concurrency and repeats must be at least 1"),
        ({"repeats": 0}, "concurrency and repeats must be at least 1"),
        ({"tools_mode": "json"}, "tools_mode must be plan, native or text, not 'json'"),
        ({"limit": 0}, "--limit must be at least 1"),
        # A bool is an int to Python: True must not pass as one second, or as one try.
        (
            {"max_wait_s": True},
            "max_wait_s (--max-wait) must be a positive number of seconds, not True",
        ),
        ({"max_tries": True}, "max_tries (--max-tries) must be at least 1, not True"),
    ],
)
def test_a_bad_setting_is_refused_when_the_config_is_made(changes, message):
    with pytest.raises(ConfigError) as info:
        RunConfig(**changes)
    assert info.value.code == "RUN_INVALID" and str(info.value) == f"RUN_INVALID: {message}"
    with pytest.raises(ConfigError):
        RunConfig().replace(**changes)


def test_probe_is_plan_to_the_router_and_stays_probe_in_the_row():
    config = RunConfig(tools_mode="probe")
    assert config.mode == "plan"
    assert RunConfig.from_json(config.to_json()) == config


def test_a_row_written_by_a_newer_workbench_is_read_without_its_unknown_settings():
    row = json.loads(RunConfig(concurrency=3).to_json()) | {"a_setting_from_later": 1}
    assert RunConfig.from_json(json.dumps(row)) == RunConfig(concurrency=3)
    with pytest.raises(ConfigError) as refused:  # a caller's unknown option is still refused
        RunConfig().replace(a_setting_from_later=1)
    assert refused.value.code == "RUN_INVALID"


async def test_an_opened_prompt_set_brings_its_limit(tmp_path):
    opened = open_dataset(SMOKE, limit=2)
    async with SimServer() as sim:
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(opened, sim_chain_config(sim), store, progress=False)
            assert store.get_run(summary.run_id)["config"]["limit"] == 2
            with pytest.raises(ConfigError) as info:
                await run_prompt_set(opened, sim_chain_config(sim), store, limit=5, progress=False)
    assert info.value.code == "RUN_INVALID"


def test_a_row_from_before_the_config_column_reads_its_settings():
    settings = {"concurrency": 4, "repeats": 2, "tools_mode": "native", "cache_ttl_s": None}
    row = {"name": "old", "config": None, "settings": settings | {"engine": "local"}}
    assert RunConfig.from_row(row) == RunConfig(
        concurrency=4, repeats=2, tools_mode="native", run_name="old"
    )
