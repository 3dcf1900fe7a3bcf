"""Prompt sets: loaded whole, refused with FILE:LINE: FIELD before any request is sent."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import (
    EXPECT_FIELDS,
    ITEM_FIELDS,
    Dataset,
    Expect,
    load_dataset,
)
from workbench.eval.dataset.tool_specs import load_catalogue

DATASETS = Path(__file__).resolve().parents[2] / "datasets"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}},
    },
}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A dataset folder with a tools.json catalogue, as the working directory."""
    (tmp_path / "tools.json").write_text(json.dumps([WEATHER, TIME]))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def jsonl(folder: Path, *rows: object, name: str = "x.jsonl") -> Path:
    path = folder / name
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def refused(path: Path, **kw) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_dataset(path, **kw)
    err = info.value
    assert err.code == "DATASET_INVALID"
    assert "\n" not in err.message
    return err


# ------------------------------------------------------------------ JSONL


def test_jsonl_items_carry_every_field_and_resolve_tool_names(folder):
    path = jsonl(
        folder,
        "# a comment line",
        "",
        {
            "id": "w1",
            "prompt": "Weather in Paris?",
            "system": "Be brief.",
            "tools": ["get_weather"],
            "expect": {"tool": "get_weather", "args": {"city": "Paris"}, "contains": "Paris"},
            "tags": ["smoke"],
            "category": "simple",
            "complexity": "easy",
            "intent": "weather",
            "surface": "phone",
            "language": "en",
            "sensitive": ["Ana"],
            "sources": [{"id": "F1", "text": "Paris is sunny.", "url": "https://x.test"}],
        },
        {"id": "w2", "messages": [{"role": "user", "content": "hi"}]},
    )
    ds = load_dataset(path)
    assert isinstance(ds, Dataset) and ds.name == "x" and len(ds) == 2
    assert ds.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    w1, w2 = ds.items
    assert (w1.line, w2.line) == (3, 4)
    assert w1.tools == (WEATHER,)
    assert w1.expect == Expect(tool="get_weather", args={"city": "Paris"}, contains=("Paris",))
    assert w1.messages == ({"role": "user", "content": "Weather in Paris?"},)
    assert (w1.category, w1.complexity, w1.intent, w1.surface, w1.language) == (
        "simple",
        "easy",
        "weather",
        "phone",
        "en",
    )
    assert w1.tags == ("smoke",) and w1.sensitive == ("Ana",)
    assert w1.sources[0]["id"] == "F1"
    assert w2.expect is None and w2.tools == () and w2.prompt == "hi"


def test_request_builds_a_chat_request_and_never_shares_the_items_dicts(folder):
    path = jsonl(
        folder,
        {
            "id": "a",
            "system": "Rule one.",
            "messages": [
                {"role": "system", "content": "Rule two."},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "text", "text": "second"}]},
            ],
            "tools": [WEATHER],
        },
    )
    item = load_dataset(path).items[0]
    req = item.request(max_tokens=50)
    assert req.system == "Rule one.\n\nRule two."
    assert [m["role"] for m in req.messages] == ["user", "assistant", "user"]
    assert req.tools == [WEATHER] and req.max_tokens == 50
    assert item.prompt == "second"
    req.messages[0]["content"] = "changed"
    req.tools[0]["function"]["name"] = "changed"
    assert item.messages[1]["content"] == "first"
    assert item.tools[0]["function"]["name"] == "get_weather"


def test_a_prior_tool_call_with_object_arguments_is_sent_as_a_json_string(folder):
    path = jsonl(
        folder,
        {
            "id": "r",
            "tools": ["get_weather"],
            "messages": [
                {"role": "user", "content": "Weather in Berlin?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": {}},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": '{"error":"invalid_arguments"}'},
            ],
            "expect": {"tool": "get_weather", "args": {"city": "Berlin"}},
        },
    )
    item = load_dataset(path).items[0]
    assert item.messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert item.request().messages[-1]["role"] == "tool"


