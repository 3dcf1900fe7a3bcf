"""BFCL's memory categories: each scenario's prerequisite conversations first and in order,
then its questions; BFCL's memory instruction; the order memory items wait in."""

from __future__ import annotations

import asyncio
import json

import pytest

from workbench.eval.suites.bfcl import bfcl_dataset
from workbench.eval.suites.bfcl.memory import (
    AGENTIC_ANSWER_FORMAT,
    MemoryChains,
    memory_system_prompt,
    snapshot_of,
    with_memory_prompt,
)


@pytest.mark.parametrize(
    ("category", "backend"),
    [("memory_kv", "MemoryAPI_kv"), ("memory_rec_sum", "MemoryAPI_rec_sum")],
)
def test_a_memory_category_is_its_scenarios_conversations_then_its_questions(
    bfcl_wheel, category, backend
):
    items = bfcl_dataset(category, source=bfcl_wheel).items
    entries = [i.expect.bfcl for i in items]
    questions = [e for e in entries if not e.prerequisite]
    prerequisites = [e for e in entries if e.prerequisite]
    assert len(questions) == 155  # the leaderboard's count; the conversations are not scored
    assert len(prerequisites) == 37  # BFCL's 5 scenarios' prerequisite conversations
    assert {e.involved_classes for e in entries} == {(backend,)}
    # Within a scenario, every conversation comes before its first question, in BFCL's order.
    for scenario in {e.scenario for e in entries}:
        ours = [e for e in entries if e.scenario == scenario]
        kinds = [e.prerequisite for e in ours]
        assert kinds == sorted(kinds, reverse=True)
        ids = [e.id for e in ours if e.prerequisite]
        assert ids == sorted(ids, key=lambda i: int(i.split("prereq_")[1].split("-")[0]))
    first = questions[0]
    assert first.id == f"{category}_0-customer-0" and first.answers == ("Michael",)
    assert first.turns[0][0] == {"role": "system", "content": AGENTIC_ANSWER_FORMAT}
    assert prerequisites[0].id == f"{category}_prereq_0-customer-0"
    assert prerequisites[0].turns[0][0]["role"] == "user"  # no answer format for a conversation


def test_limit_keeps_the_first_questions_and_only_their_scenarios_conversations(bfcl_wheel):
    items = bfcl_dataset("memory_kv", source=bfcl_wheel, limit=3).items
    entries = [i.expect.bfcl for i in items]
    assert [e.scenario for e in entries] == ["customer"] * len(entries)
    assert sum(not e.prerequisite for e in entries) == 3


def test_the_memory_instruction_is_bfcls_and_joins_the_answer_format(bfcl_wheel):
    kv = next(
        i
        for i in bfcl_dataset("memory_kv", source=bfcl_wheel, limit=1).items
        if not i.expect.bfcl.prerequisite
    ).expect.bfcl
    empty = memory_system_prompt(kv, {})
    assert empty.startswith("You are a general customer support assistant")
    assert empty.endswith(
        "Here is the content of your Core Memory from previous interactions:\nThere is no content in the core memory at this point.\n"
    )
    held = memory_system_prompt(kv, {"core_memory": {"name": "Michael"}})
    assert held.endswith(json.dumps({"name": "Michael"}, indent=4) + "\n")
    first = with_memory_prompt(kv, {}).turns[0]
    # BFCL's order: the memory instruction, a blank line, the question's own system message.
    assert first[0]["content"] == empty + "\n\n" + AGENTIC_ANSWER_FORMAT
    assert first[1]["role"] == "user"
    rec = next(
        i
        for i in bfcl_dataset("memory_rec_sum", source=bfcl_wheel, limit=1).items
        if i.expect.bfcl.prerequisite
    ).expect.bfcl
    assert memory_system_prompt(rec, {"memory": "likes tea"}).endswith("interactions:\nlikes tea\n")
    assert with_memory_prompt(rec, {}).turns[0][0]["role"] == "system"  # its own system message
    assert snapshot_of(rec, {"MemoryAPI_rec_sum": {"memory": "x", "scenario": "customer"}}) == {
        "memory": "x"
    }


def test_a_question_waits_for_its_scenarios_last_conversation(bfcl_wheel):
    items = bfcl_dataset("memory_kv", source=bfcl_wheel, limit=2).items
    ids = [i.id for i in items]
    conversations = [i.id for i in items if i.expect.bfcl.prerequisite]
    question = ids[-1]

    async def play() -> list[str]:
        chains = MemoryChains(items)
        order: list[str] = []

        async def link(item_id: str, delay: float) -> None:
            start = await chains.before(item_id, 0, "c")
            await asyncio.sleep(delay)
            order.append(item_id)
            if item_id in conversations:
                chains.after(
                    item_id,
                    0,
                    "c",
                    {"core_memory": {"seen": start.get("core_memory", {}).get("seen", 0) + 1}},
                )

        # Started in reverse: each still runs after the one it waits for.
        await asyncio.gather(*(link(i, 0.001 * k) for k, i in enumerate(reversed(ids))))
        assert await chains.before(question, 0, "c") == {
            "core_memory": {"seen": len(conversations)}
        }
        assert await chains.before(conversations[0], 0, "c") == {}  # the first starts empty
        return order

    order = asyncio.run(play())
    # The conversations in their order, each after the one before; the questions after them all.
    assert order[: len(conversations)] == conversations
    assert set(order[len(conversations) :]) == set(ids) - set(conversations)


