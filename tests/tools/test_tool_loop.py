"""The native tool caller and loop, driven by a scripted `turn` (the seam: ChatRequest → Reply)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from workbench.errors import WorkbenchError
from workbench.events import ToolStepEvent
from workbench.providers.protocols import native_tool_call
from workbench.tools.native_tools import Tool, tool_specs, validate_native_tools
from workbench.tools.tool_loop import (
    CUT_MARKER,
    DEFAULT_FINAL_INSTRUCTION,
    ToolOutcome,
    run_tool_loop,
    tool_caller,
)
from workbench.types import ChatRequest, Reply, ToolCall, user

SECRET = "password=hunter2 in /srv/private/ledger.db"
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def tc(name: str, args: dict | str | None = None, id: str = "c1", source="native") -> ToolCall:
    call = native_tool_call(id, name, args if args is not None else {})
    call.source = source
    return call


class Script:
    """A scripted `turn`: returns the next Reply and records every request."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    async def __call__(self, request: ChatRequest) -> Reply:
        self.requests.append(request)
        assert self.replies, "the loop asked for more turns than scripted"
        return self.replies.pop(0)

    def seen(self) -> str:
        return json.dumps(
            [{"system": r.system, "messages": r.messages} for r in self.requests],
            ensure_ascii=False,
        )


def calls(*cs: ToolCall) -> Reply:
    return Reply(text="", tool_calls=list(cs), protocol="native")


def make_tools(**extra) -> list[Tool]:
    async def weather(args, ctx):
        return {"city": args["city"], "temp": 21}

    async def broken(args, ctx):
        raise RuntimeError(SECRET)

    async def hang(args, ctx):
        await asyncio.sleep(10)

    async def slow_a(args, ctx):
        await asyncio.sleep(0.2)
        return "a done"

    async def slow_b(args, ctx):
        await asyncio.sleep(0.2)
        return "b done"

    catalogue = [
        Tool("weather", "Weather", CITY, "read", weather, summary=lambda a: a["city"]),
        Tool("broken", "Fails", {"type": "object"}, "read", broken),
        Tool("hang", "Hangs", {"type": "object"}, "read", hang),
        Tool("slow_a", "Slow", {"type": "object"}, "read", slow_a),
        Tool("slow_b", "Slow", {"type": "object"}, "read", slow_b),
    ]
    catalogue += extra.get("more", [])
    return validate_native_tools(catalogue)


# --------------------------------------------------------------------------- tool_caller


async def test_a_good_call_returns_the_result_as_compact_json():
    out = await tool_caller(make_tools())(tc("weather", {"city": "Goma"}))
    assert out.ok and out.error is None
    assert out.content == '{"city":"Goma","temp":21}'
    assert out.result == {"city": "Goma", "temp": 21}
    assert out.call_id == "c1" and out.name == "weather"


async def test_the_context_reaches_run():
    got = []

    async def run(args, ctx):
        got.append(ctx)
        return 1

    tools = validate_native_tools([Tool("t", "d", {"type": "object"}, "read", run)])
    await tool_caller(tools, context={"user": "ana"})(tc("t"))
    assert got == [{"user": "ana"}]


async def test_an_invented_tool_reads_unknown_tool_with_the_available_names():
    out = await tool_caller(make_tools())(tc("teleport", {"to": "Mars"}))
    assert not out.ok
    assert json.loads(out.content) == {
        "error": "unknown_tool",
        "tool": "teleport",
        "available": ["weather", "broken", "hang", "slow_a", "slow_b"],
    }


@pytest.mark.parametrize(("raw", "reason"), [("{not json", "not_json"), ("[1, 2]", "not_object")])
async def test_unreadable_arguments_read_as_invalid_arguments(raw, reason):
    ran = []

    async def run(args, ctx):
        ran.append(args)

    tools = validate_native_tools([Tool("t", "d", {"type": "object"}, "read", run)])
    call = native_tool_call("c1", "t", raw)
    assert call.invalid
    out = await tool_caller(tools)(call)
    assert json.loads(out.content) == {"error": "invalid_arguments", "reason": reason}
    assert ran == []


