"""The DuckDB store: schema and migrations, batched writes, every event's table, resume, the
capability store, the response cache, and locking against a real second process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from workbench.capability.decide import make_record
from workbench.capability.store import CapabilityStore
from workbench.errors import ConfigError
from workbench.eval.store import schema
from workbench.eval.store.database import Store
from workbench.eval.store.schema import COLUMNS
from workbench.events import (
    ActionEvent,
    AttemptEvent,
    PacingEvent,
    QuotaBackendEvent,
    QuotaEvent,
    RouteEvent,
    ToolStepEvent,
    VerdictEvent,
)

T0 = 1_767_225_600_000


def attempt(i: int = 0, **kw) -> AttemptEvent:
    base = {"key": "p:m@fast", "lane": "fast", "outcome": "ok", "start_ms": T0 + i}
    return AttemptEvent(**{**base, "latency_ms": 10.0 + i, **kw})


def count(store: Store, table: str) -> int:
    return store.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]


def txid(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT txid_current()").fetchall()[0][0]


@pytest.fixture
def store(tmp_path: Path):
    s = Store.open(tmp_path / "wb.duckdb", flush_s=1e9)
    yield s
    s.close()


def new_run(store: Store) -> str:
    return store.start_run(
        name="n", dataset="smoke.jsonl", dataset_sha="sha", configs=["a", "b"], settings={"x": 1}
    )


# ------------------------------------------------------------------ schema
def test_fresh_file_gets_every_table_at_the_latest_version(tmp_path: Path):
    with Store.open(tmp_path / "wb.duckdb") as s:
        assert s.schema_version == schema.latest_version()
        versions = s.con.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
        assert versions == [(v,) for v, _ in schema.MIGRATIONS]
        for table, columns in COLUMNS.items():
            got = s.con.execute(f"DESCRIBE {table}").fetchall()
            assert [(r[0], r[1]) for r in got] == list(columns.items()), table


def test_a_v0_file_is_upgraded_and_keeps_its_data(tmp_path: Path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))  # a file from before versioning: no schema_version table
    con.execute("CREATE TABLE notes (n VARCHAR)")
    con.execute("INSERT INTO notes VALUES ('kept')")
    con.close()
    with Store.open(path) as s:
        assert s.schema_version == schema.latest_version()
        assert s.con.execute("SELECT n FROM notes").fetchall() == [("kept",)]
        assert count(s, "attempts") == 0


def test_pending_migrations_apply_in_order_and_a_failing_one_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "wb.duckdb"
    with Store.open(path) as s:
        run_id = new_run(s)
    top = schema.latest_version()
    v2 = (top + 1, "ALTER TABLE runs ADD COLUMN note VARCHAR; UPDATE runs SET note = 'v2'")
    broken = (top + 2, "CREATE TABLE half (a INTEGER); SELECT * FROM no_such_table")
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, v2, broken])
    with pytest.raises(ConfigError) as err:
        Store.open(path)
    assert err.value.code == "STORE_MIGRATION_FAILED"
    con = duckdb.connect(str(path))
    assert con.execute("SELECT max(version) FROM schema_version").fetchall() == [(top,)]
    assert "note" not in [r[0] for r in con.execute("DESCRIBE runs").fetchall()]
    assert not con.execute("SELECT * FROM duckdb_tables() WHERE table_name='half'").fetchall()
    con.close()
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS[:-2], v2])
    s = Store.open(path)
    assert s.schema_version == top + 1
    assert s.con.execute("SELECT note FROM runs WHERE run_id = ?", [run_id]).fetchall() == [("v2",)]
    s.close()


def test_a_file_newer_than_the_code_is_refused(tmp_path: Path):
    path = tmp_path / "wb.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version VALUES (99, now()::TIMESTAMP)")
    con.close()
    for read_only in (False, True):
        with pytest.raises(ConfigError) as err:
            Store.open(path, read_only=read_only)
        assert err.value.code == "STORE_TOO_NEW"
        assert "99" in str(err.value)


# ------------------------------------------------------------------ runs and items
def test_run_lifecycle(store: Store):
    run_id = new_run(store)
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", run_id)
    run = store.get_run(run_id)
    assert run["status"] == "running" and run["finished_at"] is None
    assert run["configs"] == ["a", "b"] and run["settings"] == {"x": 1}
    store.finish_run(run_id, "interrupted")
    run = store.get_run(run_id)
    assert run["status"] == "interrupted" and run["finished_at"] is not None
    store.mark_running(run_id)
    assert store.get_run(run_id)["status"] == "running"
    assert store.get_run(run_id)["finished_at"] is None
    with pytest.raises(ConfigError) as bad_status:
        store.finish_run(run_id, "done-ish")
    assert bad_status.value.code == "RUN_INVALID"
    with pytest.raises(ConfigError) as err:
        store.get_run("nope-123")
    assert err.value.code == "RUN_UNKNOWN" and "nope-123" in str(err.value)


def test_add_items_is_idempotent_and_reads_json_either_way(store: Store):
    run_id = new_run(store)
    rows = [
        {"item_id": "i1", "category": "c", "tags": ["a"], "prompt": "p", "expect": {"x": 1}},
        {"item_id": "i2", "tags": json.dumps(["b"]), "prompt": "q", "expect": None},
    ]
    store.add_items(run_id, rows)
    store.add_items(run_id, rows)
    got = store.con.execute("SELECT item_id, tags, expect FROM items ORDER BY 1").fetchall()
    assert got == [("i1", '["a"]', '{"x":1}'), ("i2", '["b"]', None)]
    with pytest.raises(ConfigError, match="no column") as unknown:
        store.add_items(run_id, [{"item_id": "i3", "bogus": 1}])
    assert unknown.value.code == "COLUMN_UNKNOWN"


# ------------------------------------------------------------------ batching
def test_rows_appear_only_when_a_buffer_reaches_flush_rows(tmp_path: Path):
    with Store.open(tmp_path / "wb.duckdb", flush_rows=5, flush_s=1e9) as s:
        for i in range(4):
            s.write(attempt(i), run_id="r")
        assert count(s, "attempts") == 0
        assert s.pending() == {"attempts": 4}
        s.write(attempt(4), run_id="r")
        assert count(s, "attempts") == 5
        assert s.pending() == {}
        s.write(attempt(5), run_id="r")
        assert count(s, "attempts") == 5
    with Store.open(tmp_path / "wb.duckdb") as s:  # close() flushed the last one
        assert count(s, "attempts") == 6


def test_flush_s_flushes_at_the_next_write(tmp_path: Path):
    with Store.open(tmp_path / "wb.duckdb", flush_rows=1000, flush_s=0.05) as s:
        s.flush()
        s.write(attempt(0), run_id="r")
        assert count(s, "attempts") == 0
        time.sleep(0.06)
        s.write(attempt(1), run_id="r")
        assert count(s, "attempts") == 2


def test_a_flush_of_many_rows_in_many_tables_is_one_transaction(store: Store):
    # Baseline: the measure sees each autocommit statement as its own transaction.
    t0 = txid(store.con)
    store.con.execute("INSERT INTO events (type) VALUES ('a')")
    store.con.execute("INSERT INTO events (type) VALUES ('b')")
    assert txid(store.con) - t0 == 3  # two inserts + this select
    for i in range(700):
        store.write(attempt(i), run_id="r", item_id=f"i{i}")
        store.write(RouteEvent(("p:m",), "p:m", route_id=f"x{i}"), run_id="r")
    for i in range(50):
        store.add_output({"run_id": "r", "item_id": f"i{i}", "repeat": 0, "config": "a"})
    store.write(ActionEvent("a1", "send", "pending", "bot"), run_id="r")
    t0 = txid(store.con)
    store.flush()
    assert txid(store.con) - t0 == 2  # ONE transaction for the flush + this select
    assert (count(store, "attempts"), count(store, "routes"), count(store, "outputs")) == (
        700,
        700,
        50,
    )


# ------------------------------------------------------------------ events land with their tags
@dataclass
class CustomEvent:
    name: str
    at_ms: int = 123


def test_every_event_type_lands_in_its_table_with_the_tags(store: Store):
    run_id = new_run(store)
    sink = store.sink(run_id, "item-1", 2, "cfg")
    sink(
        attempt(
            0,
            outcome="error",
            status=429,
            error_kind="rate_limit",
            error_code="PROVIDER_RATE_LIMIT",
            error_message="slow down",
            route_id="rt",
            tokens=7,
            cached=True,
        )
    )
    sink(RouteEvent(("p:m", "q:n"), "q:n", {"p:m": "cooldown"}, False, 5, "rt", 1, None))
    sink(VerdictEvent("p", "m", "sc", "tools", "text", True, "prose", "live", 6, "mistral"))
    sink(ToolStepEvent("s1", "search", '{"q":"x"}', True, 7))
    sink(QuotaEvent("p:m", "p", "m", "sc", "minute", 60.0, 12.0, 9000, "headers", 8))
    sink(QuotaBackendEvent("memory", "degraded", "redis down", 9))
    sink(CustomEvent("hello"))
    store.flush()
    tags = (run_id, "item-1", 2, "cfg")

    def one(sql: str) -> tuple:
        rows = store.con.execute(sql).fetchall()
        assert len(rows) == 1, sql
        return rows[0]

    row = one("SELECT * FROM attempts")
    assert row[:4] == tags
    assert row[4:] == (
        "rt",
        "p:m@fast",
        "p",
        "m",
        "fast",
        0,
        "error",
        429,
        "rate_limit",
        "PROVIDER_RATE_LIMIT",
        "slow down",
        7,
        10.0,
        T0,
        True,
        None,
        None,
        0,
        f'["{run_id}","item-1",2,"cfg",0]',  # derived: the output's first attempt
        None,  # asked on its own, not in a vendor's batch
    )
    row = one("SELECT * FROM routes")
    assert row == (*tags, "rt", '["p:m","q:n"]', "q:n", False, 1, '{"p:m":"cooldown"}', None, 5)
    row = one("SELECT * FROM verdicts")
    assert row == (*tags, "p", "m", "sc", "tools", "text", True, "prose", "live", 6, "mistral")
    assert one("SELECT * FROM tool_steps") == (*tags, "s1", "search", '{"q":"x"}', True, 7)
    row = one("SELECT * FROM quota")
    assert row == (
        run_id,
        "item-1",
        "p:m",
        "p",
        "m",
        "sc",
        "minute",
        60.0,
        12.0,
        9000,
        "headers",
        8,
    )
    events = store.con.execute(
        "SELECT run_id, item_id, type, at_ms, data FROM events ORDER BY type"
    )
    got = events.fetchall()
    assert [(r[0], r[1], r[2], r[3]) for r in got] == [
        (run_id, "item-1", "CustomEvent", 123),
        (run_id, "item-1", "QuotaBackendEvent", 9),
    ]
    assert json.loads(got[1][4]) == {
        "backend": "memory",
        "state": "degraded",
        "reason": "redis down",
        "at_ms": 9,
    }


def test_action_events_fold_into_one_row_with_its_history(store: Store):
    store.write(ActionEvent("a1", "send_mail", "pending", "agent", 1), run_id="r")
    store.flush()
    store.write(ActionEvent("a1", "send_mail", "executing", "alice", 2), run_id="r")
    store.write(ActionEvent("a1", "send_mail", "executed", None, 3), run_id="r")
    store.flush()
    row = store.con.execute(
        "SELECT action_id, run_id, status, proposed_by, decided_by, history, "
        "created_at_ms, updated_at_ms FROM actions"
    ).fetchall()
    assert len(row) == 1
    action_id, run_id, status, proposed, decided, history, created, updated = row[0]
    assert (action_id, run_id, status, proposed, decided) == (
        "a1",
        "r",
        "executed",
        "agent",
        "alice",
    )
    assert [h["status"] for h in json.loads(history)] == ["pending", "executing", "executed"]
    assert (created, updated) == (1, 3)


# ------------------------------------------------------------------ resume
def test_done_flushes_and_lists_each_output_once(store: Store):
    run_id = new_run(store)
    store.add_output(
        {"run_id": run_id, "item_id": "i1", "repeat": 0, "config": "a", "passed": False}
    )
    store.add_output(
        {"run_id": run_id, "item_id": "i1", "repeat": 0, "config": "a", "passed": True}
    )
    store.add_output({"run_id": run_id, "item_id": "i1", "repeat": 1, "config": "a"})
    store.add_output({"run_id": "other", "item_id": "i9", "repeat": 0, "config": "a"})
    assert count(store, "outputs") == 0
    assert store.done(run_id) == {("i1", 0, "a"), ("i1", 1, "a")}
    passed = store.con.execute(
        "SELECT passed FROM outputs WHERE item_id = 'i1' AND repeat = 0"
    ).fetchall()
    assert passed == [(True,)]  # the later output of the same key won


def test_close_flushes_and_is_idempotent(tmp_path: Path):
    path = tmp_path / "wb.duckdb"
    s = Store.open(path, flush_s=1e9)
    s.write(attempt(), run_id="r")
    s.close()
    s.close()
    with pytest.raises(ConfigError) as err:
        s.write(attempt(), run_id="r")
    assert err.value.code == "STORE_CLOSED"
    with Store.open(path) as again:
        assert count(again, "attempts") == 1


# ------------------------------------------------------------------ capabilities and cache
def rec(verdict="native", via="live", at=T0, model="m", capability="tools"):
    return make_record("p", model, "s", capability, verdict, via, "ev", at)


async def test_capability_store_applies_should_replace_and_persists(tmp_path: Path):
    path = tmp_path / "wb.duckdb"
    with Store.open(path) as s:
        caps = s.capabilities
        assert isinstance(caps, CapabilityStore)
        assert await caps.get("p", "m", "s", "tools") is None
        assert await caps.put(rec("native", "probe", T0))
        assert not await caps.put(rec("none", "declared", T0 + 5))  # weaker provenance loses
        assert await caps.put(rec("text", "live", T0 - 5))  # stronger wins, even when older
        assert not await caps.put(rec("none", "live", T0 - 10))  # same rank, older loses
        assert await caps.put(rec("none", "live", T0))  # same rank, newer wins
        await caps.put(rec(model="m2", capability="vision"))
    with Store.open(path) as s:
        assert await s.capabilities.get("p", "m", "s", "tools") == rec("none", "live", T0)
        assert [(r.model, r.capability) for r in await s.capabilities.all()] == [
            ("m", "tools"),
            ("m2", "vision"),
        ]


async def test_a_records_protocol_family_is_written_and_read_back(tmp_path: Path):
    path = tmp_path / "wb.duckdb"
    seen = make_record("p", "m", "s", "tools", "text", "live", "prose", T0, "mistral")
    with Store.open(path) as s:
        assert await s.capabilities.put(seen)
        await s.capabilities.put(rec(model="m2"))
    with Store.open(path) as s:
        assert await s.capabilities.get("p", "m", "s", "tools") == seen
        assert [r.protocol_family for r in await s.capabilities.all()] == ["mistral", None]
        rows = s.con.execute("SELECT model, protocol_family FROM capabilities ORDER BY model")
        assert rows.fetchall() == [("m", "mistral"), ("m2", None)]


def _v3_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file as the last workbench before protocol families left it, with a verdict and a
    capability record in it."""
    from workbench.eval.store.opening import migrate

    with monkeypatch.context() as m:
        m.setattr(schema, "MIGRATIONS", [(v, sql) for v, sql in schema.MIGRATIONS if v <= 3])
        con = duckdb.connect(str(path))
        migrate(con, path)
    con.execute(
        "INSERT INTO capabilities VALUES "
        "('p', 'm', 's', 'tools', 'text', '2026-01-01T00:00:00.000Z', 'live', 'prose')"
    )
    con.execute(
        "INSERT INTO verdicts VALUES "
        "('r', 'i', 0, 'c', 'p', 'm', 's', 'tools', 'text', true, 'prose', 'live', 1)"
    )
    con.close()


