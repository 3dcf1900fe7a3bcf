import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.capability.classify import (
    TOOLS_UNSUPPORTED_PATTERNS,
    Classification,
    classify_tool_attempt,
    classify_vision_attempt,
    says_cannot_see,
    says_images_unsupported,
    says_tools_unsupported,
)

# One example per template, in the order of TOOLS_UNSUPPORTED_PATTERNS (ai-kit's template 8
# split: tools / functions).
TEMPLATE_EXAMPLES = [
    "tool use is not supported for this model",
    "does not support tool calling",
    "this endpoint doesnt support tools",
    "there is no support for tools on this route",
    "function calling is not supported",
    "the deployment does not support function calls",
    "gemma doesn't support functions",
    "The model `gemma-2b` does not support the `tools` parameter",
    "model foo-bar does not support functions",
    "Unsupported parameter: 'tools'",
    'unknown field: "tools"',
    "`tools` is not a valid parameter for this model",
    "this model cannot use tools",
    "no tool support",
]

MORE_POSITIVES = [
    "Tool calls are not supported",  # plural `are`
    "tool_calling unsupported",
    "TOOL-CALL NOT SUPPORTED",
    "function calls are unsupported here",  # plural
    "function_call is not supported",
    "tools are not available",
    "functions are unsupported",
    "tool is not allowed",
    "the model can't call functions",
    "the model cant execute tools",
    "this model is unable to handle tools",
    "no functions support on this endpoint",
    "unknown parameter tool",
    "Unsupported parameter: tool",
    "model x does not support tool",  # singular
    "This model doesn’t support tools",  # typographic apostrophe
]

NEGATIVES = [
    "",
    "Rate limit reached for requests. Please retry in 20s (429)",
    "This model's maximum context length is 8192 tokens. context length exceeded",
    '{"error": {"code": 401, "message": "Invalid API key"}}',
    "invalid tools[0].function.name: must match ^[a-zA-Z0-9_-]+$",
    "Invalid request: bad parameter 'temperature'",
    "unsupported value for max_tokens",
    "Unsupported parameter: 'tool_choice'",  # a knob, not the ability
    "internal server error",
    "the tools you passed were fine, the prompt was flagged by the content filter",
]


def test_there_are_fourteen_templates():
    assert len(TOOLS_UNSUPPORTED_PATTERNS) == 14
    assert len(TEMPLATE_EXAMPLES) == 14


@pytest.mark.parametrize(("index", "body"), list(enumerate(TEMPLATE_EXAMPLES)))
def test_each_template_matches_its_own_example(index, body):
    assert TOOLS_UNSUPPORTED_PATTERNS[index].search(body), (index, body)
    assert says_tools_unsupported(body)
    assert says_tools_unsupported(body.upper())  # case-insensitive


@pytest.mark.parametrize("body", MORE_POSITIVES)
def test_plural_singular_and_spelling_variants_match(body):
    assert says_tools_unsupported(body)


@pytest.mark.parametrize("body", NEGATIVES)
def test_bodies_that_say_nothing_about_tool_support_do_not_match(body):
    assert not says_tools_unsupported(body)


@pytest.mark.parametrize("body", [None, 42, b"does not support tools", ["tools"]])
def test_non_text_bodies_never_raise(body):
    assert says_tools_unsupported(body) is (body == b"does not support tools")


@given(st.text())
def test_says_tools_unsupported_never_raises_on_arbitrary_text(body):
    assert says_tools_unsupported(body) in (True, False)


@given(st.text(alphabet=st.characters(blacklist_characters="tTfF")))
def test_text_without_t_or_f_never_says_tools_are_unsupported(body):
    # Every template names tools or functions, so without those letters nothing can match.
    assert not says_tools_unsupported(body)


# ── classify_tool_attempt ────────────────────────────────────────────────────────────────


def native_body(calls=None, finish=None):
    return {
        "choices": [{"message": {"content": None, "tool_calls": calls}, "finish_reason": finish}]
    }


@pytest.mark.parametrize("status", [None, 0, float("nan"), float("inf"), "200", True])
def test_no_status_is_unobserved_and_not_recorded(status):
    c = classify_tool_attempt(status, native_body([{"id": "1"}]), "does not support tools", True)
    assert c == Classification("unobserved", False, "no response")


def test_an_error_saying_tools_are_unsupported_is_a_recorded_none():
    c = classify_tool_attempt(400, None, "model x does not support tools")
    assert c == Classification(
        "none", True, "400: the vendor says this model does not support tools"
    )


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (429, "rate limit"),
        (401, "unauthorized"),
        (500, "internal error"),
        (400, "context length exceeded"),
        (400, "invalid tools[0].function.name"),
    ],
)
def test_other_errors_prove_nothing(status, body):
    c = classify_tool_attempt(status, native_body([{"id": "x"}]), body, True)
    assert c == Classification("unobserved", False, f"{status}: not a statement about tool support")


def test_an_error_status_wins_over_a_body_with_tool_calls():
    c = classify_tool_attempt(503, native_body([{"id": "x"}], "tool_calls"), "", True)
    assert c.verdict == "unobserved" and not c.record


def test_tool_calls_come_before_finish_reason_and_text():
    c = classify_tool_attempt(200, native_body([{"id": "x"}], "tool_calls"), "", True)
    assert c == Classification("native", True, "returned tool_calls")


def test_finish_reason_tool_calls_alone_is_native():
    c = classify_tool_attempt(200, native_body([], "tool_calls"), "", True)
    assert c == Classification("native", True, "finish_reason was tool_calls")


def test_a_call_parsed_from_prose_is_text():
    c = classify_tool_attempt(200, native_body(None, "stop"), "", True)
    assert c == Classification(
        "text", True, "no tool_calls, but a tool call was parsed from the text"
    )


