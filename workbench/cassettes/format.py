"""The cassette file: JSONL, a header line, then one exchange a line.

    {"cassette": "workbench", "matches": [...], "version": 1}
    {"occurrence": 1, "provider": "openai", "request": {...}, "response": {...}}

Every line is `json.dumps(sort_keys=True, ensure_ascii=False)`, so a line reads the same
whoever wrote it. Exchanges are appended as they happen (a killed run keeps what it recorded)
and the file is rewritten in a stable order when the cassette closes: by provider, request,
then occurrence. Two recordings of the same run then differ only where the answers did (and
in a stream's chunk timings, which are what they were): a diff reviews well.

A request is what left the machine, masked where it was masked: the path and query without
the host (the embedded simulator and the local model get a new port each run) and without a
key-bearing query parameter, and the JSON body. No request header is kept: they carry the
credential, and nothing a replay needs. A response keeps its status, the headers a reader of
the reply uses (`KEPT_HEADERS`: rate limits, retry-after, content type), and its body — JSON
as JSON, any other text as text — or, for a stream, its server-sent events with the time
each arrived, in milliseconds after the headers. A send that failed keeps what failed
(`error`: "network" or "timeout"), and a stream that broke keeps the events before the break.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from workbench.errors import CassetteError
from workbench.output_files import staged

VERSION = 1
MAGIC = "workbench"
#: What a replay compares to find a request's recorded answer (the REPLAY_MISS line says so).
MATCHES = ("provider", "method", "path", "body")
#: Response headers a reply's readers use: quota and pacing (`providers/meter.py`), the
#: refusal's wait, and the content type the stream reader checks. Nothing else is kept.
KEPT_HEADERS = ("content-type", "retry-after", "retry-after-ms")
KEPT_PREFIXES = ("x-ratelimit-", "ratelimit-")

SendFailure = Literal["network", "timeout"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One server-sent event of a recorded stream, as its text, `ms` after the headers."""

    ms: int
    data: str


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and what answered it. `occurrence` counts the same request asked again
    (repeats, a retry after a 429): the n-th ask replays the n-th answer. `line` is where it
    was read from (0: not read from a file)."""

    provider: str
    occurrence: int
    method: str
    path: str
    body: Any
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    response: Any = None  # a whole body: JSON, or text
    chunks: tuple[Chunk, ...] | None = None  # a stream's events
    error: SendFailure | None = None  # the send failed (no status), or the stream broke
    line: int = field(default=0, compare=False)

    @property
    def stream(self) -> bool:
        return self.chunks is not None

    def to_json(self) -> dict[str, Any]:
        response: dict[str, Any] = {}
        if self.status:
            response["status"] = self.status
            response["headers"] = self.headers
        if self.chunks is not None:
            response["chunks"] = [{"ms": c.ms, "data": c.data} for c in self.chunks]
        elif self.status:
            response["body"] = self.response
        if self.error is not None:
            response["error"] = self.error
        return {
            "provider": self.provider,
            "occurrence": self.occurrence,
            "request": {"method": self.method, "path": self.path, "body": self.body},
            "response": response,
        }

    @classmethod
    def from_json(cls, data: Any, line: int) -> Exchange:
        """An exchange from its line's JSON; KeyError, TypeError or ValueError when it is not
        one (the reader names the file and line)."""
        request, response = data["request"], data["response"]
        chunks = response.get("chunks")
        error = response.get("error")
        if error not in (None, "network", "timeout"):
            raise ValueError(f"unknown error {error!r}")
        exchange = cls(
            provider=str(data["provider"]),
            occurrence=int(data["occurrence"]),
            method=str(request["method"]),
            path=str(request["path"]),
            body=request.get("body"),
            status=int(response.get("status", 0)),
            headers={str(k): str(v) for k, v in dict(response.get("headers", {})).items()},
            response=response.get("body"),
            chunks=None
            if chunks is None
            else tuple(Chunk(int(c["ms"]), str(c["data"])) for c in chunks),
            error=error,
            line=line,
        )
        if exchange.occurrence < 1 or (not exchange.status and exchange.error is None):
            raise ValueError("an exchange needs an occurrence ≥ 1 and a status or an error")
        return exchange


def dumps(data: Any) -> str:
    """One line of a cassette: keys sorted, text as written (no \\u escapes)."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def header() -> str:
    return dumps({"cassette": MAGIC, "version": VERSION, "matches": list(MATCHES)})


def read(path: Path) -> list[Exchange]:
    """Every exchange of the cassette at `path`, in file order. `CASSETTE_VERSION` names the
    file and both versions; `CASSETTE_INVALID` names the file and the line."""
    exchanges: list[Exchange] = []
    if path.is_dir():
        raise CassetteError(
            f"{path}: a folder, not a cassette file (a cassette folder holds cassette.jsonl)",
            code="CASSETTE_INVALID",
        )
    try:
        whole = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise _invalid(path, line, "not UTF-8 text") from None
    for number, text in enumerate(whole.splitlines(), 1):
        if number == 1:  # the header comes first, before any blank line
            try:
                _check_header(path, json.loads(text))
            except json.JSONDecodeError as exc:
                raise _invalid(path, 1, f"not JSON ({exc.msg})") from None
            continue
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _invalid(path, number, f"not JSON ({exc.msg})") from None
        try:
            exchanges.append(Exchange.from_json(data, number))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _invalid(path, number, f"not an exchange ({_why(exc)})") from None
    if not whole:
        raise _invalid(path, 1, "empty: a cassette starts with its header line")
    return exchanges


def _check_header(path: Path, data: Any) -> None:
    if not isinstance(data, dict) or data.get("cassette") != MAGIC:
        raise _invalid(path, 1, 'not a workbench cassette (no {"cassette": "workbench"} header)')
    if data.get("version") != VERSION:
        raise CassetteError(
            f"{path} is a version {data.get('version')!r} cassette; this workbench reads "
            f"version {VERSION}: record it again with this workbench",
            code="CASSETTE_VERSION",
        )


def _invalid(path: Path, line: int, why: str) -> CassetteError:
    return CassetteError(
        f"{path}, line {line}: {why} — fix the line, or record the cassette again",
        code="CASSETTE_INVALID",
    )


def _why(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing {exc.args[0]!r}"
    return " ".join(str(exc).split())[:120] or type(exc).__name__


def sort_key(exchange: Exchange) -> tuple[str, str, int]:
    """The stable order: by provider, then request, then occurrence."""
    request = dumps([exchange.method, exchange.path, exchange.body])
    return (exchange.provider, request, exchange.occurrence)


def write_sorted(path: Path, exchanges: Iterable[Exchange]) -> None:
    """Rewrite `path` with `exchanges` in the stable order, atomically: a reader sees the old
    file or the new one, never half of one."""
    ordered = sorted(exchanges, key=sort_key)
    text = "".join(line + "\n" for line in [header(), *(dumps(e.to_json()) for e in ordered)])
    with staged(path.parent) as stage:  # a hidden temporary, moved into place
        tmp = stage(path.name)
        with tmp.open("w", encoding="utf-8", newline="\n") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        tmp.chmod(0o644)  # a file to commit and share, whatever the umask's temporaries


__all__ = [
    "KEPT_HEADERS",
    "MATCHES",
    "VERSION",
    "Chunk",
    "Exchange",
    "dumps",
    "header",
    "read",
    "sort_key",
    "write_sorted",
]