async def test_a_v3_file_gains_the_protocol_family_columns_and_keeps_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "v3.duckdb"
    _v3_file(path, monkeypatch)
    with Store.open(path) as s:
        assert s.schema_version == schema.latest_version()
        for table in ("capabilities", "verdicts"):
            got = s.con.execute(f"DESCRIBE {table}").fetchall()
            assert [(r[0], r[1]) for r in got] == list(COLUMNS[table].items()), table
        old = await s.capabilities.get("p", "m", "s", "tools")
        assert old is not None and old.verdict == "text" and old.protocol_family is None
        assert s.con.execute("SELECT verdict, protocol_family FROM verdicts").fetchall() == [
            ("text", None)
        ]
        newer = make_record("p", "m", "s", "tools", "text", "live", "prose", T0 + 1, "hermes")
        assert await s.capabilities.put(newer)
    with Store.open(path, read_only=True) as s:
        assert s.capability("p", "m", "s", "tools") == newer


def test_a_v3_file_opened_read_only_is_read_through_an_upgraded_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "v3.duckdb"
    _v3_file(path, monkeypatch)
    with Store.open(path, read_only=True) as s:
        assert s.snapshot and s.schema_version == schema.latest_version()
        record = s.capability("p", "m", "s", "tools")
        assert record is not None and record.protocol_family is None
    con = duckdb.connect(str(path), read_only=True)
    columns = [r[0] for r in con.execute("DESCRIBE capabilities").fetchall()]
    con.close()
    assert "protocol_family" not in columns  # the file itself was only read