@pytest.mark.parametrize("found", [False, None, 1, "yes"])
def test_only_a_literal_true_counts_as_a_text_call(found):
    c = classify_tool_attempt(200, native_body(None, "stop"), "", found)
    assert c.verdict == "unobserved"


@pytest.mark.parametrize(
    "parsed",
    [
        None,
        {},
        [],
        "x",
        {"choices": []},
        {"choices": [None]},
        {"choices": [{"message": "hi"}]},
        {"choices": [{"message": {"tool_calls": "x"}}]},
        native_body([], "stop"),
    ],
)
def test_a_plain_or_odd_answer_is_unobserved_and_not_recorded(parsed):
    c = classify_tool_attempt(200, parsed)
    assert c == Classification(
        "unobserved", False, "answered without calling a tool, which is not evidence either way"
    )


def test_a_gemini_summary_is_read_like_openai():
    summary = {"choices": [{"message": {"tool_calls": [{"name": "f"}]}, "finish_reason": "STOP"}]}
    assert classify_tool_attempt(200, summary).verdict == "native"


def test_classification_is_frozen():
    c = classify_tool_attempt(200)
    with pytest.raises(AttributeError):
        c.verdict = "native"  # type: ignore[misc]


# ── vision ───────────────────────────────────────────────────────────────────────────────

IMAGE_POSITIVES = [
    "image input is not supported",
    "Image inputs are not supported for this model",
    "This model does not support images",
    "model doesn't support vision",
    "The model cannot see images.",
    "this model can't process images",
    "Unsupported content type: image_url",
    "unsupported input type 'image'",
    "image_url is not supported",
    "Invalid content type. image_url is only supported by certain models.",
    "vision is not supported on this deployment",
    "no vision support",
]
IMAGE_NEGATIVES = [
    "",
    "rate limit exceeded",
    "context length exceeded",
    "invalid image url",
    "image too large: max 20MB",
    "failed to download image from url",
    "This model does not support images larger than 20MB",
    "cannot process images with more than 4096 pixels per side",
    "does not support image/webp",
    "does not support image format webp",
    "does not support tools",
]


@pytest.mark.parametrize("body", IMAGE_POSITIVES)
def test_bodies_saying_images_are_unsupported_match(body):
    assert says_images_unsupported(body)


@pytest.mark.parametrize("body", IMAGE_NEGATIVES)
def test_bodies_about_one_picture_or_other_things_do_not_match(body):
    assert not says_images_unsupported(body)


@given(st.text())
def test_vision_phrase_checks_never_raise(text):
    assert says_images_unsupported(text) in (True, False)
    assert says_cannot_see(text) in (True, False)


@pytest.mark.parametrize(
    "answer",
    [
        "I can't see images.",
        "I'm sorry, I am unable to view the image you sent.",
        "As a text-based model, I have no eyes.",
        "I cannot process images",
        "I don't see any image attached.",
        "I can only read text.",
    ],
)
def test_answers_that_say_the_model_cannot_see(answer):
    assert says_cannot_see(answer)


@pytest.mark.parametrize(
    "answer", ["The square is red.", "I can see a red square", "I can't see any text in it"]
)
def test_answers_that_describe_do_not_say_blind(answer):
    assert not says_cannot_see(answer)


@pytest.mark.parametrize("status", [None, 0, float("nan")])
def test_vision_without_status_is_unobserved(status):
    assert classify_vision_attempt(status, "", "red", "red") == Classification(
        "unobserved", False, "no response"
    )


def test_vision_error_saying_images_unsupported_is_recorded_none():
    c = classify_vision_attempt(400, "image input is not supported")
    assert c == Classification(
        "none", True, "400: the vendor says this model does not accept images"
    )


@pytest.mark.parametrize(
    ("status", "body"), [(400, "image too large"), (429, "slow down"), (500, "")]
)
def test_other_vision_errors_prove_nothing(status, body):
    c = classify_vision_attempt(status, body)
    assert c == Classification(
        "unobserved", False, f"{status}: not a statement about image support"
    )


def test_naming_what_the_test_picture_shows_is_native():
    c = classify_vision_attempt(200, "", "It is a RED square.", "red")
    assert c == Classification("native", True, "described the test image correctly: red")


def test_the_expected_word_must_be_a_word():
    c = classify_vision_attempt(200, "", "It was rendered blurry.", "red")
    assert c.verdict == "unobserved" and not c.record
    assert "without describing" in c.evidence


def test_any_of_several_expected_words_counts():
    c = classify_vision_attempt(200, "", "a crimson disc", ["red", "crimson"])
    assert c == Classification("native", True, "described the test image correctly: crimson")


def test_with_expected_a_blind_answer_is_recorded_none():
    c = classify_vision_attempt(200, "", "As a text-based model I cannot see pictures.", "red")
    assert c == Classification("none", True, "answered that it cannot see images")


def test_a_blind_answer_that_guesses_the_word_proves_nothing():
    c = classify_vision_attempt(200, "", "I can't see images, but it might be red.", "red")
    assert c.verdict == "unobserved" and not c.record


def test_without_expected_an_answer_is_not_proof_of_sight():
    c = classify_vision_attempt(200, "", "A red square on white.")
    assert c == Classification(
        "unobserved", False, "answered, which is not proof that it saw the image"
    )


def test_without_expected_a_blind_answer_is_recorded_none():
    c = classify_vision_attempt(200, "", "I'm unable to view attachments.")
    assert c == Classification("none", True, "answered that it cannot see images")


def test_vision_success_without_answer_text_is_unobserved():
    assert classify_vision_attempt(200, "", None, "red").verdict == "unobserved"
    assert classify_vision_attempt(200, "", None, "  ").record is False
