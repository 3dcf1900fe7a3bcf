"""The chat example, served by a real uvicorn on loopback, against the real simulator."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer

from workbench.providers.openai_compat import openai_compatible_provider
from workbench.providers.spec import ModelSpec
from workbench.routing.router import Router
from workbench.serve.ask_limit import AskLimit
from workbench.sim import SimServer

ROOT = Path(__file__).resolve().parents[2]


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("chat_app", ROOT / "examples" / "chat_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chat_app"] = module
    spec.loader.exec_module(module)
    return module


chat_app = _load_example()

HELPER = {"persona": [{"id": "helper", "tool_style": "native"}]}
# A first model that takes 1.5 s to fail, and a healthy one behind it.
SLOW_THEN_BACKUP = {
    "persona": [
        {
            "id": "slow-down",
            "latency_ms": 1500,
            "latency_jitter_ms": 0,
            "failures": [{"kind": "503", "rate": 1.0}],
        },
        {"id": "backup", "tool_style": "native"},
    ]
}
ALL_DOWN = {"persona": [{"id": "down", "failures": [{"kind": "503", "rate": 1.0}]}]}


# --- fixtures ------------------------------------------------------------------------------
def _router(sim: SimServer) -> Router:
    """One provider per persona, in fleet order: a failing model never cools the next one."""
    providers = [
        openai_compatible_provider(pid, sim.openai_url, lambda _ctx: "sim-key", [ModelSpec(pid)])
        for pid in sim.fleet.ids
    ]
    return Router(providers, attempt_timeout_s=10.0, cooldown_jitter_s=0.0)


@pytest.fixture
def serve() -> Iterator[Callable[..., Any]]:
    """`serve(fleet, **create_app_kw)` → (base url, app, sim): a simulator with that fleet,
    a router over it, the chat app on a real uvicorn."""
    started: list[tuple[SimServer, LoopbackServer]] = []

    def start(fleet: dict[str, Any], **kw: Any) -> tuple[str, Any, SimServer]:
        sim = SimServer(fleet).start()
        router = _router(sim)
        app = chat_app.create_app(router, **kw)
        live = LoopbackServer(app, on_stop=router.close).start()
        started.append((sim, live))
        return live.url, app, sim

    yield start
    for sim, live in started:
        live.stop()
        sim.stop()


# --- helpers -------------------------------------------------------------------------------
async def _events(response: httpx.Response) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    kind: str | None = None
    data: Any = None
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: ") :])
        elif line == "" and kind is not None:
            events.append((kind, data))
            kind, data = None, None
    return events


async def _chat(url: str, body: dict[str, Any]) -> tuple[httpx.Response, list[tuple[str, Any]]]:
    async with (
        httpx.AsyncClient(base_url=url, timeout=20) as client,
        client.stream("POST", "/chat", json=body) as response,
    ):
        if response.status_code != 200:
            await response.aread()
            return response, []
        return response, await _events(response)


async def _until(check: Callable[[], Any], timeout_s: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.02)
    return check()


def _personas(sim: SimServer) -> list[str]:
    return [entry["persona"] for entry in sim.requests()]


def _types(events: list[tuple[str, Any]]) -> list[str]:
    return [kind for kind, _ in events]


# --- a turn ----------------------------------------------------------------------------------
async def test_a_tool_question_streams_step_step_done_text_done_in_order(serve) -> None:
    url, app, sim = serve(HELPER)
    response, events = await _chat(
        url, {"person": "ana", "message": "What is the weather in Paris?"}
    )

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    kinds = _types(events)
    assert kinds[:2] == ["step", "step_done"]
    assert kinds[-1] == "done"
    assert set(kinds[2:-1]) == {"text"}, kinds
    step, done_step = events[0][1], events[1][1]
    assert step["tool"] == "get_weather" and "Paris" in step["params"]
    assert done_step == {"id": step["id"], "ok": True}
    text = "".join(data["text"] for kind, data in events if kind == "text")
    assert "light rain" in text  # the demo weather of Paris, read through the tool
    assert events[-1][1] == {"actions": [], "degraded": False}
    assert _personas(sim) == ["helper", "helper"]  # a tool turn, then the answer
    assert app.state.turns[-1]["outcome"] == "answered"


async def test_the_answer_is_cleaned_with_the_vocabulary_before_it_is_shown(serve) -> None:
    vocabulary = {"shared": {"line_labels": ["According to get_weather"]}}
    url, _app, _sim = serve(HELPER, vocabulary=vocabulary)
    _, events = await _chat(url, {"person": "ana", "message": "What is the weather in Paris?"})
    chunks = [data["text"] for kind, data in events if kind == "text"]
    text = "".join(chunks)
    # The model said `According to get_weather: {"city":"Paris",…}`: the label is gone and
    # no JSON reaches the screen.
    assert "According" not in text and "{" not in text and '"' not in text
    assert "Paris" in text and "light rain" in text
    assert 1 < len(chunks) <= 4  # a few chunks (paragraphs), never token by token


async def test_a_bad_request_is_a_code(serve) -> None:
    url, _app, sim = serve(HELPER)
    response, _ = await _chat(url, {"person": "", "message": "hi"})
    assert response.status_code == 400
    assert response.json() == {"code": "CHAT_INVALID", "field": "person"}
    response, _ = await _chat(
        url, {"person": "ana", "message": "hi", "history": [{"role": "system", "content": "x"}]}
    )
    assert response.status_code == 400 and response.json()["field"] == "history"
    assert sim.requests() == []


# --- the client leaves -----------------------------------------------------------------------
async def test_a_client_that_leaves_cancels_the_route_and_no_further_model_is_asked(
    serve,
) -> None:
    url, app, sim = serve(SLOW_THEN_BACKUP)
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        async with client.stream(
            "POST", "/chat", json={"person": "ana", "message": "What is the weather in Paris?"}
        ) as response:
            assert response.status_code == 200
            # The first model is being asked (it will take 1.5 s, then fail).
            assert await _until(lambda: "slow-down" in _personas(sim))
            await asyncio.sleep(0.3)
        # Leaving the block unread closes the connection: the client is gone.

    turns = app.state.turns
    assert await _until(lambda: turns and turns[-1]["outcome"] is not None)
    record = turns[-1]
    assert record["outcome"] == "cancelled" and record["cancelled"] is True
    # The job's write after the client left did nothing.
    assert record["late_emit"] is False
    assert time.monotonic() - started < 1.5  # cancelled at once, not after the slow failure
    # Past the moment the slow model fails, the backup would be asked — it never is.
    await asyncio.sleep(max(0.0, 2.5 - (time.monotonic() - started)))
    assert _personas(sim) == ["slow-down"]
    assert record["models"] == []


async def test_the_same_turn_falls_through_to_the_backup_when_the_client_stays(serve) -> None:
    # The control of the test above: with nobody leaving, this fleet does reach the backup.
    url, app, sim = serve(SLOW_THEN_BACKUP)
    _, events = await _chat(url, {"person": "ana", "message": "What is the weather in Paris?"})
    assert _types(events)[-1] == "done"
    assert _personas(sim)[:2] == ["slow-down", "backup"]
    assert app.state.turns[-1]["cancelled"] is False


# --- the ask limit ---------------------------------------------------------------------------
async def test_the_ask_limit_refuses_with_a_code_and_a_wait(serve) -> None:
    url, _app, sim = serve(HELPER, limit=AskLimit(2, 60))
    ask = {"person": "ana", "message": "What time is it in Europe/Paris?"}
    for _ in range(2):
        response, events = await _chat(url, ask)
        assert response.status_code == 200 and _types(events)[-1] == "done"
    asked = len(sim.requests())

    response, _ = await _chat(url, ask)
    assert response.status_code == 429
    body = response.json()
    assert set(body) == {"code", "retry_after_s"}  # never a sentence
    assert body["code"] == "AI_ASK_LIMIT"
    assert 0 < body["retry_after_s"] <= 60
    assert int(response.headers["retry-after"]) >= 1
    assert len(sim.requests()) == asked  # refused before any model was asked

    response, _ = await _chat(url, {**ask, "person": "bob"})  # the limit is per person
    assert response.status_code == 200


# --- every model down ------------------------------------------------------------------------
async def test_every_model_down_answers_hours_degraded_and_declines_the_rest(serve) -> None:
    url, app, sim = serve(ALL_DOWN)

    _, events = await _chat(url, {"person": "ana", "message": "What are your opening hours?"})
    assert _types(events) == ["text", "done"]
    assert events[0][1] == {"text": "We are open 9:00–17:00, Monday to Friday."}
    assert events[1][1] == {"actions": [], "degraded": True}
    assert _personas(sim) == ["down"]  # a model was asked first: this is a fallback

    _, events = await _chat(url, {"person": "ana", "message": "What is the weather in Paris?"})
    assert _types(events) == ["declined"]
    assert set(events[0][1]) == {"code", "cause"}
    assert events[0][1]["code"] == "AI_DECLINED"
    assert [t["outcome"] for t in app.state.turns] == ["degraded", "declined"]


# --- write tools only propose ----------------------------------------------------------------
EMAIL = 'Send an email to "ana@example.com" with subject "Hello" and body "See you at nine".'


async def test_a_write_tool_only_proposes_and_a_person_approves(serve) -> None:
    url, _app, sim = serve(HELPER)
    _, events = await _chat(url, {"person": "ana", "message": EMAIL})

    steps = [data for kind, data in events if kind == "step"]
    assert [s["tool"] for s in steps] == ["send_email"]
    done = events[-1]
    assert done[0] == "done" and len(done[1]["actions"]) == 1
    action_id = done[1]["actions"][0]
    # The address was masked on its way to the model, and is clear in the proposal.
    assert "ana@example.com" not in json.dumps([e["body"] for e in sim.requests()])

    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        listed = (await client.get("/actions")).json()["actions"]
        assert [(a["id"], a["status"], a["action"]) for a in listed] == [
            (action_id, "pending", "send_email")
        ]
        assert listed[0]["payload"]["to"] == "ana@example.com"

        response = await client.post(f"/actions/{action_id}/approve", json={"by": "olga"})
        assert response.status_code == 200
        approved = response.json()
        assert approved["status"] == "executed" and approved["decided_by"] == "olga"
        assert approved["result"]["would_have"]["to"] == "ana@example.com"

        again = await client.post(f"/actions/{action_id}/approve", json={"by": "olga"})
        assert again.status_code == 409 and again.json() == {"code": "ACTION_NOT_PENDING"}
        assert (await client.post(f"/actions/{action_id}/approve", json={})).status_code == 400
        missing = await client.post("/actions/nope/reject", json={"by": "olga"})
        assert missing.status_code == 404 and missing.json() == {"code": "ACTION_UNKNOWN_ID"}
        executed = (await client.get("/actions", params={"status": "executed"})).json()
        assert [a["id"] for a in executed["actions"]] == [action_id]


async def test_a_proposal_can_be_rejected(serve) -> None:
    url, _app, _sim = serve(HELPER)
    _, events = await _chat(url, {"person": "ana", "message": EMAIL})
    action_id = events[-1][1]["actions"][0]
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        response = await client.post(
            f"/actions/{action_id}/reject", json={"by": "olga", "note": "not now"}
        )
        assert response.status_code == 200 and response.json()["status"] == "rejected"
        assert (await client.get("/actions", params={"status": "pending"})).json() == {
            "actions": []
        }


# --- health ----------------------------------------------------------------------------------
async def test_health_is_passive_by_default_and_the_probe_needs_the_secret(serve) -> None:
    url, _app, sim = serve(HELPER)
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        response = await client.get("/health/ai")
        assert response.status_code == 200 and response.json()["probed"] is False
        assert "health" in response.json()
        no_secret = await client.get("/health/ai", params={"probe": "1"})
        assert no_secret.status_code == 501 and no_secret.json()["probed"] is False
    assert sim.requests() == []  # nothing was probed

    url, _app, sim = serve(HELPER, secret="s3cret")
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        wrong = await client.get(
            "/health/ai", params={"probe": "1"}, headers={"x-probe-secret": "nope"}
        )
        assert wrong.status_code == 401 and wrong.json()["probed"] is False
        assert sim.requests() == []
        right = await client.get(
            "/health/ai", params={"probe": "1"}, headers={"x-probe-secret": "s3cret"}
        )
        assert right.status_code == 200 and right.json()["probed"] is True
    assert _personas(sim) == ["helper"]
