"""The store's journal: every buffered row is appended to `<db file>.journal` before it waits
for DuckDB's next batch, so a run killed at any moment loses only the requests in flight.

Why a journal and not smaller batches: DuckDB commits are too costly to make per event (a
run writes several rows per item, thousands of items a second), so the store batches them;
a batch not yet written when the process dies (kill -9, OOM, a closed laptop) used to take
the answers of the last second with it, and `--resume` paid for those calls again. An
append to a file is cheap: each record is written (one `write`) before the row is buffered,
which is enough to survive the death of the process, and a background thread fsyncs what was
written in small groups (a record waits at most ~20 ms and one fsync), which survives a
power cut.

Layout: the 4-byte magic `WBJ1`, then records, each `<u32 length><u32 crc32><payload>`
(little endian; the CRC is zlib's, over the payload). The first record is the header (JSON:
journal format version, the id of the DuckDB file it belongs to, the file's schema version);
every other one is `[seq, table, row]` in JSON, `seq` counting up across the file's whole
life. The DuckDB file keeps the last `seq` it holds (`journal_state.applied_seq`), moved in
the same transaction as the rows, so replaying a journal is idempotent: a record at or below
it is already in the file. After each flush the journal is cut back to its header.

A record cut short by the kill (the last one) fails its length or CRC check and is dropped
with a warning; a bad record followed by good ones is corruption (`STORE_JOURNAL_CORRUPT`).
A journal made by another format or schema version (`STORE_JOURNAL_VERSION`) or for another
DuckDB file (`STORE_JOURNAL_FOREIGN`) is refused, naming the file, and never dropped silently.
While a store writes, it holds an exclusive `flock` on its journal: a second writer in the
same process is refused, and a reader can tell a live journal from one a dead run left.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from workbench.errors import ConfigError, WorkbenchError

log = logging.getLogger("workbench.eval.store.journal")

MAGIC = b"WBJ1"
JOURNAL_VERSION = 1
_FRAME = struct.Struct("<II")  # payload length, crc32 of the payload
# The longest a journaled record waits for its fsync (plus one fsync's own time).
FSYNC_GROUP_S = 0.02
# ASCII: any str survives, a lone surrogate from a model reply included (as an escape).
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))

# How a store keeps what it has not yet written to DuckDB:
#   fsync  journaled, and fsynced in small groups (survives a kill and a power cut)
#   write  journaled, never fsynced (survives a kill of the process, not of the machine)
#   off    not journaled (a kill loses the rows of the last unflushed batch)
Durability = Literal["fsync", "write", "off"]
DURABILITIES: tuple[str, ...] = ("fsync", "write", "off")


def journal_path(db_path: Path) -> Path:
    """Where the journal of `db_path` lives: beside it, `<name>.journal`."""
    return db_path.with_name(db_path.name + ".journal")


def disk_full(path: Path, exc: OSError, what: str) -> WorkbenchError:
    """`STORE_DISK_FULL`: nothing half-written stays behind, and nothing logged is lost."""
    return WorkbenchError(
        f"{path}: the disk is full ({what}: {exc.strerror or exc}); what was already logged is "
        "kept, free some space and `--resume` the run",
        code="STORE_DISK_FULL",
        details={"path": str(path)},
    )


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` (an OSError, or DuckDB's error text) says the disk has no space left."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "no space left" in text or "disk quota exceeded" in text


# ------------------------------------------------------------------ reading
@dataclass(frozen=True, slots=True)
class Header:
    journal_version: int
    store_id: str
    schema_version: int


@dataclass(slots=True)
class Contents:
    """What a journal file holds: its header, its records in order, and whether a torn last
    record was dropped."""

    header: Header | None
    records: list[tuple[int, str, Any]] = field(default_factory=list)
    torn: bool = False


def _frames(data: bytes, path: Path) -> Iterator[bytes | None]:
    """Each record's payload; None for a torn last record (then the iteration stops)."""
    at = len(MAGIC)
    while at < len(data):
        if at + _FRAME.size > len(data):
            yield None
            return
        length, crc = _FRAME.unpack_from(data, at)
        start, end = at + _FRAME.size, at + _FRAME.size + length
        payload = data[start:end]
        if length == 0 or end > len(data) or zlib.crc32(payload) != crc:
            if not _whole_frame_after(data, at + 1):
                yield None  # the write the kill (or a power cut's zeroed tail) cut short
                return
            raise ConfigError(
                f"{path}: the record at byte {at} is damaged and good records follow: the "
                "journal is corrupt; move it aside to open the store without it",
                code="STORE_JOURNAL_CORRUPT",
                details={"path": str(path), "offset": at},
            )
        yield payload
        at = end