def test_response_cache_ttl(store: Store):
    cache = store.cache
    assert cache.get("k", now_ms=0) is None
    cache.put("k", "p", "m", {"text": "hi", "n": [1]}, ttl_s=10, now_ms=1000)
    assert cache.get("k", now_ms=10_999) == {"text": "hi", "n": [1]}
    assert cache.get("k", now_ms=11_000) is None  # expired is a miss
    cache.put("k", "p", "m", {"text": "again"}, ttl_s=None, now_ms=50_000)
    assert cache.get("k", now_ms=10**15) == {"text": "again"}
    with pytest.raises(TypeError):
        cache.put("e", "p", "m", RuntimeError("boom"), ttl_s=10)  # type: ignore[arg-type]


# ------------------------------------------------------------------ locking
HOLDER = textwrap.dedent(
    """
    import sys
    from workbench.eval.store.database import Store
    from workbench.events import AttemptEvent
    s = Store.open(sys.argv[1])
    run = s.start_run(name="held", dataset="d", dataset_sha="x", configs=["a"], settings={})
    s.write(AttemptEvent("p:m", None, "ok", 1, 2.0), run_id=run)
    s.flush()
    print(run, flush=True)
    sys.stdin.readline()
    s.close()
    """
)


@pytest.fixture
def holder(tmp_path: Path):
    """A second process holding the store open for writing (until its stdin closes)."""
    path = tmp_path / "held.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    run_id = proc.stdout.readline().strip()
    assert run_id, "the holder process did not start"
    yield path, proc, run_id
    proc.stdin.close()
    proc.wait(timeout=20)


