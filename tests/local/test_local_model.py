"""The real SmolLM2-135M model, served by llama.cpp on loopback, read by the same adapter."""

from __future__ import annotations

import os

import pytest

from workbench.errors import ConfigError
from workbench.eval.diagnostics.probe import probe_models
from workbench.local.server import MODEL_ID, LocalModel, local_model_available
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.types import ChatRequest, Reply

if not local_model_available():
    if os.environ.get("CI"):
        pytest.fail("CI must install the `local` extra: the real-model test cannot be skipped")
    pytest.skip("the `local` extra is not installed", allow_module_level=True)

pytestmark = pytest.mark.local_model


def local_provider(lm):
    return openai_compatible_provider(
        "local", lm.base_url, None, [{"id": MODEL_ID, "vision": False}], external=False
    )


async def test_probe_records_whatever_verdict_the_real_model_earns(local_model):
    provider = local_provider(local_model)
    [row] = await probe_models([provider], vision=True, timeout_s=120)
    await provider.aclose()
    assert (row.provider, row.model, row.capability) == ("local", MODEL_ID, "tools")
    assert row.status == 200, row.error  # a real answer came back and was classified
    assert row.verdict in ("native", "text", "unobserved")
    assert row.recorded == (row.verdict != "unobserved")
    assert row.evidence


async def test_real_model_answers_and_streams(local_model):
    provider = local_provider(local_model)
    request = ChatRequest.of("Name one colour.", max_tokens=24, temperature=0)
    reply = await provider.call(request)
    items = [x async for x in provider.stream(request)]
    await provider.aclose()
    assert reply.text and reply.usage.completion_tokens
    assert isinstance(items[-1], Reply) and items[-1].text
    assert "".join(x for x in items if isinstance(x, str)).strip() == items[-1].text


def test_missing_model_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError) as info:
        LocalModel(model_path=tmp_path / "none.gguf", start_timeout_s=30).start()
    assert info.value.code == "LOCAL_MODEL_UNAVAILABLE"
