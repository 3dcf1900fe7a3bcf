"""Each vendor's quota headers and refusal bodies, read into QuotaReadings; bad ones ignored
and logged once, waits absurdly far ahead clamped."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from workbench.providers import meter
from workbench.providers.meter import read_quota, read_refusal, retry_after_s

NOW = 1_800_000_000_000  # 2027-01-15T08:00:00Z
DAY = 86_400_000


@pytest.fixture(autouse=True)
def _fresh_log_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(meter, "_warned", set())


def by_window(readings: list[meter.QuotaReading]) -> dict[str, meter.QuotaReading]:
    return {f"{r.scope}:{r.window}": r for r in readings}


def test_openai_headers_count_the_minute_with_its_reset_spellings() -> None:
    headers = {
        "x-ratelimit-limit-requests": "3",
        "x-ratelimit-remaining-requests": "2",
        "x-ratelimit-reset-requests": "20ms",
        "x-ratelimit-limit-tokens": "40000",
        "x-ratelimit-remaining-tokens": "39990",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    got = by_window(read_quota(headers, "openai", "gpt-4o-mini", NOW))
    assert got["requests:minute"].limit == 3 and got["requests:minute"].remaining == 2
    assert got["requests:minute"].reset_at_ms == NOW + 20
    assert got["tokens:minute"].reset_at_ms == NOW + 360_000
    headers["x-ratelimit-reset-requests"] = "1s"
    assert by_window(read_quota(headers, "openai", "m", NOW))["requests:minute"].reset_at_ms == (
        NOW + 1000
    )


def test_groq_request_headers_count_the_day_and_token_headers_the_minute() -> None:
    headers = {
        "x-ratelimit-limit-requests": "14400",
        "x-ratelimit-remaining-requests": "14370",
        "x-ratelimit-reset-requests": "2m59.56s",
        "x-ratelimit-limit-tokens": "6000",
        "x-ratelimit-remaining-tokens": "5997",
        "x-ratelimit-reset-tokens": "30ms",
    }
    got = by_window(read_quota(headers, "groq", "llama", NOW))
    assert got["requests:day"].reset_at_ms == NOW + 179_560
    assert got["tokens:minute"].remaining == 5997


def test_openrouter_bare_headers_reset_in_epoch_ms() -> None:
    reset = NOW + 3_600_000
    headers = {
        "X-RateLimit-Limit": "50",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": str(reset),
    }
    (r,) = read_quota(headers, "openrouter", "m:free", NOW)
    assert (r.scope, r.window, r.limit, r.remaining, r.reset_at_ms) == (
        "requests",
        "day",
        50,
        0,
        reset,
    )


def test_a_malformed_header_is_ignored_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    headers = {"x-ratelimit-remaining-requests": "lots", "x-ratelimit-remaining-tokens": "10"}
    with caplog.at_level(logging.WARNING, "workbench.meter"):
        for _ in range(3):
            readings = read_quota(headers, "openai", "m", NOW)
            assert [r.scope for r in readings] == ["tokens"]
    lines = [r for r in caplog.records if "x-ratelimit-remaining-requests" in r.getMessage()]
    assert len(lines) == 1


def test_a_malformed_reset_leaves_the_reset_unknown() -> None:
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "soon"}
    (r,) = read_quota(headers, "openai", "m", NOW)
    assert r.remaining == 0 and r.reset_at_ms is None


def test_retry_after_in_seconds_ms_and_as_a_date() -> None:
    assert retry_after_s({"retry-after": "7"}, None, NOW) == 7
    assert retry_after_s({"retry-after-ms": "1500"}, None, NOW) == 1.5
    when = datetime.fromtimestamp((NOW + 30_000) / 1000, UTC)
    assert retry_after_s({"retry-after": format_datetime(when, usegmt=True)}, None, NOW) == 30


def test_a_retry_after_in_the_past_is_free_now_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    when = datetime.fromtimestamp((NOW - 60_000) / 1000, UTC)
    with caplog.at_level(logging.WARNING, "workbench.meter"):
        for _ in range(3):
            assert (
                retry_after_s({"retry-after": format_datetime(when, usegmt=True)}, None, NOW) == 0
            )
        assert retry_after_s({"retry-after": "0"}, None, NOW) == 0  # "now" is no clock skew
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "60 s in the past" in lines[0]


@pytest.mark.parametrize("bad", ["soon", "-250", "nan"])
def test_a_malformed_retry_after_ms_is_said_once_and_the_next_source_is_read(
    caplog: pytest.LogCaptureFixture, bad: str
) -> None:
    with caplog.at_level(logging.WARNING, "workbench.meter"):
        assert retry_after_s({"retry-after-ms": bad}, None, NOW) is None
        assert retry_after_s({"retry-after-ms": bad, "retry-after": "7"}, None, NOW) == 7
        assert retry_after_s({"retry-after-ms": bad}, "Please try again in 3.6s.", NOW) == 3.6
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "retry-after-ms" in lines[0] and bad in lines[0]


def test_a_wait_absurdly_far_ahead_is_clamped_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limit_s = ((NOW // DAY + 2) * DAY - NOW) / 1000  # a day past the next UTC midnight
    with caplog.at_level(logging.WARNING, "workbench.meter"):
        assert retry_after_s({"retry-after": str(10**9)}, None, NOW) == limit_s
        assert retry_after_s({"retry-after": str(10**8)}, None, NOW) == limit_s
        far = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(NOW + 400 * DAY)}
        (r,) = read_quota(far, "openrouter", "m", NOW)
    assert r.reset_at_ms == (NOW // DAY + 2) * DAY
    assert len([x for x in caplog.records if "clamped" in x.getMessage()]) == 1


def test_groq_refusal_names_the_per_minute_limit_its_headers_do_not() -> None:
    body = json.dumps(
        {
            "error": {
                "message": "Rate limit reached for model `llama` in organization `org_x` service "
                "tier `on_demand` on requests per minute (RPM): Limit 30, Used 30, Requested 1. "
                "Please try again in 2.5s.",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        }
    )
    headers = read_quota(
        {"x-ratelimit-limit-requests": "14400", "x-ratelimit-remaining-requests": "14000"},
        "groq",
        "llama",
        NOW,
    )
    got = by_window(read_refusal("groq", "llama", body, headers, 2.5, NOW))
    minute = got["requests:minute"]
    assert (minute.limit, minute.remaining, minute.reset_at_ms) == (30, 0, NOW + 2500)
    assert got["requests:day"].remaining == 14000  # the day's headers stand


def test_openai_refusal_body() -> None:
    body = (
        '{"error": {"message": "Rate limit reached for gpt-4o-mini in organization org-sim on '
        "tokens per min (TPM): Limit 40000, Used 39500, Requested 900. Please try again in "
        '600ms.", "type": "tokens", "param": null, "code": "rate_limit_exceeded"}}'
    )
    (r,) = read_refusal("openai", "gpt-4o-mini", body, [], 0.6, NOW)
    assert (r.scope, r.window, r.limit, r.remaining, r.reset_at_ms) == (
        "tokens",
        "minute",
        40000,
        500,
        NOW + 600,
    )


@pytest.mark.parametrize(
    ("quota_id", "metric", "expected"),
    [
        ("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "requests", "requests:minute"),
        ("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "requests", "requests:day"),
        (
            "GenerateContentInputTokensPerModelPerMinute-FreeTier",
            "input_token_count",
            "tokens:minute",
        ),
        ("GenerateContentInputTokensPerModelPerDay-FreeTier", "input_token_count", "tokens:day"),
    ],
)
def test_gemini_quota_failure(quota_id: str, metric: str, expected: str) -> None:
    body = json.dumps(
        {
            "error": {
                "code": 429,
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": f"generativelanguage.googleapis.com/{metric}",
                                "quotaId": quota_id,
                                "quotaValue": "10",
                            }
                        ],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"},
                ],
            }
        }
    )
    (r,) = read_refusal("gemini", "flash", body, [], 17.0, NOW)
    assert f"{r.scope}:{r.window}" == expected
    assert (r.limit, r.remaining, r.reset_at_ms, r.source) == (10, 0, NOW + 17_000, "429 body")


def test_openrouter_refusal_says_which_window_its_bare_headers_count() -> None:
    headers = read_quota(
        {
            "x-ratelimit-limit": "20",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(NOW + 4000),
        },
        "openrouter",
        "m:free",
        NOW,
    )
    (r,) = read_refusal(
        "openrouter", "m:free", "Rate limit exceeded: free-models-per-min.", headers, 4, NOW
    )
    assert (r.scope, r.window, r.limit, r.reset_at_ms) == ("requests", "minute", 20, NOW + 4000)


def test_a_refusal_that_names_nothing_rests_until_its_wait() -> None:
    (r,) = read_refusal("p", "m", "Too Many Requests", [], 3.0, NOW)
    assert (r.remaining, r.limit, r.reset_at_ms, r.source) == (0, None, NOW + 3000, "429")
    assert read_refusal("p", "m", "Too Many Requests", [], None, NOW) == []


def test_a_malformed_gemini_body_is_no_reading() -> None:
    assert read_refusal("gemini", "m", '{"QuotaFailure": [', [], None, NOW) == []


def test_a_negative_limit_or_remaining_is_no_reading() -> None:
    assert read_quota({"x-ratelimit-remaining-requests": "-1"}, "openai", "m", NOW) == []
    (r,) = read_quota(
        {"x-ratelimit-remaining-requests": "1", "x-ratelimit-limit-requests": "-5"},
        "openai",
        "m",
        NOW,
    )
    assert r.limit is None and r.remaining == 1
