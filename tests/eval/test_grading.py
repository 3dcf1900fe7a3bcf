"""Grading: each check passes on a right answer and fails on a wrong one."""

from __future__ import annotations

import pytest

from workbench.eval.dataset.prompt_set import Expect, Item
from workbench.eval.scoring.grading import Grade, args_match, grade, value_matches
from workbench.types import ToolCall


def item(expect: Expect | None, sources: tuple = (), prompt: str = "question") -> Item:
    return Item(
        id="i",
        messages=({"role": "user", "content": prompt},),
        expect=expect,
        sources=sources,
        line=1,
    )


def call(name: str, invalid: bool = False, **arguments) -> ToolCall:
    return ToolCall(
        id=f"c-{name}", name=name, arguments=arguments, raw_arguments="", invalid=invalid
    )


def test_no_expect_means_no_grade():
    assert grade(item(None), "anything", []) is None


def test_a_language_only_expectation_is_graded_by_the_default_detector():
    # Was "not graded until a detector exists": the detector exists.
    assert grade(item(Expect(language="fr")), "bonjour", []) == Grade(
        passed=True, score=1.0, checks={"language": True}, reason=""
    )
    g = grade(item(Expect(language="fr", contains=("bonjour",))), "Bonjour", [])
    assert g is not None and set(g.checks) == {"contains", "language"} and g.passed


# ------------------------------------------------------------------ tool


def test_tool_passes_on_the_right_call_with_an_argument_subset():
    e = Expect(tool="get_weather", args={"city": "Paris"})
    g = grade(item(e), "", [call("get_weather", city="Paris", unit="celsius")])
    assert g == Grade(passed=True, score=1.0, checks={"tool": True}, reason="")


@pytest.mark.parametrize(
    "calls",
    [
        [],
        [call("get_time", city="Paris")],
        [call("get_weather", city="Lyon")],
        [call("get_weather")],
        [call("get_weather", invalid=True, city="Paris")],  # unreadable: never counts
    ],
)
def test_tool_fails_on_a_wrong_missing_or_invalid_call(calls):
    g = grade(item(Expect(tool="get_weather", args={"city": "Paris"})), "", calls)
    assert g is not None and not g.passed and g.checks == {"tool": False}
    assert g.reason.startswith("tool: ")


def test_tool_without_args_only_needs_the_name():
    assert grade(item(Expect(tool="calculator")), "", [call("calculator", expression="1+1")]).passed
    assert not grade(item(Expect(tool="calculator")), "", [call("calculator", True)]).passed


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ("Paris", "  paris ", True),
        ("Paris", "Paris, France", False),
        (100, 100.0, True),
        (100, 100.5, False),
        (100, "100", False),
        (True, 1, False),
        (1, True, False),
        (True, True, True),
        (None, None, True),
        ({"a": {"b": "X"}}, {"a": {"b": "x", "c": 1}, "d": 2}, True),
        ({"a": {"b": "X", "e": 1}}, {"a": {"b": "x"}}, False),
        (["A", 2], ["a", 2.0], True),
        (["A", 2], ["a"], False),
    ],
)
def test_argument_values_match_by_kind(expected, actual, ok):
    assert value_matches(expected, actual) is ok


def test_args_match_is_a_subset_test():
    assert args_match({"city": "Paris"}, {"city": "paris", "unit": "c"})
    assert not args_match({"city": "Paris", "unit": "c"}, {"city": "Paris"})
    assert args_match(None, {}) and args_match({}, {"x": 1})


# ------------------------------------------------------------------ calls (parallel)

PARIS_LONDON = Expect(
    calls=(
        {"tool": "get_weather", "args": {"city": "Paris"}},
        {"tool": "get_weather", "args": {"city": "London"}},
    )
)


def test_parallel_calls_match_in_any_order():
    calls = [call("get_weather", city="London"), call("get_weather", city="Paris")]
    assert grade(item(PARIS_LONDON), "", calls).passed


def test_parallel_calls_each_need_their_own_actual_call():
    g = grade(item(PARIS_LONDON), "", [call("get_weather", city="Paris")])
    assert not g.passed and g.reason.startswith("calls: 1 of 2")
    same = Expect(calls=({"tool": "calculator", "args": {}}, {"tool": "calculator", "args": {}}))
    assert not grade(item(same), "", [call("calculator")]).passed
    assert grade(item(same), "", [call("calculator"), call("calculator")]).passed


def test_parallel_matching_finds_an_assignment_a_greedy_pass_would_miss():
    # The first actual call fits both expectations; only one assignment satisfies both.
    e = Expect(calls=({"tool": "f", "args": {}}, {"tool": "f", "args": {"x": 1}}))
    assert grade(item(e), "", [call("f", x=1), call("f", y=2)]).passed


