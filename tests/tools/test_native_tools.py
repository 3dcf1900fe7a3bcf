"""The native tool catalogue: checked at start-up, offered as OpenAI function definitions."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.tools.native_tools import Tool, tool_specs, validate_native_tools

OBJ = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


async def _run(args, ctx):
    return {"ok": True}


async def _perform(*args):
    return None


def tool(**changes) -> Tool:
    base = {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": OBJ,
        "kind": "read",
        "run": _run,
        "summary": lambda a: a.get("city", ""),
    }
    base.update(changes)
    return Tool(**base)


def problem_of(catalogue, **kw) -> str:
    with pytest.raises(ConfigError) as err:
        validate_native_tools(catalogue, **kw)
    assert err.value.code == "TOOL_INVALID"
    return str(err.value)


def test_a_good_catalogue_comes_back_as_tools_in_order():
    tools = validate_native_tools(
        [
            tool(),
            tool(name="book", kind="confirm", perform=_perform),
            tool(name="note", kind="write"),
        ]
    )
    assert [t.name for t in tools] == ["get_weather", "book", "note"]
    assert all(isinstance(t, Tool) for t in tools)


def test_a_mapping_entry_is_accepted():
    tools = validate_native_tools(
        [
            {
                "name": "t",
                "description": "d",
                "parameters": {"type": "object"},
                "kind": "read",
                "run": _run,
            }
        ]
    )
    assert tools[0].name == "t" and tools[0].summary is None


def test_a_mapping_with_a_missing_or_unknown_field_is_refused():
    assert "missing" in problem_of([{"name": "t", "description": "d", "kind": "read", "run": _run}])
    assert "colour" in problem_of(
        [
            {
                "name": "t",
                "description": "d",
                "parameters": OBJ,
                "kind": "read",
                "run": _run,
                "colour": 1,
            }
        ]
    )


@pytest.mark.parametrize("name", ["has space", "", "x" * 65, "é"])
def test_a_bad_name_is_refused(name):
    assert "name" in problem_of([tool(name=name)])


def test_a_duplicate_name_is_refused_and_named():
    text = problem_of([tool(), tool()])
    assert "get_weather" in text and "duplicate" in text


@pytest.mark.parametrize(
    ("parameters", "words"),
    [
        ({"type": "string"}, '"type": "object"'),
        ("not a schema", "JSON Schema"),
        (
            {"type": "object", "properties": {"city": {"type": "nonsense"}}},
            "not a valid JSON Schema",
        ),
        ({"type": "object", "required": "city"}, "not a valid JSON Schema"),
    ],
)
def test_parameters_must_be_a_valid_object_schema(parameters, words):
    assert words in problem_of([tool(parameters=parameters)])


def test_an_unknown_kind_is_refused():
    assert "kind" in problem_of([tool(kind="delete")])


def test_a_confirm_tool_needs_perform():
    assert "perform" in problem_of([tool(kind="confirm")])


def test_require_summary_refuses_a_tool_without_one():
    catalogue = [tool(summary=None)]
    assert validate_native_tools(catalogue)  # optional by default
    assert "summary" in problem_of(catalogue, require_summary=True)


def test_tool_specs_are_openai_function_definitions():
    specs = tool_specs(validate_native_tools([tool()]))
    assert specs == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city",
                "parameters": OBJ,
            },
        }
    ]
