"""Routing: send each request to the first model of the caller's chain that can answer,
under quotas (memory or Redis), cooldowns, degradation, circuit breakers and admission.

`Router` composes the parts; each part is its own module and usable alone:
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
from workbench.routing.breaker import BreakerOpen, BreakerPool, CircuitBreaker, is_provider_outage
from workbench.routing.cooldown import Cooldowns, CoolingDecision, cooldown_decision
from workbench.routing.health import Health, HealthTracker
from workbench.routing.limits import (
    classify_rate_limit,
    humanize_wait,
    names_model,
    rate_limit_message,
    retry_after_seconds,
)
from workbench.routing.quota import FailoverQuota, Limits, MemoryQuota, Refusal, Reservation
from workbench.routing.router import Attempt, Router, RouteResult

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
    "Refusal",
    "Reservation",
    "RouteResult",
    "Router",
    "all_of",
    "answers_remaining",
    "classify_rate_limit",
    "cooldown_decision",
    "humanize_wait",
    "is_provider_outage",
    "names_model",
    "parse_reset_at",
    "rate_limit_message",
    "read_quota",
    "reading_from_refusal",
    "retry_after_seconds",
]
