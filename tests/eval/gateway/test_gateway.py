"""The gateway through the official openai SDK, over loopback, routing to the simulator; every
request, attempt, route and verdict read back from the DuckDB file afterwards."""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest
from gateway_server import CLIENT_KEY, PROVIDER_KEY

from workbench.eval.analysis.frames import RunFrames
from workbench.eval.diagnostics.probe import TOOL_PROMPT, WEATHER_TOOL

pytestmark = pytest.mark.sdk


def client(gw, key: str = CLIENT_KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url, api_key=key, max_retries=0, timeout=30)


def test_json_and_streaming_answers_through_the_openai_sdk(gateway):
    gw = gateway("sim-native", "sim-plain")
    sdk = client(gw)
    said = sdk.chat.completions.create(
        model="workbench/chain", messages=[{"role": "user", "content": "Say hello"}]
    )
    assert said.choices[0].message.content and said.choices[0].finish_reason == "stop"
    assert said.model == "sim:sim-native" and said.usage.total_tokens > 0
    chunks = list(
        sdk.chat.completions.create(
            model="sim:sim-plain",
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Say hello"},
            ],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text and chunks[-1].usage.completion_tokens > 0
    assert chunks[-1].model == "sim:sim-plain"  # the last chunks say who answered
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    gw.stop()
    with RunFrames.open(gw.db) as wb:
        out = wb.outputs(gw.run_id)
        assert sorted(out["key"]) == ["sim:sim-native", "sim:sim-plain"]
        assert set(out["raw"]) == {said.choices[0].message.content, text}
        assert len(wb.attempts(gw.run_id)) == 2
        assert len(wb.sql("SELECT * FROM routes WHERE run_id = ?", [gw.run_id])) == 2
        assert wb.runs().set_index("run_id").loc[gw.run_id, "status"] == "finished"


@pytest.mark.parametrize("stream", [False, True])
def test_native_and_prose_calls_both_come_back_as_tool_calls(gateway, stream):
    gw = gateway("sim-native", "qwen-prose")
    sdk = client(gw)
    messages = [{"role": "user", "content": TOOL_PROMPT}]
    calls = {}
    for model in ("sim:sim-native", "sim:qwen-prose"):
        if stream:
            pieces = list(
                sdk.chat.completions.create(
                    model=model, messages=messages, tools=[WEATHER_TOOL], stream=True
                )
            )
            deltas = [d for p in pieces if p.choices for d in p.choices[0].delta.tool_calls or []]
            finish = [p.choices[0].finish_reason for p in pieces if p.choices][-1]
            got = [(d.function.name, json.loads(d.function.arguments)) for d in deltas]
        else:
            said = sdk.chat.completions.create(model=model, messages=messages, tools=[WEATHER_TOOL])
            finish = said.choices[0].finish_reason
            got = [
                (c.function.name, json.loads(c.function.arguments))
                for c in said.choices[0].message.tool_calls
            ]
        assert finish == "tool_calls"
        calls[model] = got
    assert (
        calls["sim:sim-native"] == calls["sim:qwen-prose"] == [("get_weather", {"city": "Paris"})]
    )
    gw.stop()
    with RunFrames.open(gw.db) as wb:
        verdicts = wb.verdicts(gw.run_id)
        assert {"native", "text"} <= set(verdicts["verdict"])
        assert set(wb.outputs(gw.run_id)["protocol"]) == {"native", "text"}


def test_a_tool_result_sent_back_gets_the_final_answer(gateway):
    gw = gateway("sim-native")
    sdk = client(gw)
    messages = [{"role": "user", "content": TOOL_PROMPT}]
    first = sdk.chat.completions.create(
        model="workbench/chain", messages=messages, tools=[WEATHER_TOOL]
    )
    call = first.choices[0].message.tool_calls[0]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 18}'},
    ]
    final = sdk.chat.completions.create(
        model="workbench/chain", messages=messages, tools=[WEATHER_TOOL]
    )
    assert final.choices[0].finish_reason == "stop" and final.choices[0].message.content


def test_models_lists_the_chain_and_every_model(gateway):
    gw = gateway("sim-native", "qwen-prose")
    ids = [m.id for m in client(gw).models.list()]
    assert ids == ["workbench/chain", "sim:sim-native", "sim:qwen-prose"]


@pytest.mark.parametrize("key", [None, "not-a-key-of-this-gateway-0000"])
def test_no_key_or_a_bad_key_is_401_in_openai_s_shape(gateway, key):
    gw = gateway("sim-native")
    headers = {"authorization": f"Bearer {key}"} if key else {}
    for method, path in (("POST", "/chat/completions"), ("GET", "/models")):
        got = httpx.request(
            method, gw.url + path, headers=headers, json={"model": "workbench/chain"}
        )
        assert got.status_code == 401
        error = got.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["code"] == "invalid_api_key"
        assert error["message"].startswith("GATEWAY_UNAUTHORIZED")
        assert (key or "") not in got.text or not key
    with pytest.raises(openai.AuthenticationError):
        client(gw, key or "x").chat.completions.create(
            model="workbench/chain", messages=[{"role": "user", "content": "hi"}]
        )
    gw.stop()
    with RunFrames.open(gw.db) as wb:
        assert wb.outputs(gw.run_id).empty and wb.attempts(gw.run_id).empty  # nothing routed


