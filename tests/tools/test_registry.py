"""The tool registry: empty by default, one name per tool, each role sees its own tools."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.tools.tool_registry import ToolRegistry


async def _handler(params, ctx):
    return {"ok": True}


def _registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(
        "get_patient_record",
        "Fetch a patient's record by id",
        "read",
        ["doctor", "admin"],
        {"patientId": "string"},
        _handler,
    )
    reg.register("close_account", "Close an account", "write", ["admin"], {}, _handler)
    reg.register("get_time", "The time now", "read", None, {}, _handler)
    return reg


def test_a_new_registry_holds_no_tool():
    reg = ToolRegistry()
    assert len(reg) == 0
    assert reg.names() == []
    assert reg.format_tools_for_prompt("doctor") == ""


def test_a_duplicate_name_is_a_config_error():
    reg = _registry()
    with pytest.raises(ConfigError) as err:
        reg.register("get_time", "again", "read", None, {}, _handler)
    assert err.value.code == "TOOL_INVALID"
    assert "get_time" in str(err.value)


@pytest.mark.parametrize(
    ("name", "type_", "handler"),
    [
        ("has space", "read", _handler),
        ("", "read", _handler),
        ("ok_name", "delete", _handler),
        ("ok_name", "read", "not callable"),
    ],
)
def test_a_bad_definition_is_refused_with_tool_invalid(name, type_, handler):
    with pytest.raises(ConfigError) as err:
        ToolRegistry().register(name, "d", type_, None, {}, handler)
    assert err.value.code == "TOOL_INVALID"


def test_each_role_sees_only_its_tools():
    reg = _registry()
    assert [t.name for t in reg.visible("doctor")] == ["get_patient_record", "get_time"]
    assert [t.name for t in reg.visible("admin")] == [
        "get_patient_record",
        "close_account",
        "get_time",
    ]
    assert [t.name for t in reg.visible("guest")] == ["get_time"]  # roles=None: everyone
    assert reg.allows("close_account", "admin")
    assert not reg.allows("close_account", "doctor")
    assert not reg.allows("missing", "admin")


def test_a_single_role_string_is_one_role_not_its_letters():
    reg = ToolRegistry()
    reg.register("t", "d", "read", "admin", {}, _handler)
    assert reg.allows("t", "admin")
    assert not reg.allows("t", "a")


def test_the_prompt_lists_the_role_tools_and_the_call_protocol():
    text = _registry().format_tools_for_prompt("doctor")
    assert "get_patient_record" in text
    assert "Fetch a patient's record by id" in text
    assert '{"patientId":"string"}' in text
    assert "get_time" in text
    assert "close_account" not in text  # admin only
    assert '<tool_call name="' in text and "</tool_call>" in text
    assert "<tool_result" in text


def test_a_json_schema_is_accepted_as_params_and_shown():
    reg = ToolRegistry()
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    reg.register("search", "Search", "read", None, schema, _handler)
    assert reg.get("search").params == schema
    assert '"required":["q"]' in reg.format_tools_for_prompt("anyone")


def test_a_role_with_no_visible_tool_gets_no_listing():
    reg = ToolRegistry()
    reg.register("close_account", "Close", "write", ["admin"], {}, _handler)
    assert reg.format_tools_for_prompt("guest") == ""
