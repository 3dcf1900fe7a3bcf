"""PendingActions: the cycle's promises, on the memory store.

The same promises on DuckDB and Redis (and across processes) are in test_pending_stores.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from workbench.errors import WorkbenchError
from workbench.events import ActionEvent
from workbench.tools.pending import (
    ERROR_MAX_CHARS,
    RESULT_MAX_CHARS,
    Action,
    ActionStore,
    MemoryActionStore,
    PendingActions,
    bound_result,
    describe_error,
    returned_error,
)


class FakeClock:
    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1
        return self.now


class Mailer:
    """A tool that counts its calls and records what it was given."""

    def __init__(self, reply: Any = None, raises: BaseException | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.reply = {"sent": True} if reply is None else reply
        self.raises = raises

    async def __call__(self, payload: dict[str, Any]) -> Any:
        self.calls.append(payload)
        await asyncio.sleep(0)
        if self.raises is not None:
            raise self.raises
        return self.reply


def make(tools: dict[str, Any] | None = None, **kwargs: Any):
    events: list[ActionEvent] = []
    store = MemoryActionStore()
    sas = PendingActions(
        store,
        tools or {"send_email": Mailer()},
        sinks=[events.append],
        clock_ms=FakeClock(),
        **kwargs,
    )
    return sas, store, events


PAYLOAD = {"to": "famille@x.cd", "body": "Bonjour"}


def test_memory_store_satisfies_the_protocol() -> None:
    assert isinstance(MemoryActionStore(), ActionStore)


async def test_full_cycle_emits_events_in_order() -> None:
    mailer = Mailer()
    sas, _, events = make({"send_email": mailer})
    proposed = await sas.propose("send_email", PAYLOAD, "agent")
    assert proposed.status == "pending" and proposed.proposed_by == "agent"
    assert mailer.calls == []  # a proposal runs nothing
    assert [a.id for a in await sas.list("pending")] == [proposed.id]

    done = await sas.approve(proposed.id, "alice")
    assert done.status == "executed" and done.result == {"sent": True} and done.error is None
    assert done.decided_by == "alice" and done.amended is None and done.amended_by is None
    assert mailer.calls == [PAYLOAD]
    assert [h["status"] for h in done.history] == ["pending", "executing", "executed"]
    assert [h["by"] for h in done.history] == ["agent", "alice", "alice"]
    assert [(e.status, e.by) for e in events] == [
        ("pending", "agent"),
        ("executing", "alice"),
        ("executed", "alice"),
    ]
    assert all(e.action_id == proposed.id and e.action == "send_email" for e in events)
    assert [e.at_ms for e in events] == sorted(e.at_ms for e in events)
    assert (await sas.get(proposed.id)) == done
    assert await sas.list("pending") == [] and await sas.list("executed") == [done]


async def test_only_named_tools_can_be_proposed() -> None:
    notified: list[Action] = []
    sas, store, events = make(on_pending=notified.append)
    with pytest.raises(WorkbenchError) as err:
        await sas.propose("delete_everything", {}, "agent")
    assert err.value.code == "ACTION_UNKNOWN" and err.value.status == 400
    assert "send_email" in err.value.message
    assert await store.list() == [] and events == [] and notified == []


async def test_an_action_whose_tool_this_instance_lacks_never_executes() -> None:
    store = MemoryActionStore()
    wiper = Mailer()
    proposer = PendingActions(store, {"wipe": wiper, "send_email": Mailer()})
    approver = PendingActions(store, {"send_email": Mailer()})  # shares the store, not "wipe"
    action = await proposer.propose("wipe", {"all": True}, "agent")
    done = await approver.approve(action.id, "alice")
    assert done.status == "failed" and done.error and done.error.startswith("ACTION_UNKNOWN")
    assert wiper.calls == []


async def test_tools_mapping_is_copied() -> None:
    tools: dict[str, Any] = {"send_email": Mailer()}
    sas, _, _ = make(tools)
    tools["late_addition"] = Mailer()
    with pytest.raises(WorkbenchError, match="ACTION_UNKNOWN"):
        await sas.propose("late_addition", {}, "agent")
    assert sas.tools == ("send_email",)


async def test_a_tool_that_raises_marks_failed_with_a_short_scrubbed_error() -> None:
    secret = "sk-" + "abcdefghijklmnopqrstuv"  # assembled: no key-shaped string in the repo
    mailer = Mailer(raises=RuntimeError(f"smtp refused {secret}\nline two " + "x" * 500))
    sas, _, events = make({"send_email": mailer})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    done = await sas.approve(action.id, "alice")
    assert done.status == "failed" and done.result is None
    assert done.error is not None and done.error.startswith("RuntimeError: smtp refused ***")
    assert secret not in done.error and "\n" not in done.error and "Traceback" not in done.error
    assert len(done.error) <= ERROR_MAX_CHARS
    assert done.history[-1]["error"] == done.error
    assert len(mailer.calls) == 1
    assert [e.status for e in events] == ["pending", "executing", "failed"]


@dataclass
class Reply:
    ok: bool
    error: str | None = None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"error": "mailbox full"}, "mailbox full"),
        ({"error": {"code": "SMTP_550", "message": "no such user"}}, "SMTP_550: no such user"),
        ({"ok": False, "message": "quota"}, "quota"),
        (Reply(ok=False, error="bounced"), "bounced"),
        (Reply(ok=False), "ok=false"),
    ],
)
async def test_a_tool_that_returns_an_error_is_failed_never_executed(reply, expected) -> None:
    sas, _, events = make({"send_email": Mailer(reply=reply)})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    done = await sas.approve(action.id, "alice")
    assert done.status == "failed" and done.error == expected
    assert [e.status for e in events][-1] == "failed"
    assert await sas.list("executed") == []


@pytest.mark.parametrize(
    "reply", [{"ok": True, "error": None}, {"error": False, "id": 3}, Reply(ok=True), "sent"]
)
async def test_a_success_shaped_reply_is_executed(reply) -> None:
    sas, _, _ = make({"send_email": Mailer(reply=reply)})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    assert (await sas.approve(action.id, "alice")).status == "executed"


async def test_a_sync_tool_works() -> None:
    sas, _, _ = make({"add": lambda p: {"sum": p["a"] + p["b"]}})
    action = await sas.propose("add", {"a": 2, "b": 3}, "agent")
    done = await sas.approve(action.id, "alice")
    assert done.status == "executed" and done.result == {"sum": 5}


@pytest.mark.parametrize("kind", ["sync", "async", "hangs"])
async def test_a_dead_on_pending_never_fails_the_proposal(kind, caplog) -> None:
    calls: list[str] = []

    def sync_dead(action: Action) -> None:
        calls.append(action.id)
        raise ConnectionError("notifier down")

    async def async_dead(action: Action) -> None:
        calls.append(action.id)
        await asyncio.sleep(0)
        raise ConnectionError("notifier down")

    async def hangs(action: Action) -> None:
        calls.append(action.id)
        await asyncio.sleep(60)

    channel = {"sync": sync_dead, "async": async_dead, "hangs": hangs}[kind]
    sas, _, events = make(on_pending=channel, on_pending_timeout_s=0.05)
    with caplog.at_level("WARNING", logger="workbench.tools.pending"):
        action = await sas.propose("send_email", PAYLOAD, "agent")
    assert action.status == "pending" and calls == [action.id]
    assert [a.id for a in await sas.list("pending")] == [action.id]  # still visible
    assert [e.status for e in events] == ["pending"]
    assert "on_pending failed" in caplog.text
    assert (await sas.approve(action.id, "alice")).status == "executed"


async def test_a_live_on_pending_hears_each_new_proposal_once() -> None:
    heard: list[str] = []

    async def tell(action: Action) -> None:
        heard.append(action.id)

    sas, _, _ = make(on_pending=tell)
    first = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="k")
    again = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="k")
    other = await sas.propose("send_email", PAYLOAD, "agent")
    assert again.id == first.id and heard == [first.id, other.id]


async def test_dedupe_returns_the_same_pending_action() -> None:
    sas, _, events = make()
    first = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="fees-2024-05")
    for _ in range(4):
        again = await sas.propose("send_email", {"other": 1}, "agent", dedupe_key="fees-2024-05")
        assert again == first
    assert len(await sas.list()) == 1 and [e.status for e in events] == ["pending"]
    other_key = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="fees-2024-06")
    assert other_key.id != first.id
    await sas.reject(first.id, "alice")
    after = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="fees-2024-05")
    assert after.id != first.id and after.status == "pending"  # no live one any more


async def test_amend_is_merged_over_the_payload_and_recorded() -> None:
    mailer = Mailer()
    sas, _, _ = make({"send_email": mailer})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    done = await sas.approve(action.id, "alice", amend={"to": "bonne-adresse@x.cd", "cc": "m"})
    expected = {"to": "bonne-adresse@x.cd", "body": "Bonjour", "cc": "m"}
    assert mailer.calls == [expected] and done.payload == expected
    assert done.amended == {"to": "bonne-adresse@x.cd", "cc": "m"}
    assert done.amended_by == "alice" and done.decided_by == "alice"
    assert done.history[1]["draft"] == PAYLOAD  # the model's draft is kept


async def test_a_bad_amend_is_refused_and_the_action_stays_pending() -> None:
    mailer = Mailer()
    sas, _, _ = make({"send_email": mailer})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    with pytest.raises(WorkbenchError) as err:
        await sas.approve(action.id, "alice", amend=["to", "x"])  # type: ignore[arg-type]
    assert err.value.code == "ACTION_INVALID" and err.value.status == 400
    assert (await sas.get(action.id)).status == "pending" and mailer.calls == []


async def test_payload_must_be_json_and_is_copied() -> None:
    sas, _, _ = make()
    with pytest.raises(WorkbenchError, match="ACTION_INVALID"):
        await sas.propose("send_email", {"when": object()}, "agent")
    with pytest.raises(WorkbenchError, match="ACTION_INVALID"):
        await sas.propose("send_email", "to=x", "agent")  # type: ignore[arg-type]
    payload = {"to": ["a@x.cd"]}
    action = await sas.propose("send_email", payload, "agent")
    payload["to"].append("intruder@x.cd")
    action.payload["to"].append("intruder@x.cd")
    assert (await sas.get(action.id)).payload == {"to": ["a@x.cd"]}


async def test_reject_then_approve_is_not_pending() -> None:
    mailer = Mailer()
    sas, _, events = make({"send_email": mailer})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    rejected = await sas.reject(action.id, "bob", note="mauvais destinataire")
    assert rejected.status == "rejected" and rejected.decided_by == "bob"
    assert rejected.note == "mauvais destinataire"
    with pytest.raises(WorkbenchError) as err:
        await sas.approve(action.id, "alice")
    assert err.value.code == "ACTION_NOT_PENDING" and err.value.status == 409
    assert err.value.details["status"] == "rejected" and "rejected" in err.value.message
    with pytest.raises(WorkbenchError, match="ACTION_NOT_PENDING"):
        await sas.reject(action.id, "bob")
    assert mailer.calls == []
    assert [(e.status, e.by) for e in events] == [("pending", "agent"), ("rejected", "bob")]


async def test_approving_twice_is_not_pending_naming_executed() -> None:
    mailer = Mailer()
    sas, _, _ = make({"send_email": mailer})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    await sas.approve(action.id, "alice")
    with pytest.raises(WorkbenchError) as err:
        await sas.approve(action.id, "alice")
    assert err.value.code == "ACTION_NOT_PENDING" and err.value.details["status"] == "executed"
    with pytest.raises(WorkbenchError, match="ACTION_NOT_PENDING"):
        await sas.reject(action.id, "bob")
    assert len(mailer.calls) == 1


async def test_unknown_ids_are_404() -> None:
    sas, _, _ = make()
    for call in (sas.get("nope"), sas.approve("nope", "alice"), sas.reject("nope", "bob")):
        with pytest.raises(WorkbenchError) as err:
            await call
        assert err.value.code == "ACTION_UNKNOWN_ID" and err.value.status == 404


async def test_fifty_concurrent_approvals_execute_once() -> None:
    mailer = Mailer()
    sas, _, events = make({"send_email": mailer})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    results = await asyncio.gather(
        *(sas.approve(action.id, f"human{i}") for i in range(50)), return_exceptions=True
    )
    executed = [r for r in results if isinstance(r, Action)]
    refused = [r for r in results if isinstance(r, WorkbenchError)]
    assert len(executed) == 1 and executed[0].status == "executed"
    assert len(refused) == 49 and all(r.code == "ACTION_NOT_PENDING" for r in refused)
    assert len(mailer.calls) == 1
    assert [e.status for e in events] == ["pending", "executing", "executed"]


async def test_list_is_newest_first_filtered_and_scoped_to_the_run() -> None:
    store = MemoryActionStore()
    clock = FakeClock()
    run_a = PendingActions(store, {"send_email": Mailer()}, clock_ms=clock, run_id="a")
    run_b = PendingActions(store, {"send_email": Mailer()}, clock_ms=clock, run_id="b")
    a1 = await run_a.propose("send_email", PAYLOAD, "agent")
    b1 = await run_b.propose("send_email", PAYLOAD, "agent")
    a2 = await run_a.propose("send_email", PAYLOAD, "agent")
    await run_a.reject(a1.id, "bob")
    assert [a.id for a in await run_a.list()] == [a2.id, a1.id]
    assert [a.id for a in await run_a.list("pending")] == [a2.id]
    assert [a.id for a in await run_b.list()] == [b1.id] and b1.run_id == "b"
    assert len(await store.list()) == 3
    with pytest.raises(WorkbenchError, match="ACTION_INVALID"):
        await run_a.list("done")


async def test_a_failing_sink_breaks_nothing() -> None:
    def broken(event: object) -> None:
        raise RuntimeError("sink down")

    sas = PendingActions(MemoryActionStore(), {"send_email": Mailer()}, sinks=[broken])
    action = await sas.propose("send_email", PAYLOAD, "agent")
    assert (await sas.approve(action.id, "alice")).status == "executed"


async def test_results_are_bounded_and_json() -> None:
    sas, _, _ = make({"big": Mailer(reply="x" * 50_000), "odd": Mailer(reply={1, 2})})
    big = await sas.approve((await sas.propose("big", {}, "agent")).id, "alice")
    assert isinstance(big.result, str) and len(big.result) <= RESULT_MAX_CHARS
    odd = await sas.approve((await sas.propose("odd", {}, "agent")).id, "alice")
    assert odd.status == "executed" and isinstance(odd.result, str)


def test_error_and_result_helpers() -> None:
    assert describe_error(ValueError()) == "ValueError"
    assert describe_error({"code": "X"}) == "X"
    assert returned_error({"sent": True}) is None and returned_error(None) is None
    assert returned_error(KeyError("k")) == "KeyError: 'k'"
    assert bound_result({"a": float("nan")}) == "{'a': nan}"
    assert bound_result([1, "é"]) == [1, "é"]
    assert Action("i", "a", {}, "pending", "p", 1, 1).to_dict()["history"] == []
