"""The approval queue renders and forwards clicks; PendingActions over a real store decides.

Driven headless: `Button.click()` runs the same callbacks a browser click does, and
`await queue.wait_idle()` waits for the task the click started on the running loop."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from typing import Any

import pytest

from workbench.tools.pending import MemoryActionStore, PendingActions
from workbench.tools.pending_duckdb import DuckDBActionStore
from workbench.widgets import ApprovalModel, ApprovalQueue

PAYLOAD = {"to": "team@example.org", "body": "<b>hello</b>"}


class Counter:
    """A tool that counts its calls (and awaits, as a real one would)."""

    def __init__(self, raises: BaseException | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.raises = raises

    async def __call__(self, payload: dict[str, Any]) -> Any:
        self.calls.append(payload)
        await asyncio.sleep(0.01)
        if self.raises is not None:
            raise self.raises
        return {"sent": True}


def clock() -> Any:
    ticks = itertools.count(1_767_225_600_000, 1000)
    return lambda: next(ticks)


@pytest.fixture(params=["memory", "duckdb"])
def store(request, tmp_path):
    if request.param == "memory":
        yield MemoryActionStore()
    else:
        s = DuckDBActionStore(tmp_path / "actions.duckdb")
        yield s
        s.close()


@pytest.fixture
def tool() -> Counter:
    return Counter()


@pytest.fixture
def actions(store, tool) -> PendingActions:
    return PendingActions(store, {"send_email": tool}, clock_ms=clock())


async def queue_for(actions: PendingActions, who: str = "alice") -> ApprovalQueue:
    queue = ApprovalQueue(actions, decided_by=who)
    await queue.wait_idle()
    return queue


# ------------------------------------------------------------------ approving
async def test_approve_click_executes_the_action_once_and_records_who(actions, tool) -> None:
    proposed = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    queue = await queue_for(actions, "alice")
    assert queue.choices.options[0][1] == proposed.id
    queue.choices.value = proposed.id
    queue.approve_button.click()
    await queue.wait_idle()

    assert tool.calls == [PAYLOAD]
    done = await actions.get(proposed.id)
    assert done.status == "executed"
    assert done.decided_by == "alice"
    assert [(h["status"], h["by"]) for h in done.history] == [
        ("pending", "agent"),
        ("executing", "alice"),
        ("executed", "alice"),
    ]
    assert queue.choices.options == ()
    assert "executed by alice" in queue.status.value
    assert "alice" in queue.history_html.value and "executed" in queue.history_html.value


async def test_approving_twice_runs_once_and_says_action_not_pending(actions, tool) -> None:
    proposed = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    queue = await queue_for(actions)
    queue.approve_button.click()
    await queue.wait_idle()
    queue.approve_button.click()
    await queue.wait_idle()

    assert len(tool.calls) == 1
    assert queue.model.error_code == "ACTION_NOT_PENDING"
    assert queue.status.value.startswith("ACTION_NOT_PENDING:")
    assert proposed.id in queue.status.value and "executed" in queue.status.value
    assert "\n" not in queue.status.value and "Traceback" not in queue.status.value


async def test_a_double_click_before_the_first_finishes_still_runs_once(actions, tool) -> None:
    await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    queue = await queue_for(actions)
    queue.approve_button.click()
    queue.approve_button.click()
    await queue.wait_idle()
    assert len(tool.calls) == 1
    assert queue.model.error_code == "ACTION_NOT_PENDING"


async def test_two_queues_on_one_store_execute_once(actions, tool) -> None:
    await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    alice, bob = await queue_for(actions, "alice"), await queue_for(actions, "bob")
    alice.approve_button.click()
    bob.approve_button.click()
    await asyncio.gather(alice.wait_idle(), bob.wait_idle())
    assert len(tool.calls) == 1
    codes = {alice.model.error_code, bob.model.error_code}
    assert codes == {None, "ACTION_NOT_PENDING"}


async def test_a_valid_amend_is_merged_and_recorded(actions, tool) -> None:
    proposed = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    queue = await queue_for(actions, "alice")
    queue.amend.value = json.dumps({"to": "boss@example.org"})
    assert queue.model.error is None
    queue.approve_button.click()
    await queue.wait_idle()

    assert tool.calls == [{**PAYLOAD, "to": "boss@example.org"}]
    done = await actions.get(proposed.id)
    assert done.amended == {"to": "boss@example.org"}
    assert done.amended_by == "alice"
    assert queue.amend.value == ""  # the editor is cleared after the decision


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"text"'])
async def test_an_invalid_amend_shows_its_code_and_approves_nothing(actions, tool, text) -> None:
    proposed = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    queue = await queue_for(actions)
    queue.amend.value = text
    assert queue.status.value.startswith("ACTION_INVALID:")
    queue.approve_button.click()
    await queue.wait_idle()

    assert tool.calls == []
    assert (await actions.get(proposed.id)).status == "pending"
    assert queue.model.error_code == "ACTION_INVALID"
    assert "\n" not in queue.status.value
    queue.amend.value = ""  # fixing the text clears the error
    assert queue.model.error is None


# ------------------------------------------------------------------ rejecting, failing
async def test_reject_click_records_who_and_the_note_and_runs_nothing(actions, tool) -> None:
    proposed = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    queue = await queue_for(actions, "carol")
    queue.note.value = "wrong recipient"
    queue.reject_button.click()
    await queue.wait_idle()

    assert tool.calls == []
    done = await actions.get(proposed.id)
    assert (done.status, done.decided_by, done.note) == ("rejected", "carol", "wrong recipient")
    assert "wrong recipient" in queue.history_html.value
    assert queue.note.value == ""
    queue.reject_button.click()
    await queue.wait_idle()
    assert queue.model.error_code == "ACTION_NOT_PENDING"


async def test_a_tool_that_raises_is_shown_as_failed_in_one_line(store) -> None:
    failing = Counter(raises=RuntimeError("smtp down\nline two"))
    actions = PendingActions(store, {"send_email": failing}, clock_ms=clock())
    proposed = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    queue = await queue_for(actions)
    queue.approve_button.click()
    await queue.wait_idle()
    assert (await actions.get(proposed.id)).status == "failed"
    assert "failed: RuntimeError: smtp down line two" in queue.status.value
    assert "<td class='wb-status-failed'>failed</td>" in queue.history_html.value


# ------------------------------------------------------------------ refresh, history
async def test_refresh_shows_new_proposals(actions) -> None:
    first = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    queue = await queue_for(actions)
    second = await actions.propose("send_email", {"to": "b@example.org"}, proposed_by="agent")
    assert [v for _, v in queue.choices.options] == [first.id]
    queue.refresh_button.click()
    await queue.wait_idle()
    assert [v for _, v in queue.choices.options] == [second.id, first.id]
    assert queue.status.value == "2 pending actions"
    assert queue.choices.value == first.id  # the selection does not jump


async def test_history_lists_decided_actions_newest_first(actions) -> None:
    a = await actions.propose("send_email", {"to": "a@example.org"}, proposed_by="agent")
    b = await actions.propose("send_email", {"to": "b@example.org"}, proposed_by="agent")
    c = await actions.propose("send_email", {"to": "c@example.org"}, proposed_by="agent")
    queue = await queue_for(actions, "dana")
    queue.choices.value = a.id
    queue.approve_button.click()
    await queue.wait_idle()
    queue.choices.value = b.id
    queue.reject_button.click()
    await queue.wait_idle()

    assert [x.id for x in queue.model.history] == [b.id, a.id]
    assert [x.id for x in queue.model.pending] == [c.id]
    html = queue.history_html.value
    assert html.index(b.id) < html.index(a.id)
    assert c.id not in html


async def test_payload_is_shown_escaped(actions) -> None:
    await actions.propose("send_email", PAYLOAD, proposed_by="<agent>")
    queue = await queue_for(actions)
    assert "&lt;b&gt;hello&lt;/b&gt;" in queue.payload.value
    assert "<b>hello</b>" not in queue.payload.value
    assert "&lt;agent&gt;" in queue.payload.value


async def test_buttons_have_stable_descriptions_and_classes(actions) -> None:
    queue = await queue_for(actions)
    for button, text, css in (
        (queue.approve_button, "Approve", "wb-approve"),
        (queue.reject_button, "Reject", "wb-reject"),
        (queue.refresh_button, "Refresh", "wb-refresh"),
    ):
        assert button.description == text
        assert css in button._dom_classes
    assert "wb-approval-queue" in queue._dom_classes


# ------------------------------------------------------------------ the model alone
async def test_the_model_needs_a_selection_and_never_raises(actions, tool) -> None:
    model = ApprovalModel(actions, decided_by="erin")
    await model.refresh()
    assert await model.approve() is None
    assert model.error_code == "ACTION_INVALID"
    proposed = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
    await model.refresh()
    model.select(proposed.id)
    assert model.selected is not None and model.selected.id == proposed.id
    done = await model.approve()
    assert done is not None and done.status == "executed" and done.decided_by == "erin"
    assert model.selected is not None and model.selected.status == "executed"
    assert await model.approve() is None
    assert model.error_code == "ACTION_NOT_PENDING"
    assert len(tool.calls) == 1


def test_the_queue_works_without_a_running_loop(store, tool) -> None:
    """A plain script has no loop: a click runs the coroutine to the end at once."""
    actions = PendingActions(store, {"send_email": tool}, clock_ms=clock())
    proposed = asyncio.run(actions.propose("send_email", PAYLOAD, proposed_by="agent"))
    queue = ApprovalQueue(actions, decided_by="frank")
    assert [v for _, v in queue.choices.options] == [proposed.id]
    queue.approve_button.click()
    assert len(tool.calls) == 1
    assert "executed by frank" in queue.status.value


def test_the_models_import_without_ipywidgets() -> None:
    code = (
        "import sys; sys.modules['ipywidgets'] = None\n"
        "from workbench.widgets import ApprovalModel, CompareModel, ApprovalQueue\n"
        "from workbench.errors import WorkbenchError\n"
        "try:\n    ApprovalQueue(None)\nexcept WorkbenchError as e:\n    print(e.code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "WIDGETS_UNAVAILABLE"


async def test_auto_refresh_shows_proposals_without_a_click(actions) -> None:
    queue = await queue_for(actions)
    queue.auto_refresh(0.01)
    try:
        proposed = await actions.propose("send_email", PAYLOAD, proposed_by="agent")
        for _ in range(100):
            if queue.choices.options:
                break
            await asyncio.sleep(0.01)
        assert [v for _, v in queue.choices.options] == [proposed.id]
    finally:
        queue.auto_refresh(None)
    assert queue._live is None
