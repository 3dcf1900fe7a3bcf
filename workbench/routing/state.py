"""What the walks of one router share.

`RoutingState` is the memory of the traffic so far (quotas, cooldowns and degradation,
breakers, health, the pacing learnt from the providers, refused credentials, the vendors' latest quota readings, lanes seen); a walk
reads and changes it and nothing else of the router. What the user configured is in
`workbench.routing.settings`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from workbench.providers.meter import QuotaReading
from workbench.routing.breaker import BreakerPool
from workbench.routing.chain_health import HealthTracker
from workbench.routing.cooldown import Cooldowns
from workbench.routing.pacing import Pacer
from workbench.routing.quota import QuotaStore

if TYPE_CHECKING:
    from workbench.routing.candidates import Candidate

__all__ = ["RoutingState", "TokenCost"]


@dataclass(slots=True)
class RoutingState:
    quota: QuotaStore
    cooldowns: Cooldowns
    breakers: BreakerPool
    health: HealthTracker
    # What each provider said of its limits, and each key's adaptive concurrency.
    pacer: Pacer
    # provider key → why its credential was refused (401/403): shown in `stats()`.
    flagged: dict[str, str] = field(default_factory=dict)
    # key → the vendor's latest quota readings, from its rate-limit headers.
    readings: dict[str, list[QuotaReading]] = field(default_factory=dict)
    # Lanes are decided per request: `stats()` lists every lane a route has used.
    lanes_seen: dict[str, Candidate] = field(default_factory=dict)
    # key → what its answers cost, as the provider counted them: what a token limit is paced by.
    token_costs: dict[str, TokenCost] = field(default_factory=dict)


@dataclass(slots=True)
class TokenCost:
    """What a key's requests cost in tokens, learnt from the usage its provider reports: the
    provider's prompt count against our estimate of it, and the answer's length. A token limit
    learnt from the provider's headers is paced by this, not by the request's `max_tokens`
    (256 unless set): pacing a 9-token answer as 265 tokens lets one request a minute through
    a 268-token window that would take thirty. Moving means: the newest answers count most."""

    prompt_ratio: float = 1.0
    answer_tokens: float | None = None

    WEIGHT: ClassVar[float] = 0.3

    def learn(self, estimated_prompt: int, prompt: int | None, answer: int | None) -> None:
        if prompt is not None and estimated_prompt > 0:
            self.prompt_ratio += self.WEIGHT * (prompt / estimated_prompt - self.prompt_ratio)
        if answer is not None:
            if self.answer_tokens is None:
                self.answer_tokens = float(answer)
            else:
                self.answer_tokens += self.WEIGHT * (answer - self.answer_tokens)

    def expected(self, estimated_prompt: int, max_answer: int) -> int:
        """The tokens the next request is expected to cost: before any answer, its whole
        `max_answer`; after, what answers have cost (never more than `max_answer`)."""
        answer = max_answer if self.answer_tokens is None else min(max_answer, self.answer_tokens)
        return math.ceil(estimated_prompt * self.prompt_ratio + answer)
