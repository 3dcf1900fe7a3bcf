"""What a chat.completions body may say: a malformed message, an unknown field or a field the
route's providers cannot take is a 400 naming it, and nothing reaches any model; `stop` and
`response_format` reach the model as written; the ignored sampling fields are listed."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from gateway_server import CLIENT_KEY

from workbench.eval.gateway import openai_wire as wire

HEADERS = {"authorization": f"Bearer {CLIENT_KEY}"}
HI = {"role": "user", "content": "hi"}
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}

BAD = [
    ([{"role": "user", "content": 5}], "messages[0].content"),
    ([{"role": "user", "content": {"x": 1}}], "messages[0].content"),
    ([{"role": "user", "content": [{"type": "audio"}]}], "messages[0].content[0]"),
    ([{"role": "user", "content": [{"type": "text", "text": 3}]}], "messages[0].content[0].text"),
    ([{"role": "user", "content": [{"type": "image_url"}]}], "messages[0].content[0].image_url"),
    (["hi"], "messages[0]"),
    ([{"role": "robot", "content": "hi"}], "messages[0].role"),
    ([HI, {"role": "assistant", "tool_calls": {"id": "c1"}}], "messages[1].tool_calls"),
    ([HI, {"role": "assistant", "tool_calls": [{"id": "c1"}]}], "messages[1].tool_calls[0]"),
    ([HI, {"role": "assistant"}], "messages[1].content"),
    ([HI, {"role": "assistant", "content": None, "tool_calls": [CALL]}, {"role": "tool"}],
     "messages[2].tool_call_id"),
    ([HI, {"role": "user", "content": "x", "tool_calls": [CALL]}], "messages[1].tool_calls"),
]  # fmt: skip


@pytest.mark.parametrize(("messages", "param"), BAD)
def test_a_malformed_message_is_400_with_its_field_and_reaches_no_model(
    gateway, sim, messages, param
):
    gw = gateway("sim-native", "sim-plain")
    body = {"model": "workbench/chain", "messages": messages}
    got = httpx.post(gw.url + "/chat/completions", json=body, headers=HEADERS)
    assert got.status_code == 400, got.text
    error = got.json()["error"]
    assert error["code"] == "GATEWAY_REQUEST_INVALID" and error["param"] == param, error
    assert error["type"] == "invalid_request_error"
    assert sim.requests() == []  # nothing sent: no model billed for a client's mistake


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("functions", [{"name": "f"}]),  # not read: refused, never dropped in silence
        ("stop", 5),
        ("stop", ["a", "b", "c", "d", "e"]),
        ("response_format", {"type": "yaml"}),
        ("response_format", {"type": "json_schema"}),
    ],
)
def test_an_unknown_or_bad_field_is_400_naming_it(gateway, sim, field, value):
    gw = gateway("sim-native")
    body = {"model": "workbench/chain", "messages": [HI], field: value}
    got = httpx.post(gw.url + "/chat/completions", json=body, headers=HEADERS)
    assert got.status_code == 400, got.text
    assert got.json()["error"]["param"].startswith(field)
    assert sim.requests() == []


def test_stop_and_response_format_reach_the_model_as_written(gateway, sim):
    gw = gateway("sim-native")
    shape = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}
    body = {
        "model": "workbench/chain",
        "messages": [HI],
        "stop": ["\n\n"],
        "response_format": shape,
        "top_p": 0.5,  # ignored, as listed
        "seed": 3,
    }
    got = httpx.post(gw.url + "/chat/completions", json=body, headers=HEADERS)
    assert got.status_code == 200, got.text
    (sent,) = sim.requests()
    assert sent["body"]["stop"] == ["\n\n"] and sent["body"]["response_format"] == shape
    assert "top_p" not in sent["body"] and "seed" not in sent["body"]


def test_stop_is_refused_for_a_route_that_may_reach_gemini(tmp_path, sim, monkeypatch):
    from workbench.config.providers_file import load_config
    from workbench.eval.gateway import LoggedRouter
    from workbench.eval.gateway.app import create_app
    from workbench.eval.gateway.keys import ClientKeys

    monkeypatch.setenv("WB_TEST_GEMINI_KEY", "g-key-0123456789abcdef")
    path = tmp_path / "providers.toml"
    path.write_text(
        '[router]\nname = "gw"\n[[providers]]\nid = "g"\nadapter = "gemini"\n'
        f'base_url = "{sim.gemini_url}"\nkey_env = "WB_TEST_GEMINI_KEY"\n'
        'models = ["gemini-flash"]\n'
    )
    logged = LoggedRouter.open(load_config(path), tmp_path / "wb.duckdb", dataset="gw")
    app = create_app(logged, ClientKeys([CLIENT_KEY]))

    async def ask() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as http:
            body = {"messages": [HI], "stop": "END"}
            return await http.post("/v1/chat/completions", json=body, headers=HEADERS)

    got = asyncio.run(ask())
    asyncio.run(logged.aclose())
    assert got.status_code == 400 and got.json()["error"]["param"] == "stop"
    assert "may reach g:" in got.json()["error"]["message"] and sim.requests() == []


def test_the_ignored_fields_are_sampling_and_labels_only():
    assert {"top_p", "seed", "frequency_penalty", "presence_penalty", "user"} <= wire.IGNORED
    assert not wire.IGNORED & {"stop", "response_format", "tools", "n"}
