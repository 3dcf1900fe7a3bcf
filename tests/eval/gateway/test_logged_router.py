"""`LoggedRouter` over the real simulator and a real DuckDB file: every route an item and an
output of one run, beside its attempts, route and verdicts, read back with `RunFrames`."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError, RoutingError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.diagnostics.probe import TOOL_PROMPT, WEATHER_TOOL
from workbench.eval.gateway import LoggedRouter
from workbench.types import ChatRequest


def providers_file(tmp_path, sim, *models: str, name: str = "gw"):
    path = tmp_path / "providers.toml"
    listed = ", ".join(f'"{m}"' for m in models)
    path.write_text(
        f'[router]\nname = "{name}"\n[[providers]]\nid = "sim"\n'
        f'base_url = "{sim.openai_url}"\nkey_env = "WB_TEST_GW_KEY"\nmodels = [{listed}]\n'
    )
    return path


@pytest.fixture
def opened(tmp_path, sim, monkeypatch):
    monkeypatch.setenv("WB_TEST_GW_KEY", "sk-provider-secret-0123456789")

    def make(*models: str, **kw):
        return LoggedRouter.open(
            providers_file(tmp_path, sim, *models), tmp_path / "wb.duckdb", dataset="gateway", **kw
        )

    return make


async def test_a_route_is_an_item_and_an_output_of_a_finished_run(opened, tmp_path):
    logged = opened("sim-native", "sim-plain")
    assert logged.models() == [("sim", "sim-native"), ("sim", "sim-plain")]
    result = await logged.route(ChatRequest.of("Say hello"), item_id="req-1")
    assert result.key == "sim:sim-native" and result.value.text
    run_id = logged.run_id
    await logged.aclose()
    await logged.aclose()  # idempotent
    with RunFrames.open(tmp_path / "wb.duckdb") as wb:
        run = wb.runs().set_index("run_id").loc[run_id]
        assert run["status"] == "finished" and run["dataset"] == "gateway"
        out = wb.outputs(run_id)
        assert list(out["item_id"]) == ["req-1"] and out["raw"][0] == result.value.text
        assert out["key"][0] == "sim:sim-native" and out["error_code"].isna().all()
        attempts = wb.attempts(run_id)
        assert list(attempts["outcome"]) == ["ok"] and set(attempts["item_id"]) == {"req-1"}
        assert len(wb.sql("SELECT * FROM routes WHERE run_id = ?", [run_id])) == 1
        items = wb.sql("SELECT item_id, prompt FROM items WHERE run_id = ?", [run_id])
        assert items.values.tolist() == [["req-1", "Say hello"]]
        runs = wb.sql("SELECT config::VARCHAR AS c FROM runs WHERE run_id = ?", [run_id])
        assert "sk-provider-secret" not in runs["c"][0]


async def test_a_prose_caller_s_calls_come_back_as_tool_calls_and_its_verdict_is_logged(
    opened, tmp_path
):
    logged = opened("qwen-prose")
    request = ChatRequest.of(TOOL_PROMPT, tools=[WEATHER_TOOL], max_tokens=200)
    result = await logged.route(request, item_id="t1")
    assert [c.name for c in result.value.tool_calls] == ["get_weather"]
    assert result.value.tool_calls[0].source == "text"
    run_id = logged.run_id
    await logged.aclose()
    with RunFrames.open(tmp_path / "wb.duckdb") as wb:
        out = wb.outputs(run_id)
        assert "get_weather" in out["tool_calls"][0] and out["protocol"][0] == "text"
        verdicts = wb.verdicts(run_id)
        assert "text" in set(verdicts["verdict"])


async def test_a_pinned_model_is_the_only_one_asked_and_an_unknown_one_is_refused(opened):
    logged = opened("sim-native", "sim-plain", model="sim:sim-plain")
    result = await logged.route(ChatRequest.of("hi"), item_id="a")
    assert result.key == "sim:sim-plain"
    chain = await logged.route(ChatRequest.of("hi"), item_id="b", model="workbench/chain")
    assert chain.key == "sim:sim-native"
    with pytest.raises(ConfigError) as info:
        await logged.route(ChatRequest.of("hi"), item_id="c", model="sim:gpt-9")
    assert info.value.code == "GATEWAY_MODEL_UNKNOWN" and "sim:sim-native" in str(info.value)
    await logged.aclose()
    with pytest.raises(ConfigError) as info:
        opened("sim-native", model="other:sim-native")
    assert info.value.code == "GATEWAY_MODEL_UNKNOWN"


async def test_a_failed_route_is_logged_with_its_code_then_raised(opened, tmp_path):
    logged = opened("no-such-persona")
    with pytest.raises(RoutingError) as info:
        await logged.route(ChatRequest.of("hi"), item_id="f1")
    run_id = logged.run_id
    await logged.aclose()
    with RunFrames.open(tmp_path / "wb.duckdb") as wb:
        out = wb.outputs(run_id)
        assert out["error_code"][0] == info.value.code == "AI_UNAVAILABLE"
        assert list(wb.attempts(run_id)["outcome"]) == ["error"]


async def test_a_stream_left_early_is_logged_cancelled_attempt_route_and_output(opened, tmp_path):
    logged = opened("sim-slow")
    request = ChatRequest.of("Tell me a long story about the sea", max_tokens=400)
    stream = logged.stream(request, item_id="s1")
    first = await anext(stream)
    assert isinstance(first, str) and first
    await stream.aclose()  # the client hung up after its first delta
    whole = [i async for i in logged.stream(ChatRequest.of("hi"), item_id="s2")]
    assert whole[-1].key == "sim:sim-slow"
    run_id = logged.run_id
    await logged.aclose()
    with RunFrames.open(tmp_path / "wb.duckdb") as wb:
        out = wb.outputs(run_id).set_index("item_id")
        assert out.loc["s1", "error_code"] == "AI_CANCELLED"
        assert out.loc["s1", "raw"].startswith(first)
        assert out["error_code"].isna()["s2"]
        attempts = wb.attempts(run_id).set_index("item_id")
        assert attempts.loc["s1", "outcome"] == "cancelled"
        assert attempts.loc["s2", "outcome"] == "ok"
        routes = wb.sql(
            "SELECT item_id, coalesce(error_code, 'ok') FROM routes WHERE run_id = ?", [run_id]
        )
        assert dict(routes.values.tolist()) == {"s1": "AI_CANCELLED", "s2": "ok"}


async def test_each_conversation_is_masked_before_it_leaves(opened, sim, tmp_path):
    logged = opened("sim-native")
    await logged.route(ChatRequest.of("Write to ana.lopez@example.org today"), item_id="m1")
    await logged.aclose()
    sent = [r["body"]["messages"][-1]["content"] for r in sim.requests()]
    assert sent and all("ana.lopez@example.org" not in s for s in sent)
    unmasked = opened("sim-native", mask=False)
    await unmasked.route(ChatRequest.of("Write to ana.lopez@example.org today"), item_id="m3")
    await unmasked.aclose()
    assert "ana.lopez@example.org" in sim.requests()[-1]["body"]["messages"][-1]["content"]
