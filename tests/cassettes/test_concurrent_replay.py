"""A run recorded at the default concurrency on the default fleet (its flaky persona's 503s
and 429s cool models mid-run) replays at the same concurrency: a model whose request the recording
does not hold is skipped as not recorded and the next one asked, so every item gets an
answer the recording holds, and nothing is sent.

The smoke items without tools: an item with tools is planned from what the run has observed
of each model so far, which under concurrency also follows timing (see docs/record-replay.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb

from workbench.eval.run.default_fleet import default_fleet
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "smoke.jsonl"


def _without_tools(folder: Path) -> Path:
    lines = SMOKE.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.startswith("{") and '"tools"' not in line]
    out = folder / "smoke_no_tools.jsonl"
    out.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return out


def _outputs(db: Path) -> dict[tuple[object, ...], tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT item_id, repeat, cleaned, passed FROM outputs").fetchall()
    finally:
        con.close()
    return {(item, repeat): (text, passed) for item, repeat, text, passed in rows}


def test_a_default_concurrency_recording_replays_every_item_from_the_cassette(tmp_path):
    dataset = _without_tools(tmp_path)

    async def go():  # type: ignore[no-untyped-def]
        async with default_fleet(None, local=False) as fleet:
            with Store.open(tmp_path / "rec.duckdb") as store:
                recorded = await run_prompt_set(
                    dataset,
                    list(fleet.configs),
                    store,
                    progress=False,
                    repeats=4,
                    cassette=str(tmp_path / "tape"),
                    cassette_mode="record",
                )
            configs = list(fleet.configs)
        # The simulator is gone: a replay that sent anything would fail.
        with Store.open(tmp_path / "rep.duckdb") as store:
            replayed = await run_prompt_set(
                dataset,
                configs,
                store,
                progress=False,
                repeats=4,
                cassette=str(tmp_path / "tape"),
                cassette_mode="replay",
            )
        return recorded, replayed

    recorded, replayed = asyncio.run(go())
    assert recorded.status == "finished"
    assert replayed.status == "finished"
    assert replayed.cassette is not None and replayed.cassette[3] == 0  # nothing recorded
    before, after = _outputs(tmp_path / "rec.duckdb"), _outputs(tmp_path / "rep.duckdb")
    assert len(before) == 56
    assert after == before
