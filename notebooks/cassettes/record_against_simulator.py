"""How notebooks/cassettes/11_record_replay/ was recorded: this machine has no real keys, so
the providers of notebooks/providers_real.toml were pointed at the simulator, with a persona
named after each real model (OpenAI's refuses its 2nd request with a 429, as a busy free tier
does). A cassette keeps no host, so what it recorded replays for the real URLs.

    python notebooks/cassettes/record_against_simulator.py

With real keys, record against the real providers instead (the notebook's run, by the CLI):

    OPENAI_API_KEY=... GEMINI_API_KEY=... workbench run datasets/tool_calling.jsonl --limit 4 \\
        --concurrency 1 --providers notebooks/providers_real.toml \\
        --record notebooks/cassettes/11_record_replay --db /tmp/record.duckdb --no-report
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from workbench.config.providers_file import load_config
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.sim import SimServer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FLEET = {
    "seed": 11,
    "persona": [
        {
            "id": "gpt-4.1-mini",
            "tool_style": "native",
            "latency_ms": 30,
            "retry_after_s": 60,
            "failures": [{"kind": "429", "at": [2]}],
        },
        {
            "id": "gemini-2.5-flash",
            "tool_style": "native",
            "rate_limit_style": "gemini",
            "latency_ms": 40,
        },
    ],
}


async def main() -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-not-a-real-key-recorded-against-the-simulator")
    os.environ.setdefault("GEMINI_API_KEY", "not-a-real-gemini-key-recorded-against-the-simulator")
    real = (ROOT / "notebooks" / "providers_real.toml").read_text(encoding="utf-8")
    async with SimServer(FLEET) as sim:
        pointed = real.replace("https://api.openai.com/v1", sim.openai_url).replace(
            "https://generativelanguage.googleapis.com", sim.gemini_url
        )
        with tempfile.TemporaryDirectory() as tmp:
            providers = Path(tmp) / "providers.toml"
            providers.write_text(pointed, encoding="utf-8")
            with Store.open(Path(tmp) / "record.duckdb") as store:
                summary = await run_prompt_set(
                    ROOT / "datasets" / "tool_calling.jsonl",
                    load_config(providers),
                    store,
                    limit=4,
                    concurrency=1,
                    progress=False,
                    cassette=str(HERE / "11_record_replay"),
                    cassette_mode="record",
                )
    print(summary.status, f"{summary.passed}/{summary.graded} passed")


if __name__ == "__main__":
    asyncio.run(main())
