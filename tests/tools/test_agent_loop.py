"""The text-protocol agent loop, driven by a real router over a scripted model: what the model
was sent is what the loop asked, after the router's own steps (masking for an external model)."""

from __future__ import annotations

import asyncio
import json

import pytest

from workbench.errors import WorkbenchError
from workbench.events import ToolStepEvent
from workbench.providers import ScriptedProvider
from workbench.providers.testing import Stream
from workbench.routing import Router
from workbench.tools.agent_loop import DEFAULT_FINAL_INSTRUCTION, run_agent_loop
from workbench.tools.tool_registry import ToolRegistry
from workbench.types import CallContext

SECRET = "db password hunter2 at /srv/secret.sqlite"


def scripted(*texts: str, chunk: int = 5) -> tuple[Router, ScriptedProvider]:
    """A real router over one model that answers each turn with the next text (streamed in
    pieces of `chunk` characters); the model keeps every request it was sent."""
    pieces = [Stream([t[i : i + chunk] for i in range(0, len(t), chunk)]) for t in texts]
    model = ScriptedProvider("model", ["m"], pieces)
    return Router([model]), model


def seen(model: ScriptedProvider) -> str:
    """Everything the model was sent, as one string."""
    return json.dumps(
        [{"system": r.system, "messages": r.messages} for r in model.requests],
        ensure_ascii=False,
    )


def turns(model: ScriptedProvider, *, streamed: bool) -> int:
    return sum(r.stream is streamed for r in model.received)


def call(name: str, args: dict | str) -> str:
    body = args if isinstance(args, str) else json.dumps(args)
    return f'<tool_call name="{name}">{body}</tool_call>'


class Counter:
    def __init__(self, value=None, delay: float = 0.0, raises: Exception | None = None):
        self.calls: list[tuple[dict, object]] = []
        self.value = value
        self.delay = delay
        self.raises = raises

    async def __call__(self, params, ctx):
        self.calls.append((params, ctx))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.raises is not None:
            raise self.raises
        return self.value


def registry(**handlers) -> ToolRegistry:
    reg = ToolRegistry()
    for name, handler in handlers.items():
        reg.register(name, f"the {name} tool", "read", ["doctor"], {"id": "string"}, handler)
    return reg


def last_user(request) -> str:
    return request.messages[-1]["content"]


async def test_a_turn_without_a_tool_call_is_the_answer():
    router, model = scripted("The balance is 12.")
    reg = registry(get_balance=Counter({"balance": 12}))
    result = await run_agent_loop("balance of X?", {"tenant": "c1"}, reg, router, "doctor")
    assert result.text == "The balance is 12."
    assert result.stopped == "answer"
    assert result.steps == []
    assert turns(model, streamed=False) == 1
    # The system prompt is the registry's listing for the role.
    assert model.requests[0].system == reg.format_tools_for_prompt("doctor")
    assert "get_balance" in model.requests[0].system


async def test_a_tool_call_runs_and_its_result_is_fed_back():
    tool = Counter({"balance": 12})
    router, model = scripted("Let me look.\n" + call("get_balance", {"id": "X"}), "It is 12.")
    ctx = {"tenant": "c1"}
    result = await run_agent_loop(
        "balance of X?", ctx, registry(get_balance=tool), router, "doctor"
    )
    assert tool.calls == [({"id": "X"}, ctx)]
    assert (
        last_user(model.requests[1])
        == '<tool_result name="get_balance">{"balance":12}</tool_result>'
    )
    assert result.text == "It is 12."
    assert result.stopped == "answer"
    assert [(s.tool, s.status) for s in result.steps] == [("get_balance", "ok")]


async def test_a_role_without_access_gets_a_refusal_not_the_tool():
    tool = Counter({"secret": 1})
    reg = ToolRegistry()
    reg.register("close_account", "Close", "write", ["admin"], {}, tool)
    router, model = scripted(call("close_account", {"id": "X"}), "I may not do that.")
    result = await run_agent_loop("close X", None, reg, router, "doctor")
    assert tool.calls == []
    assert "close_account" not in (model.requests[0].system or "")
    assert (
        last_user(model.requests[1])
        == '<tool_result name="close_account">{"error":"forbidden","tool":"close_account"}</tool_result>'
    )
    assert result.steps[0].status == "forbidden"
    assert result.text == "I may not do that."


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_denied_confirmation_tells_the_model_and_the_loop_goes_on(is_async):
    tool = Counter({"done": True})
    asked = []

    def deny(c, ctx):
        asked.append((c.name, c.arguments, ctx))
        return False

    async def deny_async(c, ctx):
        return deny(c, ctx)

    router, model = scripted(call("get_balance", {"id": "X"}), "You declined, so I stop.")
    result = await run_agent_loop(
        "go",
        {"who": "ana"},
        registry(get_balance=tool),
        router,
        "doctor",
        confirm_tool=deny_async if is_async else deny,
    )
    assert tool.calls == []
    assert asked == [("get_balance", {"id": "X"}, {"who": "ana"})]
    assert (
        last_user(model.requests[1])
        == '<tool_result name="get_balance">{"denied":true,"tool":"get_balance"}</tool_result>'
    )
    assert result.text == "You declined, so I stop."


