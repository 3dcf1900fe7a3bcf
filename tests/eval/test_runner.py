"""The runner over the real simulator and a real DuckDB file: nothing lost, nothing twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import workbench.sim as sim_package
from workbench.config.providers_file import ProvidersConfig
from workbench.eval.dataset.prompt_set import load_dataset
from workbench.eval.run.runner import regrade, run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers import openai_compatible_provider
from workbench.sim import SimServer
from workbench.sim.fleet_providers import SIM_CHAIN, sim_chain_config, sim_origin

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "smoke.jsonl"
TOOL_CALLING = ROOT / "datasets" / "tool_calling.jsonl"
CALLS = ("ok", "error", "rejected", "partial")  # outcomes where a request was sent


@pytest.fixture
def db(tmp_path):
    return tmp_path / "run.duckdb"


async def test_every_call_attempt_route_and_verdict_is_logged_exactly_once(db):
    dataset = load_dataset(TOOL_CALLING)
    async with SimServer() as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(
                dataset, sim_chain_config(sim), store, concurrency=8, progress=False
            )
        sent = sim.requests()
    assert summary.status == "finished" and summary.done == len(dataset.items)
    con = duckdb.connect(str(db), read_only=True)
    calls = con.execute(f"SELECT count(*) FROM attempts WHERE outcome IN {CALLS}").fetchone()[0]
    assert calls == len(sent)  # every request the vendor saw is one attempt row, and no more
    routes, distinct, items_routed = con.execute(
        "SELECT count(*), count(DISTINCT route_id), count(DISTINCT item_id) FROM routes"
    ).fetchone()
    # One route per turn of each item's tool loop (a read tool's result makes a second turn).
    assert routes == distinct >= len(dataset.items) == items_routed
    turns = con.execute("SELECT count(DISTINCT route_id) FROM attempts").fetchone()[0]
    assert turns == routes
    fell_back = con.execute("SELECT count(*) FROM routes WHERE fallback_depth > 0").fetchone()[0]
    first_failed = con.execute(
        "SELECT count(DISTINCT route_id) FROM attempts WHERE position = 0 AND outcome <> 'ok'"
    ).fetchone()[0]
    assert fell_back == first_failed > 0  # the flaky provider leads the chain: fallbacks happen
    # Every attempt that got an HTTP answer was classified, once (a transport failure has no
    # status to classify: it stays `unobserved`, never even an event).
    classified = con.execute(
        f"SELECT count(*) FROM attempts WHERE outcome IN {CALLS} AND status > 0"
    ).fetchone()[0]
    verdicts = con.execute("SELECT count(*) FROM verdicts").fetchone()[0]
    assert verdicts == classified
    orphans = con.execute(
        "SELECT count(*) FROM attempts a LEFT JOIN routes r USING (route_id) WHERE r.route_id IS NULL"
    ).fetchone()[0]
    assert orphans == 0
    outputs = con.execute("SELECT count(*), count(DISTINCT item_id) FROM outputs").fetchone()
    assert outputs == (len(dataset.items), len(dataset.items))


async def test_capabilities_observed_in_one_run_plan_the_next(db):
    dataset = load_dataset(TOOL_CALLING)
    fleet = {"seed": 1, "persona": [{"id": "qwen", "tool_style": "text", "latency_ms": 0}]}
    async with SimServer(fleet) as sim:

        def config():
            provider = openai_compatible_provider("groq", sim.openai_url, "k", ["qwen"])
            return ProvidersConfig("qwen", [provider])

        with Store.open(db) as store:
            await run_prompt_set(dataset, config(), store, concurrency=4, progress=False)
            first = [r for r in sim.requests()]
            sim.reset()
            await run_prompt_set(dataset, config(), store, concurrency=4, progress=False)
            second = [r for r in sim.requests()]
            verdict = await store.capabilities.get("groq", "qwen", _scope("k"), "tools")
    assert verdict is not None and verdict.verdict == "text"
    assert any("tools" in r["body"] for r in first)  # unknown model: tools sent, it is the probe
    # Known to answer tools only in prose: no `tools` field, the text protocol in the system prompt.
    with_tools = [r for r in second if r["body"].get("messages") and "tools" in r["body"]]
    assert not with_tools
    assert any("TOOL:" in json.dumps(r["body"]["messages"][0]) for r in second)


async def test_the_runners_text_mode_asks_a_model_for_the_format_it_was_seen_writing(db):
    dataset = load_dataset(TOOL_CALLING)
    fleet = {"seed": 1, "persona": [{"id": "hermes", "tool_style": "hermes", "latency_ms": 0}]}
    hint = '<tool_call>\n{"name":"tool_name","arguments":{"argument":"value"}}\n</tool_call>'
    async with SimServer(fleet) as sim:

        def config():
            provider = openai_compatible_provider("groq", sim.openai_url, "k", ["hermes"])
            return ProvidersConfig("hermes", [provider])

        with Store.open(db) as store:
            await run_prompt_set(dataset, config(), store, concurrency=4, progress=False)
            sim.reset()
            run = await run_prompt_set(
                dataset, config(), store, concurrency=4, progress=False, tools_mode="text"
            )
            second = [r["body"] for r in sim.requests() if r["body"].get("messages")]
            record = await store.capabilities.get("groq", "hermes", _scope("k"), "tools")
    assert record is not None and (record.verdict, record.protocol_family) == ("text", "hermes")
    prompted = [b for b in second if "tools" not in b and b["messages"][0]["role"] == "system"]
    assert prompted and all(hint in b["messages"][0]["content"] for b in prompted)
    assert not any("TOOL: tool_name" in json.dumps(b["messages"]) for b in second)
    con = duckdb.connect(str(db), read_only=True)
    families = con.execute(
        "SELECT run_id = ? AS second, verdict, protocol_family, recorded, count(*) FROM verdicts "
        "WHERE verdict = 'text' GROUP BY ALL ORDER BY ALL",
        [run.run_id],
    ).fetchall()
    con.close()
    # Every prose answer names its format; in text mode the tools were offered only in prose,
    # so the second run's answers are logged and recorded nowhere.
    assert {fam for _, _, fam, _, _ in families} == {"hermes"}
    assert (False, "text", "hermes", True) in {row[:4] for row in families}
    assert {(second, rec) for second, _, _, rec, _ in families if second} == {(True, False)}


def _scope(key):
    from workbench.capability import scope_key

    return scope_key(key)


async def test_repeats_configs_and_a_cache_that_answers_the_next_run(db):
    dataset = load_dataset(SMOKE)
    async with SimServer() as sim:

        def configs():
            native = openai_compatible_provider("sim", sim.openai_url, "k", ["sim-native"])
            return [sim_chain_config(sim), ProvidersConfig("native-only", [native])]

        with Store.open(db) as store:
            first = await run_prompt_set(
                dataset, configs(), store, repeats=2, cache_ttl_s=3600, progress=False
            )
            sent_first = len(sim.requests())
            sim.reset()
            second = await run_prompt_set(
                dataset, configs(), store, repeats=2, cache_ttl_s=3600, progress=False
            )
            sent_second = len(sim.requests())
    assert first.done == second.done == len(dataset.items) * 2 * 2
    con = duckdb.connect(str(db), read_only=True)
    per = dict(
        con.execute(
            "SELECT config, count(*) FROM outputs WHERE run_id = ? GROUP BY config", [first.run_id]
        ).fetchall()
    )
    assert per == {"sim": 40, "native-only": 40}
    # Repeats are not answered by each other (they measure variance): the first run was all live.
    assert (
        con.execute(
            "SELECT count(*) FROM attempts WHERE run_id = ? AND cached", [first.run_id]
        ).fetchone()[0]
        == 0
    )
    live_first = con.execute(
        f"SELECT count(*) FROM attempts WHERE run_id = ? AND outcome IN {CALLS}", [first.run_id]
    ).fetchone()[0]
    assert live_first == sent_first
    # The second run: answers come from the cache; only where the first run met an error (never
    # cached) is a provider asked again — the flaky provider leading the chain, here.
    hits = con.execute(
        "SELECT count(*) FROM outputs WHERE run_id = ? AND cached", [second.run_id]
    ).fetchone()[0]
    cached_attempts = con.execute(
        "SELECT count(*) FROM attempts WHERE run_id = ? AND cached", [second.run_id]
    ).fetchone()[0]
    assert cached_attempts >= hits >= 60  # an output is cached when every turn of it was
    live_second = con.execute(
        f"SELECT count(*) FROM attempts WHERE run_id = ? AND outcome IN {CALLS} AND NOT cached",
        [second.run_id],
    ).fetchone()[0]
    assert (
        live_second == sent_second < sent_first
    )  # errors are never cached: those were asked again
    assert (
        con.execute(
            "SELECT count(*) FROM attempts WHERE cached AND (outcome <> 'ok' OR latency_ms > 50)"
        ).fetchone()[0]
        == 0
    )


async def test_the_default_chain_is_answered_from_the_cache_by_the_next_simulator(db):
    """`workbench run --cache` starts a new simulator, on a new port, every run: the default
    chain names it by its fleet, so the next run answers from this one's replies."""
    dataset = load_dataset(SMOKE)
    asked, urls, runs = [], [], []
    with Store.open(db) as store:
        for _ in range(2):
            async with SimServer() as sim:
                summary = await run_prompt_set(
                    dataset, sim_chain_config(sim), store, cache_ttl_s=3600, progress=False
                )
                asked.append(len(sim.requests()))
                urls.append(sim.openai_url)
                runs.append(summary.run_id)
    con = duckdb.connect(str(db), read_only=True)
    hits = con.execute(
        "SELECT count(*) FROM outputs WHERE run_id = ? AND cached", [runs[1]]
    ).fetchone()[0]
    assert urls[0] != urls[1]
    # Only what met an error the first time (never cached: the flaky provider) is asked again.
    assert hits >= len(dataset.items) * 3 // 4 and asked[1] < asked[0] // 2


