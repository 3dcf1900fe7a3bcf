"""How an entry is played, with a scripted model: turns in order, BFCL's step limit, a reply
that holds no call ends the turn, the held-back functions and BFCL's words when they come,
and the results sent back as BFCL sends them in prompting mode."""

from __future__ import annotations

import json

from workbench.eval.suites.bfcl import bfcl_dataset
from workbench.eval.suites.bfcl.entries import MORE_FUNCTIONS, STEP_LIMIT
from workbench.eval.suites.bfcl.play import play_entry
from workbench.providers.protocols import native_tool_call
from workbench.types import ChatRequest, Reply


class Model:
    """Answers each request with the next scripted reply (the last one forever after)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    async def __call__(self, request: ChatRequest) -> Reply:
        self.requests.append(request)
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def call(name: str, **arguments) -> Reply:
    return Reply(text="", tool_calls=[native_tool_call(f"c_{name}", name, arguments)])


def text(words: str) -> Reply:
    return Reply(text=words)


async def echo(tool_call) -> str:
    return f"ran {tool_call.name}"


def entry_of(bfcl_wheel, category: str, index: int = 0):
    return bfcl_dataset(category, source=bfcl_wheel, limit=index + 1).items[index].expect.bfcl


async def test_each_turn_is_asked_in_order_and_a_reply_without_a_call_ends_it(bfcl_wheel):
    entry = entry_of(bfcl_wheel, "multi_turn_base")
    model = Model(call("ls"), text("Done."), *(text("Done.") for _ in entry.turns))
    played = await play_entry(entry, mode="native", ask=model, execute=echo)
    assert len(played.turns) == len(entry.turns) and not played.force_quit
    assert played.turns[0] == [[{"name": "ls", "arguments": {}}], []]
    assert played.results[0] == [["ran ls"], []]
    users = [m["content"] for m in model.requests[-1].messages if m["role"] == "user"]
    assert users == [t[-1]["content"] for t in entry.turns]  # every turn's message, in order


async def test_past_bfcls_step_limit_the_entry_is_force_quit(bfcl_wheel):
    entry = entry_of(bfcl_wheel, "multi_turn_base")
    model = Model(call("pwd"))  # calls forever
    played = await play_entry(entry, mode="native", ask=model, execute=echo)
    assert played.force_quit and len(played.turns) == 1  # the turns left are never asked
    assert len(played.turns[0]) == STEP_LIMIT + 1 == len(model.requests)


async def test_a_call_whose_arguments_are_no_json_object_ends_the_turn_and_runs_nothing(bfcl_wheel):
    entry = entry_of(bfcl_wheel, "multi_turn_base")
    broken = Reply(text="", tool_calls=[native_tool_call("c1", "cd", '{"folder": ')])
    ran: list[str] = []

    async def execute(tool_call) -> str:
        ran.append(tool_call.name)
        return "ok"

    played = await play_entry(entry, mode="native", ask=Model(broken, text("ok")), execute=execute)
    assert played.turns[0] == [[]] and ran == []


async def test_a_prompting_reply_that_decodes_to_no_call_ends_the_turn(bfcl_wheel):
    entry = entry_of(bfcl_wheel, "multi_turn_base")
    written = "[ls(a=True), mv(source='a.txt',destination='b')]"
    model = Model(text("I would first list the files."), text(written), text("done"))
    played = await play_entry(entry, mode="text", ask=model, execute=echo)
    assert played.turns[0] == [[]]  # the prose was no call BFCL's decoder reads: turn over
    assert played.turns[1][0] == [
        {"name": "ls", "arguments": {"a": True}},
        {"name": "mv", "arguments": {"source": "a.txt", "destination": "b"}},
    ]
    # The results go back as BFCL's prompting handlers send them: the repr of role-tool dicts,
    # each under the call as BFCL's decoder writes it.
    after = model.requests[2].messages[-1]
    assert after["role"] == "user"
    assert after["content"] == repr(
        [
            {"role": "tool", "name": "ls(a=True)", "content": "ran ls"},
            {"role": "tool", "name": "mv(source='a.txt', destination='b')", "content": "ran mv"},
        ]
    )


async def test_a_held_back_turn_adds_its_functions_and_says_so_as_bfcl_does(bfcl_wheel):
    entry = entry_of(bfcl_wheel, "multi_turn_miss_func")
    ((turn, held),) = entry.missed.items()
    model = Model(text("ok"))
    await play_entry(entry, mode="native", ask=model, execute=echo)
    names = [[t["function"]["name"] for t in r.tools] for r in model.requests]
    missing = [d["name"] for d in held]
    asked = [r.messages[-1]["content"] for r in model.requests]
    k = asked.index(MORE_FUNCTIONS)
    assert k == int(turn)  # one request a turn here: the held-back turn is turn `turn`
    assert all(m not in names[j] for j in range(k) for m in missing)
    assert all(m in names[k] for m in missing)
    # BFCL hints the docs offered from the start, not the held-back ones.
    described = {
        t["function"]["name"]: t["function"]["description"] for t in model.requests[k].tools
    }
    hint = "Note that the provided function is in Python 3 syntax."
    assert all(not described[m].endswith(hint) for m in missing)
    assert all(described[n].endswith(hint) for n in names[0])
    prompting = Model(text("ok"))
    await play_entry(entry, mode="text", ask=prompting, execute=echo)
    said = prompting.requests[k].messages[-1]["content"]
    assert said == f"{list(held)}\n{MORE_FUNCTIONS}"
    assert json.loads(json.dumps(held))  # the docs as BFCL's file gives them
