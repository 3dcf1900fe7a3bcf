"""A run recorded against the simulator replays with the simulator gone: the same outputs, the
same attempts (a 429, its cooldown and the fallback included), no key in any byte written."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import duckdb
import pytest

from workbench.cassettes import Cassette
from workbench.config.providers_file import ProvidersConfig
from workbench.errors import CassetteError
from workbench.eval.run.options import RunConfig
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers import gemini_provider, openai_compatible_provider
from workbench.sim import SimServer

ROOT = Path(__file__).resolve().parents[2]
TOOL_CALLING = ROOT / "datasets" / "tool_calling.jsonl"
KEY = "sk-cassette-test-key-0123456789abcdef"
GEMINI_KEY = "gemini-test-key-not-real-cassette-0123"
# The first item's request to "flaky" is its 2nd: a 429, so the chain cools it and falls back.
FLEET = {
    "seed": 3,
    "persona": [
        {"id": "native", "tool_style": "native", "latency_ms": 0},
        {
            "id": "flaky",
            "tool_style": "native",
            "latency_ms": 0,
            "failures": [{"kind": "429", "at": [2]}],
        },
        {"id": "gem", "tool_style": "native", "latency_ms": 0, "rate_limit_style": "gemini"},
    ],
}
NOWHERE = "http://127.0.0.1:9"  # nothing listens: a replay that sent anything would fail


def configs(base: str) -> list[ProvidersConfig]:
    """A chain whose first model refuses once (OpenAI-compatible), and a Gemini one."""
    return [
        ProvidersConfig(
            "chain",
            [
                openai_compatible_provider("flaky-prov", f"{base}/v1", KEY, ["flaky"]),
                openai_compatible_provider("backup", f"{base}/v1", KEY, ["native"]),
            ],
        ),
        ProvidersConfig("gemini", [gemini_provider(GEMINI_KEY, url=base, models=["gem"])]),
    ]


async def _run(db: Path, base: str, folder: Path, mode: str, **kw: object):  # type: ignore[no-untyped-def]
    with Store.open(db) as store:
        return await run_prompt_set(
            kw.pop("dataset", TOOL_CALLING),
            configs(base),
            store,
            concurrency=1,
            progress=False,
            limit=kw.pop("limit", 4),
            cassette=str(folder),
            cassette_mode=mode,
            **kw,
        )


def _outputs(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT config, item_id, repeat, cleaned, passed, error_code, tool_calls "
            "FROM outputs ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()


def _attempts(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT config, item_id, provider, model, outcome, status, error_code "
            "FROM attempts ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()


def _routes(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT config, item_id, chosen, partial, fallback_depth FROM routes ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A run recorded on the simulator, and the requests the simulator received."""
    tmp = tmp_path_factory.mktemp("cassette")

    async def go():  # type: ignore[no-untyped-def]
        async with SimServer(FLEET) as sim:
            summary = await _run(tmp / "rec.duckdb", sim.base_url, tmp / "tape", "record")
            return summary, sim.requests()

    summary, requests = asyncio.run(go())
    return tmp, summary, requests


def test_a_replay_without_the_simulator_gives_the_same_outputs_and_attempts(recorded):
    tmp, summary, requests = recorded
    assert summary.status == "finished"
    replayed = asyncio.run(_run(tmp / "rep.duckdb", NOWHERE, tmp / "tape", "replay"))
    assert replayed.status == "finished"
    assert replayed.cassette == (
        str(tmp / "tape" / "cassette.jsonl"),
        "replay",
        len(requests),
        0,
        0,
    )
    assert _outputs(tmp / "rep.duckdb") == _outputs(tmp / "rec.duckdb")
    attempts = _attempts(tmp / "rep.duckdb")
    assert attempts == _attempts(tmp / "rec.duckdb")
    routes = _routes(tmp / "rep.duckdb")
    assert routes == _routes(tmp / "rec.duckdb")
    assert any(depth for *_, depth in routes)  # a route that fell back, replayed as one
    outcomes = {(a[2], a[4], a[5]) for a in attempts}
    # The 429, the cooldown it started and the fallback replayed as they happened.
    assert ("flaky-prov", "error", 429) in outcomes
    assert any(p == "flaky-prov" and o == "skipped_cooling" for p, o, _ in outcomes)
    assert any(p == "backup" and o == "ok" for p, o, _ in outcomes)
    assert any(p == "google" and o == "ok" for p, o, _ in outcomes)
    # One exchange a request the simulator received; tool loops' second turns among them.
    exchanges = Cassette(tmp / "tape").exchanges
    assert len(exchanges) == len(requests)
    assert any(e.provider == "backup" and len(e.body["messages"]) == 3 for e in exchanges)
    assert any(e.provider == "google" and len(e.body["contents"]) == 3 for e in exchanges)
    row = RunConfig.from_row(Store.open(tmp / "rep.duckdb", read_only=True).run(replayed.run_id))
    assert (row.cassette, row.cassette_mode) == (str(tmp / "tape"), "replay")


