"""Seeded failure schedules: which request ordinal of which persona fails, and how.

Every random-looking choice in the simulator goes through `draw()`: a pure function of the
fleet seed and a few labels, so the same fleet and the same traffic give the same run.
"""

from __future__ import annotations

import hashlib

from workbench.sim.fleet import FailureRule, Persona

# Kinds answered with an error before any answer is written.
EARLY_KINDS = frozenset({"429", "500", "502", "503", "408", "hang", "context_length"})
# Kinds that shape an otherwise normal answer.
LATE_KINDS = frozenset({"empty", "truncated", "malformed", "stream_cut"})


def draw(seed: int, *labels: object) -> float:
    """A deterministic number in [0, 1) for (seed, labels)."""
    text = "\x1f".join([str(seed), *(str(x) for x in labels)])
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class FailureSchedule:
    """`kind_for(n)`: the failure kind for the persona's n-th request (1-based), or None."""

    def __init__(self, persona: Persona, seed: int) -> None:
        self.persona = persona
        self.seed = seed

    def kind_for(self, ordinal: int) -> str | None:
        for i, rule in enumerate(self.persona.failures):
            if _fires(rule, i, ordinal, self.persona.id, self.seed):
                return rule.kind
        return None

    def preview(self, n: int) -> list[str | None]:
        """The kinds of the first `n` requests: documentation and tests read this."""
        return [self.kind_for(k) for k in range(1, n + 1)]


def _fires(rule: FailureRule, index: int, ordinal: int, pid: str, seed: int) -> bool:
    if rule.at:
        return ordinal in rule.at
    if rule.rate is not None:
        return draw(seed, "failure", pid, index, ordinal) < rule.rate
    return False
