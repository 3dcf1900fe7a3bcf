"""DataFrames over a workbench store, for notebooks and reports.

    wb = RunFrames.open("workbench.duckdb")        # read-only; a snapshot if a writer holds it
    wb.latency(by=["provider", "model"])
    wb.compare(run_a, run_b)
    wb.con.sql("SELECT ...")                        # the raw connection

Every method returns a pandas DataFrame with the same columns whether or not there is data;
`run_id=None` means every run in the file. Latency figures are provider latencies: attempts
answered from the response cache are left out of them.

On a big run, a frame of one row per attempt or output can outgrow the machine: the
aggregates (`latency`, `errors`, `grades`, `usage`, `compare`, …) are computed by DuckDB and
stay small, and the per-row frames (`attempts`, `outputs`, `outputs_with_tags`, `verdicts`,
`quota_timeline`, `pacing`, `fallbacks`, `bfcl_results`) take `where=` (a SQL condition on the
frame's columns, `?` for each of `params`) and `limit=`, both pushed into DuckDB. A per-row
frame that would hold more than `max_rows` rows (a million by default) is refused with
`FRAME_TOO_BIG` before it is read:

    wb.outputs(run, where="passed = ? AND config = ?", params=[False, "default"], limit=100)
    wb.sql("SELECT config, count(*) FROM outputs WHERE run_id = ? GROUP BY ALL", [run])

A reader writes nothing beside the file: what DuckDB spills to disk (a sort past its memory
cap) goes to a private temporary folder, removed on `close()`.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import numpy as np
import pandas as pd

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.analysis import outcomes
from workbench.eval.store.database import Store
from workbench.eval.store.schema import COLUMNS
from workbench.providers.batch_api import BATCH_PRICE

T = TypeVar("T")

VERDICT_COLUMNS = ("native", "text", "none", "unobserved")
_ERROR_FREE = ("ok",)


def _cols(by: str | Sequence[str], table: str) -> list[str]:
    """Validated grouping columns (they are put into SQL, so only real column names pass)."""
    cols = [by] if isinstance(by, str) else list(by)
    unknown = [c for c in cols if c not in COLUMNS[table]]
    if not cols or unknown:
        raise ConfigError(
            f"cannot group {table} by {unknown or cols}; columns: {list(COLUMNS[table])}",
            code="COLUMN_UNKNOWN",
        )
    return cols


def _size(text: str) -> str:
    """A memory size DuckDB reads ("128MB", "1 GiB"); anything else is refused (it is put
    into SQL)."""
    if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", text.strip(), re.IGNORECASE):
        raise ValueError(f"memory_limit {text!r} is no size like '128MB'")
    return text.strip()


def _literal(text: str) -> str:
    """A SQL string literal (SET takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


# A file opened read-only twice in one process is one DuckDB database, whose temp_directory
# (set once it has spilled, for good) is shared: the first reader makes the private folder,
# the last one closed removes it. {resolved path: (folder, readers)}
_SPILLS: dict[str, tuple[str, int]] = {}
_SPILLS_HELD = threading.Lock()


@dataclass(frozen=True)
class _Table:
    """A per-row frame's table: what is read of it, in which order (`RunFrames._rows`).
    `source`: a query the frame reads in place of the table `name` (a join): the caller's
    `where=` is then a condition on the frame's own columns, as it shows them."""

    name: str
    columns: str
    order: str
    source: str = ""

    @property
    def read(self) -> str:
        return f"({self.source}) AS {self.name}" if self.source else self.name


_ATTEMPTS = _Table(
    "attempts",
    "*",
    "run_id, start_ms, item_id, repeat, config, "
    "CAST(json_extract(attempt_id, '$[#-1]') AS INTEGER) NULLS LAST, route_id, seq, position",
)
_OUTPUTS = _Table("outputs", "*", "run_id, item_id, repeat, config")
_QUOTA = _Table(
    "quota",
    "*, make_timestamp(observed_at_ms * 1000) AS observed_at",
    'observed_at_ms, key, "window"',
)
_PACING = _Table("pacing", "*, make_timestamp(at_ms * 1000) AS at", "at_ms, key")
_VERDICTS = _Table("verdicts", "*", "run_id, at_ms, provider, model, capability, item_id, repeat")
_OUTPUTS_WITH_TAGS = _Table(
    "outputs_with_tags",
    "*",
    "run_id, item_id, repeat, config",
    "SELECT o.*, i.tags, i.category FROM outputs o "
    "LEFT JOIN items i ON i.run_id = o.run_id AND i.item_id = o.item_id",
)
_FALLBACKS = _Table(
    "fallbacks",
    "*",
    "run_id, at_ms, item_id",
    "SELECT r.run_id, r.item_id, r.repeat, r.config, r.route_id, r.candidates, r.chosen, "
    "r.fallback_depth, r.partial, r.skipped, r.error_code, r.at_ms, "
    "coalesce((SELECT list(a.key || '=' || a.outcome ORDER BY a.seq, a.start_ms, a.position) "
    "  FROM attempts a WHERE a.run_id = r.run_id AND a.route_id = r.route_id), []) AS chain "
    "FROM routes r WHERE r.fallback_depth > 0 OR r.chosen IS NULL",
)
_BFCL_RESULTS = _Table(
    "bfcl_results",
    "*",
    "run_id, category, item_id, repeat, config",
    # An item whose request never got an answer has no key: it counts, as a failure, for the
    # model its configuration answered with (BFCL counts it wrong too). The window sees every
    # item of the run and configuration, whatever the caller's `where=` keeps of them.
    "SELECT o.run_id, coalesce(o.key, max(o.key) OVER (PARTITION BY o.run_id, o.config), "
    "o.config) AS model, "
    "json_extract_string(r.settings, '$.tools_mode') AS mode, i.category, o.item_id, "
    "o.repeat, o.config, coalesce(o.passed, false) AS valid, "
    "coalesce(json_extract_string(o.grade, '$.error_type'), o.error_code) AS error_type, "
    "json_extract_string(o.grade, '$.reason') AS reason, i.prompt, o.raw, o.tool_calls "
    "FROM outputs o JOIN items i USING (run_id, item_id) JOIN runs r USING (run_id) "
    # An item the provider kept unanswered is left out: BFCL never saw the model fail it.
    "WHERE json_extract_string(i.expect, '$.bfcl.id') IS NOT NULL AND o.unanswered IS NULL "
    # A memory conversation writes what the questions read: BFCL never scores it.
    "AND coalesce(json_extract(i.expect, '$.bfcl.prerequisite')::BOOLEAN, false) = false",
)


def _q(cols: Iterable[str]) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def _where(
    run_id: str | Sequence[str] | None,
    extra: str = "",
    where: str | None = None,
    params: Sequence[Any] = (),
) -> tuple[str, list[Any]]:
    """A WHERE clause: `extra`, the caller's `where`, and the run (one id, several, or None
    and an empty list for every run)."""
    clauses = [extra] if extra else []
    values: list[Any] = []
    if where:  # the caller's condition, kept whole: its own ORs cannot reach past it
        clauses.append(f"({where})")
        values += list(params)
    runs = [run_id] if isinstance(run_id, str) else list(run_id or [])
    if runs:
        clauses.append(
            "run_id = ?" if len(runs) == 1 else f"run_id IN ({', '.join('?' * len(runs))})"
        )
        values += runs
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", values


def _ci(values: np.ndarray) -> tuple[float, float]:
    if values.size == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


# The most numbers one block of bootstrap resamples draws (resamples × items): about 16 MB of
# indices, and as much again for what they pick.
_BOOT_BLOCK = 2_000_000


def _resampled(
    rng: np.random.Generator,
    n_boot: int,
    a: np.ndarray,
    b: np.ndarray,
    stat: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """`stat` of `n_boot` resamples of the items (each a row of indices into `a` and `b`, the
    two runs' values of one item at one index, drawn with replacement), a block of rows at a
    time: the draws of one `rng.integers` call of every row, in memory that does not grow
    with the run. No items: no resample."""
    n = len(a)
    if n == 0:
        return np.array([])
    block = max(1, _BOOT_BLOCK // n)
    out = np.empty(n_boot)
    for start in range(0, n_boot, block):
        rows = rng.integers(0, n, size=(min(block, n_boot - start), n))
        out[start : start + len(rows)] = stat(a[rows], b[rows])
    return out


def _mean_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (b - a).mean(axis=1)


def _median_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.median(b, axis=1) - np.median(a, axis=1)


class RunFrames:
    """Analysis over one store file. `RunFrames.open(path)` to make one; `.con` for SQL.
    `max_rows`: the most rows a per-row frame may hold (see the module's docstring)."""

    max_rows: int = 1_000_000
    # How much `with_room` gives a read that ran out of memory under the connection's cap.
    room: str = "1GB"

    def __init__(self, store: Store) -> None:
        self.store = store
        self.con = store.con
        self._memory: str | None = None  # DuckDB's memory cap as opened (None: its default)
        self._memory_shown = ""  # ... as DuckDB says it (rounded: "45.7 MiB" for "48MB")
        self._spill: str | None = None  # the file whose private spill folder this reader uses

    def _rows(
        self,
        table: _Table,
        run_id: str | Sequence[str] | None,
        where: str | None,
        params: Sequence[Any],
        limit: int | None,
    ) -> pd.DataFrame:
        """A per-row frame: the run, the caller's `where` and `limit` pushed into DuckDB;
        counted first, and refused past `max_rows` (`FRAME_TOO_BIG`) before it is read."""
        clause, values = _where(run_id, "", where, params)
        if limit is not None and limit < 0:
            raise ValueError(f"limit={limit}: a limit is 0 or more rows")
        row = self.con.execute(f"SELECT count(*) FROM {table.read} {clause}", values).fetchone()
        rows = min(int(row[0]) if row else 0, limit if limit is not None else math.inf)
        if rows > self.max_rows:
            raise ConfigError(
                f"{table.name}: {rows:,} rows is more than this frame holds (max_rows="
                f"{self.max_rows:,}); ask for fewer with limit= or where= (a SQL condition, "
                "pushed into DuckDB), aggregate with frames.sql(...), or raise frames.max_rows",
                code="FRAME_TOO_BIG",
            )
        cap = f" LIMIT {int(limit)}" if limit is not None else ""
        return self.sql(
            f"SELECT {table.columns} FROM {table.read} {clause} ORDER BY {table.order}{cap}",
            values,
        )

    @contextlib.contextmanager
    def uncapped(self) -> Iterator[None]:
        """The per-row frames read whole in the block, whatever `max_rows` says: for a reader
        that needs every row of the run by design (an export), whose user has no `limit=`
        to pass."""
        previous = self.__dict__.get("max_rows")
        self.max_rows = sys.maxsize
        try:
            yield
        finally:
            if previous is None:
                del self.max_rows
            else:
                self.max_rows = previous

    @classmethod
    def open(
        cls,
        path: str | Path = "workbench.duckdb",
        *,
        read_only: bool = True,
        snapshot: bool = False,
        memory_limit: str | None = None,
    ) -> RunFrames:
        """Open read-only by default (a snapshot copy when another process writes the file).
        A read-only DuckDB connection still keeps writers in other processes out until
        `close()`; `snapshot=True` reads a copy and never blocks anyone. `memory_limit`
        ("128MB") caps what DuckDB holds for this connection's queries (it spills a big
        sort to disk instead): a report of a million items is written within it."""
        frames = cls(Store.open(path, read_only=read_only, snapshot=snapshot))
        try:
            frames._spill_privately()
            if memory_limit is not None:
                frames._memory = _size(memory_limit)
                frames.con.execute(f"SET memory_limit = '{frames._memory}'")
                frames._memory_shown = frames._setting("memory_limit")
        except BaseException:
            frames.close()
            raise
        return frames

    def _spill_privately(self) -> None:
        """DuckDB spills a read-only connection's big sorts beside the file (`<db>.tmp`): a
        reader must write nothing there (the folder may be read-only, or shared), so they go
        to a private folder, removed on `close()`. A snapshot spills inside its own copy's
        folder already; a connection shared with this process's writer keeps the writer's."""
        if self._setting("access_mode") != "read_only":
            return
        key = str(self.path.resolve())
        with _SPILLS_HELD:
            folder, readers = _SPILLS.get(key, ("", 0))
            if not readers:
                folder = tempfile.mkdtemp(prefix="workbench-spill-")
                try:
                    self.con.execute("SET temp_directory = " + _literal(folder))
                except duckdb.Error:  # shared with a connection of ours that has spilled
                    shutil.rmtree(folder, ignore_errors=True)
                    return
            _SPILLS[key] = (folder, readers + 1)
            self._spill = key

    def _spilled(self) -> None:
        """This reader is done with the private folder: the last one removes it."""
        if self._spill is None:
            return
        with _SPILLS_HELD:
            folder, readers = _SPILLS.pop(self._spill)
            if readers > 1:
                _SPILLS[self._spill] = (folder, readers - 1)
            else:
                shutil.rmtree(folder, ignore_errors=True)
        self._spill = None

    def _as_set(self, shown: str) -> str:
        """A memory cap as DuckDB shows it ("286.1 MiB", cut to a tenth of its unit), as it
        can be set again so that it shows the same: the cap this RunFrames was opened with
        exactly, any other (a limit its user set) to within a twentieth of its unit."""
        if self._memory is not None and shown == self._memory_shown:
            return self._memory
        found = re.fullmatch(r"([\d.]+)\s*(\w+)", shown.strip())
        if found is None:
            return shown
        return f"{float(found[1]) + 0.05:.2f} {found[2]}"

    def _setting(self, name: str) -> str:
        row = self.con.execute("SELECT current_setting(?)", [name]).fetchone()
        return str(row[0]) if row else ""

    @contextlib.contextmanager
    def memory_limit(self, size: str) -> Iterator[None]:
        """DuckDB's memory cap set to `size` ("1GB") for the block, then put back. A median
        over every attempt cannot spill to disk as a sort or a hash can: a report capped
        tight gives such a query its room only while it runs. The cap put back is the one
        the connection had (a limit its user set included), not DuckDB's default."""
        previous = self._setting("memory_limit")
        self.con.execute(f"SET memory_limit = '{_size(size)}'")
        try:
            yield
        finally:
            self.con.execute("SET memory_limit = " + _literal(self._as_set(previous)))

    def with_room(self, read: Callable[[], T], size: str | None = None) -> T:
        """`read()`, and once more with DuckDB's cap at `size` (`room`, 1 GB, by default) if
        it ran out of memory under the connection's own (`memory_limit`): the cap keeps a
        report's memory small, and must never be what fails it (a run whose rows are
        unusually long: big prompts, long answers)."""
        try:
            return read()
        except duckdb.OutOfMemoryException:
            if self._memory is None:
                raise
        with self.memory_limit(size or self.room):
            return read()

    @contextlib.contextmanager
    def out_of_memory_said(self) -> Iterator[None]:
        """DuckDB running out of memory in the block (even given `room`) raised as
        `REPORT_OUT_OF_MEMORY`: one line naming the caps, never a traceback. The machine, not
        the run, is short of memory: a reader can only try again with more of it free."""
        try:
            yield
        except duckdb.OutOfMemoryException as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "out of memory"
            cap = f"{self._memory}, then {self.room} for the longest reads" if self._memory else ""
            raise WorkbenchError(
                f"DuckDB ran out of memory reading {self.path.name}"
                + (f" (capped at {cap})" if cap else "")
                + f": {first}; free some memory and try again",
                code="REPORT_OUT_OF_MEMORY",
                status=503,
            ) from None

    @property
    def snapshot(self) -> bool:
        return self.store.snapshot

    @property
    def path(self) -> Path:
        return self.store.path

    def close(self) -> None:
        self.store.close()
        self._spilled()

    def __enter__(self) -> RunFrames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sql(self, query: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        """Any query as a DataFrame."""
        return self.con.execute(query, list(params or [])).df()

    # -------------------------------------------------------------- tables
    def runs(self) -> pd.DataFrame:
        return self.sql("SELECT * FROM runs ORDER BY started_at, run_id")

    def latest_run(self) -> str | None:
        """The id of the run started last, or None for an empty store."""
        run = self.store.latest_run()
        return run.run_id if run is not None else None

    def attempts(
        self,
        run_id: str | None = None,
        *,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Every attempt, in the order they were made. Two turns of one item can start in the
        same millisecond (a replay, a fast simulator), so ties break on the attempt's try within
        its output (the last element of `attempt_id`), not on the random route id."""
        return self._rows(_ATTEMPTS, run_id, where, params, limit)

    def outputs(
        self,
        run_id: str | None = None,
        *,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Every output (one per item, repeat and configuration), in the report's order."""
        return self._rows(_OUTPUTS, run_id, where, params, limit)

    def quota_timeline(
        self,
        run_id: str | None = None,
        *,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Every quota reading, in time order, with `observed_at` as a UTC timestamp."""
        return self._rows(_QUOTA, run_id, where, params, limit)

    def pacing(
        self,
        run_id: str | None = None,
        *,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> pd.DataFrame:
        """The run's pacing history (`PacingEvent` rows: each provider:model's adaptive
        concurrency and the limits learnt from its headers), in time order, `at` as UTC."""
        return self._rows(_PACING, run_id, where, params, limit)

    def unanswered(self, run_id: str | None = None) -> pd.DataFrame:
        """Outputs the provider kept unanswered, per configuration and reason, with the
        earliest `retry_at` (for a daily quota: when to resume)."""
        where, params = _where(run_id, "unanswered IS NOT NULL")
        return self.sql(
            "SELECT run_id, config, unanswered AS reason, count(*) AS n, "
            "make_timestamp(min(retry_at_ms) * 1000) AS retry_at "
            f"FROM outputs {where} GROUP BY ALL ORDER BY ALL",
            params,
        )

    def outputs_with_tags(
        self,
        run_id: str | Sequence[str] | None = None,
        *,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> pd.DataFrame:
        """`outputs(run_id)` (one run, several, or every run) with each item's `tags` and
        `category`: what the comparison widget filters by. `where=` may name those too."""
        return self._rows(_OUTPUTS_WITH_TAGS, run_id, where, params, limit)

    # -------------------------------------------------------------- capability
    def verdicts(
        self,
        run_id: str | None = None,
        *,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Every classification, recorded or not, in time order. `protocol_family` is the
        prose format of a `text` verdict's calls: which format a model writes tells a model
        that needs prompting in its own format from one that follows any."""
        return self._rows(_VERDICTS, run_id, where, params, limit)

    def verdict_rows(self, run_id: str) -> pd.DataFrame:
        """The run's classifications counted (`n`) per provider, model, capability, verdict,
        prose format, whether recorded, and evidence: what `workbench verdicts --run` prints."""
        return self.sql(
            "SELECT provider, model, capability, verdict, protocol_family, recorded, "
            "evidence, count(*) AS n "
            "FROM verdicts WHERE run_id = ? GROUP BY ALL ORDER BY provider, model",
            [run_id],
        )

    def capability_rows(self) -> pd.DataFrame:
        """The capability records in the columns `workbench verdicts` prints (no scope)."""
        return self.sql(
            "SELECT provider, model, capability, verdict, protocol_family, via, "
            "observed_at, evidence FROM capabilities ORDER BY provider, model, capability"
        )

    def capabilities(self) -> pd.DataFrame:
        """The capability records the planner reads now (one per provider, model, scope and
        capability), with the prose format a `text` verdict was seen in."""
        return self.sql("SELECT * FROM capabilities ORDER BY provider, model, scope, capability")

    def verdict_matrix(self, run_id: str | None = None, capability: str = "tools") -> pd.DataFrame:
        """provider, model, then how many classifications said native / text / none /
        unobserved (recorded or not), and total. Zeros where a verdict was never given."""
        where, params = _where(run_id, "capability = ?")
        counts = self.sql(
            f"SELECT provider, model, verdict, count(*) AS n FROM verdicts {where} GROUP BY ALL",
            [capability, *params],
        )
        columns = ["provider", "model", *VERDICT_COLUMNS, "total"]
        if counts.empty:
            return pd.DataFrame(
                {
                    c: pd.Series(dtype="int64" if c not in ("provider", "model") else object)
                    for c in columns
                }
            )
        table = counts.pivot_table(
            index=["provider", "model"], columns="verdict", values="n", aggfunc="sum", fill_value=0
        )
        extra = [v for v in table.columns if v not in VERDICT_COLUMNS]
        table = table.reindex(columns=[*VERDICT_COLUMNS, *extra], fill_value=0).astype("int64")
        table["total"] = table.sum(axis=1)
        table.columns.name = None
        return table.reset_index().sort_values(["provider", "model"], ignore_index=True)

    # -------------------------------------------------------------- routing
    def fallbacks(
        self,
        run_id: str | None = None,
        *,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Routes that did not get their first candidate (fallback_depth > 0) or got nobody,
        with `chain`: that route's attempts in order, as `key=outcome` strings."""
        df = self._rows(_FALLBACKS, run_id, where, params, limit)
        for col in ("candidates", "skipped"):
            df[col] = df[col].map(lambda v: json.loads(v) if isinstance(v, str) else v)
        df["chain"] = df["chain"].map(lambda v: list(v) if v is not None else [])
        return df

    def latency(self, by: str | Sequence[str] = "model", run_id: str | None = None) -> pd.DataFrame:
        """n, p50, p95, p99 (ms) of successful attempts, cached answers excluded."""
        cols = _cols(by, "attempts")
        where, params = _where(run_id, "outcome = 'ok' AND cached IS NOT TRUE")
        return self.sql(
            f"SELECT {_q(cols)}, count(*) AS n, "
            "quantile_cont(latency_ms, 0.5) AS p50_ms, quantile_cont(latency_ms, 0.95) AS p95_ms, "
            "quantile_cont(latency_ms, 0.99) AS p99_ms "
            f"FROM attempts {where} GROUP BY {_q(cols)} ORDER BY {_q(cols)}",
            params,
        )

    def errors(self, run_id: str | None = None) -> pd.DataFrame:
        """The error taxonomy: failed attempts (skips are decisions, not errors) counted by
        provider, model, error_kind, error_code and HTTP status, most frequent first."""
        where, params = _where(run_id, "outcome <> 'ok' AND outcome NOT LIKE 'skipped%'")
        return self.sql(
            "SELECT provider, model, error_kind, error_code, status, count(*) AS count "
            f"FROM attempts {where} GROUP BY ALL "
            "ORDER BY count DESC, provider, model, error_kind, error_code, status",
            params,
        )

    # -------------------------------------------------------------- outputs
    def usage(
        self,
        run_id: str | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
    ) -> pd.DataFrame:
        """Tokens per config and answering model (`key`), from outputs; cached answers are
        counted in `cached` but their tokens are not billed. With `prices` ({model or
        "provider:model": (USD per 1M input tokens, USD per 1M output tokens)}): cost_in_usd,
        cost_out_usd, cost_usd (NaN where a model has no price); the tokens a vendor's batch
        answered are billed at the batch price (`BATCH_PRICE` of the table's: half). Which
        they are is said by the attempts (`batch_id`), not by the run's `--batch`: a run
        resumed with or without it, or a turn answered from the cache, mixes both."""
        where, params = _where(run_id)
        df = self.sql(
            "SELECT config, key, count(*) AS n, count(*) FILTER (cached) AS cached, "
            "coalesce(sum(tokens_in) FILTER (cached IS NOT TRUE), 0)::BIGINT AS tokens_in, "
            "coalesce(sum(tokens_out) FILTER (cached IS NOT TRUE), 0)::BIGINT AS tokens_out, "
            "coalesce(sum(tokens_in * coalesce(batched, 0)) FILTER (cached IS NOT TRUE), 0) "
            "AS batch_in, "
            "coalesce(sum(tokens_out * coalesce(batched, 0)) FILTER (cached IS NOT TRUE), 0) "
            "AS batch_out "
            f"FROM outputs LEFT JOIN ({_BATCHED}) USING (run_id, item_id, repeat, config) "
            f"{where} "
            "GROUP BY ALL ORDER BY config, key NULLS LAST",
            params,
        )
        billed: dict[str, np.ndarray] = {}
        for side in ("in", "out"):
            tokens = df[f"tokens_{side}"].to_numpy(dtype=float)
            batched = df.pop(f"batch_{side}").to_numpy(dtype=float)
            billed[side] = tokens - batched * (1 - BATCH_PRICE)
        if prices is not None:
            found = [_price(prices, k) for k in df["key"]]
            p_in = np.array([p[0] for p in found], dtype=float)
            p_out = np.array([p[1] for p in found], dtype=float)
            df["cost_in_usd"] = billed["in"] * p_in / 1e6
            df["cost_out_usd"] = billed["out"] * p_out / 1e6
            df["cost_usd"] = df["cost_in_usd"] + df["cost_out_usd"]
        return df

    def grades(
        self, run_id: str | None = None, by: str | Sequence[str] = ("config", "key")
    ) -> pd.DataFrame:
        """n, answered, unanswered, failed, graded, passed, pass_rate and mean_score of
        outputs, grouped by `by`, as the summary line counts them (see `outcomes`): the pass
        rate is passed / graded answers; an output the provider kept unanswered, or whose route
        failed, is counted beside it, never in it. Grouped by `key` (the default), each model
        counts its own answers: an item a fallback answered is the fallback's."""
        cols = _cols(by, "outputs")
        where, params = _where(run_id)
        return self.sql(
            f"SELECT {_q(cols)}, count(*) AS n, "
            f"count(*) FILTER {outcomes.answered()} AS answered, "
            f"count(*) FILTER {outcomes.unanswered()} AS unanswered, "
            f"count(*) FILTER {outcomes.failed()} AS failed, "
            f"count(*) FILTER {outcomes.graded()} AS graded, "
            f"count(*) FILTER {outcomes.passed()} AS passed, "
            f"count(*) FILTER {outcomes.passed()} / nullif(count(*) FILTER {outcomes.graded()}, 0) "
            f"AS pass_rate, avg(score) FILTER {outcomes.graded()} AS mean_score "
            f"FROM outputs {where} GROUP BY {_q(cols)} ORDER BY {_q(cols)} NULLS LAST",
            params,
        )

    # -------------------------------------------------------------- BFCL
    def bfcl_results(
        self,
        run_id: str | Sequence[str] | None = None,
        *,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> pd.DataFrame:
        """One row per graded BFCL item: `model` (the provider:model that answered, else the
        configuration), `mode` (the run's tools mode), `category`, `valid`, `error_type`
        (BFCL's, or the error code of a request that never got an answer), the calls."""
        return self._rows(_BFCL_RESULTS, run_id, where, params, limit)

    def bfcl_scores(
        self, run_id: str | Sequence[str] | None = None, *, source: str | Path | None = None
    ) -> pd.DataFrame:
        """The leaderboard of BFCL runs: a row per model and mode, "Overall Acc" with BFCL's
        weights, its summaries and accuracy per category (see
        `workbench.eval.suites.bfcl.scores`). Categories a run left out are weighed by their
        size in BFCL's data (`source`, else the fetched cache). A run named that is not in the
        file is `RUN_UNKNOWN`; one without BFCL items, `BFCL_RUN_NOT_BFCL`."""
        from workbench.eval.suites.bfcl.scores import bfcl_scores

        results = self._scored_bfcl_results(run_id)
        return bfcl_scores(
            results[["model", "mode", "category", "valid"]], sizes=_bfcl_sizes(source)
        )

    def write_bfcl_scores(
        self,
        run_id: str | Sequence[str] | None,
        folder: str | Path,
        *,
        source: str | Path | None = None,
        model_name: str | None = None,
    ) -> list[Path]:
        """BFCL's score files and leaderboard CSVs for these runs, written into `folder` so
        BFCL's own tools read them (see `workbench.eval.suites.bfcl.score_files`); the files
        written, CSVs last."""
        from workbench.eval.suites.bfcl.score_files import write_bfcl_scores

        results = self._scored_bfcl_results(run_id)
        return write_bfcl_scores(results, folder, sizes=_bfcl_sizes(source), model_name=model_name)

    def _scored_bfcl_results(self, run_id: str | Sequence[str] | None) -> pd.DataFrame:
        """Every graded BFCL item of the runs, past `max_rows` too: a score is over all of
        them (no `limit=` to pass), and they are as many as BFCL has questions (a few
        thousand) times the runs' repeats and configurations."""
        runs = [run_id] if isinstance(run_id, str) else list(run_id or [])
        for run in runs:
            self.store.run(run)  # RUN_UNKNOWN
        with self.uncapped():
            results = self.bfcl_results(run_id)
        found = set(results["run_id"])
        for run in runs:
            if run not in found:
                raise ConfigError(
                    f"run {run!r} has no graded BFCL item to score (a `bfcl:` run has)",
                    code="BFCL_RUN_NOT_BFCL",
                )
        return results

    def compare(
        self,
        run_a: str,
        run_b: str,
        *,
        by: str | Sequence[str] = "config",
        n_boot: int = 2000,
        seed: int = 0,
    ) -> pd.DataFrame:
        """Run B against run A, per group (`by`: "config" by default; ("config", "key") to
        split by answering model) present in both. Items are paired by item_id (repeats
        averaged). `pass_diff` = pass rate B − A, `latency_diff` = median latency B − A (ms,
        cached answers excluded), each with a 95 % percentile bootstrap CI over items.

        The items are paired in DuckDB and read a group at a time (four numbers an item), and
        the bootstrap draws its resamples a block at a time (`_BOOT_BLOCK` numbers): memory
        stays small however many items the runs have, and a seed gives the figures it gave
        when every resample was drawn at once (the same draws, in the same order)."""
        cols = _cols(by, "outputs")
        out_cols = [
            *cols,
            "n_items",
            "pass_rate_a",
            "pass_rate_b",
            "pass_diff",
            "pass_diff_lo",
            "pass_diff_hi",
            "n_latency",
            "median_latency_a",
            "median_latency_b",
            "latency_diff",
            "latency_diff_lo",
            "latency_diff_hi",
        ]
        rows = []
        for key in self._paired_groups(run_a, run_b, cols):
            g = self._paired_items(run_a, run_b, cols, key)
            rng = np.random.default_rng(seed)
            verdicts = g.dropna(subset=["pass_a", "pass_b"])  # items graded on both sides
            pa, pb = verdicts["pass_a"].to_numpy(float), verdicts["pass_b"].to_numpy(float)
            n = len(verdicts)
            pass_lo, pass_hi = _ci(_resampled(rng, n_boot, pa, pb, _mean_diff))
            lat = g.dropna(subset=["latency_a", "latency_b"])
            la, lb = lat["latency_a"].to_numpy(float), lat["latency_b"].to_numpy(float)
            m = len(lat)
            boots = _resampled(rng, n_boot, la, lb, _median_diff)
            if m:
                med_a, med_b = float(np.median(la)), float(np.median(lb))
            else:
                med_a, med_b = float("nan"), float("nan")
            lat_lo, lat_hi = _ci(boots)
            rate_a, rate_b = (pa.mean(), pb.mean()) if n else (float("nan"), float("nan"))
            rows.append(
                (
                    *key,
                    n,
                    rate_a,
                    rate_b,
                    rate_b - rate_a,
                    pass_lo,
                    pass_hi,
                    m,
                    med_a,
                    med_b,
                    med_b - med_a,
                    lat_lo,
                    lat_hi,
                )
            )
        return pd.DataFrame(rows, columns=out_cols)

    def _paired_groups(self, run_a: str, run_b: str, cols: Sequence[str]) -> list[tuple[Any, ...]]:
        """The groups with an item in both runs, graded or not (a group with none graded keeps
        its row), in order, NULL last."""
        groups = ", ".join(f'a."{c}"' for c in cols)
        found = self.con.execute(
            f"SELECT DISTINCT {groups} {_paired_sql(cols)} ORDER BY ALL NULLS LAST",
            [run_a, run_b],
        ).fetchall()
        return [tuple(row) for row in found]

    def _paired_items(
        self, run_a: str, run_b: str, cols: Sequence[str], key: tuple[Any, ...]
    ) -> pd.DataFrame:
        """One group's items of both runs (pass_a, pass_b, latency_a, latency_b), ordered by
        item_id: the seeded bootstrap resamples by position, so the order is part of the
        result."""
        within = "".join(f' AND "{c}" IS NOT DISTINCT FROM ${n + 3}' for n, c in enumerate(cols))
        return self.sql(
            "SELECT a.pass AS pass_a, b.pass AS pass_b, a.latency AS latency_a, "
            f"b.latency AS latency_b {_paired_sql(cols, within)} ORDER BY a.item_id",
            [run_a, run_b, *key],
        )


def _paired_sql(cols: Sequence[str], within: str = "") -> str:
    """Each item of both runs ($1: A, $2: B) per group of `cols`: the pass rate of its
    graded outputs and the mean latency of its answered (not cached) ones, a side each.
    `within`: a condition on the outputs of either side (after AND)."""

    def side(run: str) -> str:
        return (
            f"SELECT {_q(cols)}, item_id, "
            # Over the graded answers, as every pass rate: an output the provider kept
            # unanswered, or whose route failed, is no verdict on the model (nor a latency).
            f"avg(CASE WHEN passed THEN 1.0 ELSE 0.0 END) FILTER {outcomes.graded()} "
            "AS pass, "
            f"avg(latency_ms) FILTER (cached IS NOT TRUE AND {outcomes.answered()}) "
            f"AS latency FROM outputs WHERE run_id = {run}{within} GROUP BY ALL"
        )

    # A group whose value is NULL (no answering model) pairs with the other run's NULL.
    same = " AND ".join(f'a."{c}" IS NOT DISTINCT FROM b."{c}"' for c in cols)
    return f"FROM ({side('$1')}) a JOIN ({side('$2')}) b ON a.item_id = b.item_id AND {same}"


# Per output, the share of its answered (not cached) calls' tokens a vendor's batch answered:
# 1 for an output whose turns all went in batches, 0 for one asked one by one, between for a
# conversation that had both (an output's tokens in and out are billed at that share). An
# output whose calls carry no token count is shared by its calls instead.
_BATCHED = (
    "SELECT run_id, item_id, repeat, config, CASE WHEN sum(tokens) > 0 THEN "
    "coalesce(sum(tokens) FILTER (batch_id IS NOT NULL), 0) / sum(tokens) "
    "ELSE count(batch_id) / count(*) END AS batched FROM attempts "
    f"WHERE {outcomes.answered_calls()} GROUP BY ALL"
)


def _price(prices: Mapping[str, tuple[float, float]], key: Any) -> tuple[float, float]:
    """A price for `provider:model@lane`: the full key, then without the lane, then the model."""
    if not isinstance(key, str):
        return (float("nan"), float("nan"))
    bare = key.split("@", 1)[0]
    for candidate in (key, bare, bare.partition(":")[2]):
        if candidate in prices:
            p_in, p_out = prices[candidate]
            return float(p_in), float(p_out)
    return (float("nan"), float("nan"))


def _bfcl_sizes(source: str | Path | None) -> dict[str, int] | None:
    """Questions per BFCL category, or None without BFCL's data at hand (then the weighted
    figures of a run with a category left out are NaN, not a guess)."""
    from workbench.eval.suites.bfcl.loader import category_sizes

    try:
        return category_sizes(source)
    except ConfigError:
        return None
