"""The loader reads BFCL's real files and sends the tools as BFCL's handlers send them; a
source of another version or shape is refused naming the file and the id."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import open_dataset
from workbench.eval.suites.bfcl import CATEGORIES, fetch_bfcl, load_bfcl, prompt_mode_system
from workbench.eval.suites.bfcl.loader import bfcl_dataset, category_sizes, openai_tool

SIZES = {
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "irrelevance": 240,
    "live_irrelevance": 884,
    "live_relevance": 16,
}
MULTI_TURN_AND_AGENTIC_SIZES = {
    "multi_turn_base": 200,
    "multi_turn_miss_func": 200,
    "multi_turn_miss_param": 200,
    "multi_turn_long_context": 200,
    "memory_kv": 155,
    "memory_vector": 155,
    "memory_rec_sum": 155,
    "web_search_base": 100,
    "web_search_no_snippet": 100,
}


def test_every_single_turn_category_loads_whole_from_the_real_wheel(bfcl_wheel):
    assert category_sizes(bfcl_wheel) == SIZES | MULTI_TURN_AND_AGENTIC_SIZES
    for category in CATEGORIES:
        items = load_bfcl(category, source=bfcl_wheel)
        assert len(items) == SIZES[category]
        first = items[0]
        assert first.category == category and first.expect.bfcl.category == category
        assert bool(first.expect.bfcl.ground_truth) == ("relevance" not in category)


def test_limit_keeps_the_first_questions_and_changes_the_hash(bfcl_wheel):
    five = bfcl_dataset("simple_python,multiple", source=bfcl_wheel, limit=5)
    assert [i.id for i in five.items][:6] == [f"simple_python_{k}" for k in range(5)] + [
        "multiple_0"
    ]
    assert len(five) == 10 and five.name == "bfcl:simple_python,multiple"
    assert five.sha256 != bfcl_dataset("simple_python,multiple", source=bfcl_wheel, limit=6).sha256
    assert len(open_dataset("bfcl:parallel", limit=3, bfcl_source=bfcl_wheel)) == 3


def test_tools_are_sent_as_bfcls_function_calling_handler_sends_them():
    doc = {
        "name": "math.stats",
        "description": "Stats.",
        "parameters": {
            "type": "dict",
            "required": ["xs"],
            "properties": {
                "xs": {"type": "array", "items": {"type": "float"}, "description": "Values."},
                "ratio": {"type": "float", "description": "A ratio."},
                "pair": {"type": "tuple", "items": {"type": "integer"}, "description": "Pair."},
                "opts": {
                    "type": "dict",
                    "properties": {"k": {"type": "any", "description": "K."}},
                    "description": "Options.",
                },
                "anything": {"type": "any", "description": "Any."},
            },
        },
    }
    tool = openai_tool(doc)
    f = tool["function"]
    assert tool["type"] == "function" and f["name"] == "math_stats"
    props = f["parameters"]["properties"]
    assert f["parameters"]["type"] == "object"
    assert props["xs"] == {"type": "array", "items": {"type": "number"}, "description": "Values."}
    assert props["ratio"]["type"] == "number" and props["ratio"]["format"] == "float"
    assert props["ratio"]["description"] == "A ratio. This is a float type value."
    assert props["pair"]["type"] == "array" and props["pair"]["items"] == {"type": "integer"}
    assert (
        props["opts"]["type"] == "object" and props["opts"]["properties"]["k"]["type"] == "string"
    )
    assert props["anything"]["type"] == "string"
    assert doc["name"] == "math.stats" and doc["parameters"]["type"] == "dict"  # not changed


def test_an_item_carries_bfcls_docs_the_hinted_tools_and_the_names_to_map_back(bfcl_wheel):
    item = load_bfcl("simple_python", source=bfcl_wheel, limit=2)[1]  # math.factorial
    case = item.expect.bfcl
    assert case.functions[0]["name"] == "math.factorial"
    assert case.functions[0]["parameters"]["type"] == "dict"  # graded on BFCL's own docs
    assert item.tool_names == ("math_factorial",) and case.sent_names == {
        "math_factorial": "math.factorial"
    }
    assert item.tools[0]["function"]["description"].endswith(
        "Note that the provided function is in Python 3 syntax."
    )
    assert item.tools_in_prose is not None and item.tools_in_prose.names == ("math.factorial",)
    java = load_bfcl("simple_java", source=bfcl_wheel, limit=1)[0]
    for spec in java.tools[0]["function"]["parameters"]["properties"].values():
        assert spec["type"] == "string" and "in string representation" in spec["description"]


def test_the_prompt_mode_system_prompt_is_bfcls_default_word_for_word(bfcl_wheel):
    sys.path.insert(0, str(bfcl_wheel))
    try:
        from bfcl_eval.constants import default_prompts as d  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(bfcl_wheel))
    style = d.PROMPT_STYLE_TEMPLATES["classic"]
    docs = [{"name": "f", "description": "F.", "parameters": {"type": "dict", "properties": {}}}]
    expected = d.PROMPT_TEMPLATE_MAPPING["plaintext"].format(
        persona=style["persona"],
        task=style["task"],
        tool_call_format=style["tool_call_no_tag"].format(
            output_format=d.OUTPUT_FORMAT_MAPPING["python"],
            param_types=d.PARAM_TYPE_MAPPING["python"],
        ),
        multiturn_behavior=style["multiturn_behavior"],
        available_tools=style["available_tools"].format(
            format="json", functions=json.dumps(docs, indent=4)
        ),
    )
    assert prompt_mode_system(docs) == expected


def test_every_kind_of_source_is_read(bfcl_wheel, tmp_path):
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(bfcl_wheel) as z:
        z.extractall(unpacked, [n for n in z.namelist() if "simple_python" in n])
    checkout = tmp_path / "gorilla" / "berkeley-function-call-leaderboard"
    checkout.parent.mkdir()
    (unpacked).rename(checkout)
    for where in (bfcl_wheel, checkout.parent, checkout / "bfcl_eval" / "data"):
        assert len(load_bfcl("simple_python", source=where, limit=3)) == 3
    cached = fetch_bfcl(checkout.parent, into=tmp_path / "cache")
    assert len(load_bfcl("simple_python", source=cached, limit=2)) == 2


def _data(tmp_path: Path, name: str, lines: list[str], answers: list[str] | None) -> Path:
    root = tmp_path / "data"
    (root / "possible_answer").mkdir(parents=True, exist_ok=True)
    (root / name).write_text("\n".join(lines) + "\n")
    if answers is not None:
        (root / "possible_answer" / name).write_text("\n".join(answers) + "\n")
    return root


Q = json.dumps(
    {
        "id": "simple_python_0",
        "question": [[{"role": "user", "content": "hi"}]],
        "function": [{"name": "f", "parameters": {"type": "dict", "properties": {}}}],
    }
)


@pytest.mark.parametrize(
    ("setup", "code", "names"),
    [
        (lambda t: ("nope", None), "BFCL_CATEGORY_UNKNOWN", ["nope", "simple_python"]),
        (
            lambda t: ("simple_python", _data(t, "BFCL_v3_simple.json", [Q], [])),
            "BFCL_VERSION",
            ["BFCL_v4_simple_python.json", "v3"],
        ),
        (
            lambda t: ("simple_python", _data(t, "BFCL_v4_simple_python.json", ["{not json"], [])),
            "BFCL_FILE_INVALID",
            ["BFCL_v4_simple_python.json:1"],
        ),
        (
            lambda t: (
                "simple_python",
                _data(t, "BFCL_v4_simple_python.json", ['{"id": "x"}'], []),
            ),
            "BFCL_FILE_INVALID",
            ["BFCL_v4_simple_python.json:1", "question"],
        ),
        (
            lambda t: ("simple_python", _data(t, "BFCL_v4_simple_python.json", [Q], [])),
            "BFCL_ANSWER_MISSING",
            ["possible_answer/BFCL_v4_simple_python.json", "simple_python_0"],
        ),
        (lambda t: ("simple_python", t / "missing"), "BFCL_SOURCE_INVALID", ["missing"]),
    ],
)
def test_bad_sources_get_a_bfcl_code_naming_the_file_and_id(setup, code, names, tmp_path):
    category, source = setup(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_bfcl(category, source=source if source is not None else tmp_path)
    assert err.value.code == code
    assert all(n in str(err.value) for n in names), str(err.value)
    assert "\n" not in str(err.value)


def test_a_question_of_another_shape_is_refused_with_its_id(tmp_path):
    two_turns = json.loads(Q) | {"question": [[{"role": "user", "content": "a"}]] * 2}
    with pytest.raises(ConfigError) as err:
        load_bfcl(
            "simple_python",
            source=_data(tmp_path, "BFCL_v4_simple_python.json", [json.dumps(two_turns)], [Q]),
        )
    assert err.value.code == "BFCL_FILE_INVALID" and "simple_python_0" in str(err.value)


def test_no_data_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_BFCL_DIR", str(tmp_path / "empty"))
    with pytest.raises(ConfigError) as err:
        load_bfcl("simple_python")
    assert err.value.code == "BFCL_DATA_MISSING" and "workbench bfcl fetch" in str(err.value)


def test_every_item_is_sent_exactly_as_bfcls_own_handlers_would_send_it(bfcl_wheel, bfcl_package):
    """Against BFCL's own code: its doc pre-processing and OpenAI `convert_to_tool` for
    function-calling mode, its `system_prompt_pre_processing_chat_model` for prompting mode."""
    import copy

    from bfcl_eval.constants.enums import ModelStyle  # type: ignore[import-not-found]
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI  # type: ignore[import-not-found]
    from bfcl_eval.model_handler.utils import (  # type: ignore[import-not-found]
        convert_to_tool,
        system_prompt_pre_processing_chat_model,
    )
    from bfcl_eval.utils import _func_doc_language_specific_pre_processing  # type: ignore[import-not-found]

    for category in CATEGORIES:
        for item in load_bfcl(category, source=bfcl_wheel):
            functions = copy.deepcopy(list(item.expect.bfcl.functions))
            hinted = _func_doc_language_specific_pre_processing(functions, category)
            assert list(item.tools) == convert_to_tool(
                hinted, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS
            ), item.id
            messages = copy.deepcopy(list(item.messages))
            sent = system_prompt_pre_processing_chat_model(messages, hinted, item.id)
            request = item.request()
            ours = "\n\n".join(s for s in (item.tools_in_prose.prompt, request.system) if s)
            assert sent[0]["role"] == "system" and sent[0]["content"] == ours, item.id