def test_a_file_another_process_writes_is_store_locked_naming_the_holder(holder):
    path, proc, _ = holder
    with pytest.raises(ConfigError) as err:
        Store.open(path)
    e = err.value
    assert e.code == "STORE_LOCKED"
    assert e.details["pid"] == proc.pid
    assert f"PID {proc.pid}" in e.message and str(path) in e.message
    assert "read_only=True" in e.message


def test_read_only_while_another_process_writes_reads_a_snapshot(holder):
    path, _, run_id = holder
    s = Store.open(path, read_only=True)
    try:
        assert s.snapshot is True
        assert s.get_run(run_id)["name"] == "held"
        assert count(s, "attempts") == 1
        with pytest.raises(ConfigError) as err:
            s.write(attempt(), run_id=run_id)
        assert err.value.code == "STORE_READ_ONLY"
        temp = Path(s._temp_dir)
        assert temp.exists()
    finally:
        s.close()
    assert not temp.exists()


def test_read_only_in_the_writing_process_shares_its_database(tmp_path: Path):
    path = tmp_path / "wb.duckdb"
    with Store.open(path) as writer:
        run_id = new_run(writer)
        with Store.open(path, read_only=True) as reader:
            assert not reader.snapshot
            assert reader.get_run(run_id)["status"] == "running"
            with pytest.raises(ConfigError):
                reader.add_output({"run_id": run_id, "item_id": "i", "repeat": 0, "config": "a"})


