"""The eval `Store` is the only writer of the workbench's DuckDB file.

Two proofs. Statically: no module under `workbench/` other than the Store
(`workbench/eval/store/database.py`, and `opening.py`, which opens its file) and the standalone pending-actions library
(`workbench/tools/pending_duckdb.py`, for a file its user owns) and the synthesiser of big
runs (`workbench/eval/store/synthetic.py`, for a file no Store has open) executes SQL that writes, uses
a DuckDB write API (appender, `insert_into`, ...), opens a writable connection, or hands the
Store's connection or lock to anything. Behaviourally: with the Store's connection wrapped by a
spy that records who runs each statement, capability records, cache entries, pending actions,
outputs and regrades all land, and every write came from a Store method — through the Store
API directly, and through a whole run (tools, cache, an approval, a regrade).
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from workbench.capability.decide import make_record
from workbench.eval.store.database import OutputGrade, Store
from workbench.eval.store.schema import COLUMNS, OutputRow
from workbench.tools.pending import PendingActions

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "workbench"
STORE_PY = PACKAGE / "eval" / "store" / "database.py"
# The writers: the Store (with the opening of its file: migrations, the journal's replay), the
# library's own DuckDB action store (a file its user owns), and the synthesiser, which fills a
# file no Store has open with a made-up run in one transaction (for measuring what reads big
# runs; DuckDB's file lock keeps it from writing under a Store).
WRITERS = {
    "workbench/eval/store/database.py",
    "workbench/eval/store/opening.py",
    "workbench/eval/store/synthetic.py",
    "workbench/tools/pending_duckdb.py",
}
# Declares the migrations' SQL (text only); the Store executes it.
DECLARES_SQL = {"workbench/eval/store/schema.py"}
T0 = 1_767_225_600_000

# A statement that changes a database (anywhere in the text: `WITH … INSERT` counts too).
# `TRUNCATE` needs its table: the word alone is a mode's name (BFCL's `truncate`), and
# `os.truncate` an audit event's.
WRITE_SQL = re.compile(
    r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|MERGE\s+INTO"
    r"|CREATE\s+(OR\s+REPLACE\s+)?(TEMP\w*\s+)?(TABLE|VIEW|INDEX|SEQUENCE|SCHEMA|MACRO|TYPE)"
    r"|DROP\s+(TABLE|VIEW|INDEX|SEQUENCE|SCHEMA|MACRO|TYPE)|ALTER\s+TABLE|(?<![.\w])TRUNCATE\s+(TABLE\s+)?\w"
    r"|COPY\s+\S+\s+FROM|ATTACH|CHECKPOINT|VACUUM|IMPORT\s+DATABASE)\b",
    re.IGNORECASE,
)
EXECUTE = {"execute", "executemany", "sql", "query", "execute_many"}
WRITE_API = {"appender", "insert_into", "to_table", "create_view", "register_filesystem"}
# What the library builds its `actions` statements with: only a writer may run them.
STATEMENT_BUILDERS = {
    "ACTIONS_DDL",
    "insert_statement",
    "move_statement",
    "live_twin_statement",
}
STORE_PRIVATE = {"_buffer", "_append", "_buffers", "_merge_actions", "_lock"}


# ------------------------------------------------------------------ the static scan
def _text(node: ast.AST | None, names: dict[str, str]) -> str | None:
    """The SQL text an expression evaluates to, as far as the source says (f-string holes and
    unknown names read as `x`); None when it is nothing like a string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v, names) or "x" for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _text(node.value, names)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        left, right = _text(node.left, names), _text(node.right, names)
        if left is None and right is None:
            return None
        return (left or "x") + (right or "x")
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Starred):
        return _text(node.value, names)
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def _is_store(node: ast.AST) -> bool:
    """`store`, `self.store`, `self._store`, `wb.store`, …: an expression naming a Store."""
    if isinstance(node, ast.Name):
        return node.id.lstrip("_").endswith("store")
    if isinstance(node, ast.Attribute):
        return node.attr.lstrip("_").endswith("store")
    return False


