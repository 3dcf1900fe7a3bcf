"""The library never imports the workbench: nothing outside `eval/`, `widgets/` and `cli/`
imports `workbench.eval`, at the top of a module or inside a function.

Data flows one way (docs/architecture.md): the workbench drives the library and reads its
events; a library module that reached up into `eval` would drag DuckDB, pandas and the
grader into every caller, and turn the layers into a cycle.

And SQL is written in two places only: the store (`eval/store/`, typed records of the file)
and the analysis (`eval/analysis/`, DataFrames), besides the library's own DuckDB action
store. A report, an export or a check that needs a fact of a run asks them for it, so a
change of a table is made, and reviewed, where the table is read.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"
FORBIDDEN = "workbench.eval"
# The workbench itself: these may import anything below them.
WORKBENCH = ("eval", "widgets", "cli")
# (module, imported) pairs allowed on purpose, each with its reason. Empty: keep it so.
ALLOWED: frozenset[tuple[str, str]] = frozenset()


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name a `from` import names; relative ones are resolved against `module`."""
    if level == 0:
        return target or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def _is_forbidden(name: str) -> bool:
    return name == FORBIDDEN or name.startswith(FORBIDDEN + ".")


def imported_names(path: Path, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """Every module `path` (a file of `package`) imports, anywhere in it (functions,
    `TYPE_CHECKING` blocks, a literal `importlib.import_module("...")`), as (line, absolute
    name)."""
    module = _module_name(path, package)
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, is_package, node.level, node.module)
            found.append((node.lineno, source))
            # `from workbench import eval` imports the package by its attribute name
            found += [(node.lineno, f"{source}.{alias.name}") for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def library_files() -> list[Path]:
    return [
        p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in WORKBENCH
    ]


def test_the_library_never_imports_the_workbench():
    offences = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: imports {name}"
        for path in library_files()
        for line, name in imported_names(path)
        if _is_forbidden(name) and (_module_name(path, PACKAGE), name) not in ALLOWED
    ]
    assert not offences, "the library imports the workbench:\n" + "\n".join(offences)


def test_the_scan_covers_the_library_and_skips_the_workbench():
    scanned = {p.relative_to(PACKAGE).parts[0] for p in library_files()}
    assert {"providers", "routing", "capability", "tools", "text", "serve", "web"} <= scanned
    assert scanned.isdisjoint(WORKBENCH)


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("import workbench.eval.scoring.grounding\n", "workbench/web/x.py"),
        ("from workbench.eval import Store\n", "workbench/web/x.py"),
        ("from workbench import eval\n", "workbench/web/x.py"),
        ("from ..eval.grounding import Fact\n", "workbench/web/x.py"),
        ("from .. import eval\n", "workbench/web/x.py"),
        ("from .eval import Store\n", "workbench/__init__.py"),
        ("def f():\n    from workbench.eval.store.database import Store\n", "workbench/web/x.py"),
        (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from workbench.eval import Store\n",
            "workbench/web/x.py",
        ),
        (
            "import importlib\nimportlib.import_module('workbench.eval.store.database')\n",
            "workbench/x.py",
        ),
    ],
)
def test_every_form_of_import_is_seen(tmp_path, source, where):
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    assert any(_is_forbidden(name) for _, name in imported_names(path, tmp_path / "workbench"))


@pytest.mark.parametrize(
    "source",
    [
        "import workbench.evaluation\n",  # a sibling whose name starts the same
        "from workbench.text.facts import Fact\n",
        "from . import evals\n",
        "import ast\nast.parse('1', mode='eval')\n",
    ],
)
def test_a_neighbouring_name_is_not_an_offence(tmp_path, source):
    path = tmp_path / "workbench" / "web" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    found = imported_names(path, tmp_path / "workbench")
    assert not any(_is_forbidden(name) for _, name in found)


