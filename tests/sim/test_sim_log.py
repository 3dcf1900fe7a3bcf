"""The request log (for masking-leak audits), /sim/reset, unknown personas."""

from __future__ import annotations

import json

import httpx
from simhelp import chat_body

SECRET = "sk-sim-SECRET-0123456789abcdef"


async def test_log_records_whole_bodies_and_never_the_key(sim, http) -> None:
    body = chat_body("sim-native", "My name is Alice Example, reply with exactly: ok")
    await http.post(
        "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {SECRET}"}
    )
    gem = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
    await http.post(f"/v1beta/models/gemini-flash:generateContent?key={SECRET}", json=gem)
    await http.post(
        "/v1beta/models/sim-native:streamGenerateContent?alt=sse",
        json=gem,
        headers={"x-goog-api-key": SECRET},
    )
    await http.post("/v1/chat/completions", json=chat_body("sim-native", "no key"))
    log = await sim.requests()
    assert [e["seq"] for e in log] == [1, 2, 3, 4]
    assert log[0]["body"] == body and log[0]["auth"] is True
    assert log[0]["surface"] == "openai" and log[0]["persona"] == "sim-native"
    assert log[1]["surface"] == "gemini" and log[1]["body"] == gem and log[1]["auth"] is True
    assert log[2]["query"] == {"alt": "sse"} and log[2]["stream"] is True
    assert log[3]["auth"] is False
    assert all(e["status"] == 200 for e in log)
    assert SECRET not in json.dumps(log)
    over_http = (await http.get("/sim/requests")).text
    assert SECRET not in over_http and "Alice Example" in over_http


async def test_reset_clears_log_and_ordinals(sim, http) -> None:
    for _ in range(2):
        await http.post("/v1/chat/completions", json=chat_body("sim-flaky", "hi"))
    assert len(await sim.requests()) == 2
    assert (await http.post("/sim/reset")).json() == {"ok": True}
    assert (await http.get("/sim/requests")).json() == []
    r = await http.post("/v1/chat/completions", json=chat_body("sim-flaky", "hi"))
    assert r.status_code == 200  # ordinal 1 again: the schedule restarted
    assert sim.requests()[0]["ordinal"] == 1


async def test_unknown_persona_is_404_in_each_surface_style(sim, http) -> None:
    r = await http.post("/v1/chat/completions", json=chat_body("ghost", "hi"))
    assert r.status_code == 404
    assert r.json() == {
        "error": {
            "message": "The model `ghost` does not exist",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }
    g = await http.post(
        "/v1beta/models/ghost:generateContent", json={"contents": [{"parts": [{"text": "hi"}]}]}
    )
    assert g.status_code == 404
    assert g.json()["error"]["status"] == "NOT_FOUND" and g.json()["error"]["code"] == 404
    log = await sim.requests()
    assert [e["status"] for e in log] == [404, 404] and log[0]["persona"] is None


def test_require_key_fleet_refuses_keyless_requests() -> None:
    """Also the sync form: `with SimServer(...)`."""
    from workbench.sim import SimServer

    fleet = {"require_key": True, "persona": [{"id": "k"}]}
    with SimServer(fleet) as sim:
        with httpx.Client(base_url=sim.base_url) as c:
            assert c.post("/v1/chat/completions", json=chat_body("k", "hi")).status_code == 401
            ok = c.post(
                "/v1/chat/completions",
                json=chat_body("k", "hi"),
                headers={"authorization": "Bearer x"},
            )
            assert ok.status_code == 200
            g = c.post(
                "/v1beta/models/k:generateContent", json={"contents": [{"parts": [{"text": "hi"}]}]}
            )
            assert g.status_code == 403