def test_an_oversized_body_is_413_and_an_unknown_model_404(gateway):
    gw = gateway("sim-native", max_body_bytes=4096)
    big = {"model": "workbench/chain", "messages": [{"role": "user", "content": "x" * 5000}]}
    got = httpx.post(
        gw.url + "/chat/completions", json=big, headers={"authorization": f"Bearer {CLIENT_KEY}"}
    )
    assert got.status_code == 413 and got.json()["error"]["code"] == "GATEWAY_BODY_TOO_LARGE"
    with pytest.raises(openai.NotFoundError) as info:
        client(gw).chat.completions.create(
            model="sim:gpt-9", messages=[{"role": "user", "content": "hi"}]
        )
    assert info.value.code == "model_not_found" and "sim:sim-native" in info.value.message
    with pytest.raises(openai.BadRequestError) as bad:
        client(gw).chat.completions.create(
            model="workbench/chain",
            messages=[{"role": "user", "content": "hi"}],
            tools=[WEATHER_TOOL],
            tool_choice="required",
        )
    assert bad.value.code == "GATEWAY_REQUEST_INVALID" and "tool_choice" in bad.value.message


def test_a_failed_route_is_an_openai_error_without_the_provider_s_key(gateway):
    gw = gateway("no-such-persona")
    with pytest.raises(openai.APIStatusError) as info:
        client(gw).chat.completions.create(
            model="workbench/chain", messages=[{"role": "user", "content": "hi"}]
        )
    assert info.value.status_code == 503 and info.value.code == "AI_UNAVAILABLE"
    assert PROVIDER_KEY not in info.value.response.text
    gw.stop()
    with RunFrames.open(gw.db) as wb:
        assert list(wb.outputs(gw.run_id)["error_code"]) == ["AI_UNAVAILABLE"]
        rows = wb.sql("SELECT * FROM attempts").to_csv() + wb.sql("SELECT * FROM runs").to_csv()
        assert PROVIDER_KEY not in rows and CLIENT_KEY not in rows


def test_a_client_that_drops_a_stream_leaves_its_attempt_and_output_logged_cancelled(gateway, sim):
    gw = gateway("sim-slow")
    body = {
        "model": "workbench/chain",
        "messages": [{"role": "user", "content": "Tell me a long story about the sea"}],
        "max_tokens": 400,
        "stream": True,
    }
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    with httpx.stream("POST", gw.url + "/chat/completions", json=body, headers=headers) as got:
        lines = got.iter_lines()
        assert next(lines).startswith("data: ")  # the first chunk, then the client hangs up
    for _ in range(1000):  # the hang-up alone ends the route (10 s at most), before any stop
        gw.logged.store.flush()  # under the store's lock: the gateway's thread writes too
        if gw.logged.store.output_tally(gw.run_id).outputs:
            break
        time.sleep(0.01)
    else:
        raise AssertionError("the client's hang-up did not end its route")
    gw.stop()
    with RunFrames.open(gw.db) as wb:
        out = wb.outputs(gw.run_id)
        assert list(out["error_code"]) == ["AI_CANCELLED"]
        assert list(wb.attempts(gw.run_id)["outcome"]) == ["cancelled"]
        routes = wb.sql("SELECT error_code FROM routes WHERE run_id = ?", [gw.run_id])
        assert list(routes["error_code"]) == ["AI_CANCELLED"]


def test_provider_failures_map_to_openai_s_statuses():
    from workbench.errors import NoVisionLinkError, ProviderError, RoutingError
    from workbench.eval.gateway.app import error_response
    from workbench.routing.admission import AdmissionDenied
    from workbench.routing.retry_hint import RetryHint

    later = int(time.time() * 1000) + 30_000
    limited = RoutingError("no model could answer", retry=RetryHint("rate_limit", later))
    got = error_response(limited)
    assert got.status_code == 429 and 29 <= int(got.headers["retry-after"]) <= 31
    assert json.loads(got.body)["error"]["code"] == "AI_UNAVAILABLE"
    broken = ProviderError("bad body", kind="outage", status_code=200, provider="p", model="m")
    assert error_response(broken).status_code == 502
    assert error_response(RoutingError("no model could answer")).status_code == 503
    assert error_response(NoVisionLinkError(["sim:blind"])).status_code == 400
    denied = error_response(AdmissionDenied("paced", retry_after_s=2.5))
    assert denied.status_code == 429 and denied.headers["retry-after"] == "3"


async def test_a_stream_broken_after_its_first_token_ends_with_an_error_event(tmp_path):
    """Through the gateway's app: the client has the text, so the route is not retried; the
    stream ends with OpenAI's error event, and the output keeps the text and the code."""
    from workbench.config.providers_file import ProvidersConfig
    from workbench.eval.gateway.app import create_app
    from workbench.eval.gateway.keys import ClientKeys
    from workbench.providers import ScriptedProvider
    from workbench.providers.testing import Fail, Stream

    key = CLIENT_KEY
    broken = ScriptedProvider("s", [{"id": "m"}], [Stream(["Hello ", "wor"], then=Fail(503))])
    from workbench.eval.gateway import LoggedRouter

    logged = LoggedRouter.open(ProvidersConfig("s", [broken]), tmp_path / "wb.duckdb", dataset="gw")
    app = create_app(logged, ClientKeys([key]))
    body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://gateway"
    ) as http:
        got = await http.post(
            "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {key}"}
        )
    events = [line[6:] for line in got.text.splitlines() if line.startswith("data: ")]
    shown = "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in map(json.loads, events[:-1])
        if c.get("choices")
    )
    assert got.status_code == 200 and shown == "Hello wor"
    assert json.loads(events[-1])["error"]["code"] == "AI_STREAM_INTERRUPTED"
    run_id = logged.run_id
    await logged.aclose()
    with RunFrames.open(tmp_path / "wb.duckdb") as wb:
        out = wb.outputs(run_id)
        assert list(out["error_code"]) == ["AI_STREAM_INTERRUPTED"] and out["raw"][0] == shown
