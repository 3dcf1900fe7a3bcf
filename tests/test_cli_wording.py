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


def test_the_short_lines_of_the_other_verbs_keep_their_words():
    from workbench.tools.pending import Action

    assert wording.nothing_line("runs yet") == "no runs yet"
    assert wording.bfcl_data_line("/c/bfcl.whl") == "BFCL data: /c/bfcl.whl"
    assert wording.spans_sent_line(3, "spans.json") == "3 span(s) → spans.json"
    assert wording.serving_local_line("http://127.0.0.1:9", True) == (
        "serving SmolLM2 with native tool calls at http://127.0.0.1:9 (Ctrl-C to stop)"
    )
    assert wording.serving_local_line("http://127.0.0.1:9", False) == (
        "serving SmolLM2 at http://127.0.0.1:9 (Ctrl-C to stop)"
    )
    assert wording.serving_view_line("http://127.0.0.1:8790/", "r1", "w.duckdb") == (
        "report of run r1 at http://127.0.0.1:8790/, read from w.duckdb (Ctrl-C to stop)"
    )
    assert wording.view_exposed_line("0.0.0.0").startswith(
        "warning: the report listens on 0.0.0.0, beyond this machine: anyone who reaches it "
        "with its address (printed below) reads every prompt and answer"
    )
    action = Action(
        id="a1",
        action="send_email",
        payload={"to": "x"},
        status="pending",
        proposed_by="agent",
        created_at_ms=0,
        updated_at_ms=0,
    )
    assert wording.action_line(action) == (
        'a1  pending   send_email     by agent                    {"to": "x"}'
    )


def test_a_bfcl_row_says_what_bfcl_counts_for_what_was_not_run():
    nan = float("nan")
    row = {"model": "m", "mode": "text", "Items": 4, "Not Run": 21, "Overall Acc": nan}
    row |= {"Multi Turn Overall Acc": 0.0, "Multi Turn Base": nan, "Memory Summary": nan}
    sections = {"Multi Turn Overall Acc": ("Multi Turn Base", "Memory Summary")}
    lines = wording.bfcl_leaderboard_lines(
        row, {"Multi Turn Overall Acc": 30}, sections, ["Multi Turn Base"]
    )
    assert lines[0] == "m · text · 4 item(s)"
    assert "unknown (BFCL's data is not fetched)" in lines[1]
    assert lines[1].endswith("(weights: Multi Turn 30; BFCL counts the 21 categories not run as 0)")
    assert lines[3].split(None, 3)[3] == "not run (BFCL counts 0)"
    assert lines[4].endswith("N/A (a category not run)")
