"""Grade one answer against its item's `expect`: pure, no model call.

Each field of `Expect` is one named check; the score is the fraction that passed, so a
partly right answer (the right tool, a wrong argument) is told apart from a wrong one.
`language` asks a language detector: the one passed to `grade`, else the
module's default (`default_detector()`: small fr/en words, no model). A detector that does
not know ("None") fails the check: an answer whose language nobody can tell has not shown
it is in the right one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from workbench.eval.dataset.prompt_set import Item
from workbench.eval.scoring.grounding import facts_from_sources, verify_answer
from workbench.text.language import default_detector, primary_language, same_language
from workbench.types import ToolCall, ToolsMode

if TYPE_CHECKING:
    from workbench.eval.suites.bfcl.case import BfclCase

_FENCED_JSON = re.compile(r"```json[ \t]*\r?\n(.*?)```", re.S | re.I)
_DEFAULT_DETECTOR = default_detector()


class Detector(Protocol):
    def detect(self, text: str) -> str | None: ...


@dataclass(frozen=True)
class Grade:
    passed: bool
    score: float  # fraction of checks passed
    checks: dict[str, bool] = field(default_factory=dict)
    reason: str = ""  # the first failing check, briefly ("" when everything passed)
    error_type: str | None = None  # a failure's code in the grader's own taxonomy (BFCL's)


# ------------------------------------------------------------------ argument matching


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def value_matches(expected: Any, actual: Any) -> bool:
    """Strings: case-insensitive and trimmed. Numbers: equal as numbers (2 == 2.0).
    Objects: the expected keys are a subset. Lists: same length, element by element."""
    if isinstance(expected, str):
        return isinstance(actual, str) and expected.strip().casefold() == actual.strip().casefold()
    if _is_number(expected):
        return (
            _is_number(actual)
            and math.isfinite(actual)
            and math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-12)
        )
    if isinstance(expected, dict):
        return isinstance(actual, dict) and args_match(expected, actual)
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(value_matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return expected == actual and type(expected) is type(actual)  # bool, None


def args_match(expected: dict[str, Any] | None, actual: dict[str, Any]) -> bool:
    """True when every expected argument is present in `actual` with a matching value."""
    return all(k in actual and value_matches(v, actual[k]) for k, v in (expected or {}).items())


def _satisfies(call: ToolCall, tool: str, args: dict[str, Any] | None) -> bool:
    # An unreadable call never counts, even when its name is right: nobody could run it.
    return not call.invalid and call.name == tool and args_match(args, call.arguments)


def _match_all(expected: Sequence[dict[str, Any]], calls: Sequence[ToolCall]) -> int:
    """How many expected calls can be matched to distinct actual calls (any order):
    a bipartite matching, so one actual call never satisfies two expectations."""
    owner: dict[int, int] = {}  # actual index -> expected index

    def place(e: int, seen: set[int]) -> bool:
        for a, call in enumerate(calls):
            if a in seen or not _satisfies(call, expected[e]["tool"], expected[e].get("args")):
                continue
            seen.add(a)
            if a not in owner or place(owner[a], seen):
                owner[a] = e
                return True
        return False

    return sum(place(e, set()) for e in range(len(expected)))


def _describe(tool: str, args: dict[str, Any] | None) -> str:
    if not args:
        return tool
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{tool}({inner})"


# ------------------------------------------------------------------ text checks


def _json_payload(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text.strip())
    except (ValueError, RecursionError):
        pass
    m = _FENCED_JSON.search(text)
    if m:
        try:
            return True, json.loads(m.group(1).strip())
        except (ValueError, RecursionError):
            return False, None
    return False, None


def _schema_error(schema: dict[str, Any], value: Any) -> str | None:
    from jsonschema.validators import validator_for

    try:
        error = next(iter(validator_for(schema)(schema).iter_errors(value)), None)
    except Exception as exc:  # an unresolvable $ref and the like: the check fails, loudly
        return f"schema unusable ({type(exc).__name__})"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"{where}: {error.message}"


# ------------------------------------------------------------------ grade


def grade(
    item: Item,
    text: str,
    tool_calls: Sequence[ToolCall],
    detector: Detector | None = None,
    raw: str | None = None,
    tools_mode: ToolsMode | None = None,
) -> Grade | None:
    """Run every check `item.expect` asks for. None when there is nothing to grade (no
    expect). `detector`: anything with `detect(text) -> str | None` (a
    `LanguageDetector`); None uses the module's default fr/en detector.

    `text` is what a person reads (cleaned); `raw`, when given, is what the model wrote: a
    JSON schema is a promise about the model's output, which the cleaner turns into Markdown.
    `tools_mode` (the run's) decides how a BFCL question's reply is read."""
    expect = item.expect
    if expect is None:
        return None
    if expect.bfcl is not None:  # graded on the reply as written, in the mode it was asked in
        from workbench.eval.suites.bfcl.case import BfclCase

        if not isinstance(expect.bfcl, BfclCase):
            return (
                None  # a multi-turn entry is graded on its whole trace, by the job that played it
            )
        return _bfcl_grade(expect.bfcl, raw if raw is not None else text, tool_calls, tools_mode)
    text = text or ""
    checks: dict[str, bool] = {}
    reasons: dict[str, str] = {}

    def check(name: str, ok: bool, why: str) -> None:
        checks[name] = ok
        if not ok:
            reasons[name] = why

    if expect.tool is not None:
        ok = any(_satisfies(c, expect.tool, expect.args) for c in tool_calls)
        names = ", ".join(c.name + (" (invalid)" if c.invalid else "") for c in tool_calls)
        check(
            "tool",
            ok,
            f"no call matching {_describe(expect.tool, expect.args)}; got {names or 'no call'}",
        )
    if expect.calls:
        matched = _match_all(expect.calls, tool_calls)
        check(
            "calls",
            matched == len(expect.calls),
            f"{matched} of {len(expect.calls)} expected calls matched "
            f"({len(tool_calls)} calls made)",
        )
    if expect.no_tool:
        names = ", ".join(c.name for c in tool_calls)
        check("no_tool", not tool_calls, f"called {names}")
    if expect.contains:
        folded = text.casefold()
        missing = [s for s in expect.contains if s.casefold() not in folded]
        check("contains", not missing, "missing " + ", ".join(json.dumps(s) for s in missing))
    if expect.regex is not None:
        check(
            "regex",
            re.search(expect.regex, text, re.DOTALL) is not None,
            f"no match for /{expect.regex}/",
        )
    if expect.json_schema is not None:
        parsed, value = _json_payload(raw if raw is not None else text)
        problem = _schema_error(expect.json_schema, value) if parsed else "the text is not JSON"
        check("json_schema", problem is None, problem or "")
    if expect.language is not None:
        found = (detector if detector is not None else _DEFAULT_DETECTOR).detect(text)
        check(
            "language",
            same_language(found, expect.language),  # primary subtag: fr-FR == fr
            f"expected {primary_language(expect.language)}, "
            f"detected {primary_language(found) or 'no language'}",
        )
    if expect.cleaned is not None:
        check("cleaned", text.strip() == expect.cleaned.strip(), "the cleaned text differs")
    if expect.grounded:
        evidence = [item.system or ""] + [
            m["content"] for m in item.messages if isinstance(m.get("content"), str)
        ]
        verdict = verify_answer(
            text,
            facts_from_sources(item.sources),
            item.prompt,
            extra_evidence=evidence,
            extra_citation_ids=[s["id"] for s in item.sources],
        )
        check("grounded", verdict.ok, "; ".join(verdict.problems[:3]))

    if not checks:
        return None
    passed = sum(checks.values())
    failing = next((n for n, ok in checks.items() if not ok), None)
    return Grade(
        passed=failing is None,
        score=passed / len(checks),
        checks=checks,
        reason="" if failing is None else f"{failing}: {reasons[failing]}",
    )


def _bfcl_grade(
    case: BfclCase, text: str, tool_calls: Sequence[ToolCall], mode: ToolsMode | None
) -> Grade:
    """A BFCL question is graded by BFCL's checker alone: its verdict, its error type."""
    from workbench.eval.suites.bfcl.reply import grade_reply  # only BFCL runs load the checker

    verdict = grade_reply(case, text, tool_calls, mode)
    reason = "" if verdict.valid else f"{verdict.error_type}: {'; '.join(verdict.errors[:2])}"
    return Grade(
        passed=verdict.valid,
        score=1.0 if verdict.valid else 0.0,
        checks={"bfcl": verdict.valid},
        reason=reason[:500],
        error_type=verdict.error_type,
    )


__all__ = ["Grade", "args_match", "grade", "value_matches"]