async def test_arguments_that_violate_the_schema_read_the_jsonschema_message():
    out = await tool_caller(make_tools())(tc("weather", {"town": "Goma"}))
    body = json.loads(out.content)
    assert body["error"] == "invalid_arguments"
    assert "'city' is a required property" in body["detail"]
    out = await tool_caller(make_tools())(tc("weather", {"city": "x" * 500}))
    assert out.ok  # a long string is fine
    out = await tool_caller(make_tools())(tc("weather", {"city": ["x" * 500]}))
    assert len(json.loads(out.content)["detail"]) <= 200


async def test_a_raising_tool_reads_tool_failed_never_the_message():
    out = await tool_caller(make_tools())(tc("broken"))
    assert out.content == '{"error":"tool_failed"}'
    assert not out.ok and out.error == "tool_failed"
    assert "hunter2" not in out.content


async def test_a_hanging_tool_reads_tool_timeout():
    started = time.perf_counter()
    out = await tool_caller(make_tools(), timeout_s=0.05)(tc("hang"))
    assert time.perf_counter() - started < 1
    assert out.content == '{"error":"tool_timeout"}'


async def test_a_long_result_is_cut_with_an_explicit_marker():
    async def big(args, ctx):
        return "y" * 100

    tools = validate_native_tools([Tool("big", "d", {"type": "object"}, "read", big)])
    out = await tool_caller(tools, result_max=10)(tc("big"))
    assert out.content == "y" * 10 + CUT_MARKER
    assert out.result == "y" * 100  # the caller keeps the whole value
    out = await tool_caller(tools, result_max=100)(tc("big"))
    assert out.content == "y" * 100


async def test_a_confirm_tool_does_not_perform_and_the_model_reads_that_it_waits():
    performed, recorded = [], []

    async def prepare(args, ctx):
        return {"draft": f"to {args['to']}"}

    async def perform(*a):
        performed.append(a)

    async def record(entry):
        recorded.append(entry)

    tools = validate_native_tools(
        [Tool("send", "Send", {"type": "object"}, "confirm", prepare, perform=perform)]
    )
    out = await tool_caller(tools, record=record)(tc("send", {"to": "ana"}))
    assert performed == []
    assert recorded == [{"tool": "send", "args": {"to": "ana"}, "found": {"draft": "to ana"}}]
    assert json.loads(out.content) == {
        "status": "awaiting_confirmation",
        "message": "Nothing is written until a person confirms.",
    }
    out = await tool_caller(tools, messages={"waiting": "Confirm on your phone."})(
        tc("send", {"to": "b"})
    )
    assert json.loads(out.content)["message"] == "Confirm on your phone."


@pytest.mark.parametrize("is_async", [False, True])
async def test_emit_sees_step_then_step_done_with_the_summary_cut_at_120(is_async):
    seen: list = []

    def sync_emit(event, data):
        seen.append((event, data))

    async def async_emit(event, data):
        seen.append((event, data))

    call = tc("weather", {"city": "G" * 300}, id="s9")
    await tool_caller(make_tools(), emit=async_emit if is_async else sync_emit)(call)
    assert seen == [
        ("step", {"id": "s9", "tool": "weather", "params": "G" * 120}),
        ("step_done", {"id": "s9", "ok": True}),
    ]


async def test_a_failing_emit_is_swallowed_and_sinks_get_tool_step_events():
    events: list = []

    def bad_emit(event, data):
        raise OSError("the client left")

    caller = tool_caller(make_tools(), emit=bad_emit, sinks=(events.append,))
    out = await caller(tc("broken", id="s1"))
    assert out.error == "tool_failed"
    assert events == [
        ToolStepEvent("s1", "broken", "", None, at_ms=events[0].at_ms),
        ToolStepEvent("s1", "broken", "", False, at_ms=events[1].at_ms),
    ]


