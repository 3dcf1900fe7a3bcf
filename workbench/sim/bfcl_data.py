"""BFCL's multi-turn entries as the simulator reads them: questions, ground truth, docs.

The simulator is part of the library, and the library never imports the workbench
(`workbench.eval`): so this is a reader of its own, of the files only. It opens what
`workbench bfcl fetch` leaves in the cache (the `bfcl-eval` wheel, a zip, or an unpacked
`data` folder) and reads the four multi-turn categories, each entry's ground truth per turn
parsed into calls with keyword arguments.

Ground truth may pass arguments by position (`sort('final_report.pdf')`); a native call names
every argument, so a positional one takes the name of the documented parameter at its place.
BFCL executes the call against the backend method, whose signature is the real order; the
docs' `properties` list the parameters in that order (a test checks it over every positional
argument of the 800 entries against the backends' source).
"""

from __future__ import annotations

import ast
import json
import os
import re
import zipfile
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
# BFCL's sentence for a turn whose functions were held back (its user message ends with it).
MORE_FUNCTIONS = "I have updated some more functions you can choose from. What about now?"
_PREFIX = "BFCL_v4_"
# A value the router masked before the request left (`#PHONE_0001`, `#EMAIL_0002`): the
# workbench masks each item's personal data by default, and BFCL's dates read as phone numbers.
MASK_TOKEN = re.compile(r"#[A-Z](?:[A-Z_]*[A-Z])?_\d{4,}")
_IN_WHEEL = "bfcl_eval/data/"
_DOC_FILES = (
    "gorilla_file_system.json",
    "math_api.json",
    "message_api.json",
    "posting_api.json",
    "ticket_api.json",
    "trading_bot.json",
    "travel_booking.json",
    "vehicle_control.json",
)


@dataclass(frozen=True, slots=True)
class Call:
    """One ground-truth call, every argument by name (Python values, as BFCL evaluates them)."""

    name: str
    args: dict[str, Any]

    @property
    def key(self) -> str:
        """The call compared as a whole: name and canonical JSON arguments."""
        return f"{self.name}:{json.dumps(self.args, sort_keys=True, default=str)}"


@dataclass(frozen=True, slots=True)
class Entry:
    """One multi-turn entry: each turn's user text ("" for a held-back turn, whose message is
    BFCL's MORE_FUNCTIONS) and each turn's ground-truth calls."""

    id: str
    category: str
    turns: tuple[str, ...]
    truth: tuple[tuple[Call, ...], ...]
    held_back: dict[int, frozenset[str]]  # turn → the functions first offered then (miss_func)


