"""Persona behaviours: vision, blind 400s, system refusal, empty after a tool result, probe."""

from __future__ import annotations

import base64

import pytest
from simhelp import PROBE, WEATHER_TOOL, chat_body, image_message

from workbench.sim import encode_png, load_fleet


async def test_vision_persona_names_the_dominant_colour(http) -> None:
    for colour, rgb in (("red", (250, 10, 10)), ("blue", (10, 20, 240)), ("white", (255,) * 3)):
        body = {
            "model": "sim-native",
            "messages": [image_message("What colour is this image?", encode_png(4, 4, rgb))],
        }
        r = await http.post("/v1/chat/completions", json=body)
        assert r.status_code == 200
        assert r.json()["choices"][0]["message"]["content"] == f"The image is mostly {colour}."


async def test_vision_on_native_gemini_surface(http) -> None:
    png = encode_png(3, 3, (0, 160, 0))
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "Describe the picture in one word."},
                    {
                        "inlineData": {
                            "mimeType": "image/png",
                            "data": base64.b64encode(png).decode(),
                        }
                    },
                ],
            }
        ]
    }
    r = await http.post("/v1beta/models/gemini-flash:generateContent", json=body)
    parts = r.json()["candidates"][0]["content"]["parts"]
    assert [p["text"] for p in parts if not p.get("thought")] == ["green"]


async def test_blind_persona_refuses_images(http) -> None:
    body = {
        "model": "sim-blind",
        "messages": [image_message("What is this?", encode_png(2, 2, (255, 0, 0)))],
    }
    r = await http.post("/v1/chat/completions", json=body)
    assert r.status_code == 400
    assert "image input is not supported by this model" in r.json()["error"]["message"]
    g = await http.post(
        "/v1beta/models/sim-blind:generateContent",
        json={"contents": [{"parts": [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]}]},
    )
    assert g.status_code == 400 and g.json()["error"]["status"] == "INVALID_ARGUMENT"


async def test_refuses_system_on_openai_surface(http) -> None:
    body = {
        "model": "gemma-sys",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
    }
    r = await http.post("/v1beta/openai/chat/completions", json=body)
    assert r.status_code == 400
    assert r.json()["error"]["message"] == (
        "Developer instruction is not enabled for models/gemma-sys"
    )
    assert (
        await http.post("/v1/chat/completions", json={**body, "model": "sim-native"})
    ).status_code == 200


async def test_empty_after_tool_result_on_openai_surface(http) -> None:
    messages = [
        {"role": "user", "content": PROBE},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 20}'},
    ]
    flash = await http.post(
        "/v1beta/openai/chat/completions",
        json={"model": "models/gemini-flash", "messages": messages, "tools": [WEATHER_TOOL]},
    )
    message = flash.json()["choices"][0]["message"]
    assert flash.status_code == 200
    assert message["content"] == "" and "tool_calls" not in message
    native = await http.post(
        "/v1/chat/completions", json={"model": "sim-native", "messages": messages}
    )
    assert native.json()["choices"][0]["message"]["content"] == (
        'According to get_weather: {"temp_c": 20}.'
    )


async def test_probe_gets_a_2xx_from_every_persona_but_the_rejecter(sim, http) -> None:
    fleet = load_fleet()
    for pid, persona in fleet.personas.items():
        r = await http.post("/v1/chat/completions", json=chat_body(pid, tools=[WEATHER_TOOL]))
        if pid == "sim-rejects-tools":
            assert r.status_code == 400
            assert persona.expect["tools"] == "none"
            continue
        assert r.status_code == 200, (pid, r.text)
        message = r.json()["choices"][0]["message"]
        expected = persona.expect["tools"]
        if expected == "native":
            assert message["tool_calls"][0]["function"]["name"] == "get_weather", pid
        elif expected == "text":
            assert "get_weather" in message["content"] and "tool_calls" not in message, pid
        else:
            assert "tool_calls" not in message and "get_weather" not in message["content"], pid


@pytest.mark.parametrize("pid", ["sim-native", "sim-blind", "qwen-prose", "gemini-flash"])
async def test_expect_vision_matches_behaviour(http, pid: str) -> None:
    expect = load_fleet().personas[pid].expect["vision"]
    body = {
        "model": pid,
        "messages": [image_message("What colour?", encode_png(2, 2, (0, 0, 255)))],
    }
    r = await http.post("/v1/chat/completions", json=body)
    if expect == "native":
        assert "blue" in r.json()["choices"][0]["message"]["content"]
    else:
        assert r.status_code == 400
