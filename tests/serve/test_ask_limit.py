"""A sliding-window limit per person: a code and a wait, bounded memory."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.serve import AskLimit, AskRefusal
from workbench.serve.ask_limit import SWEEP_EVERY


class Clock:
    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_max_asks_then_a_refusal_with_a_code_and_the_wait():
    clock = Clock()
    limit = AskLimit(3, 60, clock=clock)
    for t in (0, 10, 20):
        clock.t = t
        assert limit.check("ana") is None
    clock.t = 30
    refusal = limit.check("ana")
    assert refusal == AskRefusal(
        code="AI_ASK_LIMIT", retry_after_s=30.0
    )  # the ask at 0 leaves at 60
    assert isinstance(refusal.code, str) and " " not in refusal.code  # a code, never a sentence


def test_the_window_slides_one_ask_at_a_time():
    clock = Clock()
    limit = AskLimit(2, 10, clock=clock)
    assert limit.check("ana") is None  # t=0
    clock.t = 4
    assert limit.check("ana") is None  # t=4
    clock.t = 9.5
    assert limit.check("ana").retry_after_s == pytest.approx(0.5)
    clock.t = 10  # the ask at 0 has left the window (an ask counts while now - t < window)
    assert limit.check("ana") is None
    clock.t = 13
    assert limit.check("ana").retry_after_s == pytest.approx(1.0)  # the ask at 4 leaves at 14
    clock.t = 14
    assert limit.check("ana") is None


def test_a_refused_ask_is_not_recorded():
    clock = Clock()
    limit = AskLimit(1, 10, clock=clock)
    assert limit.check("ana") is None
    for t in (1, 5, 9):
        clock.t = t
        assert limit.check("ana") is not None
    clock.t = 10
    assert limit.check("ana") is None  # the refusals did not push the window forward


def test_people_are_counted_apart_and_the_code_is_the_callers():
    limit = AskLimit(1, 60, code="CHAT_TOO_FAST", clock=Clock())
    assert limit.check("ana") is None
    assert limit.check("bob") is None
    assert limit.check("ana").code == "CHAT_TOO_FAST"


@pytest.mark.parametrize("max_, window", [(0, 10), (-1, 10), (1, 0), (1, -5), (1, float("inf"))])
def test_nonsense_settings_are_refused(max_, window):
    with pytest.raises(ConfigError) as err:
        AskLimit(max_, window)
    assert err.value.code == "ASK_LIMIT_INVALID"


def test_the_default_clock_is_monotonic_seconds():
    limit = AskLimit(1, 3600)
    assert limit.check("ana") is None
    refusal = limit.check("ana")
    assert 3599 < refusal.retry_after_s <= 3600


# -- forgetting idle accounts ------------------------------------------------------------------
def test_a_sweep_runs_whenever_a_window_has_passed_since_the_last_one():
    clock = Clock()
    limit = AskLimit(5, 10, clock=clock)
    limit.check("ana")
    limit.check("bob")
    clock.t = 9.9
    limit.check("cy")
    assert len(limit) == 3  # less than a window since the last sweep (at construction): kept
    clock.t = 10  # a window has passed: ana and bob (asked at 0) are idle and forgotten
    limit.check("cy")
    assert len(limit) == 1


def test_a_sweep_runs_every_500_asks_even_within_a_window():
    clock = Clock()
    limit = AskLimit(1, 10, clock=clock)
    clock.t = 3
    limit.check("old")  # asks once, then goes idle
    clock.t = 10
    limit.check("x")  # a window since construction: sweep (old is still active), count restarts
    assert len(limit) == 2
    clock.t = 13.5  # "old" is idle now (3 <= 13.5 - 10), but the last sweep was only 3.5 s ago
    for _ in range(SWEEP_EVERY - 1):
        limit.check("busy")  # refused after the first: refusals count as asks too
    assert len(limit) == 3  # 499 asks since the sweep: nobody forgotten yet
    limit.check("busy")  # the 500th
    assert len(limit) == 2
    assert SWEEP_EVERY == 500


def test_an_account_swept_away_starts_afresh():
    clock = Clock()
    limit = AskLimit(1, 10, clock=clock)
    limit.check("ana")
    clock.t = 25
    limit.check("bob")  # sweeps ana
    assert len(limit) == 1
    assert limit.check("ana") is None


# -- properties ------------------------------------------------------------------------------
asks = st.lists(
    st.tuples(st.integers(0, 7), st.sampled_from(["ana", "bob", "cy", "dee"])),
    min_size=1,
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(max_=st.integers(1, 5), window=st.integers(1, 20), steps=asks)
def test_never_more_than_max_within_any_window_and_exact_refusals(max_, window, steps):
    clock = Clock()
    limit = AskLimit(max_, window, clock=clock)
    accepted: dict[str, list[float]] = {}
    for step, person in steps:
        clock.t += step
        now = clock.t
        recent = [t for t in accepted.get(person, []) if now - t < window]
        refusal = limit.check(person)
        if len(recent) >= max_:  # the oracle: exactly when max asks are in the window
            assert refusal is not None
            assert refusal.retry_after_s == min(recent) + window - now
            assert 0 < refusal.retry_after_s <= window
        else:
            assert refusal is None
            accepted.setdefault(person, []).append(now)
        # memory: only people who had an ask accepted within the last two windows
        active = {p for p, ts in accepted.items() if any(t > now - 2 * window for t in ts)}
        assert len(limit) <= len(active | {person})
    for times in accepted.values():
        for start in times:
            assert sum(1 for t in times if start <= t < start + window) <= max_


@settings(max_examples=50, deadline=None)
@given(max_=st.integers(1, 4), window=st.integers(1, 10), steps=asks)
def test_waiting_the_announced_time_is_enough(max_, window, steps):
    clock = Clock()
    limit = AskLimit(max_, window, clock=clock)
    for step, person in steps:
        clock.t += step
        refusal = limit.check(person)
        if refusal is not None:
            clock.t += refusal.retry_after_s
            assert limit.check(person) is None
