"""Priority classes over one day's budget."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.routing.budget_class import (
    BACKGROUND_POLICY,
    ClassBudget,
    ClassBudgetInput,
    ClassPolicy,
    class_budget,
    estimate_tokens,
)

POLICY = {"background": BACKGROUND_POLICY}


def budget(
    cost: float, spent: dict[str, float], cls: str = "background", **kw: object
) -> ClassBudget:
    args: dict[str, object] = {
        "day_capacity_tokens": 1000,
        "spent": spent,
        "cls": cls,
        "cost_tokens": cost,
        "policy": POLICY,
    }
    args.update(kw)
    return class_budget(**args)


def test_background_policy() -> None:
    assert BACKGROUND_POLICY == ClassPolicy(max_share=0.25, stop_below=0.5)


SPENT = {"interactive": 300, "background": 100}
# total 400, remaining 600; by_cap 250 - 100 = 150; by_floor 600 - 500 = 100; room 100


def test_within_room_is_ok() -> None:
    assert budget(50, SPENT) == ClassBudget(True, "ok", 100, 600)


def test_over_the_reserved_floor_but_under_the_cap_is_reserved() -> None:
    assert budget(120, SPENT) == ClassBudget(False, "reserved", 100, 600)


def test_class_cap_is_checked_before_the_floor() -> None:
    assert budget(200, SPENT) == ClassBudget(False, "class-cap", 100, 600)


def test_class_cap_binds_when_the_pool_is_still_full() -> None:
    # mine 240: by_cap 10, by_floor 760 - 500 = 260
    assert budget(20, {"background": 240}) == ClassBudget(False, "class-cap", 10, 760)
    assert budget(10, {"background": 240}).allowed


def test_more_than_what_is_left_is_no_capacity() -> None:
    assert budget(700, SPENT, cls="interactive") == ClassBudget(False, "no-capacity", 600, 600)


def test_an_unlisted_class_may_use_everything_left() -> None:
    assert budget(600, SPENT, cls="interactive") == ClassBudget(True, "ok", 600, 600)


def test_a_spent_day_is_no_capacity_with_no_room() -> None:
    r = budget(0, {"interactive": 1000}, cls="interactive")
    assert r == ClassBudget(False, "no-capacity", 0, 0)


def test_a_class_over_its_cap_is_refused_even_a_free_call() -> None:
    assert budget(0, {"background": 300}).reason == "class-cap"


def test_accepts_a_record() -> None:
    inp = ClassBudgetInput(1000, SPENT, "background", 50, POLICY)
    assert class_budget(inp) == budget(50, SPENT)
    with pytest.raises(TypeError):
        class_budget(inp, cls="interactive")


@pytest.mark.parametrize("cap", [0, -1, math.nan, math.inf])
def test_no_or_unreadable_capacity(cap: float) -> None:
    r = budget(1, {}, day_capacity_tokens=cap)
    assert (r.allowed, r.reason, r.room_tokens) == (False, "no-capacity", 0)


def test_non_finite_fractions_are_absent_and_others_clamp() -> None:
    absent = {"background": ClassPolicy(max_share=math.nan, stop_below=math.inf)}
    assert budget(900, {}, policy=absent) == ClassBudget(True, "ok", 1000, 1000)
    clamped = {"background": ClassPolicy(max_share=2.0, stop_below=-1.0)}
    assert budget(1000, {}, policy=clamped) == ClassBudget(True, "ok", 1000, 1000)
    none_left = {"background": ClassPolicy(stop_below=5.0)}  # clamps to 1: leave it all
    assert budget(1, {}, policy=none_left) == ClassBudget(False, "reserved", 0, 1000)


def test_non_finite_or_negative_spend_and_cost() -> None:
    assert budget(math.nan, {"background": math.nan, "x": -50}) == ClassBudget(
        True, "ok", 250, 1000
    )
    assert budget(1, {"x": math.inf}).reason == "no-capacity"
    assert budget(math.inf, {}).reason == "no-capacity"


@given(
    cap=st.integers(min_value=0, max_value=10**6),
    mine=st.integers(min_value=0, max_value=10**6),
    others=st.integers(min_value=0, max_value=10**6),
    cost=st.integers(min_value=0, max_value=10**6),
    max_share=st.none() | st.floats(min_value=0, max_value=1),
    stop_below=st.none() | st.floats(min_value=0, max_value=1),
)
def test_properties(
    cap: int, mine: int, others: int, cost: int, max_share: float | None, stop_below: float | None
) -> None:
    r = class_budget(
        day_capacity_tokens=cap,
        spent={"c": mine, "o": others},
        cls="c",
        cost_tokens=cost,
        policy={"c": ClassPolicy(max_share, stop_below)},
    )
    assert 0 <= r.room_tokens <= r.remaining_tokens
    assert r.remaining_tokens == max(0, cap - mine - others)
    assert r.allowed == (r.reason == "ok")
    if r.allowed:
        assert cost <= r.room_tokens


def test_estimate_tokens() -> None:
    assert estimate_tokens() == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("ab", None, "cd", "e") == 2
    assert estimate_tokens("x" * 4000) == 1000