def test_the_simulators_name_in_the_cache_is_its_fleet_not_where_it_was_read(tmp_path):
    text = (Path(sim_package.__file__).parent / "fleet.toml").read_text(encoding="utf-8")
    copy = tmp_path / "copy.toml"
    copy.write_text(text, encoding="utf-8")
    edited = tmp_path / "edited.toml"
    edited.write_text(text.replace("latency_ms = 200", "latency_ms = 201", 1), encoding="utf-8")
    assert sim_origin(SimServer(copy)) == sim_origin(SimServer())
    assert sim_origin(SimServer(edited)) != sim_origin(SimServer())


async def test_the_cache_never_answers_a_text_mode_run_with_native_replies(db):
    """The same model, native tools first, then prose tool calls, through one cache: the
    tool items are asked again (their request differs), the plain items are answered."""
    dataset = load_dataset(SMOKE)
    tool_items = {i.id for i in dataset.items if i.tools}
    assert tool_items and len(tool_items) < len(dataset.items)
    async with SimServer() as sim:
        native = openai_compatible_provider("sim", sim.openai_url, "k", ["sim-native"])
        config = ProvidersConfig("native-only", [native])
        with Store.open(db) as store:
            first = await run_prompt_set(
                dataset, config, store, tools_mode="native", cache_ttl_s=3600, progress=False
            )
            sim.reset()
            second = await run_prompt_set(
                dataset, config, store, tools_mode="text", cache_ttl_s=3600, progress=False
            )
            asked = [r for r in sim.requests() if r["persona"] == "sim-native"]
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute(
        "SELECT item_id, bool_and(cached), bool_or(cached) FROM attempts WHERE run_id = ? "
        "GROUP BY item_id",
        [second.run_id],
    ).fetchall()
    for item_id, all_cached, any_cached in rows:
        if item_id in tool_items:
            assert not any_cached, f"{item_id} was answered with a reply to another question"
        else:
            assert all_cached, f"{item_id} asked again although nothing about it changed"
    live = con.execute(
        "SELECT count(*) FROM attempts WHERE run_id = ? AND NOT cached", [second.run_id]
    ).fetchone()[0]
    assert live == len(asked) > 0  # exactly the tool items' turns reached the model
    protocols = dict(
        con.execute(
            "SELECT item_id, protocol FROM outputs WHERE run_id = ?", [second.run_id]
        ).fetchall()
    )
    assert {protocols[i] for i in tool_items} <= {"text", "none"}
    assert first.run_id != second.run_id


