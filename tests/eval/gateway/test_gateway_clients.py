"""Other tools as the gateway's clients, unchanged: LiteLLM's SDK (`openai/<model>` with an
`api_base`) and Inspect AI's `openai-api` provider — each gets the router's answers, a
prose-calling model's calls as tool calls, and every attempt in the DuckDB file."""

from __future__ import annotations

import json
import os
import warnings

import pytest
from gateway_server import CLIENT_KEY

from workbench.eval.analysis.frames import RunFrames
from workbench.eval.diagnostics.probe import TOOL_PROMPT, WEATHER_TOOL

pytestmark = pytest.mark.sdk


@pytest.fixture(scope="module")
def litellm():
    # LiteLLM fetches its price list from GitHub when imported, unless told to read its own.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with warnings.catch_warnings():  # its pydantic models' own warnings, at import
        warnings.simplefilter("ignore")
        return pytest.importorskip("litellm")


async def test_litellm_as_a_client_json_stream_and_prose_tools(gateway, litellm):
    gw = gateway("sim-native", "qwen-prose")
    common = {"api_base": gw.url, "api_key": CLIENT_KEY, "num_retries": 0}
    said = await litellm.acompletion(
        model="openai/workbench/chain", messages=[{"role": "user", "content": "hi"}], **common
    )
    assert said.choices[0].message.content
    pieces = await litellm.acompletion(
        model="openai/workbench/chain",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        **common,
    )
    text = "".join([p.choices[0].delta.content or "" async for p in pieces])
    assert text
    called = await litellm.acompletion(
        model="openai/sim:qwen-prose",
        messages=[{"role": "user", "content": TOOL_PROMPT}],
        tools=[WEATHER_TOOL],
        **common,
    )
    (call,) = called.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    with pytest.raises(litellm.AuthenticationError):
        await litellm.acompletion(
            model="openai/workbench/chain",
            messages=[{"role": "user", "content": "hi"}],
            **(common | {"api_key": "wrong-key-0123456789abcdef"}),
        )
    gw.stop()
    with RunFrames.open(gw.db) as wb:
        assert len(wb.outputs(gw.run_id)) == len(wb.attempts(gw.run_id)) == 3


def test_inspect_s_openai_api_provider_pointed_at_the_gateway(gateway, monkeypatch, tmp_path):
    inspect_ai = pytest.importorskip("inspect_ai")
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate

    gw = gateway("sim-native")
    monkeypatch.setenv("WORKBENCH_API_KEY", CLIENT_KEY)
    monkeypatch.setenv("WORKBENCH_BASE_URL", gw.url)
    task = inspect_ai.Task(
        dataset=[
            Sample(input="Reply with exactly: pong", target="pong", id=f"s{i}") for i in (1, 2)
        ],
        solver=generate(),
        scorer=includes(),
    )
    (log,) = inspect_ai.eval(
        task,
        model="openai-api/workbench/chain",
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_retries=0,
    )
    assert log.status == "success" and len(log.samples) == 2
    gw.stop()
    with RunFrames.open(gw.db) as wb:
        out = wb.outputs(gw.run_id)
        assert len(out) == 2 and out["error_code"].isna().all()
        assert set(out["raw"]) == {s.output.completion for s in log.samples}