async def test_an_approved_confirmation_runs_the_tool():
    tool = Counter({"done": True})
    router, _ = scripted(call("get_balance", {"id": "X"}), "Done.")
    await run_agent_loop(
        "go", None, registry(get_balance=tool), router, "doctor", confirm_tool=lambda c, ctx: True
    )
    assert len(tool.calls) == 1


async def test_a_raising_tool_reads_as_a_code_never_its_message():
    router, model = scripted(call("lookup", {"id": "X"}), "The lookup failed; try later.")
    reg = registry(lookup=Counter(raises=RuntimeError(SECRET)))
    result = await run_agent_loop("go", None, reg, router, "doctor", report_tool_errors=True)
    assert (
        last_user(model.requests[1])
        == '<tool_result name="lookup">{"error":"tool_failed"}</tool_result>'
    )
    assert "hunter2" not in seen(model)
    assert result.text == "The lookup failed; try later."


async def test_without_report_tool_errors_a_raising_tool_propagates():
    router, _ = scripted(call("lookup", {"id": "X"}), "unused")
    reg = registry(lookup=Counter(raises=RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        await run_agent_loop("go", None, reg, router, "doctor")


async def test_a_slow_tool_reads_as_tool_timeout():
    router, model = scripted(call("slow", {"id": "X"}), "Too slow.")
    reg = registry(slow=Counter({"x": 1}, delay=5))
    result = await run_agent_loop(
        "go", None, reg, router, "doctor", report_tool_errors=True, tool_timeout_s=0.05
    )
    assert (
        last_user(model.requests[1])
        == '<tool_result name="slow">{"error":"tool_timeout"}</tool_result>'
    )
    assert result.steps[0].status == "tool_timeout"


async def test_unreadable_arguments_read_as_invalid_arguments_and_the_tool_does_not_run():
    tool = Counter({"x": 1})
    router, model = scripted(call("get_balance", "{broken"), "Sorry.")
    await run_agent_loop("go", None, registry(get_balance=tool), router, "doctor")
    assert tool.calls == []
    assert last_user(model.requests[1]) == (
        '<tool_result name="get_balance">{"error":"invalid_arguments","reason":"not_json"}</tool_result>'
    )


async def test_an_unknown_tool_name_is_not_a_call():
    text = call("delete_everything", {"id": "X"})
    router, model = scripted(text)
    tool = Counter({"x": 1})
    result = await run_agent_loop("go", None, registry(get_balance=tool), router, "doctor")
    assert result.stopped == "answer"
    assert result.text == text
    assert turns(model, streamed=False) == 1


async def test_tools_asked_together_run_concurrently():
    # Each handler returns only once the other has started (sequential: a 5 s wait, then a
    # failure); no wall-clock threshold here, the timing is in benchmarks/tool_concurrency.py.
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    def meets(me, other, value):
        async def handler(params, ctx):
            started[me].set()
            await asyncio.wait_for(started[other].wait(), 5)
            return value

        return handler

    router, model = scripted(call("a", {"id": "1"}) + "\n" + call("b", {"id": "2"}), "Both read.")
    result = await run_agent_loop(
        "go",
        None,
        registry(a=meets("a", "b", {"a": 1}), b=meets("b", "a", {"b": 2})),
        router,
        "doctor",
    )
    assert result.stopped == "answer"
    assert last_user(model.requests[1]) == (
        '<tool_result name="a">{"a":1}</tool_result>\n<tool_result name="b">{"b":2}</tool_result>'
    )
    assert result.text == "Both read."


async def test_out_of_steps_one_last_turn_without_tools_answers():
    tool = Counter({"x": 1})
    router, model = scripted(
        call("get_balance", {"id": "1"}), call("get_balance", {"id": "2"}), "From what I read: 1."
    )
    result = await run_agent_loop(
        "go",
        None,
        registry(get_balance=tool),
        router,
        "doctor",
        max_steps=2,
        final_instruction="Answer now, no tool.",
    )
    assert len(model.requests) == 3
    assert len(tool.calls) == 2
    final = model.requests[-1]
    assert final.system is None  # no tool listing
    assert final.tools is None
    assert last_user(final) == "Answer now, no tool."
    assert result.stopped == "max_steps"
    assert result.text == "From what I read: 1."


async def test_out_of_time_one_last_turn_answers_with_the_default_instruction():
    tool = Counter({"x": 1}, delay=0.1)
    router, model = scripted(call("get_balance", {"id": "1"}), "Partial answer.")
    result = await run_agent_loop(
        "go", None, registry(get_balance=tool), router, "doctor", max_steps=5, max_s=0.05
    )
    assert len(model.requests) == 2
    assert model.requests[-1].system is None
    assert last_user(model.requests[-1]) == DEFAULT_FINAL_INSTRUCTION
    assert result.stopped == "max_time"
    assert result.text == "Partial answer."


async def test_a_call_written_in_the_last_turn_is_not_run_nor_shown():
    tool = Counter({"x": 1})
    router, _ = scripted(
        call("get_balance", {"id": "1"}), "Here. " + call("get_balance", {"id": "2"})
    )
    result = await run_agent_loop(
        "go", None, registry(get_balance=tool), router, "doctor", max_steps=1
    )
    assert len(tool.calls) == 1
    assert result.text == "Here."


async def test_on_chunk_receives_the_chunks_and_the_loop_sees_the_whole_text():
    chunks: list[str] = []
    tool = Counter({"balance": 12})
    first = "Looking.\n" + call("get_balance", {"id": "X"})
    router, model = scripted(first, "It is twelve.", chunk=4)
    result = await run_agent_loop(
        "go", None, registry(get_balance=tool), router, "doctor", on_chunk=chunks.append
    )
    assert turns(model, streamed=True) == 2 and turns(model, streamed=False) == 0
    assert len(chunks) > 2
    assert "".join(chunks) == first + "It is twelve."
    assert len(tool.calls) == 1  # the call split across chunks was still read
    assert result.text == "It is twelve."


async def test_an_async_on_chunk_is_awaited():
    seen: list[str] = []

    async def on_chunk(c):
        await asyncio.sleep(0)
        seen.append(c)

    router, _ = scripted("Hello there.")
    await run_agent_loop("go", None, ToolRegistry(), router, "doctor", on_chunk=on_chunk)
    assert "".join(seen) == "Hello there."


class BracketMasker:
    """Masks one name as a token; unmask reverses it."""

    def mask(self, text: str) -> str:
        return text.replace("Grace", "#PERSON_0001")

    def unmask(self, text: str) -> str:
        return text.replace("#PERSON_0001", "Grace")


async def test_an_external_tool_receives_masked_params_and_a_local_one_clear_params():
    external, local = Counter({"x": 1}), Counter({"y": 2})
    reg = ToolRegistry()
    reg.register("web", "Search the web", "read", None, {"q": "string"}, external, external=True)
    reg.register("db", "Local db", "read", None, {"q": "string"}, local)
    router, model = scripted(
        call("web", {"q": "Grace", "n": [{"who": "Grace"}], "k": 3}) + call("db", {"q": "Grace"}),
        "Done for Grace.",
    )
    masker = BracketMasker()
    result = await run_agent_loop("about Grace", None, reg, router, "any", masker=masker)
    assert external.calls[0][0] == {"q": "#PERSON_0001", "n": [{"who": "#PERSON_0001"}], "k": 3}
    assert local.calls[0][0] == {"q": "Grace"}
    # The conversation's masker goes to the router, which masks for external providers only
    # (tests/routing/test_router_privacy.py proves that edge); the loop itself keeps clear text.
    assert "#PERSON_0001" in seen(model) and "Grace" not in seen(model)
    assert result.text == "Done for Grace."


async def test_a_turn_with_neither_text_nor_call_raises_ai_no_answer():
    router, _ = scripted("   ")
    with pytest.raises(WorkbenchError) as err:
        await run_agent_loop("go", None, ToolRegistry(), router, "doctor")
    assert err.value.code == "AI_NO_ANSWER"


async def test_tool_steps_reach_the_sinks_of_the_call_context():
    events: list = []
    router, _ = scripted(call("get_balance", {"id": "X"}), "Done.")
    ctx = CallContext(sinks=(events.append,))
    await run_agent_loop("go", ctx, registry(get_balance=Counter(1)), router, "doctor")
    steps = [e for e in events if isinstance(e, ToolStepEvent)]  # the router's events go there too
    assert [(e.tool, e.ok) for e in steps] == [("get_balance", None), ("get_balance", True)]