def _whole_frame_after(data: bytes, start: int) -> bool:
    """Whether a whole, checksummed record starts anywhere at or after `start`: then a bad
    record before it is damage in the middle, not the torn end (only on the failure path)."""
    for at in range(start, len(data) - _FRAME.size):
        length, crc = _FRAME.unpack_from(data, at)
        end = at + _FRAME.size + length
        if 0 < length and end <= len(data) and zlib.crc32(data[at + _FRAME.size : end]) == crc:
            return True
    return False


def read(path: Path) -> Contents:
    """The journal at `path` (an absent or empty file holds nothing)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Contents(None)
    if not data:
        return Contents(None)
    if not data.startswith(MAGIC):
        if MAGIC.startswith(data):  # killed while writing the magic itself
            return Contents(None, torn=True)
        raise ConfigError(
            f"{path} is not a workbench journal (move it aside to open the store)",
            code="STORE_JOURNAL_VERSION",
            details={"path": str(path)},
        )
    frames = _frames(data, path)
    first = next(frames, None)
    if first is None:
        return Contents(None, torn=len(data) > len(MAGIC))
    try:
        head = json.loads(first)
        header = Header(int(head["journal_version"]), str(head["store_id"]), int(head["schema"]))
    except (ValueError, KeyError, TypeError):
        raise ConfigError(
            f"{path}: its header is not one this workbench writes (move it aside to open "
            "the store without it)",
            code="STORE_JOURNAL_VERSION",
            details={"path": str(path)},
        ) from None
    contents = Contents(header)
    for payload in frames:
        if payload is None:
            contents.torn = True
            break
        seq, table, row = json.loads(payload)
        contents.records.append((int(seq), str(table), row))
    return contents


def check(contents: Contents, path: Path, *, store_id: str | None, schema_version: int) -> None:
    """Refuse to replay a journal that is not this file's, or not this code's format."""
    header = contents.header
    if header is None:
        return
    where = {"path": str(path), "records": len(contents.records)}
    if header.journal_version != JOURNAL_VERSION or header.schema_version != schema_version:
        raise ConfigError(
            f"{path}: this journal ({len(contents.records)} record(s)) was written by a workbench "
            f"with journal format {header.journal_version} and schema {header.schema_version}; "
            f"this one has {JOURNAL_VERSION} and {schema_version}. Open the store with the "
            "workbench that wrote it to replay it, or move the journal aside to give it up",
            code="STORE_JOURNAL_VERSION",
            details={**where, "journal": header.journal_version, "schema": header.schema_version},
        )
    if header.store_id != store_id:
        raise ConfigError(
            f"{path}: this journal ({len(contents.records)} record(s)) belongs to another DuckDB "
            f"file (store {header.store_id}, not {store_id}). Put it back beside its own file, "
            "or move it aside to give it up",
            code="STORE_JOURNAL_FOREIGN",
            details={**where, "journal_store": header.store_id, "store": store_id},
        )


def is_live(path: Path) -> bool:
    """Whether a store (in any process) is writing this journal right now."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


# ------------------------------------------------------------------ writing
def _frame(payload: bytes) -> bytes:
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def _dumps(value: Any) -> bytes:
    return _ENCODER.encode(value).encode()


