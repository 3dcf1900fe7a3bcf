"""How long a failure cools what, and the cooldown store."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import ConfigError, ProviderError, kind_for_status
from workbench.routing.cooldown import Cooldowns, CoolingDecision, cooldown_decision

NOW = int(datetime(2026, 3, 14, 15, 0, tzinfo=UTC).timestamp() * 1000)
MIDNIGHT = int(datetime(2026, 3, 15, tzinfo=UTC).timestamp() * 1000)
MODEL = "llama-3.3-70b-versatile"

GROQ_CAPACITY = (
    f"Rate limit reached for model `{MODEL}` in organization `org_01` on tokens per minute "
    "(TPM): Limit 12000, Used 11000, Requested 1500. Please try again in 3.6s."
)
GROQ_DAILY = (
    f"Rate limit reached for model `{MODEL}` in organization `org_01` on tokens per day "
    "(TPD): Limit 100000, Used 99000, Requested 1800. Please try again in 56m26.88s."
)
GROQ_SIZE = (
    f"Request too large for model `{MODEL}` in organization `org_01` on tokens per minute "
    "(TPM): Limit 6000, Requested 9000, please reduce your message size and try again."
)
OPENROUTER_DAILY = '{"error":{"message":"Rate limit exceeded: free-models-per-day","code":429}}'


def err(
    status: int,
    body: str = "",
    *,
    retry: float | None = None,
    model: str = MODEL,
    kind: str | None = None,
) -> ProviderError:
    return ProviderError(
        f"HTTP {status}",
        kind=kind or kind_for_status(status),  # type: ignore[arg-type]
        status_code=status,
        provider="groq",
        model=model,
        body=body,
        retry_after_s=retry,
    )


# --- cooldown_decision -----------------------------------------------------------------------
def test_capacity_uses_the_stated_wait() -> None:
    d = cooldown_decision(err(429, GROQ_CAPACITY, retry=3.6), now_ms=NOW)
    assert d == CoolingDecision(seconds=3.6, reason=d.reason, scope="model", daily=False)
    assert "capacity" in d.reason


def test_capacity_reads_the_body_when_the_error_has_no_wait() -> None:
    d = cooldown_decision(err(429, GROQ_CAPACITY), now_ms=NOW)
    assert d.seconds == pytest.approx(3.6)


@pytest.mark.parametrize("retry", [None, -1, float("nan"), float("inf")])
def test_capacity_without_a_usable_wait_uses_the_default(retry: float | None) -> None:
    d = cooldown_decision(err(429, "Too Many Requests", retry=retry), default_s=42, now_ms=NOW)
    assert (d.seconds, d.scope, d.daily) == (42, "model", False)
    assert cooldown_decision(err(429, ""), now_ms=NOW).seconds == 60


def test_a_retry_after_already_past_is_free_now_not_the_default() -> None:
    d = cooldown_decision(err(429, "Too Many Requests", retry=0), default_s=42, now_ms=NOW)
    assert (d.seconds, d.scope) == (0, "model")


def test_size_cools_nothing() -> None:
    d = cooldown_decision(err(429, GROQ_SIZE, retry=5), now_ms=NOW)
    assert (d.seconds, d.scope, d.daily) == (None, "none", False)
    assert "size" in d.reason


def test_daily_naming_its_model_cools_that_model_for_the_stated_wait() -> None:
    d = cooldown_decision(err(429, GROQ_DAILY, retry=3386.88), now_ms=NOW)
    assert (d.seconds, d.scope, d.daily) == (3386.88, "model", True)


def test_daily_naming_another_model_cools_the_provider() -> None:
    d = cooldown_decision(err(429, GROQ_DAILY, retry=60, model="llama-3.1-8b-instant"), now_ms=NOW)
    assert (d.scope, d.daily) == ("provider", True)


def test_daily_without_a_wait_lasts_until_utc_midnight() -> None:
    d = cooldown_decision(err(429, OPENROUTER_DAILY, model="x/y:free"), now_ms=NOW)
    assert d.daily and d.scope == "provider"
    assert d.seconds == (MIDNIGHT - NOW) / 1000 == 9 * 3600


def test_daily_midnight_across_year_end() -> None:
    now = int(datetime(2025, 12, 31, 23, 59, 30, tzinfo=UTC).timestamp() * 1000)
    d = cooldown_decision(err(429, "tokens per day exhausted"), now_ms=now)
    assert d.seconds == 30


def gemini(quota_id: str, limit: int = 50) -> str:
    # Compact, so that the 300-char excerpt the error keeps still holds the quota id.
    return json.dumps(
        {
            "error": {
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "violations": [
                            {
                                "quotaId": quota_id,
                                "quotaDimensions": {"model": "gemini-2.0-flash"},
                                "quotaValue": str(limit),
                            }
                        ]
                    },
                    {"retryDelay": "17s"},
                ],
            }
        },
        separators=(",", ":"),
    )


def test_gemini_per_day_names_its_model() -> None:
    e = err(429, gemini("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), retry=17)
    e.model = "gemini-2.0-flash"
    d = cooldown_decision(e, now_ms=NOW)
    assert (d.seconds, d.scope, d.daily) == (17, "model", True)


def test_gemini_per_minute_is_capacity() -> None:
    e = err(429, gemini("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), retry=17)
    d = cooldown_decision(e, now_ms=NOW)
    assert (d.seconds, d.scope, d.daily) == (17, "model", False)


def test_gemini_limit_zero_is_daily_until_midnight_when_no_wait() -> None:
    body = "Quota exceeded for metric: generate_content_free_tier_requests, limit: 0"
    d = cooldown_decision(err(429, body), now_ms=NOW)
    assert d.daily and d.seconds == 9 * 3600 and d.scope == "provider"


def test_body_override_classifies_the_full_vendor_body() -> None:
    # The error keeps a 300-char excerpt; a caller with the whole body may pass it.
    full = "x" * 400 + " GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    e = err(429, full)
    assert cooldown_decision(e, now_ms=NOW).daily is False
    assert cooldown_decision(e, now_ms=NOW, body=full).daily is True


def test_not_found_cools_the_model_for_an_hour() -> None:
    d = cooldown_decision(err(404, "model not found"), now_ms=NOW)
    assert (d.seconds, d.scope, d.daily) == (3600, "model", False)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_cools_nothing(status: int) -> None:
    d = cooldown_decision(err(status, "invalid api key", retry=30), now_ms=NOW)
    assert (d.seconds, d.scope) == (None, "none")


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (500, None),
        (502, None),
        (503, None),
        (408, None),
        (0, "timeout"),
        (0, "network"),
        (200, "empty"),
        (400, None),
    ],
)
def test_outages_and_the_rest_demote_without_cooling(status: int, kind: str | None) -> None:
    d = cooldown_decision(err(status, "upstream error", kind=kind), now_ms=NOW)
    assert (d.seconds, d.scope, d.daily) == (None, "none", False)


def test_503_with_a_stated_wait_cools_that_long() -> None:
    d = cooldown_decision(err(503, "overloaded", retry=12), now_ms=NOW)
    assert (d.seconds, d.scope) == (12, "model")
    assert cooldown_decision(err(502, "bad gateway", retry=12), now_ms=NOW).seconds is None


# --- Cooldowns ---------------------------------------------------------------------------------
class Clock:
    def __init__(self, now: int = NOW) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def store(clock: Clock, jitter_s: float = 0.0, **kw: object) -> Cooldowns:
    return Cooldowns(jitter_s=jitter_s, clock_ms=clock, rng=random.Random(7), **kw)  # type: ignore[arg-type]


def test_cool_and_lazy_expiry() -> None:
    clock = Clock()
    cd = store(clock)
    assert cd.cool("groq:a", 10, reason="429 capacity") == NOW + 10_000
    assert cd.until("groq:a") == NOW + 10_000
    assert cd.is_cooling("groq:a") and cd.reason("groq:a") == "429 capacity"
    clock.now = NOW + 9_999
    assert cd.is_cooling("groq:a")
    clock.now = NOW + 10_000  # free at until_ms exactly
    assert cd.until("groq:a") is None and not cd.is_cooling("groq:a")
    assert cd.reason("groq:a") is None
    assert cd.snapshot() == {}
    assert cd.until("never-cooled") is None


def test_a_cooldown_is_never_shortened_and_a_longer_one_extends_it() -> None:
    cd = store(Clock())
    cd.cool("k", 60, reason="first")
    assert cd.cool("k", 5, reason="shorter") == NOW + 60_000
    assert cd.until("k") == NOW + 60_000 and cd.reason("k") == "first"
    assert cd.cool_until("k", NOW + 1_000, reason="earlier") == NOW + 60_000
    assert cd.cool("k", 120, reason="longer") == NOW + 120_000
    assert cd.reason("k") == "longer"
    assert cd.cool_until("k", MIDNIGHT, reason="daily") == MIDNIGHT
    assert cd.until("k") == MIDNIGHT and cd.reason("k") == "daily"


def test_an_expired_cooldown_does_not_block_a_shorter_new_one() -> None:
    clock = Clock()
    cd = store(clock)
    cd.cool("k", 60)
    clock.now = NOW + 120_000
    assert cd.cool("k", 5) == NOW + 125_000


def test_jitter_stays_within_bounds_and_follows_the_seeded_rng() -> None:
    clock = Clock()
    a = Cooldowns(jitter_s=2.0, clock_ms=clock, rng=random.Random(42))
    b = Cooldowns(jitter_s=2.0, clock_ms=clock, rng=random.Random(42))
    untils = [a.cool(f"k{i}", 10) for i in range(200)]
    assert untils == [b.cool(f"k{i}", 10) for i in range(200)]
    assert all(NOW + 10_000 <= u <= NOW + 12_000 for u in untils)
    assert len(set(untils)) > 50  # it really is jittered


def test_no_jitter_when_jitter_is_zero() -> None:
    cd = Cooldowns(jitter_s=0, clock_ms=Clock())
    assert cd.cool("k", 1.5) == NOW + 1_500


@pytest.mark.parametrize(("seconds", "until"), [(-3, NOW), (float("nan"), NOW)])
def test_bad_seconds_count_as_zero(seconds: float, until: int) -> None:
    assert store(Clock()).cool("k", seconds) == until


def test_infinite_seconds_are_clamped_to_a_week() -> None:
    assert store(Clock()).cool("k", float("inf")) == NOW + 7 * 86_400_000


def test_earliest_free() -> None:
    clock = Clock()
    cd = store(clock)
    assert cd.earliest_free(["a", "b"]) is None
    cd.cool("a", 30)
    cd.cool("b", 10)
    cd.cool("c", 5)
    assert cd.earliest_free(["a", "b"]) == NOW + 10_000
    assert cd.earliest_free(["a", "b", "c", "free"]) == NOW + 5_000
    clock.now = NOW + 10_000
    assert cd.earliest_free(["a", "b"]) == NOW + 30_000


def test_degradation_threshold_and_reset_on_success() -> None:
    cd = store(Clock(), degrade_after=3)
    assert cd.record_failure("k") == 1
    assert cd.record_failure("k") == 2
    assert not cd.degraded("k")
    assert cd.record_failure("k") == 3
    assert cd.degraded("k") and cd.consecutive_failures("k") == 3
    assert not cd.degraded("other")
    cd.record_success("k")
    assert not cd.degraded("k") and cd.consecutive_failures("k") == 0
    assert cd.record_failure("k") == 1


def test_reset_forgets_cooldowns_and_degradation() -> None:
    cd = store(Clock(), degrade_after=1)
    cd.cool("a", 30)
    cd.record_failure("b")
    assert cd.degraded("b")
    cd.reset()
    assert not cd.is_cooling("a") and not cd.degraded("b") and cd.snapshot() == {}


def test_snapshot() -> None:
    clock = Clock()
    cd = store(clock, degrade_after=2)
    cd.cool("groq:a", 30, reason="429 capacity")
    cd.cool("groq", 5, reason="429 daily")
    cd.record_failure("groq:a")
    cd.record_failure("groq:b")
    cd.record_failure("groq:b")
    assert cd.snapshot() == {
        "groq": {
            "until_ms": NOW + 5_000,
            "reason": "429 daily",
            "consecutive_failures": 0,
            "degraded": False,
        },
        "groq:a": {
            "until_ms": NOW + 30_000,
            "reason": "429 capacity",
            "consecutive_failures": 1,
            "degraded": False,
        },
        "groq:b": {
            "until_ms": None,
            "reason": None,
            "consecutive_failures": 2,
            "degraded": True,
        },
    }
    clock.now = NOW + 5_000
    assert set(cd.snapshot()) == {"groq:a", "groq:b"}


def test_default_clock_is_wall_time() -> None:
    import time

    cd = Cooldowns(jitter_s=0)
    before = int(time.time() * 1000)
    until = cd.cool("k", 1)
    assert before + 1_000 <= until <= int(time.time() * 1000) + 1_000


@pytest.mark.parametrize("kw", [{"jitter_s": -1}, {"jitter_s": float("nan")}, {"degrade_after": 0}])
def test_bad_configuration_is_refused(kw: dict[str, float]) -> None:
    with pytest.raises(ConfigError) as err:
        Cooldowns(**kw)  # type: ignore[arg-type]
    assert err.value.code == "ROUTER_INVALID"


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["cool", "cool_until", "tick"]),
            st.floats(min_value=0, max_value=1e6, allow_nan=False),
        ),
        max_size=40,
    )
)
def test_a_cooldown_never_ends_earlier_than_promised(ops: list[tuple[str, float]]) -> None:
    clock = Clock()
    cd = Cooldowns(jitter_s=2.0, clock_ms=clock, rng=random.Random(0))
    promised = 0  # the until_ms the last call returned
    for op, x in ops:
        if op == "tick":
            clock.now += int(x)
        else:
            if op == "cool":
                got = cd.cool("k", x)
            else:
                got = cd.cool_until("k", clock.now + int(x * 1000))
            assert got >= promised  # never shortened
            promised = got
        until = cd.until("k")
        if clock.now < promised:
            assert until == promised
        else:
            assert until is None


@given(
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
)
def test_cool_never_reduces_until(first: float, second: float) -> None:
    cd = Cooldowns(jitter_s=2.0, clock_ms=Clock(), rng=random.Random(1))
    a = cd.cool("k", first)
    b = cd.cool("k", second)
    assert b >= a and cd.until("k") == b


def test_a_whole_second_retry_after_yields_to_the_bodys_finer_wait() -> None:
    body = "Please try again in 650ms."
    assert cooldown_decision(err(429, body, retry=1), now_ms=NOW).seconds == pytest.approx(0.65)
    # A header that says more than a rounding of the body is the vendor's word: it stands.
    assert cooldown_decision(err(429, body, retry=30), now_ms=NOW).seconds == 30