async def test_regrade_uses_new_expectations_without_calls(db, tmp_path):
    dataset = load_dataset(SMOKE)
    async with SimServer() as sim:
        with Store.open(db) as store:
            summary = await run_prompt_set(dataset, sim_chain_config(sim), store, progress=False)
        before = len(sim.requests())
        strict = tmp_path / "smoke-strict.jsonl"
        (tmp_path / "tools.json").write_text((SMOKE.parent / "tools.json").read_text())
        lines = []
        for line in SMOKE.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                item = json.loads(line)
                item["expect"] = {"contains": ["a phrase no answer contains"]}
                lines.append(json.dumps(item))
        strict.write_text("\n".join(lines) + "\n")
        with Store.open(db) as store:
            again = await regrade(store, summary.run_id, strict)
        assert len(sim.requests()) == before
    assert again.graded > 0 and again.passed == 0


FLEET_SLOW = "\n".join(
    f'[[persona]]\nid = "{model}"\nlatency_ms = 120\nlatency_jitter_ms = 0\n'
    for _, _, models in SIM_CHAIN
    for model in models
)


def test_sigint_half_way_then_resume_does_each_item_exactly_once(tmp_path, db):
    fleet = tmp_path / "slow.toml"
    fleet.write_text(FLEET_SLOW)
    cmd = [
        sys.executable,
        "-m",
        "workbench.cli",
        "run",
        str(SMOKE),
        "--db",
        str(db),
        "--fleet",
        str(fleet),
        "--no-local",
        "--no-report",
        "--quiet",
        "--concurrency",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = proc.stderr.readline()  # "run RUN_ID: 20 job(s) → …": the run is under way
    assert started.startswith("run "), started
    time.sleep(1.0)  # ~26 turns × 120 ms at concurrency 1: interrupt part-way
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, (out, err)
    assert "Traceback" not in err and "--resume" in err
    run_id = err.split("--resume")[1].split()[0]
    con = duckdb.connect(str(db), read_only=True)
    first = con.execute("SELECT count(*) FROM outputs").fetchone()[0]
    status = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
    con.close()
    assert 0 < first < 20 and status == "interrupted"
    done = subprocess.run([*cmd, "--resume", run_id], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT item_id, count(*) FROM outputs GROUP BY item_id").fetchall()
    assert len(rows) == 20 and all(n == 1 for _, n in rows)
    assert (
        con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
        == "finished"
    )


def test_cli_run_prints_where_the_data_and_report_are(tmp_path, db):
    cwd = tmp_path
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "run",
            str(SMOKE),
            "--db",
            str(db),
            "--no-local",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert out.returncode == 0, out.stderr
    assert f"DuckDB:  {db}" in out.stdout
    report = Path(out.stdout.split("report:")[1].split()[0])
    assert report.exists() and report.read_text().startswith("<!doctype html>")
    assert "<svg" in report.read_text()
    for verb in (["runs"], ["verdicts"], ["report", "latest", "--out", str(tmp_path / "r")]):
        res = subprocess.run(
            [sys.executable, "-m", "workbench.cli", *verb, "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=cwd,
        )
        assert res.returncode == 0, res.stderr


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"id": "a", "prompt": "hi"}\n{"id": "b", "prompt": }\n', ":2:"),
        ('{"id": "a", "prompt": "hi"}\n{"id": "a", "prompt": "again"}\n', ":2:"),
    ],
)
def test_a_malformed_dataset_is_refused_with_file_and_line_before_any_request(
    tmp_path, content, where
):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "run",
            str(bad),
            "--db",
            str(tmp_path / "x.duckdb"),
            "--no-local",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "DATASET_INVALID" in res.stderr and f"bad.jsonl{where}" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not os.path.exists(tmp_path / "x.duckdb")  # refused before anything was opened


