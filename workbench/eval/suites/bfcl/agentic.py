"""BFCL's agentic entries as items: graded on the final answer, not on the calls.

Web search's two categories read one file (`BFCL_v4_web_search.json`) and differ only in what
the search returns: `web_search_base` shows each result's snippet, `web_search_no_snippet`
only its title and link, so the model must open pages. As BFCL prepares them, each entry's id
names its category (`web_search_3` → `web_search_no_snippet_3`), its backend is loaded with
`{"WebSearchAPI": {"show_snippet": ...}}`, and BFCL's answer-format system prompt goes first
in the first turn (`grade_agentic` then looks for an accepted answer in the final reply).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import Item
from workbench.eval.suites.bfcl.case import WEB_SEARCH_CATEGORIES, BfclEntry
from workbench.eval.suites.bfcl.entries import _class_docs, entry_item
from workbench.eval.suites.bfcl.source import PREFIX, BfclSource
from workbench.types import ChatRequest, Reply, ToolsMode

if TYPE_CHECKING:
    from workbench.eval.suites.bfcl.agentic_checker import Step
    from workbench.eval.suites.bfcl.play import Played, Verdict

# BFCL's ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT, word for word: the checker
# only finds an answer a model was told to give plainly.
AGENTIC_SYSTEM_PROMPT = (
    "For your final answer to the user, you must respond in this format: {'answer': A short "
    "and precise answer to the question, 'context': A brief explanation of how you arrived at "
    "this answer or why it is correct}. If you do not know the answer, respond with {'answer': "
    "'I do not know', 'context': 'I do not know'}. If you think the question cannot be properly "
    "answered, response with {'answer': 'I cannot answer this question', 'context': A short "
    "reason explaining why this question cannot be answered}.\n"
)
WEB_SEARCH_FILE = f"{PREFIX}web_search.json"


def agentic_items(
    found: BfclSource, category: str, digest: Any, limit: int | None, docs: dict[str, list]
) -> list[Item]:
    """The entries of one agentic category (the first `limit`), as items."""
    if category not in WEB_SEARCH_CATEGORIES:  # memory has its own loader (memory.py)
        raise ValueError(category)
    if category not in WEB_SEARCH_CATEGORIES:
        raise ValueError(category)
    return [entry_item(e) for e in web_search_entries(found, category, digest, limit, docs)]


def web_search_entries(
    found: BfclSource, category: str, digest: Any, limit: int | None, docs: dict[str, list]
) -> list[BfclEntry]:
    """One web-search category's entries, prepared as BFCL prepares them."""
    from workbench.eval.suites.bfcl.loader import read_records  # the files' one reader

    questions = read_records(found, WEB_SEARCH_FILE, digest, ("id", "question", "involved_classes"))
    answer_file = f"possible_answer/{WEB_SEARCH_FILE}"
    answers = {a["id"]: a for a in read_records(found, answer_file, digest, ("id", "ground_truth"))}
    out = []
    for q in questions[:limit]:
        where = f"{found.shown(WEB_SEARCH_FILE)}: id {q['id']!r}"
        if q["id"] not in answers:
            raise ConfigError(
                f"{found.shown(answer_file)}: no possible answer for id {q['id']!r}",
                code="BFCL_ANSWER_MISSING",
            )
        turns, classes = q["question"], q["involved_classes"]
        truth = answers[q["id"]]["ground_truth"]
        if not (isinstance(turns, list) and turns and all(isinstance(t, list) for t in turns)):
            raise ConfigError(
                f"{where}: `question` must be a list of turns", code="BFCL_FILE_INVALID"
            )
        if not (isinstance(classes, list) and classes):
            raise ConfigError(f"{where}: no `involved_classes`", code="BFCL_FILE_INVALID")
        if not (isinstance(truth, list) and all(isinstance(a, str) for a in truth)):
            raise ConfigError(
                f"{where}: the possible answer must be a list of strings", code="BFCL_FILE_INVALID"
            )
        functions: list[dict[str, Any]] = []
        for name in classes:
            functions += _class_docs(found, name, docs)
        system = {"role": "system", "content": AGENTIC_SYSTEM_PROMPT}
        out.append(
            BfclEntry(
                id=q["id"].replace("web_search", category),
                category=category,
                turns=(
                    (system, *turns[0]),
                    *(tuple(t) for t in turns[1:]),
                ),
                functions=tuple(functions),
                involved_classes=tuple(classes),
                # BFCL configures the first class (the only one): snippets or not.
                initial_config={classes[0]: {"show_snippet": "no_snippet" not in category}},
                answers=tuple(truth),
                source=str(found.where),
            )
        )
    return out


def agentic_steps(played: Played) -> list[Step]:
    """A played agentic entry's steps as `grade_agentic` reads them: each step's calls, and
    the final answer's text for the step that held none (the one that ended the turn)."""
    steps: list[Step] = []
    for turn in played.turns:
        for calls in turn:
            steps.append(calls if calls else played.text)
    return steps


async def play_and_grade_agentic(
    entry: BfclEntry,
    *,
    mode: ToolsMode,
    ask: Callable[[ChatRequest], Awaitable[Reply]],
    sinks: Sequence[Any] = (),
    offline: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Verdict:
    """Play a web-search entry through the project's tool loop (BFCL's multi-turn play: up to
    its 20 steps), its calls run by `WebSearchBackend` in this process (our code, no sandbox
    needed), against SerpAPI or, `offline`, the simulator's fixed web; graded as BFCL grades
    it, on the final answer."""
    from workbench.eval.suites.bfcl.agentic_checker import grade_agentic
    from workbench.eval.suites.bfcl.play import Verdict, play_entry
    from workbench.eval.suites.bfcl.web_search import WebSearchBackend

    async with WebSearchBackend.open(entry, offline=offline, env=env) as backend:
        played = await play_entry(entry, mode=mode, ask=ask, execute=backend.execute, sinks=sinks)
    grade = grade_agentic(entry, agentic_steps(played))
    reason = "" if grade.valid else f"{grade.error_type}: {'; '.join(grade.errors[:2])}"
    details = None if grade.valid else {"answer": played.text, "accepted": list(entry.answers)}
    return Verdict(played, grade.valid, grade.error_type, reason[:500], details)
