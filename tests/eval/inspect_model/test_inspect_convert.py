"""Inspect's messages, tools and config to our request, and our reply back to Inspect's output:
tools both ways, prose calls arriving as Inspect ToolCalls and fed back as the model wrote them."""

from __future__ import annotations

import base64
import json

import pytest
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentAudio,
    ContentImage,
    ContentReasoning,
    ContentText,
    GenerateConfig,
)
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolCallError, ToolFunction, ToolInfo, ToolParam, ToolParams

from workbench.errors import ConfigError
from workbench.eval.inspect_model.convert import (
    PROSE_CALLS,
    chat_request,
    conversation,
    model_output,
)
from workbench.types import Reply, ToolCall, Usage

WEATHER = ToolInfo(
    name="get_weather",
    description="The weather in a city.",
    parameters=ToolParams(
        properties={"city": ToolParam(type="string", description="The city.")},
        required=["city"],
    ),
)


def test_system_messages_join_the_system_prompt_and_the_rest_keep_their_order():
    request = chat_request(
        [
            ChatMessageSystem(content="Be brief."),
            ChatMessageUser(content="Hi"),
            ChatMessageAssistant(content="Hello."),
            ChatMessageSystem(content="Answer in French."),
            ChatMessageUser(content=[ContentText(text="Capital of"), ContentText(text="Peru?")]),
        ],
        [],
        "auto",
        GenerateConfig(max_tokens=64, temperature=0.2, top_p=0.5),
    )
    assert request.system == "Be brief.\n\nAnswer in French."
    assert request.messages == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Capital of\nPeru?"},
    ]
    assert (request.max_tokens, request.temperature, request.tools) == (64, 0.2, None)
    assert request.extra == {}  # top_p is not forwarded: a chain mixes wire formats


def test_tools_become_openai_function_specs_unless_the_choice_is_none():
    spec = chat_request([ChatMessageUser(content="Weather?")], [WEATHER], "auto", GenerateConfig())
    assert spec.tools == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "The city."}},
                    "required": ["city"],
                    "additionalProperties": False,
                },
            },
        }
    ]
    forced = chat_request(
        [ChatMessageUser(content="x")], [WEATHER], ToolFunction("get_weather"), GenerateConfig()
    )
    assert forced.tools == spec.tools  # offered; the router plans per model
    none = chat_request([ChatMessageUser(content="x")], [WEATHER], "none", GenerateConfig())
    assert none.tools is None


def test_native_calls_and_their_results_go_back_as_tool_messages():
    messages = conversation(
        [
            ChatMessageUser(content="Weather in Paris?"),
            ChatMessageAssistant(
                content="Let me look.",
                tool_calls=[
                    InspectToolCall(id="c1", function="get_weather", arguments={"city": "Paris"})
                ],
            ),
            ChatMessageTool(content="18°C", tool_call_id="c1", function="get_weather"),
        ]
    )
    assert messages[1] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "get_weather",
        "content": "18°C",
    }


def test_prose_calls_go_back_as_the_model_wrote_them_with_results_in_a_user_message():
    messages = conversation(
        [
            ChatMessageUser(content="Weather in Paris?"),
            ChatMessageAssistant(
                content="",
                tool_calls=[
                    InspectToolCall(id="t1", function="get_weather", arguments={"city": "Paris"})
                ],
                metadata={PROSE_CALLS: {"t1": "hermes"}},
            ),
            ChatMessageTool(
                content="",
                tool_call_id="t1",
                function="get_weather",
                error=ToolCallError("timeout", "took too long"),
            ),
        ]
    )
    assistant, results = messages[1], messages[2]
    assert "tool_calls" not in assistant and assistant["role"] == "assistant"
    assert (
        assistant["content"]
        == '<tool_call>\n{"name":"get_weather","arguments":{"city":"Paris"}}\n</tool_call>'
    )
    assert results["role"] == "user"
    assert (
        results["content"] == '<tool_result name="get_weather">Error: took too long</tool_result>'
    )


