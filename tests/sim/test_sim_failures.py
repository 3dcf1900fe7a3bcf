"""Seeded failure schedules fire exactly at their ordinals, deterministically."""

from __future__ import annotations

import json

import httpx
import pytest
from simhelp import WEATHER_TOOL, chat_body

from workbench.sim import SimServer
from workbench.sim.failures import FailureSchedule
from workbench.sim.fleet import load_fleet


def _fleet(failures: str, seed: int = 1, extra: str = "") -> str:
    return f'seed = {seed}\n[[persona]]\nid = "f"\n{extra}\nfailures = [{failures}]\n'


async def _statuses(sim: SimServer, n: int, **kw) -> list[int]:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(base_url=sim.openai_url, timeout=5) as c:
        out = []
        for _ in range(n):
            r = await c.post("/chat/completions", json=chat_body("f", "hi", **kw))
            out.append(r.status_code)
        return out


async def test_schedule_fires_exactly_at_ordinals_and_restarts_on_reset() -> None:
    toml = _fleet('{kind = "503", at = [2, 4]}, {kind = "500", at = [3]}, {kind = "408", at = [5]}')
    async with SimServer(toml) as sim:
        assert await _statuses(sim, 6) == [200, 503, 500, 503, 408, 200]
        await sim.reset()
        assert await _statuses(sim, 3) == [200, 503, 500]


async def test_rate_schedule_is_deterministic_with_the_same_seed() -> None:
    runs = []
    for seed in (11, 11, 12):
        async with SimServer(_fleet('{kind = "502", rate = 0.3}', seed=seed)) as sim:
            runs.append(await _statuses(sim, 20))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert 0 < runs[0].count(502) < 20
    assert set(runs[0]) == {200, 502}
    fleet = load_fleet(_fleet('{kind = "502", rate = 0.3}', seed=11))
    preview = FailureSchedule(fleet.personas["f"], 11).preview(20)
    assert [502 if k else 200 for k in preview] == runs[0]


async def test_scheduled_429_carries_retry_after() -> None:
    async with SimServer(_fleet('{kind = "429", at = [1]}', extra="retry_after_s = 7")) as sim:
        async with httpx.AsyncClient(base_url=sim.openai_url) as c:
            r = await c.post("/chat/completions", json=chat_body("f", "hi"))
    assert r.status_code == 429
    assert r.headers["retry-after"] == "7"
    assert "try again in 7s" in r.json()["error"]["message"]


async def test_empty_truncated_malformed_context_length() -> None:
    toml = _fleet(
        '{kind = "empty", at = [1]}, {kind = "truncated", at = [2]}, '
        '{kind = "malformed", at = [3]}, {kind = "context_length", at = [4]}'
    )
    async with SimServer(toml) as sim:
        async with httpx.AsyncClient(base_url=sim.openai_url) as c:
            prompt = "Tell me a long story about Paris and its old bridges, please."
            empty = await c.post(
                "/chat/completions", json=chat_body("f", "Weather in Paris?", tools=[WEATHER_TOOL])
            )
            cut = await c.post("/chat/completions", json=chat_body("f", prompt))
            bad = await c.post("/chat/completions", json=chat_body("f", prompt))
            ctx = await c.post("/chat/completions", json=chat_body("f", prompt))
            normal = await c.post("/chat/completions", json=chat_body("f", prompt))
    msg = empty.json()["choices"][0]["message"]
    assert empty.status_code == 200 and msg["content"] == "" and "tool_calls" not in msg
    full = normal.json()["choices"][0]["message"]["content"]
    truncated = cut.json()["choices"][0]
    assert truncated["finish_reason"] == "length"
    assert full.startswith(truncated["message"]["content"]) and len(
        truncated["message"]["content"]
    ) < len(full)
    assert bad.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad.text)
    assert ctx.status_code == 400
    assert ctx.json()["error"]["message"].startswith(
        "This model's maximum context length is 8192 tokens"
    )


async def test_stream_cut_drops_the_connection_without_done() -> None:
    async with SimServer(_fleet('{kind = "stream_cut", at = [1]}')) as sim:
        async with httpx.AsyncClient(base_url=sim.openai_url) as c:
            seen: list[str] = []
            with pytest.raises(httpx.RemoteProtocolError):
                async with c.stream(
                    "POST",
                    "/chat/completions",
                    json=chat_body("f", "Tell me about the bridges of Paris", stream=True),
                ) as r:
                    async for line in r.aiter_lines():
                        seen.append(line)
            texts = [
                json.loads(x[6:])["choices"][0]["delta"].get("content")
                for x in seen
                if x.startswith("data: {")
            ]
            assert 1 <= len([t for t in texts if t]) <= 3
            assert "data: [DONE]" not in seen
            # the next request streams to the end
            async with c.stream(
                "POST", "/chat/completions", json=chat_body("f", "Tell me about Paris", stream=True)
            ) as r:
                lines = [line async for line in r.aiter_lines() if line]
            assert lines[-1] == "data: [DONE]"


async def test_hang_outlasts_a_client_timeout() -> None:
    async with SimServer(_fleet('{kind = "hang", at = [1]}', extra="hang_s = 5")) as sim:
        async with httpx.AsyncClient(base_url=sim.openai_url, timeout=0.3) as c:
            with pytest.raises(httpx.ReadTimeout):
                await c.post("/chat/completions", json=chat_body("f", "hi"))
            r = await c.post("/chat/completions", json=chat_body("f", "hi"))
            assert r.status_code == 200


async def test_default_flaky_persona_succeeds_first_then_fails(sim, http) -> None:
    assert sim.schedule("sim-flaky", 3) == [None, "503", "500"]
    codes = []
    for _ in range(3):
        r = await http.post("/v1/chat/completions", json=chat_body("sim-flaky", "hi"))
        codes.append(r.status_code)
    assert codes == [200, 503, 500]
