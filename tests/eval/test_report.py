"""`workbench report`: one self-contained page whose words are read from DuckDB as a person
reads them (ISO times, durations, no Python reprs, no epoch numbers), the comparison page, and
the refusals. The page in a real browser is tests/browser/test_report_viewer.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from tests.report_runs import make_two_runs
from workbench.cli import main
from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import compare_runs
from workbench.eval.report.page import render, write_comparison, write_report
from workbench.eval.report.parts import duration, iso


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    db = tmp_path_factory.mktemp("report") / "runs.duckdb"
    a, b = make_two_runs(db)
    return db, a, b


def _data(page: str) -> dict:
    blob = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert blob is not None
    return json.loads(blob.group(1))


def _rows(data: dict) -> list[dict]:
    """The table's rows, decoded as the page's script decodes them: every chunk's columns,
    codes looked up in the page's dictionaries, each row with its key."""
    chunks = [data["first"], *[c for c in data.get("row_chunks", []) if c["index"] > 0]]
    fields = [f for f in chunks[0] if isinstance(chunks[0][f], list)]
    rows = []
    for chunk in chunks:
        for i in range(chunk["count"]):
            row = {f: chunk[f][i] for f in fields}
            row |= {f: data["dicts"][f][row[f]] for f in data["dicts"] if f in row}
            row["key"] = f"{row['item']}|{row['repeat']}|{row['config']}"
            rows.append(row)
    return rows


def _stories(data: dict) -> dict[str, dict]:
    """Every row's story by its key, the requests' system prompts read back from the chunk's
    texts."""
    rows = _rows(data)
    told = {}
    for chunk in data["story_chunks"]:
        for i, story in enumerate(chunk["stories"]):
            for turn in story["turns"]:
                for attempt in turn["attempts"]:
                    request = attempt["request"]
                    if isinstance(request, dict) and isinstance(request.get("system"), int):
                        request["system"] = chunk["texts"][request["system"]]
            told[rows[chunk["start"] + i]["key"]] = story
    return told


def test_iso_and_durations_are_what_a_person_reads():
    assert iso(1796114495981) == "2026-12-01T08:41:35.981Z"
    assert iso(None) == ""
    assert [duration(x) for x in (0.4, 3.25, 42.0, 1400.0, 125_000.0)] == [
        "400 µs",
        "3.2 ms",
        "42 ms",
        "1.4 s",
        "2 min 5 s",
    ]


def test_the_page_stands_alone_and_shows_no_reprs_or_epoch_numbers(runs, tmp_path):
    db, a, _ = runs
    page = write_report(db, a, tmp_path).read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    # Nothing is fetched: no external script, stylesheet, image or font; one inline script.
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', page)
    assert "@import" not in page and "url(" not in page
    assert len(re.findall(r"<script\b", page)) == 2  # the data, and the viewer
    # A 13-digit number from 17… or 18… (2023–2033); not the digits after a decimal point.
    assert not re.search(r"(?<![\d.])1[78]\d{11}(?![\d.])", page), "an epoch-ms number is shown"
    latencies = [row["latency_ms"] for row in _rows(_data(page))]
    assert latencies and all(round(ms, 3) == ms for ms in latencies)
    assert "['" not in page and "{'" not in page and "np.float" not in page
    assert "T" in _data(page)["run"]["started"] and _data(page)["run"]["started"].endswith("Z")


def test_every_output_is_a_row_and_every_attempt_is_in_its_story(runs):
    db, a, _ = runs
    with RunFrames.open(db, snapshot=True) as wb:
        data = _data(render(wb, a))
        outputs = wb.outputs(a)
        attempts = wb.con.execute(
            "SELECT a.item_id, a.repeat, a.config, a.key, a.outcome FROM attempts a "
            "JOIN routes r USING (run_id, route_id) WHERE a.run_id = ? "
            "ORDER BY a.item_id, r.at_ms, a.position",
            [a],
        ).fetchall()
    assert len(_rows(data)) == len(outputs) == 64
    failed = {
        f"{r.item_id}|{r.repeat}|{r.config}" for r in outputs.itertuples() if r.passed is False
    }
    assert {r["key"] for r in _rows(data) if r["grade"] == "fail"} == failed
    told = [
        (key.split("|")[0], int(key.split("|")[1]), key.split("|")[2], at["key"], at["outcome"])
        for key, story in sorted(_stories(data).items())
        for turn in story["turns"]
        for at in turn["attempts"]
    ]
    assert sorted(told) == sorted(attempts)
    deep = [r for r in _rows(data) if r["depth"] and r["depth"] > 0]
    assert deep, "the simulator's flaky first model makes some routes fall back"
    # An item of several turns may have fallen back on a later turn only: that turn's chain.
    turns = _stories(data)[deep[0]["key"]]["turns"]
    turn = next(t for t in turns if t["chosen"] and t["fallback_depth"] > 0)
    first = turn["attempts"]
    assert first[0]["then"] == "moved on" and first[-1]["then"] == "answered"
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", x["start"]) for x in first)
    sent = next(x["request"] for x in first if x["outcome"] == "ok")
    assert sent["masked"] is True and sent["messages"][0]["role"] == "user"


