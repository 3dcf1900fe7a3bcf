"""A failed route says whether its reason is the provider's and when a candidate is free."""

from __future__ import annotations

from workbench.errors import ProviderError
from workbench.routing.retry_hint import RetryHint, hint_for
from workbench.routing.walk import Attempt

NOW = 1_000_000


def attempt(outcome, *, error=None, reason="", free_at_ms=None):
    return Attempt("p:m", None, outcome, 0, error=error, reason=reason, free_at_ms=free_at_ms)


def refused(status, body="", kind="rate_limit"):
    return ProviderError("refused", kind=kind, status_code=status, body=body)


def test_a_minute_429_is_a_rate_limit_held_until_its_model_is_free():
    hint = hint_for([attempt("error", error=refused(429), free_at_ms=NOW + 5000)], NOW)
    assert hint == RetryHint("rate_limit", NOW + 5000)


def test_the_earliest_free_candidate_decides_and_rate_limits_outrank_outages():
    attempts = [
        attempt("error", error=refused(503, kind="outage"), free_at_ms=NOW + 1000),
        attempt("skipped_quota", reason="rpm 30/30", free_at_ms=NOW + 9000),
    ]
    assert hint_for(attempts, NOW) == RetryHint("rate_limit", NOW + 1000)


def test_a_day_is_the_reason_only_when_every_candidate_is_out_for_the_day():
    daily = attempt("error", error=refused(429, "requests per day (RPD)"), free_at_ms=NOW + 86_000)
    assert hint_for([daily], NOW) == RetryHint("daily_quota", NOW + 86_000)
    other = attempt("skipped_cooling", reason="429 capacity: rate-limited", free_at_ms=NOW + 10)
    assert hint_for([daily, other], NOW) == RetryHint("rate_limit", NOW + 10)


def test_outages_and_open_breakers_are_provider_errors_free_now_when_nothing_says_later():
    attempts = [attempt("error", error=refused(0, kind="network")), attempt("skipped_breaker")]
    assert hint_for(attempts, NOW) == RetryHint("provider_error", NOW)


def test_the_callers_failures_get_no_hint():
    assert hint_for([attempt("error", error=refused(400, kind="bad_request"))], NOW) is None
    assert hint_for([attempt("skipped_provider")], NOW) is None
    too_big = "Request too large for model: reduce your message size"
    assert hint_for([attempt("error", error=refused(429, too_big))], NOW) is None
    assert (
        hint_for(
            [attempt("skipped_quota", reason="9000 estimated tokens exceed tpm 6000 alone")], NOW
        )
        is None
    )
    assert hint_for([attempt("skipped_cooling", reason="404: the model id is wrong")], NOW) is None


def test_a_pace_is_held_until_the_providers_reset_a_days_pace_is_the_days_quota():
    from workbench.routing.pacing import Paced

    minute = Paced("p:m", "requests:minute", 0, NOW + 2000)
    day = Paced("p:m", "tokens:day", 10, NOW + 86_000_000)
    paced_minute = attempt("skipped_paced", reason=minute.reason, free_at_ms=minute.reset_at_ms)
    paced_day = attempt("skipped_paced", reason=day.reason, free_at_ms=day.reset_at_ms)
    assert hint_for([paced_minute], NOW) == RetryHint("rate_limit", NOW + 2000)
    assert hint_for([paced_day], NOW) == RetryHint("daily_quota", NOW + 86_000_000)
    assert hint_for([paced_day, paced_minute], NOW) == RetryHint("rate_limit", NOW + 2000)