def scan(source: str, *, declares_sql: bool = False) -> list[str]:
    """Every place in `source` that writes a DuckDB database or lends the Store's connection:
    `line: what`. Empty for a module that only reads."""
    tree = ast.parse(source)
    names: dict[str, str] = {}
    for node in ast.walk(tree):  # NAME = "…" anywhere: a statement may be built first
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            text = _text(node.value, names)
            for target in targets:
                if isinstance(target, ast.Name) and text is not None:
                    names[target.id] = text
    docstrings = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if not declares_sql and id(node) not in docstrings and WRITE_SQL.search(node.value):
                found.append(f"{line}: write SQL {node.value.strip()[:60]!r}")
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in STATEMENT_BUILDERS:
                    found.append(f"{line}: imports the action write statement {alias.name}")
        if isinstance(node, ast.Attribute) and node.attr in STORE_PRIVATE:
            if _is_store(node.value):
                found.append(f"{line}: reaches into the Store's writer ({node.attr})")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else None
        if attr in EXECUTE and node.args:
            text = _text(node.args[0], names)
            if text is not None and WRITE_SQL.search(text):
                found.append(f"{line}: .{attr}() runs write SQL {text.strip()[:60]!r}")
            elif attr in ("executemany", "execute_many"):
                found.append(f"{line}: .{attr}() (a batch of writes)")
        if attr in WRITE_API:
            found.append(f"{line}: DuckDB write API .{attr}()")
        if attr == "append" and len(node.args) >= 2:  # con.append(table, df); list.append(x)
            found.append(f"{line}: DuckDB write API .append(table, data)")
        if (
            attr == "connect"
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "duckdb"
        ):
            read_only = any(
                k.arg == "read_only" and isinstance(k.value, ast.Constant) and k.value.value
                for k in node.keywords
            )
            in_memory = not node.args or _text(node.args[0], names) == ":memory:"
            if not (read_only or in_memory):
                found.append(f"{line}: duckdb.connect() without read_only=True (a second writer)")
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, ast.Attribute) and arg.attr in ("con", "_lock"):
                if _is_store(arg.value):
                    found.append(f"{line}: passes the Store's {arg.attr} to {ast.unparse(func)}")
    return found


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path


def test_only_the_store_writes_the_duckdb_file() -> None:
    offenders = {}
    for rel, path in _modules():
        if rel in WRITERS:
            continue
        found = scan(path.read_text(encoding="utf-8"), declares_sql=rel in DECLARES_SQL)
        if found:
            offenders[rel] = found
    assert not offenders, (
        "only workbench/eval/store/database.py writes the workbench's DuckDB file (and "
        "tools/pending_duckdb.py a file of the library user's): use a Store method instead of\n"
        + "\n".join(f"  {rel}:{what}" for rel, lines in offenders.items() for what in lines)
    )


def test_the_library_never_imports_the_workbench() -> None:
    for rel, path in _modules():
        if rel.startswith("workbench/tools/"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "workbench.eval"
                ):
                    pytest.fail(f"{rel}:{node.lineno} imports {node.module}")
                if isinstance(node, ast.Import):
                    assert not any(a.name.startswith("workbench.eval") for a in node.names), rel


@pytest.mark.parametrize(
    "snippet",
    [
        'store.con.executemany("UPDATE outputs SET passed = ? WHERE run_id = ?", rows)',
        "PendingActions(DuckDBActionStore(store.con, lock=store._lock), tools)",
        'con.execute(f"INSERT INTO {table} VALUES (?)", [1])',
        'SQL = "DELETE FROM actions WHERE action_id = ?"\ncon.execute(SQL, [a])',
        'sql = "UPDATE runs " + "SET status = ?"\ncur.execute(sql, ["x"])',
        'con.appender("attempts").append_rows(rows)',
        'con.append("outputs", frame)',
        'con.sql("CREATE TABLE t (a INTEGER)")',
        'duckdb.connect("workbench.duckdb")',
        "self._store._buffer('capabilities', row)",
        "from workbench.tools.pending_duckdb import move_statement",
        "rel.insert_into('outputs')",
    ],
)
def test_the_scan_catches_every_way_of_writing(snippet: str) -> None:
    assert scan(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        'con.execute("SELECT run_id FROM runs WHERE status = ?", ["x"]).fetchall()',
        'wb.con.execute("SELECT * FROM outputs").df()',
        "duckdb.connect(str(path), read_only=True)",
        "duckdb.connect()",
        "rows.append(row)",
        'def f():\n    """INSERT INTO is explained in a docstring."""\n',
        "PendingActions(store.actions, tools, run_id=run_id)",
        "store.set_grades(run_id, grades)",
    ],
)
def test_the_scan_lets_reads_through(snippet: str) -> None:
    assert scan(snippet) == []