def test_no_key_or_auth_header_is_in_any_byte_of_the_cassette(recorded):
    tmp, _, _ = recorded
    for path in (tmp / "tape").rglob("*"):
        data = path.read_bytes()
        for secret in (KEY, GEMINI_KEY, "Bearer", "x-goog-api-key", "authorization"):
            assert secret.encode() not in data, (path, secret)


def test_the_cassette_is_sorted_by_provider_request_and_occurrence(recorded):
    tmp, _, _ = recorded
    lines = (tmp / "tape" / "cassette.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "cassette": "workbench",
        "version": 1,
        "matches": ["provider", "method", "path", "body"],
    }
    keys = [
        (
            d["provider"],
            json.dumps(
                [d["request"]["method"], d["request"]["path"], d["request"]["body"]],
                sort_keys=True,
                ensure_ascii=False,
            ),
            d["occurrence"],
        )
        for d in map(json.loads, lines[1:])
    ]
    assert keys == sorted(keys)
    assert {"/v1/chat/completions", "/v1beta/models/gem:generateContent"} == {
        json.loads(line)["request"]["path"] for line in lines[1:]
    }


def test_a_request_never_recorded_stops_the_run_naming_the_nearest_and_what_differs(
    recorded, tmp_path
):
    tmp, _, _ = recorded
    items = TOOL_CALLING.read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(items) if line.startswith("{"))
    changed = json.loads(items[first])
    changed["prompt"] += " Please."
    items[first] = json.dumps(changed)
    dataset = tmp_path / "changed.jsonl"
    dataset.write_text("\n".join(items) + "\n", encoding="utf-8")
    (tmp_path / "tools.json").write_text((ROOT / "datasets" / "tools.json").read_text())
    with pytest.raises(CassetteError) as caught:
        asyncio.run(
            _run(tmp_path / "miss.duckdb", NOWHERE, tmp / "tape", "replay", dataset=dataset)
        )
    text = str(caught.value)
    assert text.startswith("REPLAY_MISS: no recorded exchange in ")
    assert "nearest: line " in text and "differs at body.messages[0].content" in text
    assert "a match compares provider, method, path, body" in text
    assert "\n" not in text and KEY not in text
    # Stopped, not logged as the item's error, and no other provider was asked in its place.
    assert all(row[5] != "REPLAY_MISS" for row in _outputs(tmp_path / "miss.duckdb"))


def test_record_missing_sends_only_what_the_cassette_lacks(recorded, tmp_path):
    tmp, _, _ = recorded
    folder = tmp_path / "tape"
    folder.mkdir()
    (folder / "cassette.jsonl").write_bytes((tmp / "tape" / "cassette.jsonl").read_bytes())
    before = len(Cassette(folder).exchanges)

    async def go():  # type: ignore[no-untyped-def]
        async with SimServer(FLEET) as sim:
            summary = await _run(
                tmp_path / "fill.duckdb", sim.base_url, folder, "record_missing", limit=5
            )
            return summary, sim.requests()

    summary, requests = asyncio.run(go())
    assert summary.status == "finished"
    added = len(Cassette(folder).exchanges) - before
    assert 0 < added == len(requests)  # the fifth item's requests alone went out
    assert summary.cassette is not None and summary.cassette[2:] == (before, added, 0)
    fifth = [json.loads(x) for x in TOOL_CALLING.read_text().splitlines() if x.startswith("{")][4]
    asked = {json.dumps(r["body"]) for r in requests}
    assert all(fifth["prompt"] in text for text in asked)
    # Now the five items replay with nothing listening.
    replayed = asyncio.run(_run(tmp_path / "all.duckdb", NOWHERE, folder, "replay", limit=5))
    assert replayed.status == "finished" and replayed.errors == 0


def test_the_command_records_then_replays_for_another_host(tmp_path, capsys):
    from workbench.cli.verbs import main

    def providers(url: str) -> str:
        path = tmp_path / f"providers-{len(list(tmp_path.glob('providers-*')))}.toml"
        path.write_text(
            f'[[providers]]\nid = "sim"\nadapter = "openai"\nbase_url = "{url}"\n'
            'key_env = "CASSETTE_TEST_KEY"\nmodels = ["native"]\n',
            encoding="utf-8",
        )
        return str(path)

    tape, smoke = str(tmp_path / "tape"), str(ROOT / "datasets" / "smoke.jsonl")
    common = ["--limit", "3", "--db", str(tmp_path / "w.duckdb"), "--no-report", "--quiet"]
    with SimServer(FLEET) as sim:
        real = providers(sim.openai_url)
        assert main(["run", smoke, "--providers", real, "--record", tape, *common]) == 0
    assert "cassette " + tape + "/cassette.jsonl: 3 exchange(s) recorded" in capsys.readouterr().out
    elsewhere = providers(NOWHERE + "/v1")  # another host, as the next run's port would be
    assert main(["run", smoke, "--providers", elsewhere, "--replay", tape, *common]) == 0
    assert "3 answer(s) replayed, nothing sent" in capsys.readouterr().out
