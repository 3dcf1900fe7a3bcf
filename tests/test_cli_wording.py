"""What the command prints is stable: scripts read the error line's code, people copy the
resume command."""

from __future__ import annotations

from workbench.cli import wording
from workbench.errors import ConfigError


def test_an_error_is_one_line_led_by_its_code():
    exc = ConfigError("no such file", code="PROVIDERS_INVALID")
    assert wording.error_line(exc) == "error: PROVIDERS_INVALID: no such file"


def test_an_internal_error_is_one_line_of_bounded_length_that_says_how_to_see_more():
    line = wording.internal_error_line(ValueError("first\nsecond   " + "x" * 500))
    assert "\n" not in line
    assert line.startswith("error: INTERNAL: ValueError: first second xxx")
    assert line.endswith("(set WORKBENCH_DEBUG=1 for the traceback)")
    assert line.count("x") <= 300


def test_an_interrupted_run_names_the_command_that_resumes_it():
    text = wording.run_interrupted("w.duckdb", "datasets/smoke.jsonl", 5, "20260101-000000-abcd")
    assert text.splitlines() == [
        "interrupted: everything so far is in w.duckdb; resume with",
        "  workbench run datasets/smoke.jsonl --limit 5 --resume 20260101-000000-abcd",
    ]
    assert "--limit" not in wording.run_interrupted("w.duckdb", "d.jsonl", None, "r")