def cache_folder() -> Path:
    """Where `workbench bfcl fetch` puts BFCL's data (the same rule as the workbench's)."""
    if os.environ.get("WORKBENCH_BFCL_DIR"):
        return Path(os.environ["WORKBENCH_BFCL_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "workbench" / "bfcl"


class BfclFiles:
    """BFCL's data folder, in a wheel or on disk: `read(name)` → text or None."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.wheel = where.is_file()

    def read(self, name: str) -> str | None:
        if self.wheel:
            with zipfile.ZipFile(self.where) as z:
                try:
                    return z.read(_IN_WHEEL + name).decode("utf-8")
                except KeyError:
                    return None
        path = self.where / name
        return path.read_text(encoding="utf-8") if path.is_file() else None


def find_files(where: Path | None = None) -> BfclFiles | None:
    """BFCL's data at `where` (a wheel or a data folder), else in the fetch cache; None when
    it was never fetched (the BFCL personas then answer as ordinary ones)."""
    folder = cache_folder() if where is None else where
    if where is not None and where.is_file():
        return BfclFiles(where)
    candidates = [*sorted(folder.glob("bfcl_eval-*.whl"), reverse=True), folder / "data"]
    for candidate in candidates:
        if candidate.exists():
            return BfclFiles(candidate)
    return None


def _records(text: str | None) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (text or "").splitlines() if line.strip()]


def read_docs(files: BfclFiles) -> dict[str, dict[str, Any]]:
    """Every multi-turn backend function's doc, by name."""
    docs: dict[str, dict[str, Any]] = {}
    for name in _DOC_FILES:
        for doc in _records(files.read(f"multi_turn_func_doc/{name}")):
            docs.setdefault(doc["name"], doc)
    return docs


def parse_call(text: str, docs: dict[str, dict[str, Any]]) -> Call:
    """`"sort('final_report.pdf')"` → Call("sort", {"file_name": "final_report.pdf"})."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a call: {text!r}")
    name = node.func.id
    args: dict[str, Any] = {}
    if node.args:
        order = list(((docs.get(name) or {}).get("parameters") or {}).get("properties") or {})
        if len(order) < len(node.args):
            raise ValueError(f"{text!r}: more positional arguments than {name} documents")
        for param, value in zip(order, node.args, strict=False):
            args[param] = ast.literal_eval(value)
    for keyword in node.keywords:
        if keyword.arg is not None:
            args[keyword.arg] = ast.literal_eval(keyword.value)
    return Call(name, args)


def read_entries(files: BfclFiles) -> list[Entry]:
    """The four multi-turn categories' entries, in BFCL's order (base first)."""
    docs = read_docs(files)
    out: list[Entry] = []
    for category in CATEGORIES:
        truth = {
            a["id"]: a["ground_truth"]
            for a in _records(files.read(f"possible_answer/{_PREFIX}{category}.json"))
        }
        for q in _records(files.read(f"{_PREFIX}{category}.json")):
            if q["id"] not in truth:
                continue
            out.append(
                Entry(
                    id=q["id"],
                    category=category,
                    turns=tuple(
                        "\n".join(str(m.get("content", "")) for m in turn) for turn in q["question"]
                    ),
                    truth=tuple(
                        tuple(parse_call(c, docs) for c in turn) for turn in truth[q["id"]]
                    ),
                    held_back={
                        int(t): frozenset(names)
                        for t, names in (q.get("missed_function") or {}).items()
                    },
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class EntryIndex:
    """Entries by their first user message (several entries share one: a category's entry and
    its long-context or missing-parameter twin)."""

    by_first: dict[str, tuple[Entry, ...]]
    docs: dict[str, dict[str, Any]]
    markers: tuple[str, ...] = ()  # text only a long-context backend's results show

    def get(self, first: str) -> tuple[Entry, ...]:
        """The entries opening with `first`, read through the router's masking when it masked
        something in it (each masked value stands for any text)."""
        first = first.strip()
        exact = self.by_first.get(first, ())
        if exact or not MASK_TOKEN.search(first):
            return exact
        return next((v for k, v in self.by_first.items() if same_text(first, k)), ())


def same_text(seen: str, meant: str) -> bool:
    """Whether `seen` is `meant` as a request carries it: equal, or equal but for the values
    the router masked (a model reads `#PHONE_0001` where the data says `2026-10-06`; the
    router puts the value back in what the model answers)."""
    if seen == meant:
        return True
    pattern = _masked(seen)
    return pattern is not None and pattern.fullmatch(meant) is not None


@lru_cache(maxsize=4096)
def _masked(text: str) -> re.Pattern[str] | None:
    parts = MASK_TOKEN.split(text)
    if len(parts) == 1:
        return None
    return re.compile(".+?".join(re.escape(p) for p in parts), re.DOTALL)


def build_index(files: BfclFiles) -> EntryIndex:
    grouped: dict[str, list[Entry]] = {}
    for entry in read_entries(files):
        grouped.setdefault(entry.turns[0].strip(), []).append(entry)
    return EntryIndex(
        {k: tuple(v) for k, v in grouped.items()}, read_docs(files), long_context_markers(files)
    )


_LONG_CONTEXT = "bfcl_eval/eval_checker/multi_turn_eval/func_source_code/long_context.py"


def long_context_markers(files: BfclFiles) -> tuple[str, ...]:
    """Text a backend loaded for long context adds to its results (the padding files, the long
    file contents), read from BFCL's `long_context.py` as literals — parsed, never run. Short
    items (ticker symbols, city names) are left out: they turn up in any entry's results."""
    if files.wheel:
        with zipfile.ZipFile(files.where) as z:
            try:
                source = z.read(_LONG_CONTEXT).decode("utf-8")
            except KeyError:
                return ()
    else:
        path = files.where.parent / _LONG_CONTEXT.removeprefix("bfcl_eval/")
        if not path.is_file():
            return ()
        source = path.read_text(encoding="utf-8")
    markers: list[str] = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            continue
        items = value if isinstance(value, list) else [value]
        markers += [" ".join(v.split())[:40] for v in items if isinstance(v, str) and len(v) >= 20]
    return tuple(dict.fromkeys(markers))


@cache
def _index_at(where: Path) -> EntryIndex:
    return build_index(BfclFiles(where))


def entry_index(where: Path | None = None) -> EntryIndex | None:
    """The index of the data at `where` or in the cache, built once per process (a fraction of a second)."""
    files = find_files(where)
    return None if files is None else _index_at(files.where)
