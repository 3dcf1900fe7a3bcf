"""Admission before a request is sent: admit, then deny with the right code, wall and retry."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from workbench.errors import ConfigError
from workbench.routing.admission import (
    Admission,
    AdmissionDenied,
    BudgetClassAdmission,
    FairShareAdmission,
    PolicyAdmission,
    all_of,
)
from workbench.routing.budget_class import BACKGROUND_POLICY
from workbench.routing.policy import AiPolicy, TierPolicy


def ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)


class Clock:
    def __init__(self, t: int) -> None:
        self.t = t

    def __call__(self) -> int:
        return self.t


NOON = ms(2026, 1, 15, 12)
MIDNIGHT = ms(2026, 1, 16)
POLICY = AiPolicy(
    tiers={
        "free": TierPolicy(turns_per_day=2, pool="platform"),
        "credit": TierPolicy(turns_per_day=None, pool="user", meter="credits"),
    }
)


def test_ready_made_admissions_satisfy_the_protocol() -> None:
    clock = Clock(NOON)
    for a in (
        PolicyAdmission(POLICY, clock=clock),
        FairShareAdmission(1000, 4, clock=clock),
        BudgetClassAdmission(1000, {}, clock=clock),
        all_of(),
    ):
        assert isinstance(a, Admission)


# --- PolicyAdmission ---------------------------------------------------------------------------
async def test_policy_admits_until_the_day_is_spent_then_shows_the_wall() -> None:
    clock = Clock(NOON)
    adm = PolicyAdmission(POLICY, clock=clock)
    ann = {"user": "ann", "tier": "free"}
    for _ in range(2):
        await adm.check(ann, 100)
        await adm.spent(ann, 100)
    assert adm.turns_today("ann") == 2
    with pytest.raises(AdmissionDenied) as info:
        await adm.check(ann, 100)
    err = info.value
    assert (err.code, err.status, err.reason) == ("AI_ADMISSION_DENIED", 429, "day-spent")
    assert err.wall is not None and err.wall.reset_at == MIDNIGHT
    assert [o.rung for o in err.wall.options][-1] == "wait"
    assert err.retry_after_s == 12 * 3600
    assert err.details["wall"]["reason"] == "day-spent"
    # another person is not affected
    await adm.check({"user": "bob", "tier": "free"}, 100)


async def test_policy_counters_reset_at_utc_midnight_without_a_timer() -> None:
    clock = Clock(NOON)
    adm = PolicyAdmission(POLICY, clock=clock)
    ann = {"user": "ann", "tier": "free"}
    await adm.spent(ann, 1)
    await adm.spent(ann, 1)
    clock.t = MIDNIGHT - 1
    with pytest.raises(AdmissionDenied):
        await adm.check(ann, 1)
    clock.t = MIDNIGHT
    await adm.check(ann, 1)
    assert adm.turns_today("ann") == 0


async def test_policy_unknown_tier_and_credits_carry_a_wall_but_no_retry() -> None:
    adm = PolicyAdmission(POLICY, clock=Clock(NOON))
    with pytest.raises(AdmissionDenied) as info:
        await adm.check({"user": "ann", "tier": "gold"}, 1)
    assert info.value.reason == "unknown-tier" and info.value.retry_after_s is None
    with pytest.raises(AdmissionDenied) as info:
        await adm.check({"user": "ann", "tier": "credit", "credits": 0}, 1)
    assert info.value.reason == "no-credits"
    await adm.check({"user": "ann", "tier": "credit", "credits": 3}, 1)


async def test_policy_wall_reads_availability_from_the_ctx() -> None:
    adm = PolicyAdmission(POLICY, clock=Clock(NOON))
    ctx = {"user": "ann", "tier": "credit", "available": {"paid": False}}
    with pytest.raises(AdmissionDenied) as info:
        await adm.check(ctx, 1)
    assert info.value.wall is not None
    assert {o.rung: o.available for o in info.value.wall.options}["paid"] is False


async def test_ctx_may_be_an_object_with_attributes() -> None:
    adm = PolicyAdmission(POLICY, clock=Clock(NOON))
    ctx = SimpleNamespace(user="ann", tier="free")
    await adm.spent(ctx, 1)
    await adm.spent(ctx, 1)
    with pytest.raises(AdmissionDenied):
        await adm.check(ctx, 1)


# --- FairShareAdmission --------------------------------------------------------------------------
async def test_fair_share_admits_then_paces_with_a_retry() -> None:
    # share 1024/4 = 256; at noon with burst 0.25 the allowance is 192
    adm = FairShareAdmission(1024, 4, clock=Clock(NOON))
    ann = {"user": "ann"}
    await adm.check(ann, 160)
    await adm.spent(ann, 160)
    assert adm.spent_today("ann") == 160
    with pytest.raises(AdmissionDenied) as info:
        await adm.check(ann, 64)
    err = info.value
    assert (err.code, err.reason, err.retry_after_s) == ("AI_ADMISSION_DENIED", "paced", 10_800)
    assert err.wall is None and err.reset_at == MIDNIGHT
    await adm.check({"user": "bob"}, 64)


async def test_fair_share_spent_share_has_no_retry_and_resets_next_day() -> None:
    clock = Clock(NOON)
    adm = FairShareAdmission(1024, 4, burst=1.0, clock=clock)
    ann = {"user": "ann"}
    await adm.spent(ann, 250)
    with pytest.raises(AdmissionDenied) as info:
        await adm.check(ann, 10)
    assert info.value.reason == "share-spent" and info.value.retry_after_s is None
    clock.t = MIDNIGHT + 1
    await adm.check(ann, 10)


async def test_fair_share_reads_active_users_at_every_check() -> None:
    users = {"n": 1}

    async def active() -> int:
        return users["n"]

    adm = FairShareAdmission(1000, active, burst=1.0, clock=Clock(NOON))
    await adm.spent({"user": "ann"}, 400)
    await adm.check({"user": "ann"}, 100)
    users["n"] = 2  # the share halves to 500
    with pytest.raises(AdmissionDenied):
        await adm.check({"user": "ann"}, 200)
    sync = FairShareAdmission(1000, lambda: 10, burst=1.0, clock=Clock(NOON))
    with pytest.raises(AdmissionDenied):
        await sync.check({"user": "ann"}, 101)


async def test_fair_share_ignores_non_finite_spends() -> None:
    adm = FairShareAdmission(1000, 1, burst=1.0, clock=Clock(NOON))
    await adm.spent({"user": "ann"}, float("nan"))
    await adm.spent({"user": "ann"}, -5)
    assert adm.spent_today("ann") == 0


# --- BudgetClassAdmission ----------------------------------------------------------------------
async def test_budget_class_caps_background_and_keeps_interactive_going() -> None:
    adm = BudgetClassAdmission(1000, {"background": BACKGROUND_POLICY}, clock=Clock(NOON))
    bg = {"class": "background"}
    await adm.check(bg, 200)
    await adm.spent(bg, 200)
    with pytest.raises(AdmissionDenied) as info:
        await adm.check(bg, 100)  # cap 250: 200 + 100 is over
    err = info.value
    assert (err.code, err.status, err.reason) == ("AI_ADMISSION_DENIED", 429, "class-cap")
    assert err.retry_after_s is None and err.reset_at == MIDNIGHT
    await adm.check({"class": "interactive"}, 700)
    await adm.check({}, 700)  # the default class has no policy either
    assert adm.spent_today() == {"background": 200}


async def test_budget_class_reserved_floor() -> None:
    adm = BudgetClassAdmission(1000, {"background": BACKGROUND_POLICY}, clock=Clock(NOON))
    await adm.spent({"class": "interactive"}, 450)
    with pytest.raises(AdmissionDenied) as info:
        await adm.check({"class": "background"}, 100)  # remaining 550, floor 500
    assert info.value.reason == "reserved"
    await adm.check({"class": "background"}, 50)


async def test_budget_class_no_capacity_then_reset_at_midnight() -> None:
    clock = Clock(NOON)
    adm = BudgetClassAdmission(1000, {}, clock=clock)
    await adm.spent(SimpleNamespace(cls="interactive"), 1000)
    with pytest.raises(AdmissionDenied) as info:
        await adm.check({"class": "interactive"}, 1)
    assert info.value.reason == "no-capacity"
    clock.t = MIDNIGHT
    await adm.check({"class": "interactive"}, 1)


# --- all_of ------------------------------------------------------------------------------------
async def test_all_of_refuses_on_the_first_denial_and_records_spend_everywhere() -> None:
    clock = Clock(NOON)
    turns = PolicyAdmission(POLICY, clock=clock)
    tokens = FairShareAdmission(1000, 1, burst=1.0, clock=clock)
    both = all_of(turns, tokens)
    ctx = {"user": "ann", "tier": "free"}
    await both.check(ctx, 10)
    await both.spent(ctx, 900)
    assert turns.turns_today("ann") == 1 and tokens.spent_today("ann") == 900
    with pytest.raises(AdmissionDenied) as info:
        await both.check(ctx, 200)
    assert info.value.reason == "share-spent"
    await both.spent(ctx, 1)
    with pytest.raises(AdmissionDenied) as info:
        await both.check(ctx, 200)
    assert info.value.reason == "day-spent"  # the first admission speaks first


def test_all_of_refuses_something_that_is_not_an_admission() -> None:
    with pytest.raises(ConfigError):
        all_of(object())  # type: ignore[arg-type]