def test_the_catalogue_can_be_passed_as_a_path_or_a_dict(folder, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("other")
    (elsewhere / "cat.json").write_text(json.dumps({"tools": [TIME]}))
    path = jsonl(elsewhere, {"id": "a", "prompt": "time?", "tools": ["get_time"]})
    refused(path)  # no tools.json beside it: a name cannot resolve
    assert load_dataset(path, catalogue=elsewhere / "cat.json").items[0].tools == (TIME,)
    assert load_dataset(path, catalogue={"get_time": TIME}).items[0].tools == (TIME,)


# ------------------------------------------------------------------ YAML

YAML_LIST = """\
# leading comment
- id: y1
  prompt: Weather in Paris?
  tools: [get_weather]
  expect:
    tool: get_weather

- id: y2
  prompt: |
    Two
    lines
"""


def test_yaml_list_items_get_the_line_of_their_first_key(folder):
    path = folder / "set.yaml"
    path.write_text(YAML_LIST)
    ds = load_dataset(path)
    assert [(i.id, i.line) for i in ds.items] == [("y1", 2), ("y2", 8)]
    assert ds.items[1].prompt == "Two\nlines\n"


def test_yaml_items_mapping_and_an_error_reported_at_the_items_line(folder):
    path = folder / "set.yml"
    path.write_text(
        "items:\n  - id: a\n    prompt: hi\n  - id: b\n    prompt: hi\n    expect: {tool: nope}\n"
    )
    err = refused(path)
    assert err.message.startswith("set.yml:4: expect.tool: ")
    assert err.details == {
        "file": "set.yml",
        "line": 4,
        "field": "expect.tool",
        "reason": err.details["reason"],
    }
    path.write_text("items:\n  - id: a\n    prompt: hi\n")
    assert load_dataset(path).items[0].line == 2


def test_broken_yaml_names_its_line(folder):
    path = folder / "bad.yaml"
    path.write_text("- id: a\n  prompt: hi\n- id: [unclosed\n")
    err = refused(path)
    assert err.details["field"] == "yaml" and err.details["line"] >= 3


def test_a_yaml_id_that_is_not_a_string_is_refused(folder):
    path = folder / "n.yaml"
    path.write_text("- id: 7\n  prompt: hi\n")
    assert refused(path).message.startswith("n.yaml:1: id: must be a string")


# ------------------------------------------------------------------ refusals

OK = {"id": "ok", "prompt": "hello"}

CASES = [
    # (rows, line, field, reason fragment)
    ([OK, '{"id": "b", "prompt": '], 2, "json", "not JSON"),
    ([OK, "[1, 2]"], 2, "item", "must be an object"),
    ([{"prompt": "hi"}], 1, "id", "required"),
    ([{"id": "", "prompt": "hi"}], 1, "id", "must not be empty"),
    (
        [OK, {"id": "x", "prompt": "a"}, {"id": "ok", "prompt": "b"}],
        3,
        "id",
        'duplicate id "ok" (first at line 1)',
    ),
    (
        [{"id": "a", "prompt": "hi", "messages": [{"role": "user", "content": "hi"}]}],
        1,
        "prompt",
        "not both",
    ),
    ([{"id": "a"}], 1, "prompt", "required"),
    ([{"id": "a", "prompt": "hi", "colour": "red"}], 1, "colour", "unknown field"),
    (
        [{"id": "a", "prompt": "hi", "tools": ["get_wether"]}],
        1,
        "tools[0]",
        '"get_wether" is not in the tool catalogue',
    ),
    (
        [{"id": "a", "prompt": "hi", "tools": ["get_weather"], "expect": {"tool": "get_wether"}}],
        1,
        "expect.tool",
        '"get_wether" is not one of the item\'s tools',
    ),
    (
        [OK, {"id": "a", "prompt": "hi", "expect": {"regex": "(unclosed"}}],
        2,
        "expect.regex",
        "does not compile",
    ),
    (
        [{"id": "a", "prompt": "hi", "expect": {"json_schema": {"type": "nope"}}}],
        1,
        "expect.json_schema",
        "is not a valid JSON schema",
    ),
    (
        [
            {
                "id": "a",
                "prompt": "hi",
                "tools": [{"type": "function", "function": {"description": "x"}}],
            }
        ],
        1,
        "tools[0].function.name",
        "required",
    ),
    ([{"id": "a", "prompt": "hi", "expect": {"tools": "x"}}], 1, "expect.tools", "unknown field"),
    ([{"id": "a", "prompt": "hi", "expect": {}}], 1, "expect", "names no check"),
    (
        [
            {
                "id": "a",
                "prompt": "hi",
                "tools": ["get_weather"],
                "expect": {"tool": "get_weather", "args": {"town": "x"}},
            }
        ],
        1,
        "expect.args.town",
        "is not a parameter of get_weather",
    ),
    (
        [
            {
                "id": "a",
                "prompt": "hi",
                "tools": ["get_weather"],
                "expect": {"calls": [{"tool": "get_time"}]},
            }
        ],
        1,
        "expect.calls[0].tool",
        "is not one of the item's tools",
    ),
    (
        [
            {
                "id": "a",
                "prompt": "hi",
                "tools": ["get_weather"],
                "expect": {"no_tool": True, "tool": "get_weather"},
            }
        ],
        1,
        "expect.no_tool",
        "contradicts",
    ),
    (
        [{"id": "a", "prompt": "hi", "expect": {"grounded": True}}],
        1,
        "expect.grounded",
        "needs the item's sources",
    ),
    (
        [{"id": "a", "messages": [{"role": "robot", "content": "hi"}]}],
        1,
        "messages[0].role",
        "must be one of",
    ),
    (
        [{"id": "a", "messages": [{"role": "assistant", "content": "hi"}]}],
        1,
        "messages",
        "at least one user",
    ),
    (
        [
            {
                "id": "a",
                "messages": [{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}],
            }
        ],
        1,
        "messages[1].tool_call_id",
        "must be a string",
    ),
    (
        [{"id": "a", "prompt": "hi", "tags": "ok", "sensitive": [3]}],
        1,
        "sensitive[0]",
        "non-empty string",
    ),
    (
        [{"id": "a", "prompt": "hi", "sources": [{"id": "F1"}]}],
        1,
        "sources[0].text",
        "must be a string",
    ),
    (['{"id": "a", "id": "b", "prompt": "hi"}'], 1, "id", "duplicate key"),
    (["# only a comment", ""], 1, "file", "holds no items"),
]


@pytest.mark.parametrize(("rows", "line", "field", "fragment"), CASES)
def test_every_bad_file_is_refused_with_its_file_line_and_field(
    folder, rows, line, field, fragment
):
    err = refused(jsonl(folder, *rows))
    assert err.message.startswith(f"x.jsonl:{line}: {field}: "), err.message
    assert fragment in err.details["reason"], err.message
    assert err.details["file"] == "x.jsonl"
    assert (err.details["line"], err.details["field"]) == (line, field)


def test_only_the_first_error_is_reported(folder):
    err = refused(jsonl(folder, {"id": "a"}, {"prompt": "no id"}))
    assert err.details["line"] == 1


def test_a_file_that_is_not_utf8_is_refused(folder):
    path = folder / "x.jsonl"
    path.write_bytes(b'{"id": "a", "prompt": "hi"}\n{"id": "\xff"}\n')
    err = refused(path)
    assert (err.details["line"], err.details["field"]) == (2, "file")


def test_a_missing_file_is_refused(folder):
    assert refused(folder / "nope.jsonl").details["field"] == "file"


# ------------------------------------------------------------------ catalogue


@pytest.mark.parametrize(
    ("specs", "field"),
    [
        ([WEATHER, WEATHER], "tools[1].function.name"),
        ([{"type": "function", "function": {"name": "bad name"}}], "tools[0].function.name"),
        (
            [{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}],
            "tools[0].function.parameters",
        ),
        (
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}],
            "tools[0].function.parameters",
        ),
        ({"x": 1}, "tools.x"),
        ("not a list", "tools"),
    ],
)
def test_a_bad_catalogue_is_refused_with_catalogue_invalid(tmp_path, specs, field):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(specs))
    with pytest.raises(ConfigError) as info:
        load_catalogue(path)
    assert info.value.code == "CATALOGUE_INVALID"
    assert info.value.details["field"] == field


