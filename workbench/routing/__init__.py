"""Routing: send each request to the first model of the caller's chain that can answer,
under quotas (memory or Redis), cooldowns, degradation, circuit breakers and admission.

`Router` composes the parts; `attempt` runs one attempt's steps in one order (plan, cache,
mask, call, unmask, observe), `walk` applies the rules of each outcome to the `RoutingState`
(`state`) under the user's `RouterSettings` (`settings`); each other part is its own module and usable alone:
`quota` (RPM/RPD/TPD reservations), `cooldown` (who rests, how long), `breaker` (outages),
`limits` (reading 429 bodies), `health`, and the pure admission rules `policy`,
`fair_share`, `budget_class` behind `admission`.
"""

from workbench.providers.meter import (
    QuotaReading,
    answers_remaining,
    parse_reset_at,
    read_quota,
    reading_from_refusal,
)
from workbench.routing.admission import (
    Admission,
    AdmissionDenied,
    BudgetClassAdmission,
    FairShareAdmission,
    PolicyAdmission,
    all_of,
)
from workbench.routing.attempt import plan_request
from workbench.routing.breaker import BreakerOpen, BreakerPool, CircuitBreaker, is_provider_outage
from workbench.routing.cache import ResponseCache, cache_key
from workbench.routing.chain_health import Health, HealthTracker
from workbench.routing.cooldown import Cooldowns, CoolingDecision, cooldown_decision
from workbench.routing.limits import (
    classify_rate_limit,
    humanize_wait,
    names_model,
    rate_limit_message,
    retry_after_seconds,
)
from workbench.routing.quota import (
    FailoverQuota,
    Limits,
    MemoryQuota,
    QuotaStore,
    Refusal,
    Reservation,
)
from workbench.routing.router import Attempt, Router, RouteResult
from workbench.routing.settings import RouterSettings, RouteSettings
from workbench.routing.state import RoutingState

__all__ = [
    "Admission",
    "AdmissionDenied",
    "Attempt",
    "BreakerOpen",
    "BreakerPool",
    "BudgetClassAdmission",
    "CircuitBreaker",
    "Cooldowns",
    "CoolingDecision",
    "FailoverQuota",
    "FairShareAdmission",
    "Health",
    "HealthTracker",
    "Limits",
    "MemoryQuota",
    "PolicyAdmission",
    "QuotaReading",
    "QuotaStore",
    "Refusal",
    "Reservation",
    "ResponseCache",
    "RouteResult",
    "RouteSettings",
    "Router",
    "RouterSettings",
    "RoutingState",
    "all_of",
    "answers_remaining",
    "cache_key",
    "classify_rate_limit",
    "cooldown_decision",
    "humanize_wait",
    "is_provider_outage",
    "names_model",
    "parse_reset_at",
    "plan_request",
    "rate_limit_message",
    "read_quota",
    "reading_from_refusal",
    "retry_after_seconds",
]