def test_a_resumed_run_starts_from_the_snapshots_it_had_made(bfcl_wheel):
    items = bfcl_dataset("memory_kv", source=bfcl_wheel, limit=1).items
    last = [i.id for i in items if i.expect.bfcl.prerequisite][-1]
    question = items[-1].id

    async def start() -> dict:
        chains = MemoryChains(items, {(last, 0, "c"): {"core_memory": {"k": "v"}}})
        return await chains.before(question, 0, "c")

    assert asyncio.run(start()) == {"core_memory": {"k": "v"}}


# ------------------------------------------------------------------ through the runner


def _memory_model(fail_on: str | None, seen: list[str]):
    """A model for memory runs: a conversation's turn writes its first words into the core
    memory (a native call), then acknowledges; a question answers with what the memory says.
    The conversation `fail_on` is refused with a 400 (the provider's answer to that request)."""
    from workbench.providers.protocols import native_tool_call
    from workbench.providers.testing import Fail
    from workbench.types import Reply

    def answer(request, ctx):
        last = request.messages[-1]
        first = next(m for m in request.messages if m["role"] == "user")["content"]
        seen.append(first)
        if fail_on is not None and first == fail_on:
            raise Fail(400, message="context too long").error("f", "m")
        if last["role"] == "tool":
            return Reply(text="Noted.")
        if (request.system or "").count("Core Memory") and "answer" in (request.system or ""):
            return Reply(
                text="{'answer': "
                + json.dumps(
                    request.system.split("Core Memory from previous interactions:")[1].strip()[:200]
                )
                + "}"
            )
        key = f"k{len(seen)}"
        return Reply(
            text="",
            tool_calls=[native_tool_call("c1", "core_memory_add", {"key": key, "value": "x"})],
        )

    return answer


async def test_a_failed_conversation_passes_its_memory_on_and_a_resumed_run_finishes(
    bfcl_wheel, tmp_path
):
    from workbench.eval.run.runner import run_prompt_set
    from workbench.eval.store.database import Store
    from workbench.providers.testing import FunctionProvider
    from workbench.routing import Router

    dataset = bfcl_dataset("memory_kv", source=bfcl_wheel, limit=2)
    conversations = [i for i in dataset.items if i.expect.bfcl.prerequisite]
    broken = conversations[1]
    seen: list[str] = []
    model = _memory_model(broken.messages[0]["content"], seen)
    db = tmp_path / "memory.duckdb"
    with Store.open(db) as store:
        router = Router([FunctionProvider(model, id="f")])
        summary = await run_prompt_set(
            dataset, [router], store, tools_mode="native", progress=False, concurrency=3
        )
        rows = dict(store.con.execute("SELECT item_id, grade FROM outputs").fetchall())
        errors = dict(
            store.con.execute(
                "SELECT item_id, error_code FROM outputs WHERE error_code IS NOT NULL"
            ).fetchall()
        )
        run_id = summary.run_id
        # The run finished: every item has a row, the broken conversation an error and the
        # memory it started from, which the next conversation started from.
        assert len(rows) == len(dataset.items)
        assert set(errors) == {broken.id}
        assert "core_memory" in json.loads(rows[broken.id])["memory"]
        # An interrupted run's state: the questions and the last conversation never finished.
        later = [i.id for i in dataset.items[dataset.items.index(broken) + 1 :]]
        store.con.execute(
            f"DELETE FROM outputs WHERE run_id = ? AND item_id IN ({', '.join('?' for _ in later)})",
            [run_id, *later],
        )
    with Store.open(db) as store:
        router = Router([FunctionProvider(model, id="f")])
        resumed = await run_prompt_set(
            dataset, [router], store, tools_mode="native", progress=False, resume=run_id
        )
        assert resumed.status == "finished"
        count = store.con.execute(
            "SELECT count(*) FROM outputs WHERE run_id = ?", [run_id]
        ).fetchone()[0]
        assert count == len(dataset.items)


async def test_a_conversation_the_provider_kept_unanswered_keeps_the_links_after_it_unanswered(
    bfcl_wheel, tmp_path
):
    from workbench.config.providers_file import ProvidersConfig
    from workbench.eval.run.runner import run_prompt_set
    from workbench.eval.store.database import Store
    from workbench.providers.testing import Fail, FunctionProvider

    dataset = bfcl_dataset("memory_kv", source=bfcl_wheel, limit=1)
    conversations = [i for i in dataset.items if i.expect.bfcl.prerequisite]
    refused = conversations[-2].messages[0]["content"]
    seen: list[str] = []
    answer = _memory_model(None, seen)

    def model(request, ctx):
        first = next(m for m in request.messages if m["role"] == "user")["content"]
        if first == refused:  # the provider's rate limit, every time
            raise Fail(429, retry_after_s=0.2).error("f", "m")
        return answer(request, ctx)

    with Store.open(tmp_path / "held.duckdb") as store:
        config = ProvidersConfig("f", [FunctionProvider(model, id="f")])
        await run_prompt_set(
            dataset, [config], store, tools_mode="native", progress=False, max_tries=1, max_wait_s=1
        )
        rows = dict(store.con.execute("SELECT item_id, unanswered FROM outputs").fetchall())
    held = [i.id for i in dataset.items[dataset.items.index(conversations[-2]) :]]
    # The refused conversation, the last one and the question: unanswered, never graded on a
    # memory the rate limiter left short; the conversations before it answered.
    assert {i for i, why in rows.items() if why} == set(held)
    assert all(rows[i] == "rate_limit" for i in held)