# ---- the workbench's own layers -------------------------------------------------------------
# Inside `eval/`, data flows one way: a prompt set is read (dataset), run (run, engines), logged
# (store), read back (analysis) and shown (report, export). Each folder of `eval/` may import the
# folders listed for it and nothing else; a new folder fails here until it is placed. `suites/`
# are published benchmarks: read as prompt sets and graded by their authors' rules, so the
# dataset, scoring, run and analysis layers may call into them (only lazily, when a run names a
# suite) and a suite may use the dataset's records.
EVAL_LAYERS: dict[str, frozenset[str]] = {
    "store": frozenset(),
    "dataset": frozenset({"suites"}),
    "suites": frozenset({"dataset"}),
    "scoring": frozenset({"dataset", "suites"}),
    "run": frozenset({"dataset", "scoring", "store", "suites", "engines"}),
    "engines": frozenset({"dataset", "scoring", "store", "run"}),
    "analysis": frozenset({"store", "suites", "dataset"}),
    "report": frozenset({"analysis", "store"}),
    "export": frozenset({"analysis", "dataset", "store"}),
    "diagnostics": frozenset({"dataset", "run", "store", "analysis"}),
    # Routes of callers that are not the runner (the gateway, Inspect), logged as a run's.
    "gateway": frozenset({"dataset", "run", "store"}),
}
EVAL = PACKAGE / "eval"


def _eval_folder(name: str) -> str | None:
    """`workbench.eval.run.runner` -> `run`; None outside `eval/` and for `eval` itself."""
    parts = name.split(".")
    return parts[2] if parts[:2] == ["workbench", "eval"] and len(parts) > 2 else None


def test_every_folder_of_eval_has_its_place():
    folders = {p.name for p in EVAL.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(EVAL_LAYERS)
    assert sorted(p.name for p in EVAL.glob("*.py")) == ["__init__.py"], (
        "eval/ holds folders only: a module belongs to one of them"
    )


def test_each_eval_folder_imports_only_the_layers_below_it():
    offences = []
    for folder, allowed in EVAL_LAYERS.items():
        for path in sorted((EVAL / folder).rglob("*.py")):
            for line, name in imported_names(path):
                target = _eval_folder(name)
                if target is not None and target != folder and target not in allowed:
                    offences.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {name}")
    assert not offences, "an eval folder imports a layer above it:\n" + "\n".join(offences)


# Module names a newcomer can search for: one file per name, except where two files are the
# same kind of thing for two different subjects (the simulator's HTTP server, the local model's),
# and the command's verbs: `cli/probe.py` is the `probe` verb, named after what it drives. Only a
# module named after a verb of the command's table is such a verb.
SAME_NAME_SAME_MEANING = frozenset({"__init__.py", "__main__.py", "server.py"})


def _verb_modules() -> set[Path]:
    from workbench.cli.verbs import VERBS

    return {PACKAGE / "cli" / f"{verb}.py" for verb in VERBS}


def test_module_names_are_unique_where_they_mean_different_things():
    verbs = _verb_modules()
    assert PACKAGE / "cli" / "probe.py" in verbs  # the table was read
    seen: dict[str, list[str]] = {}
    for path in sorted(p for p in PACKAGE.rglob("*.py") if p not in verbs):
        seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE.parent)))
    repeated = {
        name: paths
        for name, paths in seen.items()
        if len(paths) > 1 and name not in SAME_NAME_SAME_MEANING
    }
    assert repeated == {}


# ------------------------------------------------------------------ where SQL is written
# The folders and modules that may import duckdb and run SQL, each with its reason.
SQL_HOMES = (
    "workbench/eval/store/",  # the file: its schema, writes and typed reads
    "workbench/eval/analysis/",  # DataFrames over the file
    "workbench/tools/pending_duckdb.py",  # the library's own DuckDB action store
)
RUNS_SQL = ("execute", "sql", "query")
_SQL = re.compile(
    r"\s*(SELECT|WITH|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|BEGIN|COMMIT|ROLLBACK|PRAGMA|"
    r"ATTACH|DETACH|COPY|EXPORT|IMPORT|INSTALL|LOAD|SET|CHECKPOINT|DESCRIBE|SHOW|SUMMARIZE|"
    r"FROM|VALUES|TRUNCATE|CALL|USE)\b",
    re.IGNORECASE,
)


