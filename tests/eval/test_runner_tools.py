"""The runner's tool loop: every protocol drives it end to end; writes wait for a person."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from workbench.config.providers_file import ProvidersConfig
from workbench.eval.dataset.prompt_set import load_dataset
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers import openai_compatible_provider
from workbench.sim import SimServer

ROOT = Path(__file__).resolve().parents[2]
TOOL_CALLING = ROOT / "datasets" / "tool_calling.jsonl"
STYLES = {"native": "native", "qwen": "text", "hermes": "hermes", "xml": "xml"}
FLEET = {
    "seed": 4,
    "persona": [{"id": pid, "tool_style": style, "latency_ms": 0} for pid, style in STYLES.items()],
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """One run of the tool-calling set through four single-model configurations."""
    import asyncio

    db = tmp_path_factory.mktemp("tools") / "run.duckdb"
    dataset = load_dataset(TOOL_CALLING)

    async def go():
        async with SimServer(FLEET) as sim:
            configs = [
                ProvidersConfig(pid, [openai_compatible_provider(pid, sim.openai_url, "k", [pid])])
                for pid in STYLES
            ]
            with Store.open(db) as store:
                return await run_prompt_set(dataset, configs, store, concurrency=8, progress=False)

    summary = asyncio.run(go())
    return db, summary, dataset


def test_prose_tool_calls_drive_the_loop_like_native_ones(ran):
    db, summary, _dataset = ran
    assert summary.status == "finished" and summary.errors == 0
    con = duckdb.connect(str(db), read_only=True)
    per = dict(
        con.execute("SELECT config, count(*) FROM tool_steps WHERE ok GROUP BY config").fetchall()
    )
    assert set(per) == set(STYLES) and min(per.values()) > 10  # read tools ran for every protocol
    # The tool's result came back to the model, which answered from it (the simulator quotes it).
    answered = dict(
        con.execute(
            "SELECT config, count(*) FROM outputs WHERE cleaned LIKE 'According to %' GROUP BY config"
        ).fetchall()
    )
    assert set(answered) == set(STYLES)
    protocols = dict(
        con.execute(
            "SELECT config, any_value(protocol) FROM outputs WHERE protocol <> 'none' GROUP BY config"
        ).fetchall()
    )
    assert protocols == {"native": "native", "qwen": "text", "hermes": "text", "xml": "text"}


def test_a_write_tool_is_never_executed_without_approval_whatever_the_protocol(ran):
    db, _, _dataset = ran
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT action, status, proposed_by FROM actions").fetchall()
    assert rows and {a for a, _, _ in rows} <= {"send_email", "create_ticket"}
    assert {s for _, s, _ in rows} == {"pending"}
    proposers = {p.split(":")[0] for _, _, p in rows}
    assert proposers == set(STYLES)  # every protocol could ask; none could execute


def _cli(*args, db):
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", "actions", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_actions_cli_approves_rejects_and_refuses_twice(ran, tmp_path):
    db, _, _ = ran
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db.read_bytes())
    listed = _cli("list", db=copy)
    assert listed.returncode == 0 and "pending" in listed.stdout
    first, second = (line.split()[0] for line in listed.stdout.splitlines()[:2])
    ok = _cli("approve", first, "--by", "ana", "--amend", '{"subject": "checked"}', db=copy)
    assert ok.returncode == 0, ok.stderr
    done = json.loads(ok.stdout)
    assert done["status"] == "executed" and done["payload"]["subject"] == "checked"
    no = _cli("reject", second, "--by", "bob", "--note", "wrong person", db=copy)
    assert no.returncode == 0 and json.loads(no.stdout)["status"] == "rejected"
    again = _cli("approve", second, "--by", "ana", db=copy)
    assert again.returncode == 1 and "ACTION_NOT_PENDING" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    bad = _cli("approve", first, "--by", "ana", "--amend", "{not json", db=copy)
    assert bad.returncode == 2 and "ACTION_INVALID" in bad.stderr
    shown = json.loads(_cli("show", first, db=copy).stdout)
    assert [h["status"] for h in shown["history"]] == ["pending", "executing", "executed"]