# ------------------------------------------------------------------ the spy
class Spy:
    """A DuckDB connection that records, for every statement and appender, the file of the
    code that ran it; everything else passes through. It passes for a connection
    (`isinstance(spy, duckdb.DuckDBPyConnection)`), so that code handed it would use it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self.calls: list[tuple[str, str]] = []  # (caller's file, statement or "appender t")

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return duckdb.DuckDBPyConnection

    def _record(self, what: str) -> None:
        self.calls.append((sys._getframe(2).f_code.co_filename, what))

    def execute(self, sql: str, *args: Any, **kw: Any) -> Any:
        self._record(sql)
        return self._con.execute(sql, *args, **kw)

    def executemany(self, sql: str, *args: Any, **kw: Any) -> Any:
        self._record(sql)
        return self._con.executemany(sql, *args, **kw)

    def sql(self, sql: str, *args: Any, **kw: Any) -> Any:
        self._record(sql)
        return self._con.sql(sql, *args, **kw)

    def appender(self, table: str, *args: Any, **kw: Any) -> Any:
        self._record(f"APPENDER {table}")
        return self._con.appender(table, *args, **kw)

    def append(self, table: str, *args: Any, **kw: Any) -> Any:
        self._record(f"APPENDER {table}")
        return self._con.append(table, *args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def writes(self) -> list[tuple[str, str]]:
        return [(f, s) for f, s in self.calls if s.startswith("APPENDER") or WRITE_SQL.search(s)]

    def tables_written(self) -> set[str]:
        pattern = re.compile(r"(?:APPENDER|INTO|UPDATE)\s+\"?(\w+)", re.IGNORECASE)
        return {m.group(1) for _, s in self.writes() if (m := pattern.search(s))}


def spied(path: Path) -> tuple[Store, Spy]:
    store = Store.open(path)
    spy = Spy(store.con)
    store.con = spy  # type: ignore[assignment]
    return store, spy


def assert_only_the_store_wrote(spy: Spy) -> None:
    elsewhere = sorted({(f, s.strip()[:70]) for f, s in spy.writes() if Path(f) != STORE_PY})
    assert not elsewhere, f"written outside the Store: {elsewhere}"


class Tool:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(payload)
        await asyncio.sleep(0.005)
        return {"sent": True}


# ------------------------------------------------------------------ through the Store API
async def test_every_kind_of_row_lands_through_the_store(tmp_path: Path) -> None:
    path = tmp_path / "wb.duckdb"
    store, spy = spied(path)
    run_id = store.start_run(name="n", dataset="d", dataset_sha="s", configs=["a"], settings={})
    # capability records
    record = make_record("p", "m", "scope", "tools", "native", "live", "tool_calls", T0)
    assert await store.capabilities.put(record)
    assert (
        store.put_capability(dataclasses.replace(record, verdict="none", via="declared")) is False
    )
    # cache entries
    store.cache.put("k1", "p", "m", {"text": "hi"}, ttl_s=60, now_ms=T0)
    assert store.cache.get("k1", T0 + 1) == {"text": "hi"} == store.cache_get("k1", T0 + 1)
    # pending actions: 50 simultaneous approvals execute once
    tool = Tool()
    pending = PendingActions(store.actions, {"send_email": tool}, run_id=run_id)
    action = await pending.propose("send_email", {"to": "a@x.cd"}, "agent", dedupe_key="d")
    again = await pending.propose("send_email", {"to": "b@x.cd"}, "agent", dedupe_key="d")
    assert again.id == action.id
    results = await asyncio.gather(
        *(pending.approve(action.id, f"h{i}") for i in range(50)), return_exceptions=True
    )
    assert sum(getattr(r, "status", None) == "executed" for r in results) == 1
    assert len(tool.calls) == 1
    # outputs, as the typed row and as a dict
    store.add_output(
        OutputRow(
            run_id=run_id,
            item_id="i1",
            repeat=0,
            config="a",
            raw="r",
            cleaned="c",
            tool_calls=[],
            passed=True,
            score=1.0,
            grade={"checks": []},
            at_ms=T0,
        )
    )
    store.add_output({"run_id": run_id, "item_id": "i2", "repeat": 0, "config": "a", "raw": "x"})
    outputs = store.outputs_for(run_id)
    assert [(o.item_id, o.passed, o.tool_calls) for o in outputs] == [
        ("i1", True, "[]"),
        ("i2", None, None),
    ]
    # regrades
    grades = [
        OutputGrade("i1", 0, "a", False, 0.0, {"checks": [], "reason": "strict"}),
        OutputGrade("i2", 0, "a", True, 1.0, None),
        OutputGrade("missing", 0, "a", True, 1.0, None),
    ]
    assert store.set_grades(run_id, grades) == 3
    assert store.set_grades(run_id, []) == 0
    store.finish_run(run_id, "finished")
    store.close()

    assert_only_the_store_wrote(spy)
    assert {"runs", "capabilities", "response_cache", "actions", "outputs"} <= spy.tables_written()
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT verdict, via FROM capabilities").fetchall() == [
            ("native", "live")
        ]
        assert con.execute("SELECT cache_key FROM response_cache").fetchall() == [("k1",)]
        assert con.execute("SELECT status, decided_by IS NOT NULL FROM actions").fetchall() == [
            ("executed", True)
        ]
        got = con.execute(
            "SELECT item_id, passed, score, grade->>'$.reason' FROM outputs ORDER BY 1"
        ).fetchall()
        assert got == [("i1", False, 0.0, "strict"), ("i2", True, 1.0, None)]
    finally:
        con.close()


def test_output_row_is_the_outputs_table() -> None:
    assert [f.name for f in dataclasses.fields(OutputRow)] == list(COLUMNS["outputs"])
    assert {f.name for f in dataclasses.fields(OutputGrade)} <= set(COLUMNS["outputs"])


def test_event_row_builders_name_every_column_of_their_table(tmp_path: Path) -> None:
    from workbench.eval.store import database as store_module

    with pytest.raises(ValueError, match="missing"):
        store_module._ordered("events", {"run_id": "r"})
    misspelt = {"run_id": "r", "item_id": None, "kind": "x", "at_ms": 1, "data": None}
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['kind'\], missing \['type'\]"):
        store_module._ordered("events", misspelt)
    with Store.open(tmp_path / "wb.duckdb") as s:  # every event type, flushed
        from workbench.events import (
            AttemptEvent,
            QuotaEvent,
            RouteEvent,
            ToolStepEvent,
            VerdictEvent,
        )

        s.write(AttemptEvent("p:m", None, "ok", 1, 2.0), run_id="r")
        s.write(RouteEvent(("p:m",), "p:m"), run_id="r")
        s.write(VerdictEvent("p", "m", "s", "tools", "native", True, "e", "live", 1), run_id="r")
        s.write(ToolStepEvent("s1", "t", "{}", True, 1), run_id="r")
        s.write(QuotaEvent("p:m", "p", "m", "s", "minute", 1.0, 0.0, 1, "headers", 1), run_id="r")
        s.write({"free": "form"}, run_id="r")
        s.flush()
        for table in ("attempts", "routes", "verdicts", "tool_steps", "quota", "events"):
            assert s.con.execute(f"SELECT count(*) FROM {table}").fetchone() == (1,), table


# ------------------------------------------------------------------ through a whole run
async def test_a_whole_run_writes_only_through_the_store(tmp_path: Path) -> None:
    from workbench.eval.dataset.prompt_set import Dataset, load_dataset
    from workbench.eval.run.runner import regrade, run_prompt_set
    from workbench.sim import SimServer
    from workbench.sim.fleet_providers import sim_chain_config
    from workbench.tools.demo import demo_executors

    full = load_dataset(ROOT / "datasets" / "tool_calling.jsonl")
    writes = [i for i in full.items if {"send_email", "create_ticket"} & set(i.tool_names)]
    others = [i for i in full.items if not {"send_email", "create_ticket"} & set(i.tool_names)]
    dataset = Dataset("mixed", full.path, (*writes[:4], *others[:6]), full.sha256)
    path = tmp_path / "run.duckdb"
    store, spy = spied(path)
    try:
        async with SimServer() as sim:
            summary = await run_prompt_set(
                dataset,
                sim_chain_config(sim),
                store,
                concurrency=4,
                cache_ttl_s=3600,
                progress=False,
            )
        assert summary.status == "finished", summary
        pending = PendingActions(store.actions, demo_executors())
        waiting = await pending.list("pending")
        assert waiting, "the run proposed no action"
        assert (await pending.approve(waiting[0].id, "tester")).status in ("executed", "failed")
        strict = Dataset(
            "strict",
            dataset.path,
            tuple(
                dataclasses.replace(
                    i,
                    expect=dataclasses.replace(i.expect, contains=("a phrase no answer contains",)),
                )
                if i.expect
                else i
                for i in dataset.items
            ),
            dataset.sha256,
        )
        again = await regrade(store, summary.run_id, strict)
        assert again.graded > 0 and again.passed == 0
    finally:
        store.close()

    assert_only_the_store_wrote(spy)
    tables = spy.tables_written()
    assert {"capabilities", "response_cache", "actions", "outputs", "attempts"} <= tables
    assert any(s.lstrip().upper().startswith("UPDATE OUTPUTS") for _, s in spy.writes())
    con = duckdb.connect(str(path), read_only=True)
    try:
        for table in ("capabilities", "response_cache", "actions", "outputs"):
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] > 0, table
        assert con.execute("SELECT count(*) FROM outputs WHERE passed").fetchone() == (0,)
    finally:
        con.close()