async def test_keep_receives_each_successful_result():
    kept = []
    caller = tool_caller(make_tools(), keep=lambda name, result: kept.append((name, result)))
    await caller(tc("weather", {"city": "Goma"}))
    await caller(tc("broken"))
    assert kept == [("weather", {"city": "Goma", "temp": 21})]


async def test_a_set_signal_stops_calls_before_they_start():
    ran = []

    async def run(args, ctx):
        ran.append(1)

    stop = asyncio.Event()
    stop.set()
    tools = validate_native_tools([Tool("t", "d", {"type": "object"}, "read", run)])
    out = await tool_caller(tools, signal=stop)(tc("t"))
    assert out.content == '{"error":"cancelled"}' and ran == []


# --------------------------------------------------------------------------- run_tool_loop


async def loop(script: Script, tools=None, **kw):
    tools = tools or make_tools()
    return await run_tool_loop(
        "You are helpful.",
        [user("weather in Goma?")],
        tool_specs(tools),
        script,
        tool_caller(tools, timeout_s=kw.pop("timeout_s", 20)),
        **kw,
    )


async def test_a_turn_with_text_and_no_call_is_the_answer():
    script = Script(Reply(text="Sunny."))
    result = await loop(script)
    assert (result.text, result.turns, result.stopped) == ("Sunny.", 1, "answer")
    request = script.requests[0]
    assert request.system == "You are helpful."
    assert [t["function"]["name"] for t in request.tools][:1] == ["weather"]


async def test_native_calls_are_fed_back_as_an_assistant_message_and_role_tool():
    script = Script(calls(tc("weather", {"city": "Goma"}, id="n1")), Reply(text="21 degrees."))
    result = await loop(script)
    sent = script.requests[1].messages
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "n1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Goma"}'},
            }
        ],
    }
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "n1",
        "name": "weather",
        "content": '{"city":"Goma","temp":21}',
    }
    assert result.text == "21 degrees."
    assert result.messages[-1] == {"role": "assistant", "content": "21 degrees."}


async def test_prose_calls_are_fed_back_as_tool_result_blocks_in_a_user_message():
    prose = tc("weather", {"city": "Goma"}, id="text_0_weather", source="text")
    script = Script(
        Reply(text="Let me check.", tool_calls=[prose], protocol="text"), Reply(text="21.")
    )
    await loop(script)
    sent = script.requests[1].messages
    assert all(m["role"] != "tool" for m in sent)
    assert sent[1] == {
        "role": "assistant",
        "content": 'Let me check.\n<tool_call name="weather">{"city":"Goma"}</tool_call>',
    }
    assert sent[2] == user('<tool_result name="weather">{"city":"Goma","temp":21}</tool_result>')


async def test_an_invalid_native_call_is_sent_back_with_empty_arguments():
    bad = native_tool_call("n1", "weather", "{oops")
    script = Script(calls(bad), Reply(text="Sorry."))
    await loop(script)
    sent = script.requests[1].messages
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert json.loads(sent[2]["content"]) == {"error": "invalid_arguments", "reason": "not_json"}


async def test_every_failure_reads_as_a_code_and_the_loop_goes_on():
    script = Script(
        calls(
            tc("broken", id="a"),
            tc("hang", id="b"),
            tc("teleport", id="c"),
            native_tool_call("d", "weather", "{oops"),
            tc("weather", {"city": 3}, id="e"),
        ),
        Reply(text="Nothing worked, sorry."),
    )
    result = await loop(script, timeout_s=0.05)
    contents = {
        m["tool_call_id"]: json.loads(m["content"])
        for m in script.requests[1].messages
        if m["role"] == "tool"
    }
    assert contents["a"] == {"error": "tool_failed"}
    assert contents["b"] == {"error": "tool_timeout"}
    assert contents["c"]["error"] == "unknown_tool"
    assert contents["d"] == {"error": "invalid_arguments", "reason": "not_json"}
    assert (
        contents["e"]["error"] == "invalid_arguments"
        and "not of type 'string'" in contents["e"]["detail"]
    )
    assert result.text == "Nothing worked, sorry."
    assert [o.ok for o in result.steps] == [False] * 5
    assert "hunter2" not in script.seen()  # the exception message never reaches the model


