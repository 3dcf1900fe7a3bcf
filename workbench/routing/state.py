"""What the walks of one router share.

`RoutingState` is the memory of the traffic so far (quotas, cooldowns and degradation,
breakers, health, the pacing learnt from the providers, refused credentials, the vendors' latest quota readings, lanes seen); a walk
reads and changes it and nothing else of the router. What the user configured is in
`workbench.routing.settings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workbench.providers.meter import QuotaReading
from workbench.routing.breaker import BreakerPool
from workbench.routing.chain_health import HealthTracker
from workbench.routing.cooldown import Cooldowns
from workbench.routing.pacing import Pacer
from workbench.routing.quota import QuotaStore

if TYPE_CHECKING:
    from workbench.routing.candidates import Candidate

__all__ = ["RoutingState"]


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