def test_a_catalogue_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text("[{")
    with pytest.raises(ConfigError) as info:
        load_catalogue(path)
    assert info.value.code == "CATALOGUE_INVALID"


# ------------------------------------------------------------------ anything at all

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = [*sorted(ITEM_FIELDS), "args", "tool", "role", "content", "function"]
ITEMISH = st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=6)
EXPECTISH = st.dictionaries(st.sampled_from(sorted(EXPECT_FIELDS)), JSON_VALUES, max_size=4)
# Mostly valid items with one random part: the deep checks get exercised too.
NEAR_VALID = st.tuples(ITEMISH, EXPECTISH).map(
    lambda p: {"id": "a", "prompt": "p", "tools": ["get_weather"], "expect": p[1], **p[0]}
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(st.text(max_size=60) | (ITEMISH | NEAR_VALID).map(json.dumps), max_size=6))
def test_garbage_jsonl_raises_nothing_but_config_error(folder, lines):
    path = folder / "g.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    try:
        load_dataset(path)
    except ConfigError as err:
        assert err.code in ("DATASET_INVALID", "CATALOGUE_INVALID")


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=120) | st.lists(ITEMISH, max_size=3).map(json.dumps))
def test_garbage_yaml_raises_nothing_but_config_error(folder, text):
    path = folder / "g.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_dataset(path)
    except ConfigError as err:
        assert err.code == "DATASET_INVALID"


