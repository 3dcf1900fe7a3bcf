"""A run never loses an item to the provider's refusals: held and asked again, or logged
unanswered with its reason. Real simulator, real DuckDB file."""

from __future__ import annotations

import functools
import json
import random
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from workbench.cli import wording
from workbench.config.providers_file import ProvidersConfig, load_config
from workbench.eval.run import jobs
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers.gemini import gemini_provider
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.providers.spec import ModelSpec
from workbench.sim import SimServer

# A router that cools a refused model exactly as long as the refusal says: holds stay short.
FAST = {"cooldown_jitter_s": 0.0, "cooldown_s": 0.2, "attempt_timeout_s": 5.0}


def _items(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "items.jsonl"
    rows = (
        {"id": f"i{k:02}", "prompt": "Reply with exactly: pong", "expect": {"contains": ["pong"]}}
        for k in range(n)
    )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _persona(pid: str, **kw: Any) -> dict[str, Any]:
    return {"id": pid, "latency_ms": 0, "retry_after_s": 0.1, **kw}


def _config(sim: SimServer, *models: str, gemini: bool = False) -> ProvidersConfig:
    specs = [ModelSpec(m) for m in models]
    if gemini:
        provider = gemini_provider(lambda _: "k", id="sim", url=sim.gemini_url, models=specs)
    else:
        provider = openai_compatible_provider("sim", sim.openai_url, lambda _: "k", specs)
    return ProvidersConfig("sim", [provider], FAST)


def _record_holds(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every hold's sleep of the run, kept (and not slept: a test that would hold says so)."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(
        jobs, "ItemHold", functools.partial(jobs.ItemHold, sleep=sleep, rng=random.Random(1))
    )
    return slept


def _outputs(db: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT item_id, unanswered, retry_at_ms, error_code, passed, score FROM outputs "
            "ORDER BY item_id"
        ).fetchall()
    finally:
        con.close()


async def test_refused_items_are_held_and_asked_again_until_every_one_is_answered(tmp_path):
    fleet = {
        "seed": 1,
        "persona": [
            _persona("m", failures=[{"kind": "429", "at": [1, 2]}, {"kind": "500", "at": [4]}])
        ],
    }
    db = tmp_path / "run.duckdb"
    async with SimServer(fleet) as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(
                _items(tmp_path, 6), _config(sim, "m"), store, concurrency=2, progress=False
            )
        sent = len(sim.requests())
    assert (summary.done, summary.answered, summary.unanswered) == (6, 6, {})
    assert summary.passed == summary.graded == 6
    con = duckdb.connect(str(db), read_only=True)
    refused = con.execute(
        "SELECT count(*) FROM attempts WHERE outcome = 'error' AND status IN (429, 500)"
    ).fetchone()
    calls = con.execute(
        "SELECT count(*) FROM attempts WHERE outcome NOT LIKE 'skipped_%'"
    ).fetchone()
    answered_twice = con.execute(
        "SELECT count(*) FROM (SELECT item_id FROM attempts WHERE outcome = 'ok' GROUP BY 1 "
        "HAVING count(*) > 1)"
    ).fetchone()
    con.close()
    assert refused == (3,)  # the holds are in the attempts table, every one of them
    assert calls == (sent,) == (9,)  # 6 answers + 3 refusals: nothing asked twice once answered
    assert answered_twice == (0,)


async def test_a_spent_daily_quota_is_not_waited_for_and_the_summary_says_when_to_resume(
    tmp_path, monkeypatch
):
    # Gemini's style: no quota headers, a 429 whose body names the per-day quota.
    fleet = {"seed": 1, "persona": [_persona("m", rate_limit_style="gemini", rpd=3)]}
    db = tmp_path / "run.duckdb"
    items = _items(tmp_path, 5)
    slept = _record_holds(monkeypatch)
    async with SimServer(fleet) as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(
                items,
                _config(sim, "m", gemini=True),
                store,
                concurrency=1,
                max_wait_s=1.0,  # the reset (midnight UTC) is never waited for, even at 23:59
                progress=False,
            )
        sent = len(sim.requests())
    # A day's reset is not waited for: no hold slept, and the simulator saw the 3 answers and
    # the refusals, nothing more (a model cooling for the day is not asked again).
    assert slept == []
    con = duckdb.connect(str(db), read_only=True)
    (refused,) = con.execute("SELECT count(*) FROM attempts WHERE status = 429").fetchone()
    con.close()
    assert refused >= 1 and sent == 3 + refused
    rows = _outputs(db)
    unanswered = [r for r in rows if r[1] is not None]
    assert len(unanswered) == 2 and {r[1] for r in unanswered} == {"daily_quota"}
    assert all(r[2] > time.time() * 1000 and r[4] is None and r[5] is None for r in unanswered)
    assert summary.unanswered == {"daily_quota": 2} and summary.answered == 3
    assert summary.pass_rate == 1.0  # over the answers: the unanswered are not failures
    assert summary.resume_at_ms == min(r[2] for r in unanswered)
    again = wording.resume_command(str(db), str(items), None, summary.run_id)
    lines = list(wording.run_summary_lines(summary, again))
    assert "2 unanswered (2 daily_quota)" in lines[0] and "0 failed (not held)" in lines[0]
    assert "at the earliest" in lines[1] and f"--resume {summary.run_id}" in lines[2]

    # Resumed before the reset: nothing is asked, the summary still says when.
    async with SimServer(fleet) as sim:
        with Store.open(db) as store:
            early = await run_prompt_set(
                items, _config(sim, "m", gemini=True), store, resume=summary.run_id, progress=False
            )
        assert sim.requests() == []
    assert early.done == 0 and early.waiting == 2 and early.resume_at_ms == summary.resume_at_ms

    # After the reset (moved into the past here): only the unanswered two are asked again.
    with Store.open(db) as store:
        store.con.execute("UPDATE outputs SET retry_at_ms = 0 WHERE unanswered IS NOT NULL")
    async with SimServer(fleet) as sim:
        with Store.open(db) as store:
            later = await run_prompt_set(
                items, _config(sim, "m", gemini=True), store, resume=summary.run_id, progress=False
            )
        asked = len(sim.requests())
    assert asked == 2 and later.done == 2 and later.answered == 2 and later.skipped == 3
    assert all(r[1] is None and r[4] is True for r in _outputs(db))


async def test_an_item_held_past_max_wait_is_unanswered_with_run_max_wait(tmp_path, monkeypatch):
    # The provider refuses everything and asks for 30 s each time: 1 s of --max-wait is spent
    # at the first refusal, so the item is given up at once rather than slept on.
    fleet = {
        "seed": 1,
        "persona": [_persona("m", retry_after_s=30.0, failures=[{"kind": "429", "rate": 1.0}])],
    }
    db = tmp_path / "run.duckdb"
    slept = _record_holds(monkeypatch)
    started = time.time()
    async with SimServer(fleet) as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(
                _items(tmp_path, 2), _config(sim, "m"), store, max_wait_s=1.0, progress=False
            )
    assert slept == []  # given up at the first refusal, never slept on
    rows = _outputs(db)
    assert [(r[1], r[3], r[4], r[5]) for r in rows] == [
        ("max_wait", "RUN_MAX_WAIT", None, None)
    ] * 2
    assert all(r[2] > started * 1000 for r in rows)  # when the provider said it would be free
    assert summary.unanswered == {"max_wait": 2} and summary.failed == 0
    assert summary.pass_rate is None


async def test_an_item_refused_max_tries_times_is_unanswered_with_the_providers_reason(tmp_path):
    fleet = {
        "seed": 1,
        "persona": [_persona("m", retry_after_s=0.05, failures=[{"kind": "429", "rate": 1.0}])],
    }
    db = tmp_path / "run.duckdb"
    async with SimServer(fleet) as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(
                _items(tmp_path, 1), _config(sim, "m"), store, max_tries=3, progress=False
            )
        sent = len(sim.requests())
    assert _outputs(db)[0][1:2] + _outputs(db)[0][3:] == (
        "rate_limit",
        "AI_UNAVAILABLE",
        None,
        None,
    )
    assert summary.unanswered == {"rate_limit": 1}
    # Three routes refused (a route may also find its model cooling: no request then).
    assert 1 <= sent <= 3


def test_a_runs_routers_fail_fast_when_every_model_is_cooling(tmp_path):
    # The file's "wait" would sleep inside route() until a day's reset, past --max-wait: in a
    # run the item's hold does the waiting, so its routers fail fast and say when instead.
    config = ProvidersConfig("sim", [], {"when_all_cooling": "wait", "cooldown_s": 1.0})
    with Store.open(tmp_path / "run.duckdb") as store:
        [built] = jobs.build_configs([config], store.capabilities, None, None, 4)
    assert built.router.settings.when_all_cooling == "fail"
    assert built.router.settings.cooldown_s == 1.0  # the file's other settings stand


async def test_a_route_failed_for_the_callers_reasons_is_not_held(tmp_path):
    fleet = {
        "seed": 1,
        "persona": [_persona("m", failures=[{"kind": "context_length", "rate": 1.0}])],
    }
    db = tmp_path / "run.duckdb"
    async with SimServer(fleet) as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(
                _items(tmp_path, 1), _config(sim, "m"), store, progress=False
            )
        sent = len(sim.requests())
    assert sent == 1 and summary.unanswered == {} and summary.failed == 1
    assert _outputs(db)[0][1] is None and _outputs(db)[0][4] is None  # no answer, no verdict


async def test_each_model_is_counted_for_its_own_answers_when_a_fallback_answered(tmp_path):
    fleet = {
        "seed": 1,
        "persona": [
            _persona("first", retry_after_s=60.0, failures=[{"kind": "429", "at": [2, 3]}]),
            _persona("second"),
        ],
    }
    db = tmp_path / "run.duckdb"
    async with SimServer(fleet) as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(
                _items(tmp_path, 4),
                _config(sim, "first", "second"),
                store,
                concurrency=1,
                progress=False,
            )
    assert summary.answered == 4 and summary.unanswered == {}
    assert summary.by_model == {
        "sim:first": {"answered": 1, "passed": 1, "graded": 1},
        "sim:second": {"answered": 3, "passed": 3, "graded": 3},
    }
    lines = list(wording.run_summary_lines(summary))
    assert any("answered by sim:second: 3, 3/3 passed" in line for line in lines)


@pytest.mark.slow
async def test_a_free_tier_minute_window_loses_no_item(tmp_path, monkeypatch):
    """The measured case: 60 items, a 30-requests-a-minute Groq-style persona, a providers
    file naming only the model, 8 at once. On main, half the items failed to route."""
    fleet = {
        "seed": 1,
        "persona": [{"id": "m", "latency_ms": 0, "rate_limit_style": "groq", "rpm": 30}],
    }
    db = tmp_path / "run.duckdb"
    monkeypatch.setenv("WB_TEST_SIM_KEY", "k")
    async with SimServer(fleet) as sim:
        providers = tmp_path / "providers.toml"
        providers.write_text(
            f'[[providers]]\nid = "groq"\nbase_url = "{sim.openai_url}"\n'
            'key_env = "WB_TEST_SIM_KEY"\nmodels = ["m"]\n'
        )
        with Store.open(db) as store:
            summary = await run_prompt_set(
                _items(tmp_path, 60),
                load_config(providers),
                store,
                concurrency=8,
                progress=False,
            )
    assert summary.answered == 60 and summary.unanswered == {} and summary.passed == 60


def test_the_command_says_when_a_daily_quota_resets_and_how_to_resume(
    tmp_path, capsys, monkeypatch
):
    from workbench.cli import main
    from workbench.sim.process import SimProcess

    fleet = (
        'seed = 1\n[[persona]]\nid = "m"\nlatency_ms = 0\nrate_limit_style = "gemini"\nrpd = 2\n'
    )
    items, db = _items(tmp_path, 3), tmp_path / "run.duckdb"
    monkeypatch.setenv("WB_TEST_SIM_KEY", "k")
    with SimProcess(fleet_toml=fleet) as sim:
        providers = tmp_path / "providers.toml"
        providers.write_text(
            f'[[providers]]\nid = "g"\nadapter = "gemini"\nbase_url = "{sim.base_url}"\n'
            'key_env = "WB_TEST_SIM_KEY"\nmodels = ["m"]\n'
        )
        argv = ["run", str(items), "--providers", str(providers), "--db", str(db)]
        argv += ["--quiet", "--no-report", "--concurrency", "1", "--max-wait", "1s"]
        assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert "2 answered, 1 unanswered (1 daily_quota), 0 failed (not held), 2/2 passed" in out[0]
    assert "a daily quota stopped 1 item(s): it resets at" in out[1]
    run_id = out[0].split()[1].rstrip(":")
    assert out[2] == f"  then resume with: workbench run {items} --db {db} --resume {run_id}"
