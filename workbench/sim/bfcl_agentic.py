"""How the BFCL personas answer BFCL's agentic questions: memory and web search.

BFCL grades these on the final answer alone (an accepted answer, as whole words, in the last
reply that is no call), asked in BFCL's format `{'answer': ..., 'context': ...}`. So a
persona that recognises the question answers with its first accepted answer in that format:

- a memory question (`BFCL_v4_memory.json`, asked after its scenario's prerequisite
  conversations): recognised by its user message; the same question in two scenarios ("What
  is my first name?") is told apart by the scenario's setting in the system prompt;
- a turn of a prerequisite conversation (`memory_prereq_conversation/*.json`): a short
  acknowledgement, no call — nothing grades it, and the memory it leaves is not read back,
  since the persona answers each question from BFCL's data;
- a web search question (`BFCL_v4_web_search.json`): one `search_engine_query` call first
  when the search functions are offered as tools (a model looks before it answers), then the
  answer once the results are back; without tools (prompting mode), the answer at once.

The data is read from the same fetched wheel as the multi-turn entries (`bfcl_data`), never
from the workbench (the simulator is library code). Requests the router masked are read
through the masking (`same_text`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from workbench.sim.bfcl_data import MASK_TOKEN, BfclFiles, Call, find_files, same_text
from workbench.sim.bfcl_play import render
from workbench.sim.conversation import Answer, Conversation
from workbench.sim.fleet import Persona

PREREQ_SCENARIOS = ("customer", "finance", "healthcare", "notetaker", "student")
# Words of each scenario's setting (the memory prompt's first line), to tell apart questions
# several scenarios ask alike.
SETTING_WORDS = {
    "student": "college student",
    "customer": "e-commerce platform",
    "finance": "finance professional",
    "healthcare": "healthcare assistant",
    "notetaker": "personal organization assistant",
}
NOTED = "Thank you, I have noted that."
SEARCH = "search_engine_query"


@dataclass(frozen=True, slots=True)
class Question:
    """One agentic question: its id, scenario (memory) and its first accepted answer."""

    id: str
    scenario: str | None
    answer: str


@dataclass(frozen=True, slots=True)
class AgenticIndex:
    """Questions by their user message; the prerequisite conversations' user messages."""

    memory: dict[str, tuple[Question, ...]]
    web: dict[str, Question]
    prerequisite: frozenset[str]

    def memory_question(self, text: str, system: str) -> Question | None:
        found = _lookup(self.memory, text)
        if not found:
            return None
        for q in found:
            words = SETTING_WORDS.get(q.scenario or "")
            if words and words in system:
                return q
        return found[0]

    def web_question(self, text: str) -> Question | None:
        exact = self.web.get(text)
        if exact is not None or not MASK_TOKEN.search(text):
            return exact
        return next((q for k, q in self.web.items() if same_text(text, k)), None)

    def is_prerequisite(self, text: str) -> bool:
        if text in self.prerequisite:
            return True
        return bool(MASK_TOKEN.search(text)) and any(same_text(text, k) for k in self.prerequisite)


def _lookup(table: dict[str, tuple[Question, ...]], text: str) -> tuple[Question, ...]:
    exact = table.get(text, ())
    if exact or not MASK_TOKEN.search(text):
        return exact
    return next((v for k, v in table.items() if same_text(text, k)), ())


def _records(text: str | None) -> list[dict]:
    return [json.loads(line) for line in (text or "").splitlines() if line.strip()]


def _first_user(question: list) -> str:
    return next(
        (str(m.get("content", "")).strip() for t in question for m in t if m["role"] == "user"),
        "",
    )


def build_agentic_index(files: BfclFiles) -> AgenticIndex:
    memory: dict[str, list[Question]] = {}
    web: dict[str, Question] = {}
    accepted = {
        a["id"]: a["ground_truth"]
        for name in ("memory", "web_search")
        for a in _records(files.read(f"possible_answer/BFCL_v4_{name}.json"))
    }
    for q in _records(files.read("BFCL_v4_memory.json")):
        if accepted.get(q["id"]):
            text = _first_user(q["question"])
            question = Question(q["id"], q.get("scenario"), str(accepted[q["id"]][0]))
            memory.setdefault(text, []).append(question)
    for q in _records(files.read("BFCL_v4_web_search.json")):
        if accepted.get(q["id"]):
            web[_first_user(q["question"])] = Question(q["id"], None, str(accepted[q["id"]][0]))
    prerequisite = {
        str(m.get("content", "")).strip()
        for scenario in PREREQ_SCENARIOS
        for c in _records(files.read(f"memory_prereq_conversation/memory_{scenario}.json"))
        for turn in c["question"]
        for m in turn
        if m.get("role") == "user"
    }
    return AgenticIndex(
        {k: tuple(v) for k, v in memory.items()}, web, frozenset(prerequisite - {""})
    )


@cache
def _index_at(where: Path) -> AgenticIndex:
    return build_agentic_index(BfclFiles(where))


def agentic_index(where: Path | None = None) -> AgenticIndex | None:
    """The index of the data at `where` or in the fetch cache, built once per process."""
    files = find_files(where)
    return None if files is None else _index_at(files.where)


def final_answer(question: Question) -> str:
    """BFCL's answer format holding the first accepted answer."""
    return str({"answer": question.answer, "context": "From what I know and have looked up."})


def play_agentic(persona: Persona, conv: Conversation, index: AgenticIndex) -> Answer | None:
    """The answer to a memory or web search conversation; None when `conv` is neither."""
    users = [t for t in conv.turns if t.role == "user"]
    if not users:
        return None
    first, last = users[0].text.strip(), users[-1].text.strip()
    question = index.web_question(first)
    if question is not None:
        searched = any(t.role != "user" for t in conv.turns)
        if searched or SEARCH not in {t.name for t in conv.tools}:
            return Answer(text=final_answer(question))
        asked = first.split("Format your answer")[0].strip()
        keywords = " ".join(asked.split()[-12:])
        return render(persona, conv, [Call(SEARCH, {"keywords": keywords})], question.id)
    question = index.memory_question(first, conv.system or "")
    if question is not None and len(users) == 1:
        return Answer(text=final_answer(question))
    if index.is_prerequisite(last):
        return Answer(text=NOTED)
    return None
