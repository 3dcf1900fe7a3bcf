"""Narrow edge cases of the adapters that no honest server produces on demand (respx).

respx's fixture under `respx(using="httpx")` mocks at the httpx client, so it sees every transport (the default
aiohttp one included); respx's default mocks httpcore, which only `http_transport="httpx"` uses.
"""

from __future__ import annotations

import json

import httpx
import pytest

from workbench.errors import ProviderError
from workbench.providers import gemini_provider, openai_compatible_provider
from workbench.types import ChatRequest, ToolCall, user

KEY = "sk-live-abcdefghijklmnopqrstuvwx"
URL = "https://api.example.test/v1"
pytestmark = pytest.mark.respx(using="httpx")


async def test_a_key_echoed_by_the_vendor_never_reaches_the_error(respx_mock):
    respx_mock.post(f"{URL}/chat/completions").respond(
        401, json={"error": {"message": f"Incorrect API key provided: {KEY}"}}
    )
    provider = openai_compatible_provider("p", URL, KEY, ["m"])
    with pytest.raises(ProviderError) as info:
        await provider.call(ChatRequest.of("hi"))
    err = info.value
    assert err.kind == "auth" and err.code == "PROVIDER_AUTH"
    for text in (str(err), err.body, repr(err.details)):
        assert KEY not in text


async def test_gemini_key_rides_in_a_header_never_in_the_url(respx_mock):
    route = respx_mock.post(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-flash-latest:generateContent"
    ).respond(
        200, json={"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    )
    provider = gemini_provider(KEY, models=["gemini-flash-latest"])
    reply = await provider.call(ChatRequest.of("hi"))
    sent = route.calls.last.request
    assert reply.text == "hi"
    assert KEY not in str(sent.url) and sent.headers["x-goog-api-key"] == KEY


async def test_an_invalid_call_goes_back_to_the_model_as_empty_arguments(respx_mock):
    route = respx_mock.post(f"{URL}/chat/completions").respond(
        200, json={"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}
    )
    broken = ToolCall(
        "c1", "get_weather", {}, '{"city": "Par', invalid=True, invalid_reason="not_json"
    )
    request = ChatRequest(
        messages=[
            user("weather?"),
            {"role": "assistant", "content": None, "tool_calls": [broken]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"error": "bad arguments"}'},
        ]
    )
    await openai_compatible_provider("p", URL, KEY, ["m"]).call(request)
    sent = json.loads(route.calls.last.request.content)
    assert sent["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (500, "outage"),
        (503, "outage"),
        (408, "timeout"),
        (403, "auth"),
        (404, "bad_request"),
        (429, "rate_limit"),
    ],
)
async def test_status_codes_map_to_the_shared_taxonomy(status, kind, respx_mock):
    respx_mock.post(f"{URL}/chat/completions").respond(status, text="nope")
    with pytest.raises(ProviderError) as info:
        await openai_compatible_provider("p", URL, KEY, ["m"]).call(ChatRequest.of("hi"))
    assert (info.value.kind, info.value.status_code) == (kind, status)


async def test_a_200_that_is_not_json_is_malformed_not_a_crash(respx_mock):
    respx_mock.post(f"{URL}/chat/completions").respond(200, text="<html>gateway</html>")
    with pytest.raises(ProviderError) as info:
        await openai_compatible_provider("p", URL, KEY, ["m"]).call(ChatRequest.of("hi"))
    assert info.value.code == "PROVIDER_MALFORMED"


async def test_an_sse_stream_that_ends_with_no_content_is_an_error_before_any_text(respx_mock):
    respx_mock.post(f"{URL}/chat/completions").respond(
        200, headers={"content-type": "text/event-stream"}, text="data: [DONE]\n\n"
    )
    provider = openai_compatible_provider("p", URL, KEY, ["m"])
    with pytest.raises(ProviderError) as info:
        async for _ in provider.stream(ChatRequest.of("hi")):
            pass
    assert info.value.kind in ("network", "empty")


async def test_a_per_call_client_is_used_instead_of_the_providers():
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(
            200, json={"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]}
        )

    from workbench.types import CallContext

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        reply = await openai_compatible_provider("p", URL, KEY, ["m"]).call(
            ChatRequest.of("hi"), CallContext(client=client)
        )
    assert reply.text == "x" and calls == [f"{URL}/chat/completions"]
