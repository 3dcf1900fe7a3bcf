"""`RouterSettings`: everything a user configures on a `Router`, in one frozen record;
`RouteSettings`: the same, with what the router chose for what the user left out (its clock, its
observer), as every walk reads it.

One declaration of the options: `Router(providers, settings=RouterSettings(...), **overrides)`
takes them whole or by keyword, and a walk reads the very same fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from workbench.errors import ConfigError, ProviderError
from workbench.events import Sink

if TYPE_CHECKING:
    from workbench.capability.observer import CapabilityObserver
    from workbench.providers.http import HttpTransport
    from workbench.routing.admission import Admission
    from workbench.routing.breaker import CircuitBreaker
    from workbench.routing.cache import ResponseCache
    from workbench.routing.quota import QuotaStore

WhenAllCooling = Literal["fail", "try", "wait"]

__all__ = ["RouteSettings", "RouterSettings", "WhenAllCooling"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RouterSettings:
    """A router's options; durations in seconds. Checked when made (`ROUTER_INVALID`)."""

    # Quotas shared through this Redis (None: kept in this process), unless `quota` is given.
    redis_url: str | None = None
    intent_routing: dict[str, Any] | None = None  # intent → the chain it is routed through
    cooldown_s: float = 60.0  # how long a failing model rests, when its answer does not say
    cooldown_jitter_s: float = 2.0
    # Seconds a failure cools its model (None: the default rules decide).
    cooldown_on: Callable[[ProviderError], float | None] | None = None
    degrade_after: int = 3  # consecutive failures before a model is tried last
    breakers: Callable[[str], CircuitBreaker] | None = None  # provider key → its breaker
    when_all_cooling: WhenAllCooling = "fail"  # every model cooling: fail, try anyway, or wait
    clock: Callable[[], int] | None = None  # epoch milliseconds (None: the wall clock)
    sinks: Iterable[Sink] = ()  # where every attempt and route event goes
    attempt_timeout_s: float | None = 30.0
    first_token_timeout_s: float | None = None  # a stream's first token (never the last model)
    admission: Admission | None = None  # asked before anything is sent
    quota: QuotaStore | None = None
    # Classifies every attempt that carried tools or a picture (None: an in-memory store that
    # tells `sinks` its verdicts).
    observer: CapabilityObserver | None = None
    cache: ResponseCache | None = None  # answers a request already answered under the same plan
    cache_ttl_s: float | None = None  # None: until replaced
    http_transport: HttpTransport | None = None  # the HTTP client of providers that make their own
    # Requests in flight per provider:model at most, adapted to the provider (halved on a 429 or
    # a timeout, +1 after a limit's worth of answers); None: no limit (the runner sets its
    # --concurrency).
    adaptive_concurrency: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sinks", tuple(self.sinks))  # a generator is read once
        if self.when_all_cooling not in ("fail", "try", "wait"):
            raise ConfigError(
                f"when_all_cooling must be fail, try or wait, not {self.when_all_cooling!r}",
                code="ROUTER_INVALID",
            )
        ceiling = self.adaptive_concurrency
        if ceiling is not None and (
            isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling < 1
        ):
            raise ConfigError(
                f"adaptive_concurrency must be a whole number ≥ 1 or None, not {ceiling!r}",
                code="ROUTER_INVALID",
            )
        if self.degrade_after < 1 or not (self.cooldown_s >= 0 and self.cooldown_jitter_s >= 0):
            raise ConfigError(  # NaN too
                "degrade_after ≥ 1 and non-negative cooldowns, please", code="ROUTER_INVALID"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteSettings(RouterSettings):
    """What every walk of one router follows: its `RouterSettings`, with the clock and the
    observer the router chose when the user gave none."""

    clock: Callable[[], int]
    observer: CapabilityObserver
    sinks: tuple[Sink, ...] = ()
