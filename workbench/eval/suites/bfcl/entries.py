"""BFCL's multi-turn and agentic entries as prompt-set items, prepared as BFCL prepares them.

A multi-turn entry names the backend classes it involves (`GorillaFileSystem`, `MathAPI`, ...)
instead of listing functions: BFCL offers every documented function of those classes
(`multi_turn_func_doc/`), minus the ones a miss_func entry holds back until a later turn —
that turn has no user message of its own; the held-back docs are added to the tools and the
model is told "I have updated some more functions you can choose from. What about now?"
(in prompting mode, after the docs themselves). The docs go out exactly as the single-turn
ones do (the Python hint, BFCL's types as JSON Schema); the item's `expect.bfcl` is the
whole `BfclEntry`, which the multi-turn job plays and `grade_multi_turn` grades.
"""

from __future__ import annotations

import json
from typing import Any

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import Expect, Item
from workbench.eval.suites.bfcl.case import MULTI_TURN_CATEGORIES, BfclEntry
from workbench.eval.suites.bfcl.prompt import prompt_mode_system
from workbench.eval.suites.bfcl.source import PREFIX, BfclSource
from workbench.types import ToolsInProse

# Each backend class's function docs (BFCL's `MULTI_TURN_FUNC_DOC_FILE_MAPPING`).
FUNC_DOC_FILES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
    "WebSearchAPI": "web_search.json",
    "MemoryAPI_kv": "memory_kv.json",
    "MemoryAPI_vector": "memory_vector.json",
    "MemoryAPI_rec_sum": "memory_rec_sum.json",
}
# BFCL's words when held-back functions arrive (function calling; prompting puts the docs first).
MORE_FUNCTIONS = "I have updated some more functions you can choose from. What about now?"
STEP_LIMIT = 20  # BFCL's MAXIMUM_STEP_LIMIT: past it, the entry is force-quit (and fails)


def multi_turn_items(
    found: BfclSource, category: str, digest: Any, limit: int | None, docs: dict[str, list]
) -> list[Item]:
    """The entries of one multi-turn category (the first `limit`), as items."""
    from workbench.eval.suites.bfcl.loader import read_records  # the files' one reader

    if category not in MULTI_TURN_CATEGORIES:
        raise ValueError(category)
    questions = read_records(
        found, f"{PREFIX}{category}.json", digest, ("id", "question", "involved_classes")
    )
    answers = {
        a["id"]: a
        for a in read_records(
            found, f"possible_answer/{PREFIX}{category}.json", digest, ("id", "ground_truth")
        )
    }
    out = []
    for entry in questions[:limit]:
        if entry["id"] not in answers:
            raise ConfigError(
                f"{found.shown(f'possible_answer/{PREFIX}{category}.json')}: no possible answer "
                f"for id {entry['id']!r}",
                code="BFCL_ANSWER_MISSING",
            )
        out.append(entry_item(_multi_turn_entry(found, category, entry, answers, docs)))
    return out


def _multi_turn_entry(
    found: BfclSource,
    category: str,
    entry: dict[str, Any],
    answers: dict[str, dict[str, Any]],
    docs: dict[str, list],
) -> BfclEntry:
    where = f"{found.shown(f'{PREFIX}{category}.json')}: id {entry['id']!r}"
    turns = entry["question"]
    truth = answers[entry["id"]]["ground_truth"]
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise ConfigError(f"{where}: `question` must be a list of turns", code="BFCL_FILE_INVALID")
    if not isinstance(truth, list) or len(truth) != len(turns):
        raise ConfigError(
            f"{where}: the possible answer has {len(truth) if isinstance(truth, list) else 0} "
            f"turns for {len(turns)} questions",
            code="BFCL_FILE_INVALID",
        )
    functions: list[dict[str, Any]] = []
    for name in entry["involved_classes"]:
        functions += _class_docs(found, name, docs)
    missed: dict[str, tuple[dict[str, Any], ...]] = {}
    for turn, names in (entry.get("missed_function") or {}).items():
        held = []
        for missed_name in names:  # held back: out of the first tools, into that turn's
            for k, doc in enumerate(functions):
                if doc["name"] == missed_name:
                    held.append(functions.pop(k))
                    break
        missed[str(turn)] = tuple(held)
    return BfclEntry(
        id=entry["id"],
        category=category,
        turns=tuple(tuple(t) for t in turns),
        functions=tuple(functions),
        involved_classes=tuple(entry["involved_classes"]),
        initial_config=entry.get("initial_config") or {},
        missed=missed,
        ground_truth=tuple(tuple(str(c) for c in t) for t in truth),
        source=str(found.where),
    )


def _class_docs(found: BfclSource, class_name: str, docs: dict[str, list]) -> list[dict]:
    """A backend class's docs (read once per load), each a fresh copy."""
    if class_name not in docs:
        if class_name not in FUNC_DOC_FILES:
            raise ConfigError(
                f"BFCL entry names an unknown backend class {class_name!r}",
                code="BFCL_FILE_INVALID",
            )
        name = f"multi_turn_func_doc/{FUNC_DOC_FILES[class_name]}"
        raw = found.read(name)
        if raw is None:
            raise ConfigError(f"{found.shown(name)}: missing", code="BFCL_FILE_INVALID")
        docs[class_name] = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    return json.loads(json.dumps(docs[class_name]))


def entry_item(entry: BfclEntry) -> Item:
    """An entry as an item: its first turn's messages (what the report shows as the prompt),
    the tools offered from the first turn, BFCL's prompting-mode system prompt over them."""
    from workbench.eval.suites.bfcl.loader import TEMPERATURE, hinted_docs, openai_tool

    hinted = hinted_docs(list(entry.functions), entry.category)
    first = entry.turns[0] if entry.turns else ()
    return Item(
        id=entry.id,
        messages=tuple(json.loads(json.dumps(first))),
        tools=tuple(openai_tool(f) for f in hinted),
        expect=Expect(bfcl=entry),
        tags=("bfcl", entry.category),
        category=entry.category,
        temperature=TEMPERATURE,
        tools_in_prose=ToolsInProse(
            prompt=prompt_mode_system(hinted), names=tuple(f["name"] for f in entry.functions)
        ),
    )


def turn_tools(entry: BfclEntry, turn: int) -> list[dict[str, Any]]:
    """The docs offered at `turn`: the first ones plus every held-back set added by then."""
    docs = list(entry.functions)
    for t in range(turn + 1):
        docs += entry.missed.get(str(t), ())
    return docs


def more_functions_message(entry: BfclEntry, turn: int, prompting: bool) -> dict[str, str]:
    """The user message of a held-back turn, as BFCL writes it: in prompting mode the new
    docs come first (Python's repr of the list, as BFCL formats it), then its sentence."""
    if not prompting:
        return {"role": "user", "content": MORE_FUNCTIONS}
    return {"role": "user", "content": f"{list(entry.missed[str(turn)])}\n{MORE_FUNCTIONS}"}
