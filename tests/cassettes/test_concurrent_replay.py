"""A run recorded at the default concurrency on the default fleet (its flaky persona's 503s
and 429s cool models mid-run) replays at the same concurrency, tool loops included: a model
whose request the recording does not hold is asked the other ways its tools could have been
planned (what the run had observed of it when the recording asked may differ), then skipped
as not recorded and the next one asked. Every item gets the answers the recording holds, and
nothing is sent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb

from workbench.eval.run.default_fleet import default_fleet
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "smoke.jsonl"


def _outputs(db: Path) -> dict[tuple[object, ...], list[tuple[object, ...]]]:
    """Each item's answers under each configuration: the repeats of one item may get each
    other's recorded answers (identical requests are answered in the order they are asked)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT item_id, config, cleaned, CAST(tool_calls AS VARCHAR), passed FROM outputs"
        ).fetchall()
    finally:
        con.close()
    found: dict[tuple[object, ...], list[tuple[object, ...]]] = {}
    for item, config, *answer in rows:
        found.setdefault((item, config), []).append(tuple(answer))
    return {key: sorted(answers, key=repr) for key, answers in found.items()}


def test_a_default_concurrency_recording_replays_every_item_and_tool_loop_from_the_cassette(
    tmp_path,
):
    dataset = SMOKE

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
    assert len(before) == 20 and sum(len(answers) for answers in before.values()) == 80
    called = [key for key, answers in before.items() if any(a[1] for a in answers)]
    assert len(called) >= 4  # the tool loops are in it
    assert after == before
