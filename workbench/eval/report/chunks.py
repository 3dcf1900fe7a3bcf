"""A run's item table and stories as the chunks the page reads (data format 1).

Rows are one per output in `ORDER BY item_id, repeat, config`; a rows chunk holds
`ROWS_PER_CHUNK` of them column by column (one array per field), the fields that repeat few
values (configuration, model, grade, …) as codes into the page's dictionaries; a stories
chunk holds `STORIES_PER_CHUNK` rows' stories, read when one of them is opened. Each chunk is
read from DuckDB on its own by a bounded query (`workbench.eval.analysis.row_spans`): the
writer writes them one at a time and `workbench view` builds one per request, from the same
functions, so a page served and a page written say the same.

A small run (at most `SINGLE_FILE_MAX` rows and `SINGLE_FILE_BYTES` of stories) is one file
with every chunk inline; a big one a folder whose chunk files are JavaScript
(`workbenchData({...});`), because a page opened from disk may load a `<script src>` beside it
but may not `fetch()` it in Chromium. A stories chunk holds fewer stories when they are long.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from workbench.eval.analysis import row_spans
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.row_spans import Span
from workbench.eval.report import data as report_data
from workbench.eval.report.parts import duration, finite
from workbench.eval.store.rows import from_json

__all__ = [
    "COMPARE_COLUMNS",
    "COMPARE_FILTERS",
    "FORMAT",
    "ROWS_PER_CHUNK",
    "RUN_COLUMNS",
    "RUN_FILTERS",
    "SINGLE_FILE_BYTES",
    "SINGLE_FILE_MAX",
    "STORIES_PER_CHUNK",
    "STORY_CHUNK_BYTES",
    "RunTable",
    "chunk_script",
    "report_name",
    "rows_file",
    "stories_file",
    "stories_fitting",
]

FORMAT = 1
ROWS_PER_CHUNK = 25_000
# The most stories a chunk holds (a run of short stories); fewer when they are long, so that
# a stories chunk stays about STORY_CHUNK_BYTES (`stories_fitting`).
STORIES_PER_CHUNK = 1_000
STORY_CHUNK_BYTES = 4_000_000
# The most rows a report keeps in one file: a 5,000-row page (about 5 MB with its stories)
# still shows its first rows within 2 s from disk; past it, the folder form.
SINGLE_FILE_MAX = 5_000
# ... and the most bytes of stories it keeps: a few hundred rows of long prompts and answers
# are a folder too, whose stories are read when opened rather than parsed with the page.
SINGLE_FILE_BYTES = 8_000_000

RUN_COLUMNS = [
    ["item", "item"],
    ["repeat", "repeat"],
    ["config", "config"],
    ["model", "answered by"],
    ["grade", "grade"],
    ["unanswered", "unanswered"],
    ["category", "category"],
    ["tags", "tags"],
    ["error", "error code"],
    ["depth", "fallback depth"],
    ["turns", "turns"],
    ["cached", "cached"],
    ["latency", "latency"],
]
RUN_FILTERS = [
    "config",
    "model",
    "grade",
    "unanswered",
    "category",
    "tag",
    "error",
    "depth",
    "cached",
]
COMPARE_COLUMNS = [
    ["item", "item"],
    ["repeat", "repeat"],
    ["config", "config"],
    ["category", "category"],
    ["A", "A"],
    ["B", "B"],
    ["change", "change"],
]
COMPARE_FILTERS = ["config", "category", "change"]
CODED = ("config", "model", "grade", "unanswered", "category", "tags", "error", "cached")


def report_name(wb: RunFrames, run_id: str) -> str:
    """Where a run's page is, relative to the folder its report is written into: the single
    file `RUN.html` for a small run (at most SINGLE_FILE_MAX rows and SINGLE_FILE_BYTES of
    stories), the folder's `RUN/index.html` for a big one."""
    rows = row_spans.row_count(wb, run_id)
    if rows > SINGLE_FILE_MAX:
        return f"{run_id}/index.html"
    small = rows * wb.with_room(lambda: row_spans.story_bytes(wb, run_id)) <= SINGLE_FILE_BYTES
    return f"{run_id}.html" if small else f"{run_id}/index.html"


