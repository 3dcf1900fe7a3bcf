"""BFCL's score files and leaderboard CSVs, written from graded BFCL items so BFCL's own
tools read them (its `update_leaderboard_table_with_local_score_file`, then
`generate_leaderboard_csv`) and find the figures `bfcl_scores` shows.

    <folder>/<model>/<group>/BFCL_v4_<category>_score.json   one per category run
    <folder>/data_overall.csv, data_non_live.csv, data_live.csv,
             data_multi_turn.csv, data_agentic.csv

A score file's first line is its summary (`accuracy`, `correct_count`, `total_count`: what
BFCL reads back), then one line per failed entry, as BFCL's `save_eval_results` writes them.
The group is BFCL's: `non_live`, `live`, `multi_turn`, `agentic` (memory one level deeper,
`agentic/memory/kv`). The CSVs are formatted as BFCL formats them (ranked by the first
figure, percentages with two decimals, "N/A" for a figure not run); cost and latency are
"N/A": they come from BFCL's model table, which knows nothing of our models.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import ConfigError
from workbench.eval.suites.bfcl.case import (
    AGENTIC_CATEGORIES,
    ALL_CATEGORIES,
    MEMORY_CATEGORIES,
    MULTI_TURN_CATEGORIES,
)
from workbench.eval.suites.bfcl.scores import bfcl_scores

PREFIX = "BFCL_v4"
NA = "N/A"
_MODEL = object()  # the model's display name in a CSV row
# Per CSV: BFCL's column headers after "Rank", each with the `bfcl_scores` column it shows
# (`_MODEL`, or None for a column BFCL fills from its model table: "N/A" here).
CSV_LAYOUTS: dict[str, tuple[tuple[str, object], ...]] = {
    "data_overall.csv": (
        ("Overall Acc", "Overall Acc"),
        ("Model", _MODEL),
        ("Model Link", None),
        ("Total Cost ($)", None),
        ("Latency Mean (s)", None),
        ("Latency Standard Deviation (s)", None),
        ("Latency 95th Percentile (s)", None),
        ("Non-Live AST Acc", "Non-Live AST Summary"),
        ("Non-Live Simple AST", "Simple AST"),
        ("Non-Live Multiple AST", "Multiple AST"),
        ("Non-Live Parallel AST", "Parallel AST"),
        ("Non-Live Parallel Multiple AST", "Parallel Multiple AST"),
        ("Live Acc", "Live Overall Acc"),
        ("Live Simple AST", "Live Simple AST"),
        ("Live Multiple AST", "Live Multiple AST"),
        ("Live Parallel AST", "Live Parallel AST"),
        ("Live Parallel Multiple AST", "Live Parallel Multiple AST"),
        ("Multi Turn Acc", "Multi Turn Overall Acc"),
        ("Multi Turn Base", "Multi Turn Base"),
        ("Multi Turn Miss Func", "Multi Turn Miss Func"),
        ("Multi Turn Miss Param", "Multi Turn Miss Param"),
        ("Multi Turn Long Context", "Multi Turn Long Context"),
        ("Web Search Acc", "Web Search Summary"),
        ("Web Search Base", "Web Search Base"),
        ("Web Search No Snippet", "Web Search No Snippet"),
        ("Memory Acc", "Memory Summary"),
        ("Memory KV", "Memory KV"),
        ("Memory Vector", "Memory Vector"),
        ("Memory Recursive Summarization", "Memory Recursive Summarization"),
        ("Relevance Detection", "Relevance Detection"),
        ("Irrelevance Detection", "Irrelevance Detection"),
        ("Format Sensitivity Max Delta", None),
        ("Format Sensitivity Standard Deviation", None),
        ("Organization", None),
        ("License", None),
    ),
    "data_non_live.csv": (
        ("Model", _MODEL),
        ("Non-Live Overall Acc", "Non-Live Overall Acc"),
        ("AST Summary", "Non-Live AST Summary"),
        ("Simple AST", "Simple AST"),
        ("Python Simple AST", "Python Simple AST"),
        ("Java Simple AST", "Java Simple AST"),
        ("JavaScript Simple AST", "JavaScript Simple AST"),
        ("Multiple AST", "Multiple AST"),
        ("Parallel AST", "Parallel AST"),
        ("Parallel Multiple AST", "Parallel Multiple AST"),
        ("Irrelevance Detection", "Irrelevance"),
    ),
    "data_live.csv": (
        ("Model", _MODEL),
        ("Live Overall Acc", "Live Overall Acc"),
        ("AST Summary", "Live AST Summary"),
        ("Python Simple AST", "Live Simple AST"),
        ("Python Multiple AST", "Live Multiple AST"),
        ("Python Parallel AST", "Live Parallel AST"),
        ("Python Parallel Multiple AST", "Live Parallel Multiple AST"),
        ("Irrelevance Detection", "Live Irrelevance"),
        ("Relevance Detection", "Live Relevance"),
    ),
    "data_multi_turn.csv": (
        ("Model", _MODEL),
        ("Multi Turn Overall Acc", "Multi Turn Overall Acc"),
        ("Base", "Multi Turn Base"),
        ("Miss Func", "Multi Turn Miss Func"),
        ("Miss Param", "Multi Turn Miss Param"),
        ("Long Context", "Multi Turn Long Context"),
    ),
    "data_agentic.csv": (
        ("Model", _MODEL),
        ("Agentic Overall Acc", "Agentic Overall Acc"),
        ("Web Search Summary", "Web Search Summary"),
        ("Web Search Base", "Web Search Base"),
        ("Web Search No Snippet", "Web Search No Snippet"),
        ("Memory Summary", "Memory Summary"),
        ("Memory KV", "Memory KV"),
        ("Memory Vector", "Memory Vector"),
        ("Memory Recursive Summarization", "Memory Recursive Summarization"),
    ),
}
# BFCL's own names for the two modes: "-FC" for function calling, none for prompting.
_MODE_SUFFIX = {"native": ("-FC", " (FC)"), "text": ("", " (Prompt)")}


def score_folder_name(model: str, mode: str | None) -> str:
    """The model's folder under a score folder: BFCL names a function-calling model `...-FC`
    and reads `_` back as `/`, so `/` and `:` (not safe in every file system) become `_`."""
    base = model.replace("/", "_").replace(":", "_")
    return base if mode is None else base + _MODE_SUFFIX.get(mode, (f"-{mode}", ""))[0]


def _display_name(model: str, mode: str | None) -> str:
    return model if mode is None else model + _MODE_SUFFIX.get(mode, ("", f" ({mode})"))[1]


def category_group(category: str) -> Path:
    """The folder BFCL keeps a category's score file in (`agentic/memory/kv` for memory)."""
    if category in MEMORY_CATEGORIES:
        return Path("agentic", "memory", category.removeprefix("memory_"))
    if category in AGENTIC_CATEGORIES:
        return Path("agentic")
    if category in MULTI_TURN_CATEGORIES:
        return Path("multi_turn")
    return Path("live" if category.startswith("live") else "non_live")