def test_an_invalid_call_never_satisfies_a_parallel_expectation():
    calls = [call("get_weather", city="London"), call("get_weather", True, city="Paris")]
    assert not grade(item(PARIS_LONDON), "", calls).passed


# ------------------------------------------------------------------ text checks


def test_no_tool():
    assert grade(item(Expect(no_tool=True)), "hello", []).passed
    g = grade(item(Expect(no_tool=True)), "", [call("get_weather", city="x")])
    assert not g.passed and g.reason == "no_tool: called get_weather"


def test_contains_is_case_insensitive_and_needs_every_substring():
    e = Expect(contains=("paris", "FRANCE"))
    assert grade(item(e), "Paris is in France.", []).passed
    g = grade(item(e), "Paris is lovely.", [])
    assert not g.passed and '"FRANCE"' in g.reason


def test_regex_searches_across_lines():
    e = Expect(regex=r"start.*end")
    assert grade(item(e), "start\nmiddle\nend", []).passed
    assert not grade(item(e), "end then start", []).passed


SCHEMA = {
    "type": "object",
    "required": ["city"],
    "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
}


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('{"city": "Paris", "temp": 21}', True),
        ('  {"city": "Paris"}\n', True),
        ('Here you go:\n```json\n{"city": "Paris"}\n```\nDone.', True),
        ('{"temp": 21}', False),
        ('{"city": 5}', False),
        ("Paris, 21 degrees", False),
        ("```json\n{not json}\n```", False),
    ],
)
def test_json_schema(text, ok):
    g = grade(item(Expect(json_schema=SCHEMA)), text, [])
    assert g.passed is ok and g.checks == {"json_schema": ok}


def test_grounded_uses_the_items_sources():
    src = ({"id": "F1", "text": "The Eiffel Tower is 330 metres tall.", "url": "https://x.test"},)
    e = Expect(grounded=True)
    assert grade(item(e, src, "How tall?"), "The Eiffel Tower is 330 metres tall [F1].", []).passed
    g = grade(item(e, src, "How tall?"), "Gustave Eiffel built it in 1889 [F2].", [])
    assert not g.passed and g.reason.startswith("grounded: ")
    assert "unknown-citation: [F2]" in g.reason


def test_score_is_the_fraction_of_checks_passed_and_reason_names_the_first_failure():
    e = Expect(tool="get_weather", args={"city": "Paris"}, contains=("sunny",), regex="rain")
    g = grade(item(e), "It is sunny.", [call("get_weather", city="Paris")])
    assert g.checks == {"tool": True, "contains": True, "regex": False}
    assert g.score == pytest.approx(2 / 3) and not g.passed
    assert g.reason == "regex: no match for /rain/"


# ------------------------------------------------------------------ language


class FixedDetector:
    """A detector that always says the same thing, and records what it was shown."""

    def __init__(self, lang: str | None) -> None:
        self.lang = lang
        self.seen: list[str] = []

    def detect(self, text: str) -> str | None:
        self.seen.append(text)
        return self.lang


def test_language_passes_when_the_detector_finds_the_expected_language():
    detector = FixedDetector("en")
    g = grade(item(Expect(language="en")), "The answer.", [], detector=detector)
    assert g == Grade(passed=True, score=1.0, checks={"language": True}, reason="")
    assert detector.seen == ["The answer."]


@pytest.mark.parametrize("found", ["fr", None])
def test_language_fails_on_another_language_or_when_nobody_can_tell(found):
    g = grade(item(Expect(language="en")), "La réponse.", [], detector=FixedDetector(found))
    assert g is not None and not g.passed and g.checks == {"language": False}
    assert g.reason == f"language: expected en, detected {found or 'no language'}"


@pytest.mark.parametrize(("expected", "found"), [("fr-FR", "fr"), ("fr", "fr-FR"), ("FR", "fr_CA")])
def test_language_compares_primary_subtags(expected, found):
    g = grade(item(Expect(language=expected)), "x", [], detector=FixedDetector(found))
    assert g is not None and g.passed


def test_language_without_a_detector_uses_the_default_french_english_one():
    fr = item(Expect(language="fr-FR"))
    assert grade(fr, "Rome est la capitale de l'Italie.", []).passed
    assert not grade(fr, "Rome is the capital of Italy.", []).passed
    assert grade(item(Expect(language="en")), "Rome is the capital of Italy.", []).passed
    assert not grade(item(Expect(language="en")), "", []).passed  # no text, no language


def test_language_is_one_check_among_others():
    e = Expect(language="fr", contains=("Rome",))
    g = grade(item(e), "Rome is the capital.", [])
    assert g is not None and g.checks == {"contains": True, "language": False} and g.score == 0.5
