"""A real run for the export tests: a small prompt set with personal data, a tool item and an
item with nothing to expect, through two configurations on the simulator — the default chain
(a flaky provider first: fallbacks, failed and skipped attempts) and one whose only model does
not exist (every route fails) — twice each, logged to a real DuckDB file."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from workbench.config.providers_file import ProvidersConfig
from workbench.eval.dataset.prompt_set import load_dataset
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers import openai_compatible_provider
from workbench.sim import SimServer
from workbench.sim.fleet_providers import sim_chain_config

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
SECRET = "sk-export-test-0123456789abcdefABCDEF"  # the broken configuration's key
ITEMS = [
    {
        "id": "pii-registry",
        "prompt": "Write a one-line birthday message for Grace Hopper.",
        "sensitive": ["Grace Hopper"],
        "expect": {"contains": ["birthday"]},
    },
    {
        "id": "pii-two",
        "prompt": "Summarise: Ada Lovelace met Charles Babbage in 1833.",
        "sensitive": ["Ada Lovelace", "Charles Babbage"],
        "expect": {"contains": ["1833"]},
    },
    {
        "id": "pii-email",
        "prompt": "Send the report to ana.lopez@example.com and copy the team.",
        "sensitive": ["ana.lopez@example.com"],
        "tags": ["unregistered"],
    },
    {
        "id": "pii-detector",
        "prompt": "Remind Olivia Brooks that her badge expires next week.",
        "sensitive": ["Olivia Brooks"],
        "tags": ["unregistered"],
        "expect": {"contains": ["badge"]},
    },
    {
        "id": "tool-weather",
        "prompt": "What is the weather in Paris?",
        "tools": ["get_weather"],
        "expect": {"tool": "get_weather", "args": {"city": "Paris"}},
    },
]
SENSITIVE = sorted({v for item in ITEMS for v in item.get("sensitive", [])})
REPEATS = 2


@dataclass(frozen=True)
class ExportRun:
    db: Path
    run_id: str
    name: str
    dataset: Path
    requests: int  # what the simulator received during the run


def make_run(folder: Path) -> ExportRun:
    folder.mkdir(parents=True, exist_ok=True)
    dataset = folder / "export.jsonl"
    dataset.write_text("\n".join(json.dumps(i) for i in ITEMS) + "\n", encoding="utf-8")
    shutil.copy(DATASETS / "tools.json", folder / "tools.json")
    db = folder / "export.duckdb"
    return asyncio.run(_run(db, dataset))


async def _run(db: Path, dataset_path: Path) -> ExportRun:
    dataset = load_dataset(dataset_path)
    async with SimServer() as sim:
        broken = ProvidersConfig(
            "broken",
            [openai_compatible_provider("broken", sim.openai_url, SECRET, ["no-such-model"])],
        )
        with Store.open(db) as store:
            summary = await run_prompt_set(
                dataset,
                [sim_chain_config(sim), broken],
                store,
                repeats=REPEATS,
                run_name="export-test",
                progress=False,
            )
        requests = len(sim.requests())
    assert summary.status == "finished"
    return ExportRun(db, summary.run_id, "export-test", dataset_path, requests)
