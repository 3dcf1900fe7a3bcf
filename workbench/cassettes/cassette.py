"""`Cassette`: one recording of provider exchanges, in one of three modes.

- `record`: every request goes to the network and is recorded; the recording replaces the
  old one from its first exchange on (a run that asked nothing leaves the old one as it was,
  or, where there was none, an empty one).
- `replay`: every request is answered from the recording and nothing is sent. A request it
  never recorded is `REPLAY_MISS`: the router skips that model as not recorded and asks the
  next one (under concurrency its choices follow timing a replay cannot reproduce, so an item
  whose first model was cooling when recorded may now be answered by another recorded one);
  when no model of a route could answer from the recording, the run stops with the first
  miss — logging the item as failed would make a run that is not the one recorded.
- `record_missing`: replayed where recorded, sent and added where not.

The same request asked n times (repeats, a retry after a 429) gets the n-th recorded answer,
so a 429 then a 200 replays as a 429 then a 200 and the router's decisions (cooldown,
fallback, pacing from the headers) replay with them. Asked more times than recorded, replay
answers with the last recorded answer again (a run with more repeats than its recording
reuses it, as a cache would); record-missing asks the network and adds the answer.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal, get_args

from workbench.cassettes.format import Exchange, dumps, header, read, write_sorted
from workbench.cassettes.matching import describe_miss, exchange_key, request_key
from workbench.errors import CassetteError, ConfigError
from workbench.output_files import writable_file

CassetteMode = Literal["record", "replay", "record_missing"]
MODES: tuple[str, ...] = get_args(CassetteMode)
#: The file a cassette folder holds (a path ending in `.jsonl` names the file itself).
FILE_NAME = "cassette.jsonl"


def cassette_file(where: str | Path) -> Path:
    """The cassette file of `where`: a `.jsonl` path as it is, a folder's `cassette.jsonl`."""
    path = Path(where)
    return path if path.suffix == ".jsonl" else path / FILE_NAME


class Cassette:
    """A recording at `where` (a folder, or a `.jsonl` file) in `mode`. Read when opened, so
    a file of another version or a broken line is refused before anything is sent; closed
    with `close()` (or `with`), which rewrites it in its stable order."""

    def __init__(self, where: str | Path, mode: CassetteMode = "replay") -> None:
        if mode not in MODES:
            raise ConfigError(
                f"a cassette's mode is one of {', '.join(MODES)}, not {mode!r}",
                code="CONFIG_INVALID",
            )
        self.mode: CassetteMode = mode
        self.file = cassette_file(where)
        if mode != "replay":
            # Checked before anything is sent: an answer that cannot be written was paid for.
            writable_file(self.file)
        self._old: list[Exchange] = []
        if mode != "record":
            if self.file.exists():
                self._old = read(self.file)
            elif mode == "replay":
                missing = self.file.parent if not self.file.parent.is_dir() else self.file
                raise CassetteError(
                    f"no cassette to replay: {missing} does not exist — record one with "
                    f"--record {self.file.parent}",
                    code="CASSETTE_MISSING",
                )
        self._recorded: dict[str, list[Exchange]] = defaultdict(list)
        for exchange in sorted(self._old, key=lambda e: e.occurrence):
            self._recorded[exchange_key(exchange)].append(exchange)
        self._asked: Counter[str] = Counter()
        self.replayed = 0  # asks answered from the recording
        self.skipped = 0  # asks a replay could not answer (the router moved on, or stopped)
        self._new: list[Exchange] = []
        self._out: IO[str] | None = None
        self._lock = threading.Lock()  # a cassette may serve several loops' clients
        self.closed = False

    def __repr__(self) -> str:
        return f"Cassette({str(self.file)!r}, mode={self.mode!r})"

    @property
    def replays(self) -> bool:
        return self.mode != "record"

    @property
    def exchanges(self) -> list[Exchange]:
        """What the cassette holds now: the recording it was opened with (none in record
        mode) and what was recorded since."""
        with self._lock:
            return [*self._old, *self._new]

    @property
    def recorded(self) -> int:
        """Exchanges recorded since the cassette was opened."""
        with self._lock:
            return len(self._new)

    def take(self, provider: str, method: str, path: str, body: Any) -> tuple[Exchange | None, int]:
        """The recorded answer to this ask, and its occurrence; None when it must be sent
        (and recorded as that occurrence). REPLAY_MISS in replay when nothing was recorded."""
        key = request_key(provider, method, path, body)
        with self._lock:
            if self.closed:
                raise CassetteError(f"{self.file}: the cassette is closed", code="CASSETTE_INVALID")
            self._asked[key] += 1
            n = self._asked[key]
            recorded = self._recorded.get(key, [])
            if self.mode == "record":
                return None, n
            if n <= len(recorded):
                self.replayed += 1
                return recorded[n - 1], n
            if self.mode == "record_missing":
                return None, n
            if recorded:  # asked more times than recorded: the last answer stands
                self.replayed += 1
                return recorded[-1], n
            self.skipped += 1
            old = list(self._old)
        raise CassetteError(
            describe_miss(str(self.file), old, provider, method, path, body), code="REPLAY_MISS"
        )

    def add(self, exchange: Exchange) -> None:
        """Record `exchange`: kept for the sorted rewrite, and appended to the file at once, so
        a killed run keeps what it recorded."""
        with self._lock:
            if self.closed:
                return  # a stream read after its run closed the cassette: nothing to keep
            self._new.append(exchange)
            if self._out is None:
                self._out = self._open_for_append()
            self._out.write(dumps(exchange.to_json()) + "\n")
            self._out.flush()

    def _open_for_append(self) -> IO[str]:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        if self.mode == "record" or not self.file.exists() or not self.file.stat().st_size:
            out = self.file.open("w", encoding="utf-8", newline="\n")
            out.write(header() + "\n")
            return out
        with self.file.open("rb") as tail:
            tail.seek(-1, 2)
            ends_in_newline = tail.read(1) == b"\n"
        out = self.file.open("a", encoding="utf-8", newline="\n")
        if not ends_in_newline:
            out.write("\n")
        return out

    def close(self) -> None:
        """Rewrite the file in its stable order (when anything was recorded); idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self._out is None:
                if self.mode != "replay" and not self.file.exists():
                    # Nothing was asked: an empty recording, so that its replay answers the
                    # same nothing rather than finding no cassette.
                    self.file.parent.mkdir(parents=True, exist_ok=True)
                    write_sorted(self.file, [])
                return
            self._out.close()
            self._out = None
            write_sorted(self.file, [*self._old, *self._new])

    def __enter__(self) -> Cassette:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["FILE_NAME", "MODES", "Cassette", "CassetteMode", "cassette_file"]
