"""The simulator's model lists: what each persona declares, and `listed = false` left out."""

from __future__ import annotations

import httpx
import pytest

from workbench.sim import SimServer

FLEET = """
seed = 1
require_key = true

[[persona]]
id = "shown"
vision = true
context_window = 32768
reasoning = "think"

[[persona]]
id = "retired"
listed = false
tool_style = "rejects_tools"
vision = false
"""
KEY = {"authorization": "Bearer sim-key"}


@pytest.fixture(scope="module")
def sim():
    with SimServer(FLEET) as server:
        yield server


def test_an_unlisted_persona_is_in_no_model_list(sim):
    openai = httpx.get(f"{sim.openai_url}/models", headers=KEY).json()
    google_openai = httpx.get(f"{sim.gemini_openai_url}/models", headers=KEY).json()
    native = httpx.get(f"{sim.base_url}/v1beta/models", headers={"x-goog-api-key": "k"}).json()
    assert [m["id"] for m in openai["data"]] == ["shown"]
    assert [m["id"] for m in google_openai["data"]] == ["models/shown"]
    assert [m["name"] for m in native["models"]] == ["models/shown"]


def test_an_unlisted_persona_still_answers(sim):
    reply = httpx.post(
        f"{sim.openai_url}/chat/completions",
        headers=KEY,
        json={
            "model": "retired",
            "messages": [{"role": "user", "content": "Reply with exactly: ok"}],
        },
    )
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == "ok"


def test_a_listed_model_carries_what_its_persona_declares(sim):
    (shown,) = httpx.get(f"{sim.openai_url}/models", headers=KEY).json()["data"]
    assert shown["context_length"] == 32768
    assert shown["architecture"] == {
        "input_modalities": ["text", "image"],
        "output_modalities": ["text"],
    }
    assert {"tools", "reasoning"} <= set(shown["supported_parameters"])
    assert set(shown["pricing"].values()) == {"0"}
    (native,) = httpx.get(f"{sim.base_url}/v1beta/models", headers={"x-goog-api-key": "k"}).json()[
        "models"
    ]
    assert native["inputTokenLimit"] == 32768


def test_a_model_that_refuses_tools_does_not_list_them(sim):
    retired = httpx.get(f"{sim.openai_url}/models/retired", headers=KEY).json()
    assert "tools" not in retired["supported_parameters"]
    assert retired["architecture"]["input_modalities"] == ["text"]


def test_a_keyless_list_is_refused_when_the_fleet_wants_keys(sim):
    assert httpx.get(f"{sim.openai_url}/models").status_code == 401
    assert httpx.get(f"{sim.base_url}/v1beta/models").status_code == 403