def test_an_image_goes_as_an_image_part_a_local_file_as_a_data_url(tmp_path):
    png = tmp_path / "cat.png"
    png.write_bytes(b"\x89PNG fake")
    [message] = conversation(
        [
            ChatMessageUser(
                content=[
                    ContentText(text="What is this?"),
                    ContentImage(image=str(png)),
                    ContentImage(image="https://example.org/dog.jpg"),
                ]
            )
        ]
    )
    parts = message["content"]
    assert parts[0] == {"type": "text", "text": "What is this?"}
    assert (
        parts[1]["image_url"]["url"]
        == "data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode()
    )
    assert parts[2]["image_url"]["url"] == "https://example.org/dog.jpg"


@pytest.mark.parametrize("with_image", [True, False])
def test_audio_is_refused_with_one_line_and_its_code(with_image):
    parts = [ContentText(text="Transcribe this"), ContentAudio(audio="a.wav", format="wav")]
    if with_image:
        parts.append(ContentImage(image="https://x/y.png"))
    with pytest.raises(ConfigError) as caught:
        conversation([ChatMessageUser(content=parts)])
    assert caught.value.code == "INSPECT_CONTENT_UNSUPPORTED" and "audio" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_reasoning_in_the_history_is_left_out():
    [message] = conversation(
        [ChatMessageAssistant(content=[ContentReasoning(reasoning="hmm"), ContentText(text="42")])]
    )
    assert message == {"role": "assistant", "content": "42"}


def test_a_reply_with_prose_calls_arrives_as_inspect_tool_calls():
    reply = Reply(
        text="",
        tool_calls=[
            ToolCall(
                "t1",
                "get_weather",
                {"city": "Lima"},
                '{"city": "Lima"}',
                source="text",
                family="hermes",
            ),
            ToolCall(
                "t2",
                "get_weather",
                {},
                "{city",
                invalid=True,
                invalid_reason="not_json",
                source="text",
            ),
        ],
        usage=Usage(prompt_tokens=12, completion_tokens=5),
        provider="sim",
        model="hermes-prose",
        protocol="text",
        latency_ms=250,
    )
    output = model_output(reply, answered="sim:hermes-prose", asked="sim:qwen-prose")
    message = output.message
    assert output.stop_reason == "tool_calls"
    assert output.model == message.model == "sim:hermes-prose"
    assert output.fallback is not None and output.fallback.model == "sim:qwen-prose"
    first, second = message.tool_calls or []
    assert (first.id, first.function, first.arguments, first.parse_error) == (
        "t1",
        "get_weather",
        {"city": "Lima"},
        None,
    )
    assert second.arguments == {} and "not_json" in (second.parse_error or "")
    assert message.metadata == {PROSE_CALLS: {"t1": "hermes", "t2": None}}
    assert (output.usage.input_tokens, output.usage.output_tokens, output.usage.total_tokens) == (
        12,
        5,
        17,
    )
    assert output.time == 0.25
    # Inspect sends the turn back whole: the prose calls return as prose, not as tool_calls.
    again = conversation(
        [message, ChatMessageTool(content="20°C", tool_call_id="t1", function="get_weather")]
    )
    assert "tool_calls" not in again[0] and again[1]["role"] == "user"


def test_stop_reasons():
    assert (
        model_output(Reply(text="ok", finish_reason="stop"), answered="p:m").stop_reason == "stop"
    )
    assert model_output(Reply(text="o", cut=True), answered="p:m").stop_reason == "max_tokens"
    assert (
        model_output(Reply(text="", finish_reason="content_filter"), answered="p:m").stop_reason
        == "content_filter"
    )
    native = Reply(text="", tool_calls=[ToolCall("c", "f", {"a": 1}, json.dumps({"a": 1}))])
    out = model_output(native, answered="p:m", asked="p:m")
    assert out.stop_reason == "tool_calls" and out.message.metadata is None
    assert out.fallback is None  # the first model asked answered
