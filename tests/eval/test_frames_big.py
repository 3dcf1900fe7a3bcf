"""The DataFrame API on a big run: per-row frames take `where=` and `limit=` (pushed into
DuckDB) and refuse, before reading, a frame past `max_rows`; aggregates stay in SQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.store.synthetic import synthesize_run


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("frames") / "frames.duckdb"
    synthesize_run(path, 3_000)
    synthesize_run(path, 50, run_id="small", started_ms=1_780_100_000_000)
    return path


def test_a_frame_past_its_row_cap_is_refused_with_the_ways_out(db):
    with RunFrames.open(db) as wb:
        wb.max_rows = 1_000
        with pytest.raises(ConfigError) as big:
            wb.outputs("synthetic")
        with pytest.raises(ConfigError) as every_run:
            wb.attempts()
        assert len(wb.outputs("small")) == 50  # under the cap: as before
        assert len(wb.outputs("synthetic", limit=1_000)) == 1_000  # a limit within it
    assert big.value.code == every_run.value.code == "FRAME_TOO_BIG"
    message = str(big.value)
    assert "3,000 rows" in message and "max_rows=1,000" in message
    assert all(way in message for way in ("limit=", "where=", "frames.sql("))


def test_where_and_limit_are_pushed_into_duckdb_in_the_frames_order(db):
    with RunFrames.open(db) as wb:
        wb.max_rows = 100
        last = wb.outputs("synthetic", where="item_id >= ?", params=["item-2990"])
        first = wb.outputs("synthetic", limit=3)
        # The caller's OR stays inside its own parentheses: no row of another run leaks in.
        either = wb.attempts(
            "small", where="outcome = ? OR outcome = ?", params=["ok", "error"], limit=100
        )
        none = wb.verdicts("synthetic", where="false")
    assert list(last["item_id"]) == [f"item-{n}" for n in range(2990, 3000)]
    assert list(first["item_id"]) == ["item-0000", "item-0001", "item-0002"]
    assert set(either["run_id"]) == {"small"} and set(either["outcome"]) <= {"ok", "error"}
    assert none.empty and "verdict" in none.columns


def test_aggregates_of_a_run_past_the_cap_stay_in_sql(db):
    with RunFrames.open(db) as wb:
        wb.max_rows = 10
        grades = wb.grades("synthetic", by="config")
        counted = wb.sql("SELECT count(*) AS n FROM outputs WHERE run_id = ?", ["synthetic"])
    assert int(grades["n"].sum()) == 3_000 == int(counted["n"][0])


def test_a_query_given_room_under_a_tight_cap_gets_the_cap_back_after(db):
    with RunFrames.open(db, memory_limit="48MB") as wb:
        before = wb.sql("SELECT current_setting('memory_limit') AS m")["m"][0]
        with wb.memory_limit("1GB"):
            during = wb.sql("SELECT current_setting('memory_limit') AS m")["m"][0]
            wb.latency(by="key", run_id="synthetic")
        after = wb.sql("SELECT current_setting('memory_limit') AS m")["m"][0]
        with pytest.raises(ValueError):
            wb.memory_limit("lots").__enter__()
    assert before == after != during and during.endswith("MiB")


def test_memory_limit_puts_back_the_cap_its_user_had_set(db):
    with RunFrames.open(db) as wb:
        wb.con.execute("SET memory_limit = '300MB'")
        before = wb.sql("SELECT current_setting('memory_limit') AS m")["m"][0]
        with wb.memory_limit("1GB"):
            pass
        after = wb.sql("SELECT current_setting('memory_limit') AS m")["m"][0]
    assert before == after  # not DuckDB's default (a share of the machine's memory)


def test_the_per_row_frames_read_whole_inside_uncapped_and_are_capped_again_after(db):
    with RunFrames.open(db) as wb:
        wb.max_rows = 10
        with wb.uncapped():
            outputs = wb.outputs("small")
        with pytest.raises(ConfigError):
            wb.outputs("small")
        assert wb.max_rows == 10
    assert len(outputs) == 50


def test_an_export_reads_a_run_past_the_row_cap_whole(db, monkeypatch):
    from workbench.eval.export._run import load_run

    monkeypatch.setattr(RunFrames, "max_rows", 10)
    from_file = load_run(db, "small")
    with RunFrames.open(db) as wb:
        given = load_run(wb, "small")
        with pytest.raises(ConfigError):  # the caller's own cap is untouched
            wb.outputs("small")
    assert len(from_file.samples) == len(given.samples) == 50


def test_a_reader_spills_to_a_private_folder_never_beside_the_file(tmp_path):
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "spill.duckdb"
    synthesize_run(path, 20)
    wb = RunFrames.open(path, memory_limit="48MB")
    try:
        # A DISTINCT of ~100 MB under a 48 MB cap: DuckDB spills it to its temp_directory.
        wb.sql(
            "SELECT count(*) FROM (SELECT DISTINCT range::VARCHAR || repeat('x', 40) "
            "FROM range(2000000))"
        )
        spill = Path(wb.sql("SELECT current_setting('temp_directory') AS d")["d"][0])
        spilled = [p.name for p in spill.iterdir()]
        beside = sorted(p.name for p in folder.iterdir())
    finally:
        wb.close()
    assert beside == ["spill.duckdb"]
    assert spilled and spill.parent != folder
    assert not spill.exists()  # removed on close


def test_a_report_of_a_store_in_a_read_only_folder_writes_nothing_beside_it(tmp_path):
    from workbench.eval.report.page import write_report

    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "ro.duckdb"
    synthesize_run(path, 30)
    folder.chmod(0o555)
    try:
        page = write_report(path, "synthetic", tmp_path / "reports")
        beside = sorted(p.name for p in folder.iterdir())
    finally:
        folder.chmod(0o755)
    assert page.exists() and beside == ["ro.duckdb"]


def test_two_readers_of_one_file_share_its_spill_folder_and_the_last_removes_it(tmp_path):
    path = tmp_path / "twice.duckdb"
    synthesize_run(path, 20)
    spill = "SELECT current_setting('temp_directory') AS d"
    first = RunFrames.open(path, memory_limit="48MB")
    first.sql(
        "SELECT count(*) FROM (SELECT DISTINCT range::VARCHAR || repeat('x', 40) "
        "FROM range(2000000))"
    )
    # One DuckDB database in this process: its spill folder, once used, cannot move.
    second = RunFrames.open(path, memory_limit="48MB")
    folder = Path(first.sql(spill)["d"][0])
    assert Path(second.sql(spill)["d"][0]) == folder
    first.close()
    assert folder.exists()  # still the second reader's
    second.close()
    assert not folder.exists()


def test_outputs_with_tags_and_fallbacks_past_their_cap_are_refused_and_take_where_and_limit(db):
    with RunFrames.open(db) as wb:
        wb.max_rows = 100
        refused = []
        for read in (
            lambda: wb.outputs_with_tags("synthetic"),
            lambda: wb.outputs_with_tags(["synthetic", "small"]),
            lambda: wb.fallbacks("synthetic"),
        ):
            with pytest.raises(ConfigError) as too_big:
                read()
            refused.append(too_big.value.code)
        # where= reads the frame's own columns (an item's category and tags beside its output).
        tagged = wb.outputs_with_tags(
            ["synthetic", "small"],
            where="category = ? AND item_id >= ?",
            params=["math", "item-2900"],
        )
        first = wb.outputs_with_tags("synthetic", limit=4)
        deep = wb.fallbacks("synthetic", where="fallback_depth = ?", params=[2], limit=3)
        counted = wb.sql(
            "SELECT count(*) AS n FROM outputs o JOIN items i USING (run_id, item_id) "
            "WHERE i.category = 'math' AND o.item_id >= 'item-2900'"
        )
    assert refused == ["FRAME_TOO_BIG"] * 3
    assert len(tagged) == int(counted["n"][0]) > 0 and set(tagged["category"]) == {"math"}
    assert set(tagged["run_id"]) == {"synthetic", "small"} and "tags" in tagged.columns
    assert list(first["item_id"]) == [f"item-{n:04d}" for n in range(4)]
    assert len(deep) == 3 and set(deep["fallback_depth"]) == {2}
    assert all(isinstance(chain, list) and len(chain) == 2 for chain in deep["chain"])


@pytest.fixture(scope="module")
def bfcl_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A BFCL run of 30 graded items (one in three failed), written by the store."""
    from workbench.eval.store.database import Store

    path = tmp_path_factory.mktemp("bfcl") / "bfcl.duckdb"
    with Store.open(path) as s:
        run = s.start_run(
            name=None,
            dataset="bfcl",
            dataset_sha="x",
            configs=["c"],
            settings={"tools_mode": "native"},
        )
        s.add_items(
            run,
            [
                {"item_id": f"simple_{n:02d}", "category": "simple", "expect": {"bfcl": {"id": n}}}
                for n in range(30)
            ],
        )
        for n in range(30):
            s.add_output(
                {"run_id": run, "item_id": f"simple_{n:02d}", "repeat": 0, "config": "c"}
                | {"key": "p:m", "raw": "[f()]", "passed": n % 3 != 0}
            )
        s.finish_run(run, "finished")
    return path, run


def test_bfcl_results_past_its_cap_are_refused_and_its_scores_read_every_item(bfcl_db):
    path, run = bfcl_db
    with RunFrames.open(path) as wb:
        wb.max_rows = 10
        with pytest.raises(ConfigError) as too_big:
            wb.bfcl_results(run)
        failed = wb.bfcl_results(run, where="NOT valid AND item_id < ?", params=["simple_10"])
        some = wb.bfcl_results(run, limit=2)
        scores = wb.bfcl_scores(run)  # a score is over every item, whatever the cap
    assert too_big.value.code == "FRAME_TOO_BIG"
    assert list(failed["item_id"]) == ["simple_00", "simple_03", "simple_06", "simple_09"]
    assert list(some["item_id"]) == ["simple_00", "simple_01"] and set(some["model"]) == {"p:m"}
    assert len(scores) == 1
