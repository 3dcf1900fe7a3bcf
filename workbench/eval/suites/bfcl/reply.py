"""One reply graded as BFCL grades it in the mode it was asked in.

Function-calling mode grades the native calls and nothing else: a call written in prose is
the model's text, and BFCL's decoder fails on text (`decoder_failed`). Prompting mode decodes
the reply whole, as written, with BFCL's decoder (`decode.py`). A reply that answered natively
in prompting mode (a `plan` run whose planner sent the tools) is graded as function-calling.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.eval.suites.bfcl.case import BfclCase, Undecodable
from workbench.eval.suites.bfcl.checker import BfclGrade, grade_calls
from workbench.eval.suites.bfcl.decode import decode_prompt_reply, holds_a_call, well_formed
from workbench.types import ToolCall, ToolsMode

_WRONG_FORMAT = BfclGrade(
    False,
    "ast_decoder:decoder_wrong_output_format",
    ("Did not output in the specified format: not a list of {function: {parameters}}.",),
)


def grade_reply(
    case: BfclCase, text: str, calls: Sequence[ToolCall], mode: ToolsMode | None
) -> BfclGrade:
    """`text`: the reply as written (`Reply.content`, else `Reply.text`); `calls`: what our
    readers found; `mode`: the run's tools mode (`native`, `text` or `plan`)."""
    native = [c for c in calls if c.source == "native"]
    if native or mode == "native":
        return _function_calling(case, native)
    language = case.language if case.kind == "ast" else "python"
    try:
        decoded = decode_prompt_reply(text, language)
    except Undecodable:
        return grade_calls(case, None)
    if case.kind != "ast":
        return grade_calls(case, decoded if holds_a_call(decoded) else None)
    if not well_formed(decoded):
        return _WRONG_FORMAT
    return grade_calls(case, decoded)


def _function_calling(case: BfclCase, native: list[ToolCall]) -> BfclGrade:
    """BFCL reads each call's arguments with `json.loads`: JSON that is not an object is the
    wrong format (an unreadable call makes the reply undecodable, in `grade_calls`)."""
    if not native:
        return grade_calls(case, None)
    if any(c.invalid_reason == "not_object" for c in native):
        return _WRONG_FORMAT if case.kind == "ast" else grade_calls(case, None)
    return grade_calls(case, native)