def _leading_text(node: ast.expr, constants: dict[str, ast.expr] | None = None) -> str | None:
    """The text a string expression starts with: a literal, an f-string, a concatenation, a
    `%` or `.format` of a literal, or a name the module binds to one of those at its top
    (`QUERY = "SELECT ..."`); None for anything else (a parameter, a call)."""
    constants = constants or {}
    if isinstance(node, ast.Name) and node.id in constants:
        return _leading_text(constants[node.id])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        return (
            first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return _leading_text(node.left, constants)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "format":
            return _leading_text(node.func.value, constants)
    return None


def sql_written(path: Path, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """Where `path` imports duckdb or hands SQL text to `.execute(`, `.sql(` or `.query(`,
    as (line, what)."""
    found = [
        (line, f"imports {name}")
        for line, name in imported_names(path, package)
        if name == "duckdb" or name.startswith("duckdb.")
    ]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = {
        target.id: statement.value
        for statement in tree.body
        if isinstance(statement, ast.Assign)
        for target in statement.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RUNS_SQL
            and node.args
        ):
            text = _leading_text(node.args[0], constants)
            if text is not None and _SQL.match(text):
                found.append((node.lineno, f".{node.func.attr}({text.strip()[:40]!r}...)"))
    return sorted(found)


def _home_of_sql(path: Path, package: Path = PACKAGE) -> bool:
    """A folder of SQL_HOMES holds everything below it; a module, itself."""
    where = path.relative_to(package.parent).as_posix()
    return any(
        where.startswith(home) if home.endswith("/") else where == home for home in SQL_HOMES
    )


def test_sql_is_written_only_in_the_store_and_the_analysis():
    offences = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not _home_of_sql(path)
        for line, what in sql_written(path)
    ]
    assert not offences, (
        "SQL outside eval/store/ and eval/analysis/ (add a typed read there instead):\n"
        + "\n".join(offences)
    )


def test_the_sql_homes_are_real_and_hold_sql():
    for home in SQL_HOMES:
        assert (PACKAGE.parent / home).exists(), f"{home} is gone: drop it from SQL_HOMES"
    store = PACKAGE / "eval" / "store" / "reads.py"
    assert _home_of_sql(store) and sql_written(store)
    assert not _home_of_sql(PACKAGE / "eval" / "report" / "page.py")


@pytest.mark.parametrize(
    "source",
    [
        "import duckdb\n",
        "from duckdb import DuckDBPyConnection\n",
        "def f():\n    import duckdb.typing\n",
        "con.execute('SELECT 1')\n",
        'wb.sql("select * from runs", [])\n',
        "wb.con.execute(f'SELECT {cols} FROM attempts')\n",
        "wb.con.query('WITH x AS (SELECT 1) ' + 'SELECT * FROM x')\n",
        "con.execute('DELETE FROM runs WHERE run_id = %s' % run_id)\n",
        "con.execute(\n    '  insert into runs VALUES ({})'.format(x)\n)\n",
        "QUERY = 'SELECT count(*) FROM leaks'\ncon.execute(QUERY)\n",
        "COUNT = 'SELECT count(*) FROM {}'\nwb.sql(COUNT.format(table))\n",
    ],
)
def test_every_form_of_sql_is_seen(tmp_path, source):
    path = tmp_path / "workbench" / "eval" / "report" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    assert sql_written(path, tmp_path / "workbench")


@pytest.mark.parametrize(
    "source",
    [
        "await pipe.execute()\n",  # Redis: no SQL
        "executor.execute(job)\n",
        "index.query('routes by provider')\n",  # text that does not open with a statement
        "import duckdb_engine_docs\n",
        "text = 'SELECT * FROM runs'\n",  # a string is not a statement until it is run
    ],
)
def test_what_is_not_sql_is_not_an_offence(tmp_path, source):
    path = tmp_path / "workbench" / "eval" / "report" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    assert not sql_written(path, tmp_path / "workbench")