# ------------------------------------------------------------------ the shipped sets


def test_the_shipped_datasets_load_with_the_shipped_catalogue():
    catalogue = load_catalogue(DATASETS / "tools.json")
    assert set(catalogue) == {
        "get_weather",
        "get_time",
        "convert_currency",
        "search_docs",
        "calculator",
        "lookup_order",
        "send_email",
        "create_ticket",
    }
    sets = {p.stem: load_dataset(p) for p in sorted(DATASETS.glob("*.jsonl"))}
    assert {"smoke", "tool_calling", "cleaning", "masking", "multilingual"} <= set(sets)
    assert len(sets["smoke"]) == 20
    calling = sets["tool_calling"]
    assert len(calling) >= 60
    categories = {i.category for i in calling}
    assert categories == {
        "simple",
        "multiple",
        "parallel",
        "parallel_multiple",
        "no_tool",
        "invalid_argument_recovery",
    }
    for item in calling:
        assert item.expect is not None and item.tools, item.id
        assert item.id.startswith("tc-"), item.id
        if item.category == "multiple":
            assert len(item.tools) >= 2, item.id
        if item.category in ("parallel", "parallel_multiple"):
            assert len(item.expect.calls) >= 2, item.id
        if item.category == "parallel_multiple":
            assert len({c["tool"] for c in item.expect.calls}) >= 2, item.id
        if item.category == "no_tool":
            assert item.expect.no_tool, item.id
        if item.category == "invalid_argument_recovery":
            assert (
                item.messages[-1]["role"] == "tool"
                and "invalid_arguments" in item.messages[-1]["content"]
            )
    assert len(sets["cleaning"]) >= 8 and len(sets["masking"]) >= 8
    assert all(i.sensitive for i in sets["masking"])
    assert len(sets["multilingual"]) >= 8
    assert {i.language for i in sets["multilingual"]} == {"fr", "en"}