def test_tool_calls_carry_their_protocol_and_family(runs):
    db, _, b = runs
    with RunFrames.open(db, snapshot=True) as wb:
        data = _data(render(wb, b))
    calls = [c for s in _stories(data).values() for c in s["tool_calls"]]
    assert calls and {c["protocol"] for c in calls} <= {"native", "text"}
    assert any(c["protocol"] == "text" and c["family"] for c in calls)


def test_model_text_cannot_end_the_script_or_inject_markup(runs, tmp_path):
    db, a, _ = runs
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db.read_bytes())
    evil = '</script><script>alert(1)</script><img src=x onerror="alert(2)">'
    con = duckdb.connect(str(copy))
    con.execute("UPDATE outputs SET raw = ? WHERE run_id = ?", [evil, a])
    con.close()
    page = write_report(copy, a, tmp_path).read_text(encoding="utf-8")
    assert evil not in page and len(re.findall(r"<script\b", page)) == 2
    assert {s["raw"] for s in _stories(_data(page)).values()} == {evil}  # shown as written


def test_the_comparison_lists_the_flips_the_gate_finds(runs, tmp_path):
    db, a, b = runs
    path = write_comparison(db, "plan", "text", tmp_path)
    assert path.name == f"{a}_vs_{b}.html"
    assert (tmp_path / f"{a}.html").exists() and (tmp_path / f"{b}.html").exists()
    page = path.read_text(encoding="utf-8")
    data = _data(page)
    with RunFrames.open(db, snapshot=True) as wb:
        gate = compare_runs(wb, a, b)
    assert gate.flips, "the two tool modes grade some items differently"
    want = {(f.item_id, f.repeat, f.config, f.passed_a, f.passed_b) for f in gate.flips}
    got = {
        (r["item"], r["repeat"], r["config"], r["A"] == "pass", r["B"] == "pass")
        for r in _rows(data)
    }
    assert got == want
    assert f"{100 * gate.diff:+.1f} points" in page and "exact p (items)" in page
    assert "no flips" in page  # a group with nothing flipped claims no interval
    assert "config sim" in page and "category " in page  # the per-group intervals