class Journal:
    """The journal a writing store appends to. `append` writes a record at once; with
    `fsync=True` a background thread fsyncs whatever was written since its last fsync."""

    def __init__(self, path: Path, fd: int, header_size: int, seq: int, fsync: bool) -> None:
        self.path = path
        self._fd = fd
        self._header_size = header_size
        self._size = header_size  # bytes of whole records written: where a failed append is cut
        self.seq = seq  # the last seq given out
        self._failed: WorkbenchError | None = None
        self._dirty = threading.Event()
        self._closing = False
        self._syncer: threading.Thread | None = None
        if fsync:
            self._syncer = threading.Thread(
                target=self._sync_loop, name=f"journal-fsync:{path.name}", daemon=True
            )
            self._syncer.start()

    @classmethod
    def create(
        cls, path: Path, *, store_id: str, schema_version: int, seq: int, fsync: bool
    ) -> Journal:
        """A fresh journal at `path` (replacing an empty or replayed one), locked for writing.
        `STORE_LOCKED` when another store of this process already writes it."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full(path, exc, "creating the journal") from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(
                f"{path.with_suffix('')} is already open for writing by another store of this "
                "process (DuckDB allows one writer): use that store, or close it first",
                code="STORE_LOCKED",
                details={"path": str(path)},
            ) from None
        head = {"journal_version": JOURNAL_VERSION, "store_id": store_id, "schema": schema_version}
        header = MAGIC + _frame(_dumps(head))
        try:
            os.ftruncate(fd, 0)
            _write_all(fd, header)
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            if is_disk_full(exc):
                raise disk_full(path, exc, "writing the journal's header") from None
            raise
        return cls(path, fd, len(header), seq, fsync)

    def append(self, table: str, row: Any) -> int:
        """Write one record now; its seq. `STORE_DISK_FULL` (then and for every later append)
        when the disk cannot take it: the record is cut back out, never left torn."""
        if self._failed is not None:
            raise self._failed
        seq = self.seq + 1
        record = _frame(_dumps([seq, table, row]))
        try:
            _write_all(self._fd, record)
        except OSError as exc:
            self._failed = self._refuse(exc)
            raise self._failed from None
        self.seq = seq
        self._size += len(record)
        if self._syncer is not None and not self._dirty.is_set():
            self._dirty.set()
        return seq

    def _refuse(self, exc: OSError) -> WorkbenchError:
        """A failed append: its half-written record cut back out (no record is ever left
        torn), and the error every later append raises."""
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            pass
        return self._failure(exc)

    def _failure(self, exc: OSError) -> WorkbenchError:
        if is_disk_full(exc):
            return disk_full(self.path, exc, "appending to the journal")
        return WorkbenchError(
            f"{self.path}: appending to the journal failed: {exc}",
            code="STORE_WRITE_FAILED",
            details={"path": str(self.path)},
        )

    def checkpointed(self) -> None:
        """Everything appended so far is in DuckDB: cut the journal back to its header."""
        if self._failed is not None:
            return
        try:
            os.ftruncate(self._fd, self._header_size)
            self._size = self._header_size
        except OSError as exc:  # the records stay, and are skipped at replay by their seq
            log.warning("could not cut %s back after a flush: %s", self.path, exc)

    def _sync_loop(self) -> None:
        while True:
            self._dirty.wait()
            self._dirty.clear()  # before looking at _closing: a close never goes unseen
            if self._closing:
                return
            began = time.monotonic()
            try:
                os.fsync(self._fd)
            except OSError as exc:  # the disk failed: what is journaled is no longer safe
                if not self._closing:
                    log.error("fsync of %s failed: %s", self.path, exc)
                    self._failed = self._failure(exc)  # never a cut: appends run meanwhile
                return
            # A group is what was written in at least FSYNC_GROUP_S: waking for every record
            # would take the GIL from the run hundreds of times a second for nothing.
            rest = FSYNC_GROUP_S - (time.monotonic() - began)
            if rest > 0:
                time.sleep(rest)

    def close(self, *, remove: bool) -> None:
        """Stop the fsync thread, release the lock; `remove` deletes the file (every record is
        in DuckDB)."""
        self._closing = True
        self._dirty.set()
        if self._syncer is not None:
            self._syncer.join(timeout=5)
        try:
            if remove and self._failed is None:
                self.path.unlink(missing_ok=True)
            else:
                os.fsync(self._fd)
        except OSError:
            pass
        finally:
            os.close(self._fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
