"""A big run's report: a folder of chunks read by bounded queries, written whole and in bounded
memory. Runs are synthesised straight into a DuckDB file (`synthesize_run`): no run needed.
The page in a browser is tests/browser/; the write's time and memory are measured in
benchmarks/report_scale.py."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.eval.analysis.frames import RunFrames
from workbench.eval.report.chunks import (
    SINGLE_FILE_MAX,
    STORIES_PER_CHUNK,
    STORY_CHUNK_BYTES,
    RunTable,
)
from workbench.eval.report.page import write_comparison, write_report
from workbench.eval.store.synthetic import synthesize_run

ITEMS = SINGLE_FILE_MAX + 1_500  # just past one file: the folder form


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("big") / "big.duckdb"
    synthesize_run(db, ITEMS)
    synthesize_run(db, ITEMS, run_id="other", started_ms=1_780_100_000_000)
    return db


def _script(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("workbenchData(") and text.endswith(");\n")
    return json.loads(text[len("workbenchData(") : -3])


def _inline(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    start = text.index('<script type="application/json" id="data">') + len(
        '<script type="application/json" id="data">'
    )
    return json.loads(text[start : text.index("</script>", start)])


def _keys(db: Path, run: str) -> list[tuple[str, int, str]]:
    with RunFrames.open(db) as wb:
        rows = wb.con.execute(
            "SELECT item_id, repeat, config FROM outputs WHERE run_id = ? "
            "ORDER BY item_id, repeat, config",
            [run],
        ).fetchall()
    return [(str(i), int(r), str(c)) for i, r, c in rows]


def test_chunks_read_one_at_a_time_are_the_outputs_in_order(big):
    """Small chunks, so the table has several of each: every row once, in order, each
    story beside its row, codes into dictionaries made before any chunk was read."""
    with RunFrames.open(big) as wb:
        table = RunTable(wb, "synthetic", rows_per_chunk=2_000, stories_per_chunk=500)
        assert (table.rows, table.row_chunks, table.story_chunks) == (ITEMS, 4, 13)
        rows = [table.rows_chunk(k) for k in range(table.row_chunks)]
        stories = [table.stories_chunk(k) for k in (0, 7, 12)]
        with pytest.raises(IndexError):
            table.rows_chunk(4)
        with pytest.raises(IndexError):
            table.stories_chunk(13)
    config = table.dicts["config"]
    got = [
        (item, repeat, config[code])
        for chunk in rows
        for item, repeat, code in zip(chunk["item"], chunk["repeat"], chunk["config"], strict=True)
    ]
    assert got == _keys(big, "synthetic")
    assert [c["start"] for c in rows] == [0, 2_000, 4_000, 6_000]
    assert [c["count"] for c in rows] == [2_000, 2_000, 2_000, 500]
    assert [(s["start"], s["count"]) for s in stories] == [(0, 500), (3_500, 500), (6_000, 500)]
    # Each story is its row's: the synthetic run asks "Question N" of item N.
    for chunk in stories[:2]:
        for i, story in enumerate(chunk["stories"]):
            n = chunk["start"] + i
            request = story["turns"][0]["attempts"][-1]["request"]
            assert request["messages"][0]["content"] == f"Question {n}"
    grades = set(table.dicts["grade"])
    assert grades <= {"pass", "fail", "ungraded", "error", "unanswered"} and len(grades) > 1


def test_a_big_run_is_a_folder_whose_rows_are_the_outputs_in_order(big, tmp_path):
    (tmp_path / "synthetic.html").write_text("an older, smaller report of the run")
    page = write_report(big, "synthetic", tmp_path)
    assert page == tmp_path / "synthetic" / "index.html"
    assert not (tmp_path / "synthetic.html").exists()  # one form or the other, never both
    data = _inline(page)
    assert (data["format"], data["kind"], data["rows"], data["inline"]) == (1, "run", ITEMS, False)
    assert "row_chunks" not in data and "story_chunks" not in data
    files = sorted(p.name for p in (page.parent / "data").iterdir())
    stories = len(data["story_starts"])
    assert data["story_starts"] == list(range(0, ITEMS, STORIES_PER_CHUNK))  # short stories
    assert files == ["rows-00000.js"] + [f"stories-{k:05d}.js" for k in range(stories)]
    chunk = _script(page.parent / "data" / "rows-00000.js")
    assert chunk == data["first"]
    config = data["dicts"]["config"]
    assert [
        (i, r, config[c])
        for i, r, c in zip(chunk["item"], chunk["repeat"], chunk["config"], strict=True)
    ] == _keys(big, "synthetic")
    last = _script(page.parent / "data" / f"stories-{stories - 1:05d}.js")
    assert last["start"] + last["count"] == ITEMS == last["start"] + len(last["stories"])
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_small_run_is_one_file_that_replaces_an_older_folder(tmp_path):
    db = tmp_path / "small.duckdb"
    synthesize_run(db, 40)
    older = tmp_path / "out" / "synthetic"
    (older / "data").mkdir(parents=True)
    (older / "index.html").write_text("an older report of the run, when it was big")
    page = write_report(db, "synthetic", tmp_path / "out")
    assert page == tmp_path / "out" / "synthetic.html" and not older.exists()
    data = _inline(page)
    assert data["inline"] is True and data["rows"] == data["first"]["count"] == 40
    assert [c["start"] for c in data["story_chunks"]] == [0]
    assert len(data["story_chunks"][0]["stories"]) == 40


def test_a_report_folder_is_replaced_whole(big, tmp_path):
    page = write_report(big, "synthetic", tmp_path)
    stale = page.parent / "data" / "stories-99999.js"
    stale.write_text("workbenchData({});\n")
    again = write_report(big, "synthetic", tmp_path)
    assert again == page and not stale.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["synthetic"]


def test_a_comparison_links_each_flip_to_its_row_in_both_runs(big, tmp_path):
    path = write_comparison(big, "synthetic", "other", tmp_path)
    assert path == tmp_path / "synthetic_vs_other.html"  # identical runs: no flip
    data = _inline(path)
    assert data["links"] == {"a": "synthetic/index.html", "b": "other/index.html"}
    assert data["kind"] == "compare" and data["rows"] == 0 == data["first"]["count"]
    assert (tmp_path / "synthetic" / "index.html").exists()
    assert (tmp_path / "other" / "index.html").exists()


def test_many_flips_are_a_folder_whose_links_open_each_flips_row(big, tmp_path):
    import duckdb

    copy = tmp_path / "flipped.duckdb"
    copy.write_bytes(big.read_bytes())
    con = duckdb.connect(str(copy))
    con.execute("UPDATE outputs SET passed = NOT passed WHERE run_id = 'other'")
    con.close()
    path = write_comparison(copy, "synthetic", "other", tmp_path / "out")
    assert path == tmp_path / "out" / "synthetic_vs_other" / "index.html"
    data = _inline(path)
    assert data["rows"] > SINGLE_FILE_MAX and data["inline"] is False
    assert data["links"] == {"a": "../synthetic/index.html", "b": "../other/index.html"}
    chunk = _script(path.parent / "data" / "rows-00000.js")
    assert chunk == data["first"] and chunk["count"] == data["rows"]
    order = {key: n for n, key in enumerate(_keys(copy, "synthetic"))}
    config = data["dicts"]["config"]
    for i in (0, data["rows"] // 2, data["rows"] - 1):
        key = (chunk["item"][i], chunk["repeat"][i], config[chunk["config"][i]])
        assert chunk["a_index"][i] == order[key] == chunk["b_index"][i]


def test_a_full_disk_leaves_nothing_that_looks_complete(big, tmp_path, monkeypatch):
    from workbench.errors import ConfigError
    from workbench.eval.report import page as report_page

    calls = {"n": 0}
    real = report_page.chunk_script

    def fill_up(chunk: dict) -> str:
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError(28, "No space left on device")
        return real(chunk)

    monkeypatch.setattr(report_page, "chunk_script", fill_up)
    with pytest.raises(ConfigError) as full:
        write_report(big, "synthetic", tmp_path)
    assert full.value.code == "OUT_NOT_WRITABLE" and "No space left" in str(full.value)
    assert list(tmp_path.iterdir()) == []


_SYNTH = """
import sys
from workbench.eval.store.synthetic import synthesize_run
synthesize_run(sys.argv[1], int(sys.argv[2]))
"""
_PEAK = """
import resource, sys
from workbench.eval.report.page import write_report
write_report(sys.argv[1], "synthetic", sys.argv[2])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@pytest.mark.slow
def test_writing_a_report_holds_no_more_of_a_run_ten_times_as_big(tmp_path):
    """The write's memory does not grow with the run: a process writing 8,000 items and one
    writing 80,000 peak within some tens of MB of each other (the old writer held every row
    and story: ten times the run, about ten times its growth)."""
    grew = []
    for n in (8_000, 80_000):
        db = str(tmp_path / f"{n}.duckdb")
        # Synthesised by a process of its own, as a run's file is: a reader started while
        # the process that wrote the file lives was seen to open it ~100 MB bigger.
        subprocess.run([sys.executable, "-c", _SYNTH, db, str(n)], check=True)
        out = subprocess.run(
            [sys.executable, "-c", _PEAK, db, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
        )
        grew.append(int(out.stdout.strip()) // 1024)  # ru_maxrss is in KiB on Linux
    assert grew[1] - grew[0] < 60, f"peak grew {grew[0]} MB → {grew[1]} MB"


def test_long_stories_make_small_stories_chunks_and_never_run_duckdb_out_of_memory(tmp_path):
    """Prompts and answers of tens of kilobytes (a long-context run): a few hundred rows are
    a folder already, a stories chunk holds a few dozen, and the report's tight DuckDB cap
    gives each read the room it needs rather than failing it."""
    db = tmp_path / "long.duckdb"
    synthesize_run(db, 400)
    with RunFrames.open(db, read_only=False) as wb:
        wb.con.execute("UPDATE outputs SET raw = repeat('lorem ipsum ', 3000) || item_id")
        wb.con.execute(
            "UPDATE attempts SET request = to_json({'messages': [{'role': 'user', "
            "'content': repeat('a long question ', 3000)}]})"
        )
    page = write_report(db, "synthetic", tmp_path / "out")
    assert page == tmp_path / "out" / "synthetic" / "index.html"  # 400 rows, yet a folder
    data = _inline(page)
    starts = data["story_starts"]
    # About 100 KB a story: some forty to a chunk (where short ones are 1,000), ten chunks.
    assert 8 <= len(starts) <= 20 and max(b - a for a, b in itertools.pairwise(starts)) < 60
    stories = sorted((page.parent / "data").glob("stories-*.js"))
    assert len(stories) == len(starts)
    last = _script(stories[-1])
    assert last["stories"][-1]["raw"].endswith("item-399")
    assert max(p.stat().st_size for p in stories) < 2 * STORY_CHUNK_BYTES


def test_a_cluster_of_long_stories_is_cut_by_their_bytes_not_the_runs_average(tmp_path):
    """Long items sit together in a prompt set (a long-context category): the chunks holding
    them are cut by their own bytes — none much past STORY_CHUNK_BYTES — while the short
    stories around them stay 1,000 to a chunk, and every story is still its row's."""
    db = tmp_path / "cluster.duckdb"
    synthesize_run(db, 4_000)
    with RunFrames.open(db, read_only=False) as wb:  # rows 1,000 … 1,199: 100 KB each
        wb.con.execute(
            "UPDATE outputs SET raw = repeat('x', 100000) || item_id "
            "WHERE item_id >= 'item-1000' AND item_id < 'item-1200'"
        )
    folder = write_report(db, "synthetic", tmp_path / "out").parent
    starts = _inline(folder / "index.html")["story_starts"]
    assert starts[:2] == [0, 1_000]  # short stories: 1,000 to a chunk
    # Rows 1,000 … 1,199, 20 MB: some forty stories to a chunk (and the last of them joined
    # by short ones), then 1,000 to a chunk again.
    cluster = [s for s in starts if 1_000 <= s < 1_200]
    assert 5 <= len(cluster) <= 6
    assert all(b - a <= 41 for a, b in itertools.pairwise(cluster))
    after = [s for s in starts if s >= 1_200]
    assert all(b - a == 1_000 for a, b in itertools.pairwise(after)) and after[-1] > 3_000
    sizes = [p.stat().st_size for p in sorted((folder / "data").glob("stories-*.js"))]
    assert len(sizes) == len(starts)
    assert max(sizes) < STORY_CHUNK_BYTES + 2 * 100_000  # about 4 MB, and one story more
    for k, start in enumerate(starts):
        chunk = _script(folder / "data" / f"stories-{k:05d}.js")
        assert chunk["start"] == start
        stop = starts[k + 1] if k + 1 < len(starts) else 4_000
        assert chunk["count"] == len(chunk["stories"]) == stop - start
        for i, story in enumerate(chunk["stories"]):
            request = story["turns"][0]["attempts"][-1]["request"]
            assert request["messages"][0]["content"] == f"Question {start + i}"


def test_the_pacing_chart_holds_a_point_per_second_however_many_quota_readings(tmp_path):
    """Every reply of a big run carries quota headers: 200,000 readings over a minute are drawn
    as one point per model and second (the highest limit read in it), not 200,000."""
    from workbench.eval.report.page import render

    db = tmp_path / "quota.duckdb"
    synthesize_run(db, 50)
    t0 = 1_780_000_000_000  # the synthetic run's first request
    with RunFrames.open(db, read_only=False) as wb:
        wb.con.execute(
            'INSERT INTO quota (run_id, key, provider, model, scope, "window", "limit", '
            "remaining, source, observed_at_ms) "
            "SELECT 'synthetic', CASE WHEN k % 2 = 0 THEN 'a:m' ELSE 'b:m' END, 'a', 'm', "
            "'requests', 'minute', 60.0 * (1 + k % 3), 0, 'headers', ? + k * 3 // 10 "
            "FROM range(200000) t(k)",
            [t0],
        )
        wb.con.execute(
            "INSERT INTO pacing (run_id, key, why, concurrency, at_ms) "
            "SELECT 'synthetic', 'a:m', '429', 1 + k % 7, ? + k * 3 // 10 FROM range(200000) t(k)",
            [t0],
        )
        page = render(wb, "synthetic")
    chart = page[page.index("requests and 429s per second") :]
    chart = chart[: chart.index("</svg>")]
    lines = re.findall(r'<polyline points="([^"]*)"', chart)
    assert len(lines) == 2  # a:m and b:m
    seconds = 200_000 * 3 // 10 // 1000  # 60
    for points in lines:
        # One step per second: two corners each.
        assert len(points.split()) <= 2 * (seconds + 1)
        # Each second read 60, 120 and 180 a minute: drawn at the highest, a flat line.
        assert len({corner.split(",")[1] for corner in points.split()}) == 1
    assert "minute limit/s a:m" in chart and "minute limit/s b:m" in chart
    panel = page[page.index("the concurrency the router allowed") :]
    (steps,) = re.findall(r'<polyline points="([^"]*)"', panel[: panel.index("</svg>")])
    assert len(steps.split()) <= 2 * (seconds + 1)


def test_a_day_long_run_draws_a_bounded_number_of_bars_each_covering_several_seconds(tmp_path):
    """A free tier's run goes on for hours: its requests are drawn as about TIMELINE_BARS bars,
    each the average per second over its seconds, never a bar per second."""
    from workbench.eval.analysis.run_rows import TIMELINE_BARS, traffic_per_second
    from workbench.eval.report.page import render

    db = tmp_path / "long.duckdb"
    synthesize_run(db, 3_000)
    t0 = 1_780_000_000_000  # the synthetic run's first request; one a millisecond after it
    with RunFrames.open(db, read_only=False) as wb:
        wb.con.execute("UPDATE attempts SET start_ms = ? + (start_ms - ?) * 12000", [t0, t0])
        start, step, traffic = traffic_per_second(wb, "synthetic")
        page = render(wb, "synthetic")
        (sent,) = wb.con.execute(
            "SELECT count(*) FROM attempts WHERE run_id = 'synthetic'"
        ).fetchone()
    assert start == t0 and step == 60  # 36,000 s over 600 bars
    assert len(traffic) <= TIMELINE_BARS + 1
    assert round(float(traffic["requests"].sum()) * step) == sent  # every request, averaged
    chart = page[page.index("requests and 429s per second") :]
    assert chart.startswith(
        "requests and 429s per second, the minute&#x27;s limit learnt (a bar: 60 s"
    )
    chart = chart[: chart.index("</svg>")]
    assert 0 < len(re.findall(r"<rect [^>]*><title>requests at", chart)) <= TIMELINE_BARS + 1


def test_flips_read_a_span_at_a_time_carry_their_index_in_both_runs(big, tmp_path):
    """Read in batches of 700 over spans of A: every flip once, in order, each batch full but
    the last, each INDEX its row in that run's report (B lacks A's first 50 outputs)."""
    import duckdb

    from workbench.eval.analysis.gate import flipped_pairs

    copy = tmp_path / "some.duckdb"
    copy.write_bytes(big.read_bytes())
    con = duckdb.connect(str(copy))
    con.execute(
        "UPDATE outputs SET passed = NOT passed WHERE run_id = 'other' AND passed IS NOT NULL "
        "AND hash(item_id) % 3 = 0"
    )
    con.execute("DELETE FROM outputs WHERE run_id = 'other' AND item_id < 'item-0050'")
    con.close()
    with RunFrames.open(copy) as wb:
        batches = list(flipped_pairs(wb, "synthetic", "other", size=700))
    flips = [f for batch in batches for f in batch]
    assert all(len(b) == 700 for b in batches[:-1]) and 0 < len(batches[-1]) <= 700
    assert len(batches) > 2
    order_a = {key: n for n, key in enumerate(_keys(copy, "synthetic"))}
    order_b = {key: n for n, key in enumerate(_keys(copy, "other"))}
    keys = [(i, r, c) for i, r, c, *_ in flips]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(key in order_b for key in keys)
    assert [f[6] for f in flips] == [order_a[k] for k in keys]
    assert [f[7] for f in flips] == [order_b[k] for k in keys]
    assert all(f[4] != f[5] for f in flips)


def test_the_pairs_counted_a_span_of_items_at_a_time_are_the_pairs_counted_at_once(
    big, tmp_path, monkeypatch
):
    """Items of three repeats, counted in spans that end mid-run: every figure of the
    comparison is the same as counted in one read, and as the pairs read into pandas say."""
    import duckdb

    from workbench.eval.analysis import gate

    copy = tmp_path / "repeats.duckdb"
    copy.write_bytes(big.read_bytes())
    con = duckdb.connect(str(copy))
    for repeat in (1, 2):  # three pairs an item: a span must never split one
        con.execute(
            f"INSERT INTO outputs BY NAME SELECT * REPLACE ({repeat} AS repeat, "
            f"CASE WHEN hash(item_id, {repeat}) % 4 = 0 THEN NOT passed ELSE passed END AS passed) "
            "FROM outputs WHERE repeat = 0"
        )
    con.execute(
        "UPDATE outputs SET passed = NOT passed WHERE run_id = 'other' AND hash(item_id) % 5 = 0"
    )
    con.close()
    with RunFrames.open(copy) as wb:
        at_once = gate.compare_runs(wb, "synthetic", "other", max_flips=0)
        groups = gate.grouped_stats(wb, "synthetic", "other", "config")
        both, _, _ = gate.paired_outputs(wb, "synthetic", "other")
        monkeypatch.setattr(gate, "_ITEMS_AT_ONCE", 1_000)
        assert len(list(gate._item_spans(wb, "synthetic"))) > 5
        spans = gate.compare_runs(wb, "synthetic", "other", max_flips=0)
        assert gate.grouped_stats(wb, "synthetic", "other", "config") == groups
    assert spans == at_once
    assert (spans.pairs, spans.items) == (len(both), both["item_id"].nunique())
    assert spans.a_only == int((both["passed_a"] & ~both["passed_b"]).sum()) > 0


def test_a_terminal_comparison_reads_only_the_flips_it_shows(tmp_path, capsys):
    """`workbench compare` prints twenty flips and counts the rest: it reads twenty, the first
    in order, whatever the runs' size; `--json` lists every one."""
    import duckdb

    from workbench.cli import main
    from workbench.eval.analysis.gate import SHOWN_FLIPS, compare_runs

    db = tmp_path / "flips.duckdb"
    synthesize_run(db, 3_000)
    synthesize_run(db, 3_000, run_id="other", started_ms=1_780_100_000_000)
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE outputs SET passed = NOT passed WHERE run_id = 'other' AND hash(item_id) % 3 = 0"
    )
    con.close()
    with RunFrames.open(db) as wb:
        every = compare_runs(wb, "synthetic", "other")
        shown = compare_runs(wb, "synthetic", "other", max_flips=SHOWN_FLIPS)
    assert len(every.flips) == every.a_only + every.b_only > 500
    assert shown.flips == every.flips[:SHOWN_FLIPS]
    assert (shown.a_only, shown.b_only, shown.p_value) == (
        every.a_only,
        every.b_only,
        every.p_value,
    )
    main(["compare", "synthetic", "other", "--db", str(db)])
    text = capsys.readouterr().out
    assert f"… and {len(every.flips) - SHOWN_FLIPS} more" in text
    assert sum("→" in line for line in text.splitlines()) == SHOWN_FLIPS
    main(["compare", "synthetic", "other", "--db", str(db), "--json"])
    assert len(json.loads(capsys.readouterr().out)["flips"]) == len(every.flips)