def rows_file(k: int) -> str:
    return f"data/rows-{k:05d}.js"


def stories_file(k: int) -> str:
    return f"data/stories-{k:05d}.js"


def stories_fitting(story_bytes: float) -> int:
    """How many stories a chunk holds when one is `story_bytes` long: the most that stay
    within STORY_CHUNK_BYTES, among the sizes that divide a rows chunk (a rows chunk holds
    whole stories chunks), never fewer than 10."""
    sizes = [n for n in range(STORIES_PER_CHUNK, 9, -1) if ROWS_PER_CHUNK % n == 0]
    fits = [n for n in sizes if n * story_bytes <= STORY_CHUNK_BYTES]
    return fits[0] if fits else sizes[-1]


def chunk_script(chunk: dict[str, Any]) -> str:
    """A chunk file's text: one call the page defines, so `<script src>` can carry it."""
    return f"workbenchData({json.dumps(chunk, ensure_ascii=False, separators=(',', ':'))});\n"


def _tags(text: Any) -> tuple[str, ...]:
    """An item's tags as stored (a JSON list): a tuple, so that tags holding ", " stay apart."""
    tags = from_json(text) if text else None
    return tuple(str(t) for t in tags) if isinstance(tags, list) else ()


class RunTable:
    """One run's table, read a chunk at a time. Made once per page (the chunks' first keys and
    the coded fields' dictionaries are read here, so every chunk's codes index the same
    dictionaries); then `rows_chunk(k)` and `stories_chunk(k)` each run bounded queries."""

    def __init__(
        self,
        wb: RunFrames,
        run_id: str,
        *,
        rows_per_chunk: int = ROWS_PER_CHUNK,
        stories_per_chunk: int | None = None,
    ) -> None:
        self.wb, self.run_id = wb, run_id
        # About what one story weighs: how many a stories chunk holds, how many are read at once.
        self.story_bytes = wb.with_room(lambda: row_spans.story_bytes(wb, run_id))
        if stories_per_chunk is None:
            stories_per_chunk = stories_fitting(self.story_bytes)
        if rows_per_chunk % stories_per_chunk:
            raise ValueError("a rows chunk holds whole stories chunks")
        self.rows_per_chunk, self.stories_per_chunk = rows_per_chunk, stories_per_chunk
        self.rows = row_spans.row_count(wb, run_id)
        # The first key of every stories chunk; a rows chunk starts where one does.
        self._starts = row_spans.span_starts(wb, run_id, stories_per_chunk)
        values = row_spans.coded_values(wb, run_id)
        tag_lists = sorted({_tags(t) for t in values.pop("tags")})
        self._codes: dict[str, dict[Any, int]] = {
            f: {v: n for n, v in enumerate(vs)} for f, vs in values.items()
        }
        self._codes["tags"] = {tags: n for n, tags in enumerate(tag_lists)}
        # The table shows an item's tags joined; the tag filter matches single tags, each
        # entry of the dictionary listing its tags' indices in `tag_values`.
        self.dicts = {**values, "tags": [", ".join(tags) for tags in tag_lists]}
        self.tag_values = sorted({t for tags in tag_lists for t in tags if t})
        index = {t: n for n, t in enumerate(self.tag_values)}
        self.tag_sets = [[index[t] for t in tags if t] for tags in tag_lists]

    @property
    def row_chunks(self) -> int:
        return -(-self.rows // self.rows_per_chunk)

    @property
    def story_chunks(self) -> int:
        return -(-self.rows // self.stories_per_chunk)

    def _span(self, start: int, stop: int) -> Span:
        step = self.stories_per_chunk
        after = -(-stop // step)  # the next chunk's first row: none past the last
        return Span(
            start,
            self._starts[start // step],
            self._starts[after] if after < len(self._starts) else None,
        )

    def _bounds(self, k: int, per: int, chunks: int) -> tuple[int, int]:
        if not 0 <= k < chunks:
            raise IndexError(f"no chunk {k}: the run has {chunks}")
        start = k * per
        return start, min(start + per, self.rows)

    def head(self) -> dict[str, Any]:
        """What the page says of its table before any chunk: its size, columns and dictionaries."""
        return {
            "rows": self.rows,
            "rows_per_chunk": self.rows_per_chunk,
            "stories_per_chunk": self.stories_per_chunk,
            "columns": RUN_COLUMNS,
            "filters": RUN_FILTERS,
            "dicts": self.dicts,
            "tag_values": self.tag_values,
            "tag_sets": self.tag_sets,
        }

    def rows_chunk(self, k: int) -> dict[str, Any]:
        """Rows chunk `k` (IndexError past the last)."""
        if self.rows == 0 and k == 0:
            return self._columns(0, 0, [])
        start, stop = self._bounds(k, self.rows_per_chunk, self.row_chunks)
        span = self._span(start, stop)
        outputs = self.wb.with_room(lambda: row_spans.outputs_in(self.wb, self.run_id, span))
        return self._columns(k, start, outputs)

    def _columns(self, k: int, start: int, outputs: list[dict[str, Any]]) -> dict[str, Any]:
        code = self._codes
        words: dict[str, list[Any]] = {f: [] for f in CODED}
        for o in outputs:
            words["config"].append(code["config"][o["config"]])
            words["model"].append(code["model"][o["key"] or ""])
            words["grade"].append(code["grade"][o["grade"]])
            # Why the provider kept it from the model ("" for an answer): never a fail.
            words["unanswered"].append(code["unanswered"][o["unanswered"] or ""])
            words["category"].append(code["category"][o["category"] or ""])
            words["tags"].append(code["tags"][_tags(o["tags"])])
            words["error"].append(code["error"][o["error_code"] or ""])
            words["cached"].append(code["cached"]["yes" if o["cached"] else "no"])
        return {
            "kind": "rows",
            "index": k,
            "start": start,
            "count": len(outputs),
            "item": [o["item_id"] for o in outputs],
            "repeat": [int(o["repeat"]) for o in outputs],
            **words,
            "depth": [None if o["depth"] is None else int(o["depth"]) for o in outputs],
            "turns": [int(o["turns"]) for o in outputs],
            "latency": [duration(o["latency_ms"]) for o in outputs],
            # To the µs: sorts, and stays short.
            "latency_ms": [round(finite(o["latency_ms"]), 3) for o in outputs],
        }

    def stories_chunk(self, k: int) -> dict[str, Any]:
        """Stories chunk `k` (IndexError past the last)."""
        return next(self.stories_chunks(k, 1))

    def stories_chunks(self, first: int, count: int) -> Iterator[dict[str, Any]]:
        """Stories chunks `first`… (`count` of them, fewer at the end), read together: one
        bounded read per table for all of them (the writer reads a rows chunk's worth at once)."""
        start, _ = self._bounds(first, self.stories_per_chunk, self.story_chunks)
        last = min(first + count, self.story_chunks) - 1
        _, stop = self._bounds(last, self.stories_per_chunk, self.story_chunks)
        span = self._span(start, stop)
        outputs, parts = self.wb.with_room(
            lambda: (
                row_spans.outputs_in(self.wb, self.run_id, span, every_column=True),
                report_data.story_parts(self.wb, self.run_id, span),
            )
        )
        for k in range(first, last + 1):
            # Told a chunk at a time, from rows read once: only one chunk's stories are built.
            lo = k * self.stories_per_chunk - start
            part = outputs[lo : lo + self.stories_per_chunk]
            texts: dict[str, int] = {}
            told = report_data.tell(part, parts, texts)
            yield {
                "kind": "stories",
                "index": k,
                "start": start + lo,
                "count": len(part),
                "texts": list(texts),
                "stories": [told[report_data.row_key(o)] for o in part],
            }