async def test_tools_asked_together_run_concurrently():
    # Each tool finishes only once the other has started: run one after the other, the first
    # would wait for ever (5 s, then fail). No wall-clock threshold; the timing itself is in
    # benchmarks/tool_concurrency.py.
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    def meets(me, other):
        async def run(args, ctx):
            started[me].set()
            await asyncio.wait_for(started[other].wait(), 5)
            return f"{me} done"

        return Tool(f"meet_{me}", "Meets", {"type": "object"}, "read", run)

    tools = validate_native_tools([meets("a", "b"), meets("b", "a")])
    script = Script(calls(tc("meet_a", id="a"), tc("meet_b", id="b")), Reply(text="Both."))
    result = await run_tool_loop(
        None, [user("go")], tool_specs(tools), script, tool_caller(tools, timeout_s=10)
    )
    assert [o.content for o in result.steps] == ["a done", "b done"]


async def test_calls_without_ids_get_distinct_ids():
    script = Script(calls(tc("slow_a", id=""), tc("slow_b", id="")), Reply(text="ok"))
    await loop(script)
    sent = script.requests[1].messages
    ids = [c["id"] for c in sent[1]["tool_calls"]]
    assert len(set(ids)) == 2 and all(ids)
    assert [m["tool_call_id"] for m in sent[2:4]] == ids


async def test_out_of_turns_one_last_turn_without_tools_answers():
    script = Script(
        calls(tc("weather", {"city": "A"}, id="1")),
        calls(tc("weather", {"city": "B"}, id="2")),
        Reply(text="A is 21, B is 21."),
    )
    result = await loop(script, max_turns=2, final_instruction="Stop now.")
    assert len(script.requests) == 3
    assert script.requests[0].tools is not None and script.requests[1].tools is not None
    last = script.requests[-1]
    assert last.tools is None
    assert last.messages[-1] == user("Stop now.")
    assert (result.stopped, result.turns, result.text) == ("max_turns", 3, "A is 21, B is 21.")


async def test_out_of_time_one_last_turn_without_tools_answers():
    script = Script(calls(tc("slow_a", id="1")), Reply(text="Partial."))
    result = await loop(script, max_s=0.1)
    assert len(script.requests) == 2
    assert script.requests[-1].tools is None
    assert script.requests[-1].messages[-1] == user(DEFAULT_FINAL_INSTRUCTION)
    assert result.stopped == "max_time"


@pytest.mark.parametrize(
    "replies",
    [
        [Reply(text="  ")],  # a first turn with nothing
        [calls(tc("weather", {"city": "A"})), Reply(text="")],  # a final turn with nothing
    ],
)
async def test_a_turn_with_neither_text_nor_call_raises_ai_no_answer(replies):
    with pytest.raises(WorkbenchError) as err:
        await loop(Script(*replies), max_turns=1)
    assert err.value.code == "AI_NO_ANSWER"


async def test_a_set_signal_stops_before_the_next_turn():
    stop = asyncio.Event()
    tools = make_tools()
    script = Script(calls(tc("weather", {"city": "A"})), Reply(text="never asked"))
    caller = tool_caller(tools)

    async def call_and_cancel(call):
        out = await caller(call)
        stop.set()  # the person left while the tool ran
        return out

    with pytest.raises(WorkbenchError) as err:
        await run_tool_loop(
            None, [user("go")], tool_specs(tools), script, call_and_cancel, signal=stop
        )
    assert err.value.code == "AI_CANCELLED"
    assert len(script.requests) == 1


async def test_the_callers_messages_are_not_modified():
    original = [user("weather in Goma?")]
    tools = make_tools()
    script = Script(calls(tc("weather", {"city": "Goma"})), Reply(text="21."))
    result = await run_tool_loop(None, original, tool_specs(tools), script, tool_caller(tools))
    assert original == [user("weather in Goma?")]
    assert len(result.messages) == 4


