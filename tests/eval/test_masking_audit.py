"""The masking audit: no sensitive value of the masking set ever reaches an external provider."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from workbench.config.providers_file import ProvidersConfig
from workbench.eval.dataset.prompt_set import load_dataset
from workbench.eval.diagnostics.audit import audit_leaks
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers import openai_compatible_provider
from workbench.sim import SimServer
from workbench.sim.fleet_providers import sim_chain_config

MASKING = Path(__file__).resolve().parents[2] / "datasets" / "masking.jsonl"


async def _run(tmp_path, *, mask: bool, local: bool = False):
    dataset = load_dataset(MASKING)
    db = tmp_path / ("masked.duckdb" if mask else "clear.duckdb")
    async with SimServer() as sim:
        if local:
            provider = openai_compatible_provider(
                "local", sim.openai_url, None, ["sim-native"], external=False
            )
            config = ProvidersConfig("local", [provider])
        else:
            config = sim_chain_config(sim)
        with Store.open(db) as store:
            summary = await run_prompt_set(dataset, config, store, progress=False, mask=mask)
            leaks = audit_leaks(store, summary.run_id, dataset, sim.requests())
    return db, summary, leaks


async def test_no_sensitive_value_leaves_the_machine(tmp_path):
    db, summary, leaks = await _run(tmp_path, mask=True)
    assert summary.status == "finished" and summary.done == 44
    assert leaks == 0
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM leaks").fetchone()[0] == 0
    # The replies came back unmasked: the names are in what a person reads.
    answered = con.execute(
        "SELECT count(*) FROM outputs WHERE cleaned LIKE '%#PERSON_%'"
    ).fetchone()[0]
    assert answered == 0


async def test_each_attempt_logs_the_request_as_the_provider_received_it(tmp_path):
    dataset = load_dataset(MASKING)
    async with SimServer() as sim:
        with Store.open(tmp_path / "m.duckdb") as store:
            summary = await run_prompt_set(dataset, sim_chain_config(sim), store, progress=False)
            rows = store.con.execute(
                "SELECT outcome, request FROM attempts WHERE run_id = ? ORDER BY start_ms",
                [summary.run_id],
            ).fetchall()
        received = [r["body"] for r in sim.requests() if r["path"].endswith("/chat/completions")]
    sent = [json.loads(request) for outcome, request in rows if outcome in ("ok", "error")]
    assert all(r is not None for r in sent) and len(sent) == len(received) >= 44

    # The words of each logged request are the words a provider received, masked.
    def words(messages):
        return sorted(json.dumps(m.get("content"), ensure_ascii=False) for m in messages)

    got = sorted(str(words(r["messages"])) for r in sent)
    want = sorted(str(words([m for m in b["messages"] if m["role"] != "system"])) for b in received)
    assert got == want
    logged = json.dumps(sent, ensure_ascii=False)
    assert "#PERSON_" in logged
    assert not [v for item in dataset.items for v in item.sensitive if v in logged]
    # A skipped candidate sent nothing, and its row says so.
    assert all(request is None for outcome, request in rows if outcome.startswith("skipped"))


async def test_the_audit_finds_leaks_when_nothing_is_masked(tmp_path):
    db, _, leaks = await _run(tmp_path, mask=False)
    assert leaks >= 44  # every item's values went out in clear, and the audit saw each one
    con = duckdb.connect(str(db), read_only=True)
    kinds = con.execute("SELECT count(DISTINCT item_id), count(*) FROM leaks").fetchone()
    assert kinds[0] == 44 and kinds[1] == leaks
    stored = con.execute("SELECT string_agg(value_sha || path, ' ') FROM leaks").fetchone()[0]
    assert "Grace" not in stored and "@example.com" not in stored  # hashes, never the values


async def test_a_local_provider_gets_clear_text_and_that_is_not_a_leak_of_the_machine(tmp_path):
    # external=False: nothing leaves, so nothing is masked (the simulator stands in for a
    # local server here; its log shows the clear text the local model received).
    _, _, leaks = await _run(tmp_path, mask=True, local=True)
    assert leaks > 0


CLEANING = MASKING.parent / "cleaning.jsonl"


async def test_the_cleaning_set_is_replayed_through_the_cleaner_and_graded_by_exact_match(tmp_path):
    dataset = load_dataset(CLEANING)
    async with SimServer() as sim:
        with Store.open(tmp_path / "c.duckdb") as store:
            summary = await run_prompt_set(dataset, sim_chain_config(sim), store, progress=False)
        assert sim.requests() == []  # replayed outputs: no model was asked
    assert summary.graded == len(dataset.items) >= 60
    con = duckdb.connect(str(tmp_path / "c.duckdb"), read_only=True)
    differs = con.execute("SELECT count(*) FROM outputs WHERE raw <> cleaned").fetchone()[0]
    passed = con.execute("SELECT count(*) FROM outputs WHERE passed").fetchone()[0]
    assert differs >= 60 and passed == summary.passed
    assert summary.passed == summary.graded  # every raw output cleans to exactly its expected text
