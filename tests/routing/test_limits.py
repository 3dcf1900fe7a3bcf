"""The three kinds of 429, the wait a body states, and how a wait reads."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.routing.limits import (
    classify_rate_limit,
    humanize_wait,
    names_model,
    next_utc_midnight_ms,
    rate_limit_message,
    retry_after_seconds,
)

GROQ_CAPACITY = (
    "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01` "
    "service tier `on_demand` on tokens per minute (TPM): Limit 12000, Used 11000, "
    "Requested 1500. Please try again in 3.6s. Need more tokens? Upgrade to Dev Tier."
)
GROQ_DAILY = (
    "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01` "
    "service tier `on_demand` on tokens per day (TPD): Limit 100000, Used 99000, "
    "Requested 1800. Please try again in 56m26.88s. Need more tokens? Upgrade to Dev Tier."
)
GROQ_SIZE = (
    "Request too large for model `llama-3.1-8b-instant` in organization `org_01` service "
    "tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 9000, please "
    "reduce your message size and try again."
)
OPENROUTER_DAILY = json.dumps(
    {
        "error": {
            "message": "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock "
            "1000 free model requests per day",
            "code": 429,
        }
    }
).replace(" per day", "")  # only the hyphenated form: ai-kit's gap itself


def gemini_body(quota_id: str, *, limit: int = 50, model: str = "gemini-2.0-flash") -> str:
    return json.dumps(
        {
            "error": {
                "code": 429,
                "message": "You exceeded your current quota, please check your plan and "
                "billing details.\n* Quota exceeded for metric: generativelanguage."
                f"googleapis.com/generate_content_free_tier_requests, limit: {limit}, "
                f"model: {model}\nPlease retry in 17.477s.",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": "generativelanguage.googleapis.com/"
                                "generate_content_free_tier_requests",
                                "quotaId": quota_id,
                                "quotaDimensions": {"location": "global", "model": model},
                                "quotaValue": str(limit),
                            }
                        ],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"},
                ],
            }
        },
        indent=2,
    )


GEMINI_PER_DAY = gemini_body("GenerateRequestsPerDayPerProjectPerModel-FreeTier")
GEMINI_PER_MINUTE = gemini_body("GenerateRequestsPerMinutePerProjectPerModel-FreeTier")
GEMINI_LIMIT_ZERO = gemini_body(
    "GenerateContentInputTokensPerModelPerMinute-FreeTier", limit=0, model="gemini-2.5-pro"
)


# --- classify_rate_limit -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (GROQ_CAPACITY, "capacity"),
        (GROQ_DAILY, "daily"),
        (GROQ_SIZE, "size"),
        (OPENROUTER_DAILY, "daily"),  # ai-kit's gap, fixed: hyphenated per-day is daily
        (GEMINI_PER_DAY, "daily"),
        (GEMINI_PER_MINUTE, "capacity"),
        (GEMINI_LIMIT_ZERO, "daily"),  # a quota of zero: per-minute id, still daily
        ("", "capacity"),
        ("Too Many Requests", "capacity"),
        ("1000 requests PER DAY exceeded", "daily"),
        ("limit reached (RPD)", "daily"),
        ("tpd exceeded", "daily"),
        ("Please REDUCE THE LENGTH of the messages", "size"),
        ("request too large", "size"),
        ("Quota exceeded for metric: x, limit: 0", "daily"),
        ('"quotaValue": "0"', "daily"),
        ("Quota exceeded for metric: x, limit: 0.5", "capacity"),
        ("Quota exceeded for metric: x, limit: 05", "capacity"),
        ("Quota exceeded for metric: x, limit: 10", "capacity"),
        ("GenerateContentInputTokensPerModelPerDay", "daily"),
    ],
)
def test_classify_rate_limit(body: str, kind: str) -> None:
    assert classify_rate_limit(body) == kind


def test_daily_is_checked_before_size() -> None:
    # A body with both wordings is daily: daily bodies carry the other wording too.
    assert classify_rate_limit("request too large; tokens per day (TPD) used up") == "daily"


@pytest.mark.parametrize("body", ["RPDX limit", "xTPD", "TPDs", "superday", "perdayofweek"])
def test_daily_words_must_stand_alone(body: str) -> None:
    assert classify_rate_limit(body) == "capacity"


def test_none_body_is_capacity() -> None:
    assert classify_rate_limit(None) == "capacity"


@given(st.text())
def test_classify_never_raises_and_answers_a_kind(body: str) -> None:
    assert classify_rate_limit(body) in ("size", "capacity", "daily")


@given(st.text(), st.text())
def test_per_day_anywhere_wins(prefix: str, suffix: str) -> None:
    assert classify_rate_limit(f"{prefix} per day {suffix}") == "daily"


# --- retry_after_seconds -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "seconds"),
    [
        (GROQ_CAPACITY, 3.6),
        (GROQ_DAILY, 56 * 60 + 26.88),
        ("Please try again in 547ms.", 0.547),  # ai-kit read 547 minutes: fixed
        ("Please try again in 1h2m.", 3720.0),  # ai-kit read None: fixed
        ("TRY AGAIN IN 2m", 120.0),
        ("try again in 12s", 12.0),
        (GEMINI_PER_DAY, 17.477),  # Gemini: "Please retry in 17.477s." (retryDelay says 17s)
        ("Rate limit exceeded: free-models-per-day", None),
        ("try again later", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_seconds(body: str | None, seconds: float | None) -> None:
    got = retry_after_seconds(body)
    if seconds is None:
        assert got is None
    else:
        assert got == pytest.approx(seconds)


@given(st.text())
def test_retry_after_seconds_never_raises(body: str) -> None:
    got = retry_after_seconds(body)
    assert got is None or (math.isfinite(got) and got >= 0)


# --- humanize_wait -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (None, None),
        (0, None),
        (-5, None),
        (math.nan, None),
        (math.inf, None),
        (0.547, "1s"),
        (3.6, "4s"),
        (60, "60s"),
        (89.4, "90s"),
        (89.99, "90s"),
        (90, "2 minutes"),
        (121, "3 minutes"),
        (3386.88, "57 minutes"),
        (3540, "59 minutes"),
        (3540.5, "about 1 hour"),  # ceil → 60 minutes
        (3600, "about 1 hour"),
        (5340, "about 1 hour"),  # 89 minutes = 1.48 h
        (5400, "about 2 hours"),  # 90 minutes = 1.5 h: half up
        (9000, "about 3 hours"),  # 150 minutes = 2.5 h: JS rounds up, Python's round() would not
        (86_400, "about 24 hours"),
    ],
)
def test_humanize_wait(seconds: float | None, words: str | None) -> None:
    assert humanize_wait(seconds) == words


# --- rate_limit_message ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (GROQ_DAILY, "the daily model quota is used up (resets in 57 minutes)"),
        (OPENROUTER_DAILY, "the daily model quota is used up"),
        (GROQ_SIZE, "the question needed more context than the model allows in one request"),
        (GROQ_CAPACITY, "the model provider is rate-limited (retry in 4s)"),
        ("", "the model provider is rate-limited — try again shortly"),
        (None, "the model provider is rate-limited — try again shortly"),
        (GEMINI_PER_MINUTE, "the model provider is rate-limited (retry in 18s)"),
    ],
)
def test_rate_limit_message(raw: str | None, message: str) -> None:
    assert rate_limit_message(raw) == message


@given(st.text())
def test_rate_limit_message_is_a_lowercase_clause(raw: str) -> None:
    message = rate_limit_message(raw)
    assert message[0].islower()
    assert not message.endswith(".")


# --- names_model -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "model", "named"),
    [
        (GROQ_DAILY, "llama-3.3-70b-versatile", True),
        (GROQ_DAILY, "llama-3.1-8b-instant", False),
        ('model "m1" is over quota', "m1", True),
        ("model 'm1' is over quota", "m1", True),
        ("model m1 is over quota", "m1", False),  # a bare mention does not count
        ("model `m1-large` is over quota", "m1", False),
        ("`models/gemini-2.0-flash` over quota", "gemini-2.0-flash", True),
        ("`gemini-2.0-flash` over quota", "models/gemini-2.0-flash", True),
        ("`models/gemini-2.0-flash` over quota", "models/gemini-2.0-flash", True),
        ('{"message": "model \\"m1\\" is over quota"}', "m1", True),  # JSON-escaped quotes
        (GEMINI_PER_DAY, "gemini-2.0-flash", True),
        (GEMINI_PER_DAY, "models/gemini-2.0-flash", True),
        (OPENROUTER_DAILY, "meta-llama/llama-3.3-70b-instruct:free", False),
        ("", "m1", False),
        ("`` over quota", "", False),
        ("`` over quota", "models/", False),  # the bare prefix names nothing
    ],
)
def test_names_model(body: str, model: str, named: bool) -> None:
    assert names_model(body, model) is named


# --- next_utc_midnight_ms ---------------------------------------------------------------------
def _ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("now", "midnight"),
    [
        (_ms(2026, 3, 14, 15, 9, 26), _ms(2026, 3, 15)),
        (_ms(2026, 1, 31, 23, 59, 59) + 999, _ms(2026, 2, 1)),  # month end
        (_ms(2028, 2, 28, 12), _ms(2028, 2, 29)),  # leap day
        (_ms(2026, 2, 28, 12), _ms(2026, 3, 1)),
        (_ms(2025, 12, 31, 23, 30), _ms(2026, 1, 1)),  # year end
        (_ms(2026, 6, 1), _ms(2026, 6, 2)),  # at midnight: the next one
        (0, 86_400_000),
    ],
)
def test_next_utc_midnight(now: int, midnight: int) -> None:
    assert next_utc_midnight_ms(now) == midnight


@given(st.integers(min_value=0, max_value=4_102_444_800_000))
def test_next_utc_midnight_is_the_next_one(now: int) -> None:
    midnight = next_utc_midnight_ms(now)
    assert now < midnight <= now + 86_400_000
    assert midnight % 86_400_000 == 0
    when = datetime.fromtimestamp(midnight / 1000, tz=UTC)
    assert (when.hour, when.minute, when.second) == (0, 0, 0)


def test_next_utc_midnight_non_finite_means_now() -> None:
    midnight = next_utc_midnight_ms(math.nan)
    assert midnight % 86_400_000 == 0
    assert midnight > datetime.now(tz=UTC).timestamp() * 1000