async def test_an_external_tool_receives_masked_arguments_and_a_local_one_clear_ones():
    from workbench.text.masker import ReversibleMasker

    seen: dict[str, dict] = {}

    def keeper(name):
        async def run(args, ctx):
            seen[name] = args
            return "ok"

        return run

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = validate_native_tools(
        [
            Tool("web_search", "Search the web", schema, "read", keeper("web"), external=True),
            Tool("local_db", "Local database", schema, "read", keeper("db")),
        ]
    )
    call = tool_caller(tools, masker=ReversibleMasker(names=["Grace Hopper"]))
    await call(native_tool_call("1", "web_search", {"q": "Grace Hopper compiler"}))
    await call(native_tool_call("2", "local_db", {"q": "Grace Hopper compiler"}))
    assert seen["web"] == {"q": "#PERSON_0001 compiler"}
    assert seen["db"] == {"q": "Grace Hopper compiler"}


# ----------------------------------------------------------- a benchmark's own loop rules


async def test_in_order_runs_a_turns_calls_one_after_another():
    ran: list[str] = []

    async def call(c: ToolCall) -> ToolOutcome:
        ran.append(f"start {c.name}")
        await asyncio.sleep(0.01 if c.name == "cd" else 0)
        ran.append(f"end {c.name}")
        return ToolOutcome(c.id, c.name, True, "ok")

    script = Script(calls(tc("cd", id="a"), tc("mv", id="b")), Reply(text="done"))
    await run_tool_loop(None, [user("go")], None, script, call, in_order=True)
    assert ran == ["start cd", "end cd", "start mv", "end mv"]
    ran.clear()
    script = Script(calls(tc("cd", id="a"), tc("mv", id="b")), Reply(text="done"))
    await run_tool_loop(None, [user("go")], None, script, call)
    assert ran[:2] == ["start cd", "start mv"]  # the default: concurrently


async def test_without_a_final_turn_the_loop_stops_at_its_limit_and_asks_nothing_more():
    async def call(c: ToolCall) -> ToolOutcome:
        return ToolOutcome(c.id, c.name, True, "ok")

    script = Script(*(calls(tc("ls", id=f"c{k}")) for k in range(3)))
    result = await run_tool_loop(
        None, [user("go")], None, script, call, max_turns=3, final_turn=False
    )
    assert (result.stopped, result.turns, result.text) == ("max_turns", 3, "")
    assert len(script.requests) == 3  # no answer asked for past the limit


async def test_an_empty_reply_ends_the_loop_when_the_benchmark_says_so():
    async def call(c: ToolCall) -> ToolOutcome:
        raise AssertionError("no call to run")

    with pytest.raises(WorkbenchError) as raised:
        await run_tool_loop(None, [user("go")], None, Script(Reply(text="")), call)
    assert raised.value.code == "AI_NO_ANSWER"
    result = await run_tool_loop(
        None, [user("go")], None, Script(Reply(text="")), call, empty_is_answer=True
    )
    assert (result.stopped, result.text) == ("answer", "")


async def test_read_calls_and_feed_back_replace_how_calls_are_found_and_returned():
    seen: list[str] = []

    async def call(c: ToolCall) -> ToolOutcome:
        seen.append(c.name)
        return ToolOutcome(c.id, c.name, True, f"ran {c.name}")

    def read(reply: Reply) -> list[ToolCall]:  # the calls written as "CALL name" lines
        return [
            tc(line[5:], id=line) for line in reply.text.splitlines() if line.startswith("CALL ")
        ]

    def back(reply: Reply, cs: list[ToolCall], outs: list[ToolOutcome]) -> list[dict]:
        return [{"role": "user", "content": "; ".join(o.content for o in outs)}]

    script = Script(Reply(text="CALL pwd\nCALL ls"), Reply(text="All done."))
    result = await run_tool_loop(
        None, [user("go")], None, script, call, read_calls=read, feed_back=back
    )
    assert seen == ["pwd", "ls"] and result.text == "All done."
    assert script.requests[1].messages[-1] == {"role": "user", "content": "ran pwd; ran ls"}
