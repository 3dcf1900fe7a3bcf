"""Each tool_style's wire shape, read with plain HTTP."""

from __future__ import annotations

import json

import pytest
from simhelp import PROBE, WEATHER_TOOL, chat_body

from workbench.sim import SimServer


async def _message(http, model: str, prompt: str = PROBE, **kw):  # type: ignore[no-untyped-def]
    r = await http.post(
        "/v1/chat/completions", json=chat_body(model, prompt, tools=[WEATHER_TOOL], **kw)
    )
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


async def test_native_returns_tool_calls(http) -> None:
    choice = await _message(http, "sim-native")
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["function"] == {"name": "get_weather", "arguments": '{"city":"Paris"}'}


@pytest.mark.parametrize(
    ("model", "wire"),
    [
        ("qwen-prose", 'TOOL: get_weather\nARGS: {"city":"Paris"}'),
        (
            "hermes-prose",
            '<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>',
        ),
        ("xml-prose", '<tool_call name="get_weather">{"city":"Paris"}</tool_call>'),
    ],
)
async def test_prose_styles_write_the_call_in_content(http, model: str, wire: str) -> None:
    choice = await _message(http, model)
    assert choice["finish_reason"] == "stop"
    assert "tool_calls" not in choice["message"]
    assert wire in choice["message"]["content"]


async def test_none_style_answers_in_prose(http) -> None:
    choice = await _message(http, "sim-plain")
    assert "tool_calls" not in choice["message"]
    content = choice["message"]["content"]
    assert content.startswith('You asked: "What is the weather in Paris?')
    assert "TOOL:" not in content and "<tool_call" not in content


async def test_rejects_tools_says_so_and_answers_without_tools(http) -> None:
    r = await http.post(
        "/v1/chat/completions", json=chat_body("sim-rejects-tools", tools=[WEATHER_TOOL])
    )
    assert r.status_code == 400
    assert "tools are not supported for this model" in r.json()["error"]["message"]
    ok = await http.post("/v1/chat/completions", json=chat_body("sim-rejects-tools", "hi"))
    assert ok.status_code == 200


async def test_think_leak_and_lone_think(http) -> None:
    think = await _message(http, "think-leak")
    assert think["message"]["content"].startswith("<think>")
    assert think["message"]["content"].rstrip().endswith("</think>")
    assert think["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    lone = await _message(http, "lone-think")
    content = lone["message"]["content"]
    assert "<think>" not in content and content.count("</think>") == 1
    assert content.index("</think>") < content.index("TOOL: get_weather")


async def test_thought_parts_persona_sends_reasoning_content_on_openai_surface(http) -> None:
    r = await http.post("/v1/chat/completions", json=chat_body("gemini-flash", "Hello there"))
    message = r.json()["choices"][0]["message"]
    assert message["reasoning_content"] and "<think>" not in message["content"]


async def test_gemini_openai_stream_sends_whole_calls_without_index(http) -> None:
    body = chat_body(
        "models/gemini-flash", "Weather in Paris and Berlin?", tools=[WEATHER_TOOL], stream=True
    )
    async with http.stream("POST", "/v1beta/openai/chat/completions", json=body) as r:
        lines = [line async for line in r.aiter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    deltas = [json.loads(x[6:])["choices"][0]["delta"] for x in lines[:-1]]
    tool_deltas = [tc for d in deltas for tc in d.get("tool_calls", [])]
    assert tool_deltas and all("index" not in tc for tc in tool_deltas)
    # stream_concat_args: the two argument objects arrive concatenated in one string
    assert tool_deltas[0]["function"]["arguments"] == '{"city":"Paris"}{"city":"Berlin"}'
    assert tool_deltas[0]["id"]


async def test_text_persona_follows_a_prompt_protocol_without_tools_field(http) -> None:
    system = (
        "You can use tools. To call one write exactly:\n"
        '<tool_call name="tool_name">{"argument": "value"}</tool_call>\n'
        "Tools:\n- get_weather(city: string): current weather for a city\n"
    )
    body = {
        "model": "qwen-prose",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "What is the weather in Rome?"},
        ],
    }
    r = await http.post("/v1/chat/completions", json=body)
    assert (
        '<tool_call name="get_weather">{"city":"Rome"}</tool_call>'
        in (r.json()["choices"][0]["message"]["content"])
    )
    body["messages"].append(
        {"role": "assistant", "content": r.json()["choices"][0]["message"]["content"]}
    )
    body["messages"].append(
        {"role": "user", "content": '<tool_result name="get_weather">{"temp_c":18}</tool_result>'}
    )
    r2 = await http.post("/v1/chat/completions", json=body)
    assert r2.json()["choices"][0]["message"]["content"] == (
        'According to get_weather: {"temp_c":18}.'
    )


async def test_malformed_args_rate_is_seeded() -> None:
    fleet = {"seed": 3, "persona": [{"id": "m", "malformed_args_rate": 0.5}]}
    outcomes = []
    for _ in range(2):
        async with SimServer(fleet) as sim:
            import httpx

            async with httpx.AsyncClient(base_url=sim.openai_url) as c:
                run = []
                for _ in range(12):
                    r = await c.post("/chat/completions", json=chat_body("m", tools=[WEATHER_TOOL]))
                    run.append(
                        r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
                    )
                outcomes.append(run)
    assert outcomes[0] == outcomes[1]
    broken = [a for a in outcomes[0] if a != '{"city":"Paris"}']
    assert 0 < len(broken) < 12
    for a in broken:
        with pytest.raises(ValueError):
            json.loads(a)
        assert a.startswith('{"city":"Par')
