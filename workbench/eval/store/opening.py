"""How a store's file is opened: one writer (DuckDB's lock, the migrations, the journal a
killed writer left, replayed once), a reader, or a reader of a snapshot copy.

Apart from `database.py` because opening is its own concern (locks, copies, versions,
recovery), and the store's methods never need it once the file is open.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from workbench.errors import ConfigError
from workbench.eval.store import journal as journals
from workbench.eval.store import schema
from workbench.eval.store.journal import Durability, Journal, journal_path
from workbench.eval.store.schema import COLUMNS, check_not_too_new, current_version, latest_version

if TYPE_CHECKING:
    from workbench.eval.store.database import Store

log = logging.getLogger("workbench.eval.store.database")

_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def open_store(
    cls: type[Store],
    path: Path,
    *,
    read_only: bool,
    snapshot: bool,
    durability: Durability,
    opts: dict[str, Any],
) -> Store:
    """`Store.open`: see its docstring."""
    if durability not in journals.DURABILITIES:
        raise ConfigError(
            f"durability must be one of {', '.join(journals.DURABILITIES)}, not {durability!r}",
            code="RUN_INVALID",
        )
    if not (read_only or snapshot):
        return open_writer(cls, path, opts, durability)
    if not path.exists():
        raise ConfigError(f"{path} does not exist", code="STORE_NOT_FOUND")
    recovered = None
    if left_behind(path):  # a killed writer's journal: replay it into the file, if free
        try:
            writer = open_writer(cls, path, opts, "off")
            recovered = writer.recovered
            writer.close()
        except ConfigError as exc:
            if exc.code not in ("STORE_LOCKED", "STORE_UNREADABLE"):
                raise
            # Held by a writer, or not ours to write (a read-only disk): the snapshot path
            # reads the journal into its copy instead.
            return open_snapshot(cls, path, opts)
    if not snapshot:
        reader: duckdb.DuckDBPyConnection | None = None
        try:
            reader = duckdb.connect(str(path), read_only=True)
        except duckdb.ConnectionException:
            # This process already writes the file: share its database, never write.
            reader = duckdb.connect(str(path))
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise unreadable(path, exc) from exc
        if reader is not None:
            version = current_version(reader)
            if version == latest_version():
                store = cls(reader, path, read_only=True, **opts)
                store.recovered = recovered
                return store
            reader.close()
            check_not_too_new(version, path)
            # older: upgrade a copy, never the file we were asked only to read
    return open_snapshot(cls, path, opts)


def open_writer(
    cls: type[Store], path: Path, opts: dict[str, Any], durability: Durability
) -> Store:
    """The file's one writer: DuckDB's lock, then the journal a killed writer left (checked,
    then replayed after the migrations), then a fresh journal."""
    jpath = journal_path(path)
    try:
        con = duckdb.connect(str(path))
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise locked(path, exc) from exc
        raise unreadable(path, exc) from exc
    except duckdb.ConnectionException as exc:  # this process reads it read-only
        raise unreadable(path, exc) from exc
    if journals.is_live(jpath):  # DuckDB let us in: another store of THIS process writes
        con.close()
        raise locked(path, None)
    try:
        left = journals.read(jpath)
        if left.records:  # replayed at the schema it was written in, or refused
            journals.check(left, jpath, store_id=store_id_of(con), schema_version=latest_version())
        migrate(con, path)
        store = cls(con, path, read_only=False, **opts)
        replay(store, left, jpath)
        if durability != "off":
            store_id, seq = con.execute(
                "SELECT store_id, applied_seq FROM journal_state"
            ).fetchall()[0]
            store._journal = Journal.create(
                jpath,
                store_id=store_id,
                schema_version=latest_version(),
                seq=seq,
                fsync=durability == "fsync",
            )
        else:  # replayed (or torn before its header): nothing in it is missing from the file
            jpath.unlink(missing_ok=True)
    except BaseException:
        con.close()
        raise
    return store


def replay(store: Store, left: journals.Contents, jpath: Path) -> None:
    """Write the journal's records the file does not have yet (a journal `journals.check`
    accepted), in one transaction that also moves `applied_seq` past them: a second replay
    finds nothing to do."""
    if left.torn:
        log.warning("%s: dropped a torn last record (the write a kill cut short)", jpath)
    if not left.records:
        if left.torn:
            store.recovered = Recovered(0, {}, torn=True)
        return
    with store.held():
        applied = store.con.execute("SELECT applied_seq FROM journal_state").fetchall()[0][0]
        batches: dict[str, list[Any]] = {}
        last = applied
        for seq, table, row in left.records:
            if seq <= applied or table not in COLUMNS:
                continue
            entry = (tuple(row[0]), row[1]) if table == "actions" else tuple(row)
            batches.setdefault(table, []).append(entry)
            last = max(last, seq)
        if batches:
            store._commit(batches, last)
    rows = {t: len(r) for t, r in batches.items()}
    store.recovered = Recovered(sum(rows.values()), rows, torn=left.torn)
    if rows:
        log.warning(
            "%s: replayed %d row(s) a stopped run had journaled: %s",
            jpath,
            sum(rows.values()),
            rows,
        )


def open_snapshot(cls: type[Store], path: Path, opts: dict[str, Any]) -> Store:
    """A reader of a copy of the file (and of the journal a live writer keeps beside it)."""
    temp_dir = tempfile.mkdtemp(prefix="workbench-snapshot-")
    copy = Path(temp_dir) / path.name
    last: Exception | None = None
    for _ in range(3):  # a checkpoint during the copy can tear it: copy again
        try:
            # The journal first: a flush between the two would otherwise leave its rows in
            # neither (records the copy already holds are skipped by their seq).
            left = journals.read(journal_path(path))
            wal = path.with_name(path.name + ".wal")
            if wal.exists():
                shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
            shutil.copyfile(path, copy)
            con = duckdb.connect(str(copy))
            try:
                migrate(con, path)
                store = cls(con, path, read_only=True, snapshot=True, temp_dir=temp_dir, **opts)
                # A writer holds the file: what it journaled and has not flushed is read too.
                if left.records:
                    journals.check(
                        left,
                        journal_path(path),
                        store_id=store_id_of(con),
                        schema_version=latest_version(),
                    )
                replay(store, left, journal_path(path))
            except BaseException:
                con.close()
                raise
            return store
        except ConfigError:
            shutil.rmtree(temp_dir, ignore_errors=True)
            raise
        except (duckdb.Error, OSError) as exc:
            last = exc
            for leftover in Path(temp_dir).iterdir():
                leftover.unlink()
    shutil.rmtree(temp_dir, ignore_errors=True)
    raise unreadable(path, last or RuntimeError("copy failed"))


def locked(path: Path, exc: Exception | None) -> ConfigError:
    if exc is None:
        return ConfigError(
            f"{path} is already open for writing by another store of this process (DuckDB "
            "allows one writer): write through that store, or close it first",
            code="STORE_LOCKED",
            details={"path": str(path), "program": "this process", "pid": os.getpid()},
        )
    m = _LOCK_HOLDER.search(str(exc))
    program, pid = (m["program"], int(m["pid"])) if m else ("another process", None)
    holder = f"{program} (PID {pid})" if pid is not None else program
    return ConfigError(
        f"{path} is locked: {holder} has it open for writing (DuckDB allows one writer). "
        "Wait for it to finish, or read a snapshot with read_only=True (CLI: --read-only)",
        code="STORE_LOCKED",
        details={"path": str(path), "program": program, "pid": pid},
    )


def unreadable(path: Path, exc: Exception) -> ConfigError:
    return ConfigError(
        f"{path} cannot be opened as a workbench store: {exc}",
        code="STORE_UNREADABLE",
        details={"path": str(path)},
    )


# ------------------------------------------------------------------ migrations
def migrate(con: duckdb.DuckDBPyConnection, path: object = "") -> int:
    """Bring the file up to the latest schema version in one transaction; return the version.
    A file newer than this code is refused (`STORE_TOO_NEW`); a failing migration changes
    nothing (`STORE_MIGRATION_FAILED`)."""
    version = current_version(con)
    check_not_too_new(version, path)
    pending = [(v, sql) for v, sql in sorted(schema.MIGRATIONS) if v > version]
    if not pending:
        return version
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version INTEGER PRIMARY KEY, applied_at TIMESTAMP)"
        )
        for v, sql in pending:
            for statement in con.extract_statements(sql):
                con.execute(statement)
            applied = datetime.now(UTC).replace(tzinfo=None)
            con.execute("INSERT INTO schema_version VALUES (?, ?)", [v, applied])
        con.execute("COMMIT")
    except Exception as exc:
        con.execute("ROLLBACK")
        raise ConfigError(
            f"{path}: migrating the store from schema version {version} failed "
            f"(nothing was changed): {exc}",
            code="STORE_MIGRATION_FAILED",
            details={"path": str(path), "version": version},
        ) from exc
    return pending[-1][0]


@dataclass(frozen=True, slots=True)
class Recovered:
    """What opening a store replayed from the journal a stopped writer left."""

    rows: int
    tables: dict[str, int]
    torn: bool = False


def store_id_of(con: duckdb.DuckDBPyConnection) -> str | None:
    """The file's id (None before the journal's migration)."""
    try:
        rows = con.execute("SELECT store_id FROM journal_state").fetchall()
    except duckdb.CatalogException:
        return None
    return rows[0][0] if rows else None


def left_behind(path: Path) -> bool:
    """A journal with records beside `path` that no live store writes: a killed writer's."""
    jpath = journal_path(path)
    try:
        size = jpath.stat().st_size
    except FileNotFoundError:
        return False
    return size > 0 and not journals.is_live(jpath)
