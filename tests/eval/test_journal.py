"""The store's journal: what a killed writer had not flushed is replayed, once, by the next open.

The kills are real: a child process writes through a `Store` that never flushes, then
SIGKILLs itself, so nothing of Python's shutdown (no `finally`, no atexit) runs.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.store import journal as journals
from workbench.eval.store.database import Store
from workbench.eval.store.journal import journal_path
from workbench.events import AttemptEvent

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from workbench.eval.store.database import OutputRow, Store
    from workbench.events import AttemptEvent
    path, n, durability = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    store = Store.open(path, flush_rows=10**9, flush_s=10**9, durability=durability)
    run = store.start_run(name="k", dataset="d", dataset_sha="s", configs=["c"], settings={})
    for i in range(n):
        store.write(AttemptEvent("p:m", None, "ok", i, 1.0), run_id=run, item_id=f"i{i}")
        store.add_output(OutputRow(run_id=run, item_id=f"i{i}", repeat=0, config="c"))
    print(run, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def killed_writer(path: Path, n: int, durability: str = "fsync") -> str:
    """A child that logs `n` items without one flush, then dies by SIGKILL; its run id."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(n), durability],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -9, proc.stderr
    return proc.stdout.strip()


def counts(path: Path) -> tuple[int, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return tuple(  # type: ignore[return-value]
            con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            for t in ("attempts", "outputs")
        )
    finally:
        con.close()


def test_what_a_killed_run_had_not_flushed_is_replayed_by_the_next_open(tmp_path):
    path = tmp_path / "w.duckdb"
    killed_writer(path, 250)
    assert journal_path(path).exists()
    assert counts(path) == (0, 0)  # DuckDB itself never saw a row
    with Store.open(path) as store:
        assert store.recovered is not None
        assert store.recovered.tables == {"attempts": 250, "outputs": 250}
    assert counts(path) == (250, 250)
    assert not journal_path(path).exists()  # a clean close leaves no journal


def test_opening_twice_replays_nothing_twice_even_if_the_journal_survived_its_replay(tmp_path):
    path = tmp_path / "w.duckdb"
    killed_writer(path, 40)
    kept = tmp_path / "journal.copy"
    shutil.copyfile(journal_path(path), kept)
    Store.open(path).close()
    # As if the replaying process died between its commit and cutting the journal back.
    shutil.copyfile(kept, journal_path(path))
    with Store.open(path) as store:
        assert store.recovered is not None and store.recovered.rows == 0
    Store.open(path).close()
    assert counts(path) == (40, 40)


def test_a_reader_replays_a_dead_writers_journal_before_it_reads(tmp_path):
    path = tmp_path / "w.duckdb"
    run = killed_writer(path, 30)
    with Store.open(path, read_only=True) as store:
        assert len(store.done(run)) == 30
    assert not journal_path(path).exists()


def test_a_torn_last_record_is_dropped_with_a_warning(tmp_path, caplog):
    path = tmp_path / "w.duckdb"
    killed_writer(path, 10)
    with journal_path(path).open("ab") as f:
        f.write(b"\x40\x00\x00\x00\x12\x34")  # a frame header promising 64 bytes, then the kill
    with caplog.at_level(logging.WARNING, logger="workbench.eval.store.database"):
        with Store.open(path) as store:
            assert store.recovered is not None and store.recovered.torn
            assert store.recovered.rows == 20
    assert "torn last record" in caplog.text
    assert counts(path) == (10, 10)


def test_a_bad_record_with_good_ones_after_it_is_corruption_naming_the_file(tmp_path):
    path = tmp_path / "w.duckdb"
    killed_writer(path, 5)
    data = bytearray(journal_path(path).read_bytes())
    first = len(journals.MAGIC) + 8 + int.from_bytes(data[4:8], "little")  # after the header
    data[first + 12] ^= 0xFF  # inside the first data record's payload
    journal_path(path).write_bytes(bytes(data))
    with pytest.raises(ConfigError) as info:
        Store.open(path)
    assert info.value.code == "STORE_JOURNAL_CORRUPT" and str(journal_path(path)) in str(info.value)
    assert journal_path(path).exists()


def test_a_journal_beside_another_file_is_refused_and_kept(tmp_path):
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    killed_writer(a, 5)
    Store.open(b).close()
    shutil.move(journal_path(a), journal_path(b))
    with pytest.raises(ConfigError) as info:
        Store.open(b)
    assert info.value.code == "STORE_JOURNAL_FOREIGN"
    assert str(journal_path(b)) in str(info.value) and "\n" not in str(info.value)
    assert journal_path(b).exists()  # never dropped silently
    with pytest.raises(ConfigError):
        Store.open(b, read_only=True)  # nor by a reader


def test_a_journal_of_another_schema_version_is_refused_and_kept(tmp_path):
    path = tmp_path / "w.duckdb"
    killed_writer(path, 5)
    contents = journals.read(journal_path(path))
    assert contents.header is not None
    # Rewrite the header as an older workbench would have written it; keep the records.
    data = journal_path(path).read_bytes()
    head_len = int.from_bytes(data[4:8], "little")
    rest = data[len(journals.MAGIC) + 8 + head_len :]
    old = journals._dumps({"journal_version": 1, "store_id": contents.header.store_id, "schema": 2})
    journal_path(path).write_bytes(journals.MAGIC + journals._frame(old) + rest)
    with pytest.raises(ConfigError) as info:
        Store.open(path)
    assert info.value.code == "STORE_JOURNAL_VERSION" and str(journal_path(path)) in str(info.value)
    assert journal_path(path).exists()


def test_a_second_writer_of_the_same_file_in_one_process_is_refused(tmp_path):
    path = tmp_path / "w.duckdb"
    with Store.open(path):
        with pytest.raises(ConfigError) as info:
            Store.open(path)
    assert info.value.code == "STORE_LOCKED"


@pytest.mark.parametrize("durability", ["write", "off"])
def test_write_survives_a_kill_and_off_does_not_journal(tmp_path, durability):
    path = tmp_path / "w.duckdb"
    killed_writer(path, 20, durability)
    Store.open(path).close()
    assert counts(path) == ((20, 20) if durability == "write" else (0, 0))


def test_every_buffered_row_is_on_disk_before_the_flush(tmp_path):
    path = tmp_path / "w.duckdb"
    with Store.open(path, flush_rows=10**9, flush_s=10**9) as store:
        for i in range(7):
            store.write(AttemptEvent("p:m", None, "ok", i, 1.0), run_id="r")
        records = journals.read(journal_path(path)).records
        assert [(t, r[4]) for _, t, r in records] == [("attempts", None)] * 7
        store.flush()
        assert journals.read(journal_path(path)).records == []  # cut back after the flush


# ------------------------------------------------------------------ a full disk
@pytest.fixture
def small_disk(tmp_path):
    """A real 8 MB tmpfs, so that the disk really fills (needs root, as CI has)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs as root and must mount a tmpfs: {done.stderr!r}")
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    # Unbuffered: a buffered file's close flushes what the last write left, and raises again.
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    return filler


def test_a_full_disk_is_store_disk_full_and_leaves_no_torn_record(small_disk):
    path = small_disk / "w.duckdb"
    store = Store.open(path, flush_rows=10**9, flush_s=10**9)
    filler = fill(small_disk)
    written = 0
    with pytest.raises(WorkbenchError) as info:
        for i in range(1_000_000):
            store.write(
                AttemptEvent("p:m", None, "ok", i, 1.0, error_message="x" * 200), run_id="r"
            )
            written += 1
    assert info.value.code == "STORE_DISK_FULL" and str(path) in str(info.value)
    contents = journals.read(journal_path(path))
    assert not contents.torn and len(contents.records) == written
    filler.unlink()  # space again: what was logged reaches the file, nothing torn
    store.close()
    assert counts(path)[0] == written


def test_a_flush_that_finds_the_disk_full_keeps_its_rows_for_the_next_open(small_disk):
    path = small_disk / "w.duckdb"
    store = Store.open(path, flush_rows=10**9, flush_s=10**9)
    for i in range(3000):
        store.write(AttemptEvent("p:m", None, "ok", i, 1.0, error_message="y" * 300), run_id="r")
    filler = fill(small_disk)
    with pytest.raises(WorkbenchError) as info:
        store.flush()
    assert info.value.code == "STORE_DISK_FULL"
    with pytest.raises(WorkbenchError):
        store.close()  # its flush still finds no space: the journal is kept
    filler.unlink()
    with Store.open(path) as again:
        assert again.recovered is not None and again.recovered.tables == {"attempts": 3000}
    assert counts(path)[0] == 3000


async def test_a_run_that_fills_the_disk_stops_with_store_disk_full_and_keeps_what_it_logged(
    small_disk, sim
):
    from workbench.eval.dataset.prompt_set import Dataset, Item
    from workbench.eval.run.runner import run_prompt_set
    from workbench.routing import Router
    from workbench.sim.fleet_providers import sim_providers

    path = small_disk / "run.duckdb"
    Store.open(path).close()
    filler = fill(small_disk)
    filler.write_bytes(b"\0" * (filler.stat().st_size - 400_000))  # room for ~100 items
    items = tuple(
        Item(id=f"i{i}", messages=({"role": "user", "content": f"Reply with exactly: pong {i}"},))
        for i in range(3000)
    )
    dataset = Dataset(name="big", path=small_disk / "big.jsonl", items=items, sha256="sha")
    router = Router(sim_providers(sim))
    with Store.open(path) as store:
        with pytest.raises(WorkbenchError) as info:
            await run_prompt_set(
                dataset, router, store, concurrency=8, progress=False, tool_loop=False
            )
        assert info.value.code == "STORE_DISK_FULL" and "\n" not in str(info.value)
        asked = len(sim.requests())
        assert asked < 1000  # the run stopped, it did not go on asking
        filler.unlink()
    with Store.open(path, read_only=True) as store:
        logged = [
            store.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            for t in ("attempts", "outputs", "replies")
        ]
    attempts, outputs, answers = logged
    # Nothing torn, nothing lost but what was in flight (8 at a time) when the disk filled.
    assert 0 < outputs <= answers <= attempts <= asked
    assert asked - 8 <= attempts and attempts - outputs <= 8
    assert not journal_path(path).exists()


def test_zeros_at_the_end_of_the_journal_are_a_torn_tail_not_a_crash(tmp_path):
    path = tmp_path / "w.duckdb"
    killed_writer(path, 6)
    with journal_path(path).open("ab") as f:
        f.write(b"\0" * 4096)  # what a power cut can leave: the size grew, the data never came
    with Store.open(path) as store:
        assert store.recovered is not None and store.recovered.torn
    assert counts(path) == (6, 6)


def test_a_damaged_length_in_the_middle_is_corruption_not_a_torn_tail(tmp_path):
    path = tmp_path / "w.duckdb"
    killed_writer(path, 5)
    data = bytearray(journal_path(path).read_bytes())
    first = len(journals.MAGIC) + 8 + int.from_bytes(data[4:8], "little")
    data[first : first + 4] = (10**9).to_bytes(4, "little")  # the first record claims 1 GB
    journal_path(path).write_bytes(bytes(data))
    with pytest.raises(ConfigError) as info:
        Store.open(path)
    assert info.value.code == "STORE_JOURNAL_CORRUPT"


def test_a_value_duckdb_would_refuse_fails_when_written_not_at_the_flush(tmp_path):
    from workbench.eval.store.database import OutputRow

    with Store.open(tmp_path / "w.duckdb") as store:
        with pytest.raises(ValueError, match="tokens_in"):
            store.add_output(
                OutputRow(run_id="r", item_id="i", repeat=0, config="c", tokens_in=2**40)
            )
        assert store.pending() == {}


def test_a_row_duckdb_refuses_is_set_aside_and_never_blocks_the_file(tmp_path, caplog):
    path = tmp_path / "w.duckdb"
    with Store.open(path, flush_rows=10**9, flush_s=10**9) as store:
        store.write(AttemptEvent("p:m", None, "ok", 1, 1.0), run_id="r")
        store.write(
            AttemptEvent("p:m", None, "error", 2, 1.0, error_message="bad \ud83d"), run_id="r"
        )
        store.write(AttemptEvent("p:m", None, "ok", 3, 1.0), run_id="r")
        with caplog.at_level(logging.ERROR, logger="workbench.eval.store.database"):
            store.flush()  # no error: the others are written
        assert "refused 1 row" in caplog.text
        store.write(AttemptEvent("p:m", None, "ok", 4, 1.0), run_id="r")
    assert counts(path)[0] == 3
    aside = path.with_name(path.name + ".rejected.jsonl").read_text().splitlines()
    assert len(aside) == 1 and "\\ud83d" in aside[0]
    Store.open(path, read_only=True).close()  # the file opens, and nothing is left to replay


def test_a_reader_on_a_read_only_disk_reads_a_dead_writers_journal_in_a_snapshot(small_disk):
    path = small_disk / "w.duckdb"
    run = killed_writer(path, 12)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    with Store.open(path, read_only=True) as store:
        assert store.snapshot and len(store.done(run)) == 12
    assert journal_path(path).exists()  # nothing could be replayed into the file itself


def test_a_journal_torn_inside_its_magic_is_removed_by_the_first_open(tmp_path):
    path = tmp_path / "w.duckdb"
    Store.open(path).close()
    journal_path(path).write_bytes(journals.MAGIC[:2])  # killed while creating its journal
    Store.open(path, read_only=True).close()
    assert not journal_path(path).exists()  # so that no later reader takes the write lock again
