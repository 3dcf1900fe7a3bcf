"""Fleet loading and validation: every mistake is a ConfigError FLEET_INVALID naming the spot."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.sim import DEFAULT_FLEET_PATH, Fleet, SimServer, load_fleet
from workbench.sim.fleet import EXPECT_TOOLS, EXPECT_VISION


def _invalid(source: object) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_fleet(source)  # type: ignore[arg-type]
    assert info.value.code == "FLEET_INVALID"
    return info.value


def test_default_fleet_loads_with_expect_tables() -> None:
    fleet = load_fleet(None)
    assert fleet.source == str(DEFAULT_FLEET_PATH)
    for name in (
        "sim-native",
        "qwen-prose",
        "hermes-prose",
        "xml-prose",
        "sim-plain",
        "sim-rejects-tools",
        "think-leak",
        "lone-think",
        "groq-gpt-oss",
        "openrouter-free",
        "gemini-flash",
        "gemma-sys",
        "sim-blind",
        "sim-flaky",
    ):
        p = fleet.persona(name)
        assert p.expect["tools"] in EXPECT_TOOLS and p.expect["vision"] in EXPECT_VISION
    assert fleet.persona("models/gemini-flash").stream_tool_index is False


def test_sources_path_text_dict_fleet(tmp_path: Path) -> None:
    text = 'seed = 3\n[[persona]]\nid = "a"\ntool_style = "xml"\n'
    f = tmp_path / "f.toml"
    f.write_text(text)
    by_path, by_str_path = load_fleet(f), load_fleet(str(f))
    by_text = load_fleet(text)
    by_dict = load_fleet({"seed": 3, "persona": [{"id": "a", "tool_style": "xml"}]})
    for fleet in (by_path, by_str_path, by_text, by_dict):
        assert isinstance(fleet, Fleet) and fleet.seed == 3
        assert fleet.personas["a"].tool_style == "xml"
    assert load_fleet(by_dict) is by_dict


def test_unknown_persona_lookup() -> None:
    with pytest.raises(ConfigError) as info:
        load_fleet().persona("ghost")
    assert info.value.code == "SIM_UNKNOWN_PERSONA" and "ghost" in str(info.value)


def test_unknown_tool_style_names_persona_and_field() -> None:
    err = _invalid('[[persona]]\nid = "p1"\ntool_style = "telepathy"\n')
    assert "'p1'" in err.message and "tool_style" in err.message and "telepathy" in err.message
    assert err.details["persona"] == "p1" and err.details["field"] == "tool_style"


def test_malformed_toml_reports_the_line() -> None:
    err = _invalid('seed = 1\n[[persona]]\nid = "p1\nvision = true\n')
    assert "malformed TOML" in err.message and err.details["line"] == 3
    assert "line 3" in err.message


def test_unknown_failure_kind() -> None:
    err = _invalid('[[persona]]\nid = "p"\nfailures = [{kind = "404", at = [1]}]\n')
    assert "unknown failure kind '404'" in err.message and err.details["field"] == "failures"


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ('[[persona]]\nid = "p"\ncolour = "red"\n', "unknown field(s) colour"),
        ('[[persona]]\nid = "p"\nvision = "yes"\n', "'vision' must be a boolean"),
        ('[[persona]]\nid = "p"\nrpm = 2.5\n', "'rpm' must be a integer"),
        ('[[persona]]\nid = "p"\nlatency_ms = true\n', "'latency_ms' must be a"),
        ('[[persona]]\nid = "p"\nmalformed_args_rate = 1.5\n', "must be 0.0..1.0"),
        ('[[persona]]\nid = "p"\nreasoning = "deep"\n', "'reasoning' is 'deep'"),
        ('[[persona]]\nid = "p"\nrate_limit_style = "aws"\n', "rate_limit_style"),
        ('[[persona]]\nid = "p"\nfailures = [{kind = "503"}]\n', "exactly one of 'at'"),
        ('[[persona]]\nid = "p"\nfailures = [{kind = "503", at = [0]}]\n', "ordinals >= 1"),
        ('[[persona]]\nid = "p"\nfailures = [{kind = "503", rate = 2}]\n', "'rate' must be"),
        ('[[persona]]\nid = "p"\nexpect = { tools = "maybe" }\n', "expect.tools"),
        ('[[persona]]\nid = "p"\nexpect = { speed = "fast" }\n', "unknown key 'speed'"),
        ('[[persona]]\nid = "p"\nexpect = { family = "" }\n', "'expect.family' must be a non"),
        ('[[persona]]\nid = "p"\nexpect = { family = " " }\n', "'expect.family' must be a non"),
        ('[[persona]]\nid = "p"\nexpect = { family = 3 }\n', "'expect.family' must be a non"),
        ('[[persona]]\nid = "p"\n[[persona]]\nid = "p"\n', "declared twice"),
        ('[[persona]]\ntool_style = "native"\n', "needs a non-empty string 'id'"),
        ("seed = 1\n", "at least one [[persona]]"),
        ('sead = 1\n[[persona]]\nid = "p"\n', "unknown top-level key(s) sead"),
    ],
)
def test_validation_errors(toml: str, needle: str) -> None:
    assert needle in _invalid(toml).message


def test_missing_file_and_server_refuses_bad_fleet(tmp_path: Path) -> None:
    err = _invalid(tmp_path / "nope.toml")
    assert "cannot read" in err.message
    with pytest.raises(ConfigError):
        SimServer('[[persona]]\nid = "p"\ntool_style = "x"\n')


def test_expect_family_is_kept_as_written() -> None:
    fleet = load_fleet(
        '[[persona]]\nid = "p"\ntool_style = "kimi"\n'
        'expect = { tools = "text", family = "kimi", vision = "none" }\n'
    )
    assert fleet.personas["p"].expect == {"tools": "text", "family": "kimi", "vision": "none"}
    err = _invalid('[[persona]]\nid = "p"\nexpect = { familly = "kimi" }\n')
    assert "(expected tools, vision, family)" in err.message
    assert err.details["field"] == "expect" and err.details["persona"] == "p"
