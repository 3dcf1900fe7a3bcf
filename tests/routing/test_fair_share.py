"""Fair share of a fixed daily pool."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.routing.fair_share import (
    DAY_SECONDS,
    DEFAULT_BURST,
    FairShare,
    FairShareInput,
    fair_share,
    utc_day_elapsed,
    utc_day_key,
)


def share(**kw: float | None) -> FairShare:
    base: dict[str, float | None] = {
        "day_capacity_tokens": 1024,
        "active_users": 4,
        "user_spent_tokens": 0,
        "cost_tokens": 0,
        "day_elapsed": 0.5,
    }
    base.update(kw)
    return fair_share(**base)


def test_constants() -> None:
    assert DAY_SECONDS == 86_400
    assert DEFAULT_BURST == 0.25


def test_within_the_paced_allowance_is_ok() -> None:
    # share 256, pace 0.5 + 0.25 = 0.75, allowance 192
    assert share(user_spent_tokens=100, cost_tokens=92) == FairShare(True, 256, 192, "ok")


def test_over_the_allowance_but_within_the_share_is_paced_with_a_retry() -> None:
    r = share(user_spent_tokens=160, cost_tokens=64)  # wanted 224 of allowance 192
    assert (r.allowed, r.reason) == (False, "paced")
    # the pace reaches 224/256 = 0.875 at elapsed 0.625: 0.125 of a day later
    assert r.retry_after_seconds == 10_800


def test_over_the_share_is_share_spent_with_no_retry() -> None:
    r = share(user_spent_tokens=200, cost_tokens=100)
    assert r == FairShare(False, 256, 192, "share-spent", None)


def test_one_turn_floor_lets_a_person_start_at_midnight() -> None:
    r = share(cost_tokens=100, day_elapsed=0, burst=0)
    assert r == FairShare(True, 256, 100, "ok")  # pace 0, but one turn always fits
    paced = share(user_spent_tokens=10, cost_tokens=100, day_elapsed=0, burst=0)
    assert paced.reason == "paced"
    assert paced.retry_after_seconds == 37_125  # 110/256 of a day


def test_one_turn_floor_is_capped_by_the_share() -> None:
    r = share(cost_tokens=300, day_elapsed=0, burst=0)
    assert r == FairShare(False, 256, 256, "share-spent")


def test_a_paced_retry_is_at_least_one_second() -> None:
    # wanted exactly at the pace boundary + a hair: ceil of a tiny positive is 1
    r = share(user_spent_tokens=192, cost_tokens=0.001)
    assert r.reason == "paced" and r.retry_after_seconds == 1


def test_accepts_a_record() -> None:
    inp = FairShareInput(1024, 4, 100, 92, 0.5)
    assert fair_share(inp) == share(user_spent_tokens=100, cost_tokens=92)
    with pytest.raises(TypeError):
        fair_share(inp, burst=0.1)


@pytest.mark.parametrize("cap", [0, -5, math.nan, math.inf, -math.inf])
def test_no_capacity(cap: float) -> None:
    assert share(day_capacity_tokens=cap, cost_tokens=1) == FairShare(False, 0, 0, "no-capacity")


@pytest.mark.parametrize("users", [math.nan, 0, -3, 1, 1.9, -math.inf])
def test_user_count_below_one_or_unreadable_is_one(users: float) -> None:
    assert share(active_users=users).share_tokens == 1024


def test_user_count_is_floored() -> None:
    assert share(active_users=2.7).share_tokens == 512


def test_infinite_users_leave_no_share() -> None:
    r = share(active_users=math.inf, cost_tokens=10)
    assert (r.allowed, r.share_tokens, r.reason) == (False, 0, "share-spent")


@pytest.mark.parametrize(
    ("burst", "allowance"),
    [(None, 192), (0, 128), (math.nan, 128), (-1, 128), (2, 256), (math.inf, 128)],
)
def test_burst_defaults_and_clamps(burst: float | None, allowance: float) -> None:
    assert share(burst=burst).allowance_tokens == allowance


@pytest.mark.parametrize(
    ("elapsed", "allowance"), [(math.nan, 64), (-2, 64), (1.5, 256), (math.inf, 64)]
)
def test_day_elapsed_clamps(elapsed: float, allowance: float) -> None:
    assert share(day_elapsed=elapsed).allowance_tokens == allowance


def test_non_finite_spend_and_cost() -> None:
    assert share(user_spent_tokens=math.nan, cost_tokens=math.nan).reason == "ok"
    assert share(user_spent_tokens=math.inf).reason == "share-spent"
    assert share(cost_tokens=math.inf).reason == "share-spent"
    assert share(user_spent_tokens=-50, cost_tokens=-1).reason == "ok"


amounts = st.floats(min_value=0, max_value=1e7, allow_nan=False)


@given(
    cap=st.integers(min_value=1, max_value=10**7),
    users=st.integers(min_value=1, max_value=1000),
    spent=amounts,
    cost=amounts,
    elapsed=st.floats(min_value=0, max_value=1),
    burst=st.floats(min_value=0, max_value=1),
)
def test_properties(
    cap: int, users: int, spent: float, cost: float, elapsed: float, burst: float
) -> None:
    r = fair_share(
        day_capacity_tokens=cap,
        active_users=users,
        user_spent_tokens=spent,
        cost_tokens=cost,
        day_elapsed=elapsed,
        burst=burst,
    )
    assert r.allowance_tokens <= r.share_tokens
    assert (r.retry_after_seconds is not None) == (r.reason == "paced")
    if r.allowed:
        assert spent + cost <= r.share_tokens
    if r.reason == "paced":
        assert r.retry_after_seconds >= 1
        # waiting as long as we were told is enough (the pace catches up)
        later = min(1.0, elapsed + (r.retry_after_seconds + 1) / DAY_SECONDS)
        again = fair_share(
            day_capacity_tokens=cap,
            active_users=users,
            user_spent_tokens=spent,
            cost_tokens=cost,
            day_elapsed=later,
            burst=burst,
        )
        assert again.allowed


# --- the UTC day ---------------------------------------------------------------------------------
def test_utc_day_elapsed() -> None:
    assert utc_day_elapsed(datetime(2026, 1, 1, tzinfo=UTC)) == 0
    assert utc_day_elapsed(datetime(2026, 1, 1, 12, tzinfo=UTC)) == 0.5
    assert utc_day_elapsed(datetime(2026, 1, 1, 18)) == 0.75  # naive is UTC
    plus_two = timezone(timedelta(hours=2))
    assert utc_day_elapsed(datetime(2026, 1, 1, 8, tzinfo=plus_two)) == 0.25  # 06:00Z
    noon_ms = int(datetime(2026, 1, 1, 12, tzinfo=UTC).timestamp() * 1000)
    assert utc_day_elapsed(noon_ms) == 0.5
    assert 0 <= utc_day_elapsed() <= 1
    assert 0 <= utc_day_elapsed(math.nan) <= 1


def test_utc_day_key() -> None:
    minus_five = timezone(timedelta(hours=-5))
    assert utc_day_key(datetime(2026, 2, 28, 23, tzinfo=minus_five)) == "2026-03-01"
    assert utc_day_key(datetime(2026, 1, 2, 3)) == "2026-01-02"
    assert utc_day_key(0) == "1970-01-01"
    assert utc_day_key(86_400_000 - 1) == "1970-01-01"
    assert utc_day_key(86_400_000) == "1970-01-02"
