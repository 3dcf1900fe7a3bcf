"""The chain's health: ok, degraded, down, unknown."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import ProviderError
from workbench.routing.chain_health import Health, HealthTracker


class Clock:
    def __init__(self, now: int = 1_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_a_new_tracker_is_unknown() -> None:
    assert HealthTracker().get_health() == Health(
        status="unknown",
        consecutive_failures=0,
        last_error=None,
        last_success_at=None,
        last_failure_at=None,
    )


def test_statuses_in_order() -> None:
    clock = Clock()
    h = HealthTracker(now_ms=clock)
    h.record_success()
    assert h.get_health().status == "ok"
    assert h.get_health().last_success_at == 1_000
    clock.now = 2_000
    h.record_failure(RuntimeError("one"))
    assert h.get_health().status == "degraded"
    h.record_failure(RuntimeError("two"))
    assert h.get_health().status == "degraded"
    clock.now = 3_000
    h.record_failure(RuntimeError("three"))
    got = h.get_health()
    assert (got.status, got.consecutive_failures, got.last_error) == ("down", 3, "three")
    assert (got.last_success_at, got.last_failure_at) == (1_000, 3_000)
    h.record_failure(RuntimeError("four"))
    assert h.get_health().status == "down"


def test_failures_without_any_success_are_degraded_then_down() -> None:
    h = HealthTracker(down_after=2, now_ms=Clock())
    h.record_failure("x")
    assert h.get_health().status == "degraded"
    h.record_failure("y")
    assert h.get_health().status == "down"


def test_success_clears_failures_and_last_error_but_keeps_last_failure_time() -> None:
    clock = Clock()
    h = HealthTracker(now_ms=clock)
    h.record_failure(RuntimeError("boom"))
    clock.now = 5_000
    h.record_success()
    got = h.get_health()
    assert (got.status, got.consecutive_failures, got.last_error) == ("ok", 0, None)
    assert (got.last_success_at, got.last_failure_at) == (5_000, 1_000)


@pytest.mark.parametrize(
    ("err", "text"),
    [
        (None, "unknown error"),
        ("plain text", "plain text"),
        (RuntimeError("exploded"), "exploded"),
        (ValueError(), ""),
        (42, "42"),
    ],
)
def test_last_error_text(err: object, text: str) -> None:
    h = HealthTracker()
    h.record_failure(err)
    assert h.get_health().last_error == text


def test_last_error_prefers_message_over_str() -> None:
    err = ProviderError("HTTP 503", kind="outage", status_code=503, provider="p", model="m")
    h = HealthTracker()
    h.record_failure(err)
    assert h.get_health().last_error == err.message == "p:m: HTTP 503"
    assert str(err) != err.message  # str() carries the code: the message is what is kept


def test_reset_clears_every_field() -> None:
    h = HealthTracker(now_ms=Clock())
    h.record_success()
    h.record_failure(RuntimeError("x"))
    h.reset()
    assert h.get_health() == HealthTracker().get_health()


def test_trackers_are_independent() -> None:
    a, b = HealthTracker(), HealthTracker()
    a.record_failure("x")
    assert b.get_health().status == "unknown"


def test_health_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        HealthTracker().get_health().status = "ok"  # type: ignore[misc]


@given(st.lists(st.booleans(), max_size=30), st.integers(min_value=1, max_value=5))
def test_status_follows_the_trailing_failures(outcomes: list[bool], down_after: int) -> None:
    h = HealthTracker(down_after=down_after, now_ms=Clock())
    for ok in outcomes:
        h.record_success() if ok else h.record_failure("x")
    trailing = len(outcomes) - (
        max(i for i, ok in enumerate(outcomes) if ok) + 1 if any(outcomes) else 0
    )
    got = h.get_health()
    assert got.consecutive_failures == trailing
    if trailing >= down_after:
        assert got.status == "down"
    elif trailing:
        assert got.status == "degraded"
    else:
        assert got.status == ("ok" if outcomes else "unknown")
