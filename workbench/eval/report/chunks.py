"""A run's item table and stories as the chunks the page reads (data format 1).

Rows are one per output in `ORDER BY item_id, repeat, config`; a rows chunk holds
`ROWS_PER_CHUNK` of them column by column (one array per field), the fields that repeat few
values (configuration, model, grade, …) as codes into the page's dictionaries; a stories
chunk holds at most `STORIES_PER_CHUNK` rows' stories and about `STORY_CHUNK_BYTES` (cut by
each story's size: the page lists where each chunk starts), read when one of them is
opened. Each chunk is read from DuckDB on its own by a bounded query
(`workbench.eval.analysis.row_spans`): the writer writes them one at a time and
`workbench view` builds one per request, from the same functions, so a page served and a
page written say the same.

A small run (at most `SINGLE_FILE_MAX` rows and `SINGLE_FILE_BYTES` of stories) is one file
with every chunk inline; a big one a folder whose chunk files are JavaScript
(`workbenchData({...});`), because a page opened from disk may load a `<script src>` beside it
but may not `fetch()` it in Chromium.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from typing import Any

from workbench.eval.analysis import row_spans
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.row_spans import ChunkStart, Span
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
]

FORMAT = 1
ROWS_PER_CHUNK = 25_000
# The most stories a chunk holds (a run of short stories); fewer where they are long: a
# stories chunk ends where its stories pass about STORY_CHUNK_BYTES, so that opening one
# story never loads much more than it.
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
        stories_per_chunk: int = STORIES_PER_CHUNK,
        story_chunk_bytes: int = STORY_CHUNK_BYTES,
    ) -> None:
        self.wb, self.run_id = wb, run_id
        self.rows_per_chunk, self.stories_per_chunk = rows_per_chunk, stories_per_chunk
        self.rows = row_spans.row_count(wb, run_id)
        # Where every stories chunk starts (a rows chunk starts where one does), and the
        # run's story bytes in all.
        self._starts, self.story_total = self._cut_stories(story_chunk_bytes)
        self._keys = {start.row: start.key for start in self._starts}
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

    def _cut_stories(self, most_bytes: int) -> tuple[list[ChunkStart], int]:
        """The stories chunks, cut a rows chunk at a time by each story's own size: a chunk
        ends before the story that would take it past `most_bytes` (a story bigger than that
        is a chunk of its own), after `stories_per_chunk` rows, and where a rows chunk does."""
        wb, run_id = self.wb, self.run_id
        starts: list[ChunkStart] = []
        total = 0
        firsts = row_spans.span_starts(wb, run_id, self.rows_per_chunk)
        for n, first in enumerate(firsts):
            stop = firsts[n + 1] if n + 1 < len(firsts) else None
            span = Span(n * self.rows_per_chunk, first, stop)
            rows, held = 0, 0
            sizes = wb.with_room(partial(row_spans.story_sizes, wb, run_id, span))
            for i, (key, size) in enumerate(sizes):
                if i == 0 or rows == self.stories_per_chunk or held + size > most_bytes:
                    starts.append(ChunkStart(span.start + i, key, total))
                    rows, held = 0, 0
                rows, held, total = rows + 1, held + size, total + size
        return starts, total

    @property
    def row_chunks(self) -> int:
        return -(-self.rows // self.rows_per_chunk)

    @property
    def story_chunks(self) -> int:
        return len(self._starts)

    @property
    def story_starts(self) -> list[int]:
        """The first row of each stories chunk (the page finds a row's chunk in it)."""
        return [start.row for start in self._starts]

    def _story_stop(self, k: int) -> int:
        return self._starts[k + 1].row if k + 1 < len(self._starts) else self.rows

    def story_chunk_bytes(self, k: int) -> int:
        """About how many bytes stories chunk `k` holds."""
        after = self._starts[k + 1].before if k + 1 < len(self._starts) else self.story_total
        return after - self._starts[k].before

    def story_reads(self, most_bytes: int, most_chunks: int = 5) -> Iterator[tuple[int, int]]:
        """The stories chunks as (first, count) runs read together: as many as hold about
        `most_bytes` (at least one, at most `most_chunks`), so that short stories take few
        queries and long ones are never read many megabytes at once."""
        first = 0
        while first < self.story_chunks:
            count, held = 1, self.story_chunk_bytes(first)
            while (
                count < most_chunks
                and first + count < self.story_chunks
                and held + self.story_chunk_bytes(first + count) <= most_bytes
            ):
                held += self.story_chunk_bytes(first + count)
                count += 1
            yield first, count
            first += count

    def _span(self, start: int, stop: int) -> Span:
        """Rows `start` up to `stop`, each the first row of a stories chunk (or the end)."""
        return Span(start, self._keys[start], self._keys.get(stop) if stop < self.rows else None)

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
            "story_starts": self.story_starts,
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
        bounded read per table for all of them (the writer reads a few megabytes at once)."""
        if not 0 <= first < self.story_chunks:
            raise IndexError(f"no stories chunk {first}: the run has {self.story_chunks}")
        last = min(first + count, self.story_chunks) - 1
        start = self._starts[first].row
        span = self._span(start, self._story_stop(last))
        outputs, parts = self.wb.with_room(
            lambda: (
                row_spans.outputs_in(self.wb, self.run_id, span, every_column=True),
                report_data.story_parts(self.wb, self.run_id, span),
            )
        )
        for k in range(first, last + 1):
            # Told a chunk at a time, from rows read once: only one chunk's stories are built.
            lo, hi = self._starts[k].row - start, self._story_stop(k) - start
            part = outputs[lo:hi]
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
