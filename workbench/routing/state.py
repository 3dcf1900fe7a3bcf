"""What the walks of one router share, and the settings they follow.

`RoutingState` is the memory of the traffic so far (quotas, cooldowns and degradation,
breakers, health, refused credentials, the vendors' latest quota readings, lanes seen); a walk
reads and changes it and nothing else of the router. `RouteSettings` is what the user
configured: how long things cool, how long an attempt may take, who observes and what caches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workbench.errors import ProviderError
from workbench.events import Sink
from workbench.providers.meter import QuotaReading
from workbench.routing.breaker import BreakerPool
from workbench.routing.chain_health import HealthTracker
from workbench.routing.cooldown import Cooldowns
from workbench.routing.quota import QuotaStore

if TYPE_CHECKING:
    from workbench.capability.observer import CapabilityObserver
    from workbench.routing.admission import Admission
    from workbench.routing.cache import ResponseCache
    from workbench.routing.candidates import Candidate

__all__ = ["RouteSettings", "RoutingState"]


@dataclass(slots=True)
class RoutingState:
    quota: QuotaStore
    cooldowns: Cooldowns
    breakers: BreakerPool
    health: HealthTracker
    # provider key → why its credential was refused (401/403): shown in `stats()`.
    flagged: dict[str, str] = field(default_factory=dict)
    # key → the vendor's latest quota readings, from its rate-limit headers.
    readings: dict[str, list[QuotaReading]] = field(default_factory=dict)
    # Lanes are decided per request: `stats()` lists every lane a route has used.
    lanes_seen: dict[str, Candidate] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class RouteSettings:
    clock: Callable[[], int]
    observer: CapabilityObserver
    sinks: tuple[Sink, ...] = ()
    cooldown_s: float = 60.0
    cooldown_on: Callable[[ProviderError], float | None] | None = None
    attempt_timeout_s: float | None = 30.0
    first_token_timeout_s: float | None = None
    admission: Admission | None = None
    cache: ResponseCache | None = None
    cache_ttl_s: float | None = None