async def test_a_resumed_tool_item_with_its_final_answer_journaled_asks_and_runs_nothing(db):
    # An interrupted run whose outputs never reached the file (killed after the answers were
    # journaled): the resume grades those items from their journaled turns.
    dataset = load_dataset(TOOL_CALLING)
    async with SimServer() as sim:
        with Store.open(db) as store:
            first = await run_prompt_set(
                dataset, sim_chain_config(sim), store, concurrency=8, progress=False
            )
            run = first.run_id
            before = store.outputs_for(run)
            steps = store.con.execute("SELECT count(*) FROM tool_steps").fetchone()[0]
            store.con.execute("DELETE FROM outputs WHERE run_id = ?", [run])  # as if killed
            store.mark_running(run)
            asked = len(sim.requests())
            again = await run_prompt_set(
                dataset, sim_chain_config(sim), store, concurrency=8, progress=False, resume=run
            )
            after = store.outputs_for(run)
            steps_after = store.con.execute("SELECT count(*) FROM tool_steps").fetchone()[0]
        assert len(sim.requests()) == asked  # no model asked again
    assert again.done == len(dataset.items) and steps_after == steps  # no tool run again
    graded = {(o.item_id, o.passed, o.tool_calls) for o in before if not o.error_code}
    assert graded <= {(o.item_id, o.passed, o.tool_calls) for o in after}


def test_a_worker_cancelled_from_inside_fails_the_run_and_a_real_error_wins():
    """A job whose task was cancelled by something inside it (a tool, a library) must not
    leave a run "finished" with an output missing, nor hang the others."""
    from workbench.eval.run.jobs import _all_or_first_error

    stopped: list[str] = []

    async def cancelled_from_inside():
        raise asyncio.CancelledError

    async def waits_forever():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            stopped.append("waiter")
            raise

    async def fails():
        raise OSError("disk full")

    with pytest.raises(RuntimeError, match="cancelled from inside"):
        asyncio.run(_all_or_first_error([cancelled_from_inside(), waits_forever()]))
    assert stopped == ["waiter"]

    async def both():
        await _all_or_first_error([cancelled_from_inside(), fails(), waits_forever()])

    # Both end at their first step, in one wake: the failure is raised (it says what went
    # wrong), not the cancellation.
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(both())