def write_bfcl_scores(
    results: pd.DataFrame,
    folder: str | Path,
    *,
    sizes: Mapping[str, int] | None = None,
    model_name: str | None = None,
) -> list[Path]:
    """Write BFCL's score files and leaderboard CSVs for `results` (as `bfcl_scores` takes
    them, plus `item_id`, `error_type`, `reason` and the model's reply where known) into
    `folder`, one model folder per model and mode; return the files written, CSVs last.

    `model_name` names the model's folder and CSV row instead (results of one model and mode
    only). `sizes` as for `bfcl_scores`: without them the live and overall figures of a
    partial run are "N/A"."""
    folder = Path(folder)
    keys = [c for c in ("model", "mode") if c in results.columns]
    groups = list(results.groupby(keys, sort=True, dropna=False)) if keys else [((), results)]
    if model_name is not None and len(groups) != 1:
        raise ConfigError(
            f"model_name={model_name!r} names one model, but the results hold {len(groups)} "
            "models and modes",
            code="BFCL_SCORES_INVALID",
        )
    written: list[Path] = []
    names: list[str] = []  # in `bfcl_scores`'s row order: both group the same way
    for key, frame in groups:
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        model, found = str(label.get("model", "model")), label.get("mode")
        mode = str(found) if isinstance(found, str) else None
        name = model_name or score_folder_name(model, mode)
        names.append(model_name or _display_name(model, mode))
        written += _write_score_files(frame, folder / name, name)
    table = bfcl_scores(results, sizes=sizes)
    folder.mkdir(parents=True, exist_ok=True)
    for file, layout in CSV_LAYOUTS.items():
        path = folder / file
        path.write_text(_csv(layout, table, names), encoding="utf-8")
        written.append(path)
    return written


def _write_score_files(frame: pd.DataFrame, model_folder: Path, name: str) -> list[Path]:
    written = []
    for category, rows in frame.groupby("category", sort=False):
        category = str(category)
        if category not in ALL_CATEGORIES:
            continue
        valid = rows["valid"].astype(bool)
        lines: list[dict[str, Any]] = [
            {
                "accuracy": float(valid.mean()),
                "correct_count": int(valid.sum()),
                "total_count": len(rows),
            }
        ]
        lines += [_failed_entry(r, name, category) for r in rows[~valid].to_dict("records")]
        path = model_folder / category_group(category) / f"{PREFIX}_{category}_score.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        written.append(path)
    return written


def _failed_entry(row: Mapping[Any, Any], name: str, category: str) -> dict[str, Any]:
    """A failed entry's line: multi-turn and agentic entries nest their error as BFCL's
    runners do; single-turn ones keep `error` and `error_type` side by side."""
    error_type = _text(row.get("error_type"))
    messages = [m for m in (_text(row.get("reason")),) if m]
    entry: dict[str, Any] = {
        "id": _text(row.get("item_id")),
        "model_name": name,
        "test_category": category,
        "valid": False,
    }
    if category in MULTI_TURN_CATEGORIES or category in AGENTIC_CATEGORIES:
        entry["error"] = {"error_message": messages, "error_type": error_type}
    else:
        entry |= {"error": messages, "error_type": error_type}
    result = _text(row.get("tool_calls")) or _text(row.get("raw"))
    if result is not None:
        entry["model_result"] = result
    return entry


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def _csv(layout: tuple[tuple[str, object], ...], table: pd.DataFrame, names: list[str]) -> str:
    """One CSV as BFCL writes it: rows ranked by the first figure (N/A last, ties in order),
    percentages with two decimals, no quoting, no newline after the last row."""
    rows: list[list[str | float]] = []
    for (_, row), name in zip(table.iterrows(), names, strict=True):
        cells: list[str | float] = []
        for _, column in layout:
            if column is _MODEL:
                cells.append(name)
            elif column is None or pd.isna(row[str(column)]):
                cells.append(NA)
            else:
                cells.append(float(row[str(column)]))
        rows.append(cells)
    first = next(i for i, (_, column) in enumerate(layout) if column is not _MODEL)
    rows.sort(key=lambda r: r[first] if isinstance(r[first], float) else -1, reverse=True)
    lines = [",".join(["Rank", *(header for header, _ in layout)])]
    for rank, cells in enumerate(rows, start=1):
        shown = [c if isinstance(c, str) else f"{c * 100:.2f}%" for c in cells]
        lines.append(",".join([str(rank), *shown]))
    return "\n".join(lines)
