"""Tiers, walls and the way-out ladder."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.routing.policy import (
    DEFAULT_LADDER,
    AiPolicy,
    Decision,
    TierPolicy,
    UserState,
    WallOption,
    decide,
    next_utc_reset,
    should_surface,
)

DAY_MS = 86_400_000


def ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)


NOON = ms(2026, 1, 15, 12)
FREE = TierPolicy(turns_per_day=3, pool="platform")
PRO = TierPolicy(turns_per_day=None, pool="platform")
CREDIT = TierPolicy(turns_per_day=None, pool="user", meter="credits")
POLICY = AiPolicy(tiers={"free": FREE, "pro": PRO, "credit": CREDIT})


def test_default_ladder() -> None:
    assert DEFAULT_LADDER == ("byok", "local", "earn", "paid", "wait")


def test_under_the_cap_is_allowed_with_remaining_turns() -> None:
    d = decide(POLICY, UserState("free", spent_today=1), NOON)
    assert d == Decision(True, FREE, "platform", 2)


def test_spent_day_builds_a_wall_with_every_rung_and_wait_last() -> None:
    d = decide(POLICY, UserState("free", spent_today=3), NOON)
    assert not d.allowed and d.remaining == 0 and d.pool == "platform"
    assert d.wall is not None
    assert d.wall.reason == "day-spent"
    assert [o.rung for o in d.wall.options] == ["byok", "local", "earn", "paid", "wait"]
    assert all(o.available for o in d.wall.options)
    assert d.wall.reset_at == ms(2026, 1, 16)


def test_overspent_day_still_reports_zero_remaining() -> None:
    assert decide(POLICY, UserState("free", spent_today=7), NOON).remaining == 0


def test_wall_reads_availability_and_defaults_missing_rungs_to_available() -> None:
    state = UserState("free", spent_today=3, available={"byok": False, "wait": False})
    wall = decide(POLICY, state, NOON).wall
    assert wall is not None
    assert wall.options == (
        WallOption("byok", False),
        WallOption("local", True),
        WallOption("earn", True),
        WallOption("paid", True),
        WallOption("wait", True),  # always appended, always available
    )


def test_custom_ladder_drops_wait_and_appends_it_last() -> None:
    policy = AiPolicy(tiers={"free": FREE}, ladder=["paid", "wait", "local"])
    wall = decide(policy, UserState("free", spent_today=3), NOON).wall
    assert wall is not None
    assert [o.rung for o in wall.options] == ["paid", "local", "wait"]


def test_empty_ladder_still_offers_waiting() -> None:
    policy = AiPolicy(tiers={"free": FREE}, ladder=[])
    wall = decide(policy, UserState("free", spent_today=3), NOON).wall
    assert wall is not None
    assert wall.options == (WallOption("wait", True),)


def test_unknown_tier_fails_closed() -> None:
    d = decide(POLICY, UserState("fre", spent_today=0), NOON)
    assert (d.allowed, d.policy, d.pool, d.remaining) == (False, None, None, 0)
    assert d.wall is not None and d.wall.reason == "unknown-tier"
    assert d.wall.options[-1] == WallOption("wait", True)


def test_uncapped_tier_is_allowed_with_no_remaining_count() -> None:
    d = decide(POLICY, UserState("pro", spent_today=10_000), NOON)
    assert d == Decision(True, PRO, "platform", None)


@pytest.mark.parametrize(
    ("credits", "allowed"),
    [(5, True), (0.5, True), (0, False), (None, False), (-3, False), (math.nan, False)],
)
def test_credit_metered_tier(credits: float | None, allowed: bool) -> None:
    d = decide(POLICY, UserState("credit", credits=credits), NOON)
    assert d.allowed is allowed
    assert d.pool == "user"
    if allowed:
        assert d.remaining is None and d.wall is None
    else:
        assert d.remaining == 0
        assert d.wall is not None and d.wall.reason == "no-credits"


@pytest.mark.parametrize("spent", [math.nan, math.inf])
def test_unreadable_or_infinite_spend_fails_closed(spent: float) -> None:
    d = decide(POLICY, UserState("free", spent_today=spent), NOON)
    assert not d.allowed and d.wall is not None and d.wall.reason == "day-spent"


def test_negative_spend_counts_as_nothing_spent() -> None:
    assert decide(POLICY, UserState("free", spent_today=-5), NOON).remaining == 3


def test_non_finite_now_does_not_raise() -> None:
    d = decide(POLICY, UserState("free", spent_today=3), math.nan)
    assert d.wall is not None and d.wall.reset_at % DAY_MS == 0


# --- next_utc_reset ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("now", "reset"),
    [
        (ms(2026, 1, 15, 12), ms(2026, 1, 16)),
        (ms(2026, 1, 31, 23, 59, 59) + 999, ms(2026, 2, 1)),  # month rolls
        (ms(2025, 12, 31, 6), ms(2026, 1, 1)),  # year rolls
        (ms(2024, 2, 28, 1), ms(2024, 2, 29)),  # leap day
        (ms(2026, 3, 1), ms(2026, 3, 2)),  # exactly midnight: the NEXT one
        (0, DAY_MS),
    ],
)
def test_next_utc_reset(now: int, reset: int) -> None:
    assert next_utc_reset(now) == reset


@given(st.integers(min_value=-(10**13), max_value=10**14))
def test_next_utc_reset_is_the_first_midnight_after_now(now: int) -> None:
    reset = next_utc_reset(now)
    assert reset % DAY_MS == 0
    assert now < reset <= now + DAY_MS


# --- should_surface ------------------------------------------------------------------------
def test_should_surface() -> None:
    assert should_surface(decide(POLICY, UserState("pro"), NOON)) is False  # uncapped
    assert should_surface(decide(POLICY, UserState("free", spent_today=3), NOON)) is True
    assert should_surface(decide(POLICY, UserState("free", spent_today=2), NOON)) is True  # 1/3
    assert should_surface(decide(POLICY, UserState("free", spent_today=1), NOON)) is False  # 2/3
    assert should_surface(decide(POLICY, UserState("free", spent_today=1), NOON), 0.7) is True
    assert should_surface(decide(POLICY, UserState("fre"), NOON)) is True  # a wall


def test_should_surface_threshold_is_inclusive() -> None:
    tier = TierPolicy(turns_per_day=100, pool="platform")
    assert should_surface(Decision(True, tier, "platform", 34)) is True
    assert should_surface(Decision(True, tier, "platform", 35)) is False


def test_should_surface_with_a_falsy_cap_is_false() -> None:
    tier = TierPolicy(turns_per_day=0, pool="platform")
    assert should_surface(Decision(True, tier, "platform", 5)) is False