def test_an_unknown_run_and_an_unwritable_folder_are_one_line_errors(runs, tmp_path, capsys):
    db, a, _ = runs
    with pytest.raises(ConfigError) as unknown:
        write_report(db, "no-such-run", tmp_path)
    assert unknown.value.code == "RUN_UNKNOWN"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError) as refused:
        write_report(db, a, blocker / "reports")
    assert refused.value.code == "OUT_NOT_WRITABLE"
    assert main(["report", "no-such-run", "--db", str(db), "--out", str(tmp_path)]) == 2
    assert main(["report", a, "--db", str(db), "--out", str(blocker)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[1].strip() for line in err] == ["RUN_UNKNOWN", "OUT_NOT_WRITABLE"]
    assert list(tmp_path.glob("*.tmp")) == [] and list(tmp_path.glob(".*")) == []


def test_a_run_whose_routes_all_failed_still_renders_its_errors(tmp_path):
    from workbench.eval.store.database import Store

    db = tmp_path / "failed.duckdb"
    with Store.open(db) as s:
        run = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
        s.add_output(
            {
                "run_id": run,
                "item_id": "i1",
                "repeat": 0,
                "config": "c",
                "passed": None,
                "error_code": "AI_UNAVAILABLE",
                "error_message": "no model could answer",
                "latency_ms": 3.0,
                "cached": False,
                "at_ms": 1796114495981,
            }
        )
    with RunFrames.open(db) as wb:
        data = _data(render(wb, run))
    assert [(r["grade"], r["error"], r["turns"]) for r in _rows(data)] == [
        ("error", "AI_UNAVAILABLE", 0)  # failed, not held: neither a fail nor ungraded
    ]
    story = _stories(data)["i1|0|c"]
    assert (
        story["error"] == "AI_UNAVAILABLE: no model could answer" and story["grade"]["checks"] == []
    )


async def test_a_second_pass_down_the_chain_is_told_in_the_order_it_happened(tmp_path):
    """Every model cooling and `when_all_cooling="try"`: the walk goes down the chain again,
    positions restarting at 0 in the same route; the story (and the log) keep the order."""
    from workbench.eval.dataset.prompt_set import load_dataset
    from workbench.eval.run.runner import run_prompt_set
    from workbench.eval.store.database import Store
    from workbench.routing import Router
    from workbench.sim import SimServer
    from workbench.sim.fleet_providers import sim_chain_config

    dataset = tmp_path / "one.jsonl"
    dataset.write_text('{"id": "a", "prompt": "Say hello.", "expect": {"contains": ["hello"]}}\n')
    db = tmp_path / "passes.duckdb"
    async with SimServer() as sim:
        router = Router(sim_chain_config(sim).providers, when_all_cooling="try")
        for p in router.providers:
            for m in p.models:
                router.state.cooldowns.cool(f"{p.id}:{m.id}", 600)
        with Store.open(db) as store:
            run = (
                await run_prompt_set(load_dataset(dataset), router, store, progress=False)
            ).run_id
    with RunFrames.open(db) as wb:
        logged = wb.con.execute(
            "SELECT seq, position, outcome FROM attempts WHERE run_id = ? ORDER BY seq", [run]
        ).fetchall()
        story = next(iter(_stories(_data(render(wb, run))).values()))
    n = sum(len(p.models) for p in router.providers)  # the first pass: every one cooling
    assert [s for s, _, _ in logged] == list(range(n + 1))
    assert [o for _, _, o in logged] == ["skipped_cooling"] * n + ["ok"]
    assert logged[-1][1] == 0  # the second pass starts again at the first candidate
    told = [(a["position"], a["outcome"], a["then"]) for a in story["turns"][0]["attempts"]]
    assert told[-1] == (0, "ok", "answered") and {t[2] for t in told[:-1]} == {"moved on"}


def test_a_tool_loops_later_requests_carry_its_calls_in_their_wire_form(runs):
    db, a, _ = runs
    with RunFrames.open(db) as wb:
        sent = [
            json.loads(r[0])
            for r in wb.con.execute(
                "SELECT request FROM attempts WHERE run_id = ? AND request IS NOT NULL", [a]
            ).fetchall()
        ]
    calls = [c for r in sent for m in r["messages"] for c in m.get("tool_calls") or ()]
    assert calls, "the tool-calling set's second turns send the first turn's calls back"
    assert all(c["type"] == "function" and c["function"]["name"] for c in calls)
    assert "ToolCall(" not in json.dumps(sent)


def test_each_turn_shows_its_own_answer_and_each_tool_step_is_one_row(runs):
    db, a, _ = runs
    with RunFrames.open(db) as wb:
        data = _data(render(wb, a))
        replies = dict(
            ((r[0], r[1]), json.loads(r[2]))
            for r in wb.con.execute(
                "SELECT item_id, turn, reply FROM replies WHERE run_id = ?", [a]
            ).fetchall()
        )
        steps = wb.con.execute(
            "SELECT count(*) FROM (SELECT DISTINCT item_id, repeat, config, step_id "
            "FROM tool_steps WHERE run_id = ?)",
            [a],
        ).fetchone()[0]
    looped = {k: s for k, s in _stories(data).items() if len(s["turns"]) > 1}
    assert looped, "the tool-calling set has tool loops"
    for key, story in looped.items():
        item = key.split("|")[0]
        for n, turn in enumerate(story["turns"]):
            logged = replies[(item, n)]
            assert turn["reply"]["text"] == (logged.get("content") or logged["text"])
            assert [c["name"] for c in turn["reply"]["calls"]] == [
                c["name"] for c in logged["tool_calls"]
            ]
    told = [s for story in _stories(data).values() for s in story["tool_steps"]]
    assert len(told) == steps > 0
    assert {s["result"] for s in told} <= {"ok", "failed", "never finished"}


def test_unanswered_items_are_counted_beside_the_pass_rate_and_the_pacing_is_drawn(tmp_path):
    from workbench.eval.store.database import Store
    from workbench.events import AttemptEvent, PacingEvent, QuotaEvent

    db = tmp_path / "held.duckdb"
    t0 = 1796114495000
    with Store.open(db) as s:
        run = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
        base = {"run_id": run, "repeat": 0, "config": "c", "cached": False, "at_ms": t0}
        s.add_output(base | {"item_id": "i1", "key": "p:m", "passed": True, "score": 1.0})
        for item, why in (("i2", "rate_limit"), ("i3", "daily_quota")):
            s.add_output(
                base
                | {"item_id": item, "unanswered": why, "retry_at_ms": t0 + 60_000}
                | {"error_code": "AI_UNAVAILABLE", "error_message": "refused"}
            )
        sink = s.sink(run, "i1", 0, "c")
        for n, status in enumerate((429, 429, 200)):
            outcome = "ok" if status == 200 else "error"
            sink(AttemptEvent("p:m", None, outcome, t0 + 1000 * n, 5.0, status=status))
        sink(QuotaEvent("p:m", "p", "m", "requests", "minute", 30.0, 0.0, None, "headers", t0))
        # Groq's request headers count the day: 14,400 a day is no per-second rate to draw.
        sink(QuotaEvent("q:d", "q", "d", "requests", "day", 14400.0, 9.0, None, "headers", t0))
        sink(PacingEvent("p:m", "429", 2, 1, at_ms=t0 + 500))
    with RunFrames.open(db) as wb:
        page = render(wb, run)
    data = _data(page)
    assert [(r["grade"], r["unanswered"]) for r in _rows(data)] == [
        ("pass", ""),
        ("unanswered", "rate_limit"),
        ("unanswered", "daily_quota"),
    ]
    assert _stories(data)["i3|0|c"]["grade"]["result"] == "unanswered (daily_quota)"
    assert "<b>1</b>answered<" in page
    assert "<b>2 (1 daily_quota, 1 rate_limit)</b>unanswered<" in page
    assert "<b>100%</b>pass rate (of the graded answers)<" in page  # the unanswered are not fails
    chart = page[page.index("requests and 429s per second") :]
    chart = chart[: chart.index("</svg>")]
    assert "minute limit/s p:m" in chart and "429s at 0 s: 1" in chart
    assert "q:d" not in chart  # a day's limit is not drawn as a rate
    # Requests in flight are not requests per second: the concurrency has its own panel.
    assert "concurrency" not in chart
    panel = page[page.index("the concurrency the router allowed") :]
    assert "concurrency p:m" in panel[: panel.index("</svg>")]


def test_a_route_its_caller_stopped_is_no_unanswered_route_and_its_call_is_counted(tmp_path):
    """A Ctrl-C'd then resumed run (or a gateway client that hung up): the cancelled attempt
    was sent, so the report's calls and the requests per second count it alike; its route was
    stopped by the caller, not left unanswered by the models."""
    from workbench.eval.analysis.run_rows import route_depths, traffic_per_second
    from workbench.eval.store.database import Store
    from workbench.events import AttemptEvent, RouteEvent

    db = tmp_path / "stopped.duckdb"
    t0 = 1796114495000
    with Store.open(db) as s:
        run = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
        base = {"run_id": run, "repeat": 0, "config": "c", "cached": False, "at_ms": t0}
        s.add_output(base | {"item_id": "i1", "key": "p:m", "passed": True, "score": 1.0})
        sink = s.sink(run, "i1", 0, "c")
        sink(AttemptEvent("p:m", None, "cancelled", t0, 5.0, route_id="r1"))
        sink(RouteEvent(("p:m",), None, at_ms=t0, route_id="r1", error_code="AI_CANCELLED"))
        sink(AttemptEvent("p:m", None, "ok", t0 + 1000, 5.0, status=200, route_id="r2"))
        sink(RouteEvent(("p:m",), "p:m", at_ms=t0 + 1000, route_id="r2"))
    with RunFrames.open(db) as wb:
        page = render(wb, run)
        _, _, per_second = traffic_per_second(wb, run)
        depths = route_depths(wb, run)
    assert "<b>0</b>routes nobody answered<" in page
    assert "<b>1</b>routes stopped by the caller<" in page
    assert int(per_second["requests"].sum()) == 2
    assert "<b>2</b>provider calls<" in page
    assert sorted(depths["depth"]) == ["depth 0", "stopped by the caller"]
