"""What an output's outcome is called, in SQL: one definition for every count a run shows.

The summary line, `RunFrames.grades()` and `compare()`, the report's cards and tables and the
gate all count outputs the same way, so one run never shows two answered counts or two pass
rates:

- *answered*: the model answered (no `error_code`): graded or not.
- *unanswered*: the provider kept it from the model, held and then given up (`unanswered`
  says why); neither passed nor failed.
- *failed*: the route failed for the caller's reasons (a 400, a bad key), or the run lost it;
  not held, not answered.
- *graded*: an answer with a verdict (`passed` set). The pass rate is passed / graded.

An output logged before failed routes had no verdict may carry `passed = false` with an
`error_code`: the conditions below leave it out of the graded all the same.
"""

from __future__ import annotations

__all__ = [
    "ANSWERED_CALLS",
    "SENT_OUTCOMES",
    "answered",
    "answered_calls",
    "failed",
    "graded",
    "passed",
    "sent",
    "unanswered",
]

# Attempt outcomes where a request was sent to a provider. A cancelled attempt is one: its
# caller stopped it after the request left (a client that hung up, a Ctrl-C), and a count of
# requests missing it would not add up to the provider's bill or the requests it received.
# The report's provider calls, the requests per second and the chaos checks all count these.
SENT_OUTCOMES = ("ok", "error", "rejected", "partial", "cancelled")
# Attempt outcomes that came back with an answer: the calls whose tokens are counted.
ANSWERED_CALLS = ("ok", "partial", "rejected")


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def sent(alias: str = "") -> str:
    """An attempt whose request was sent (a cache hit sent none)."""
    return f"({alias}outcome IN {_in(SENT_OUTCOMES)} AND {alias}cached IS NOT TRUE)"


def answered_calls(alias: str = "") -> str:
    """An attempt answered by its provider (a cache hit was answered by none)."""
    return f"({alias}outcome IN {_in(ANSWERED_CALLS)} AND {alias}cached IS NOT TRUE)"


def answered(alias: str = "") -> str:
    """The model answered: no error code (an unanswered output always has one)."""
    return f"({alias}error_code IS NULL)"


def unanswered(alias: str = "") -> str:
    """Held for the provider's reasons, then given up."""
    return f"({alias}unanswered IS NOT NULL)"


def failed(alias: str = "") -> str:
    """Failed, and not held: the caller's side, or the run's."""
    return f"({alias}error_code IS NOT NULL AND {alias}unanswered IS NULL)"


def graded(alias: str = "") -> str:
    """An answer with a verdict: the pass rate's denominator."""
    return f"({alias}error_code IS NULL AND {alias}passed IS NOT NULL)"


def passed(alias: str = "") -> str:
    """A graded answer that passed: the pass rate's numerator."""
    return f"({alias}error_code IS NULL AND {alias}passed IS TRUE)"