def test_read_only_of_a_missing_file_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError) as err:
        Store.open(tmp_path / "missing.duckdb", read_only=True)
    assert err.value.code == "STORE_NOT_FOUND"
    assert not (tmp_path / "missing.duckdb").exists()


def test_read_only_of_an_older_file_upgrades_a_copy_never_the_file(tmp_path: Path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE notes (n VARCHAR)")
    con.close()
    with Store.open(path, read_only=True) as s:
        assert s.snapshot and s.schema_version == schema.latest_version()
        assert count(s, "runs") == 0
    con = duckdb.connect(str(path), read_only=True)
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    con.close()
    assert tables == ["notes"]


def test_a_v5_file_gains_the_attempts_place_in_its_route(tmp_path: Path, monkeypatch):
    """A file written before attempts carried `seq` (its rows NULL there) is upgraded, and
    its attempts still read in their order."""
    from workbench.eval.store.opening import migrate

    path = tmp_path / "v5.duckdb"
    with monkeypatch.context() as m:
        m.setattr(schema, "MIGRATIONS", [(v, sql) for v, sql in schema.MIGRATIONS if v <= 5])
        con = duckdb.connect(str(path))
        migrate(con, path)
    con.execute(
        "INSERT INTO attempts (run_id, route_id, key, position, outcome, start_ms) VALUES "
        "('r', 'rt', 'p:b', 1, 'ok', 2), ('r', 'rt', 'p:a', 0, 'error', 1)"
    )
    con.close()
    with Store.open(path) as s:
        assert s.schema_version == schema.latest_version() >= 6
        got = s.con.execute("DESCRIBE attempts").fetchall()
        assert [(r[0], r[1]) for r in got] == list(COLUMNS["attempts"].items())
    from workbench.eval.analysis.frames import RunFrames

    with RunFrames.open(path) as wb:
        assert list(wb.attempts("r")["key"]) == ["p:a", "p:b"]


def test_a_v8_file_gains_the_unanswered_columns_and_the_pacing_table(tmp_path: Path):
    path = tmp_path / "v8.duckdb"
    v8 = [m for m in schema.MIGRATIONS if m[0] <= 8]
    # a file as version 8 left it, with an answer in it
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP)")
    for version, sql in v8:
        con.execute(sql)
        con.execute("INSERT INTO schema_version VALUES (?, now()::TIMESTAMP)", [version])
    con.execute(
        "INSERT INTO outputs (run_id, item_id, repeat, config, passed, score) "
        "VALUES ('r', 'i', 0, 'c', true, 1.0)"
    )
    con.close()
    with Store.open(path) as s:
        assert s.schema_version == schema.latest_version() >= 9
        row = s.con.execute("SELECT passed, unanswered, retry_at_ms FROM outputs").fetchall()
        assert row == [(True, None, None)]  # an answer written before: not unanswered
        sink = s.sink("r", "i", 0, "c")
        sink(PacingEvent("p:m", "429", 4, 3, 30.0, 0.0, None, None, 60_000, 5))
        s.flush()
        assert s.con.execute("SELECT * FROM pacing").fetchall() == [
            ("r", "i", "p:m", "429", 4, 3, 30.0, 0.0, None, None, 60_000, 5)
        ]
        assert s.unanswered("r") == {}
