"""Quota read from headers, refusals as readings, and the wait a 429 asks for."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from workbench.providers.meter import (
    QuotaReading,
    answers_remaining,
    parse_reset_at,
    read_quota,
    reading_from_refusal,
    retry_after_s,
)

NOW = 1_700_000_000_000


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("", None),
        ("  ", None),
        ("1700000123456", 1700000123456),  # epoch ms
        ("30", NOW + 30_000),  # bare seconds
        ("547ms", NOW + 547),
        ("1m26.4s", NOW + 86_400),
        ("2h", NOW + 7_200_000),
        ("1h2m3s", NOW + 3_723_000),
        ("0.5s", NOW + 500),
        ("soon", None),
        ("1.5", None),
        ("5x", None),
    ],
)
def test_parse_reset_at(raw, expected):
    assert parse_reset_at(raw, NOW) == expected


def test_groq_headers_read_by_profile_windows():
    headers = httpx.Headers(
        {
            "X-RateLimit-Remaining-Requests": "998",
            "x-ratelimit-limit-requests": "1000",
            "x-ratelimit-reset-requests": "1m26.4s",
            "x-ratelimit-remaining-tokens": "7500",
            "x-ratelimit-limit-tokens": "8000",
            "x-ratelimit-reset-tokens": "547ms",
        }
    )
    got = read_quota(headers, "groq", "llama", now_ms=NOW)
    assert got == [
        QuotaReading(
            "groq",
            "llama",
            "requests",
            "day",
            1000,
            998,
            NOW + 86_400,
            "x-ratelimit-remaining-requests",
            NOW,
        ),
        QuotaReading(
            "groq",
            "llama",
            "tokens",
            "minute",
            8000,
            7500,
            NOW + 547,
            "x-ratelimit-remaining-tokens",
            NOW,
        ),
    ]


def test_openrouter_bare_headers_and_epoch_ms_reset():
    headers = {
        "X-RateLimit-Remaining": "49",
        "X-RateLimit-Limit": "50",
        "X-RateLimit-Reset": "1700086400000",
    }
    (r,) = read_quota(headers, "openrouter", "m", now_ms=NOW)
    assert (r.scope, r.window, r.limit, r.remaining, r.reset_at_ms) == (
        "requests",
        "day",
        50,
        49,
        1700086400000,
    )


def test_named_window_wins_and_first_header_per_scope_window_wins():
    headers = httpx.Headers(
        {
            "x-ratelimit-remaining-requests-day": "10",
            "x-ratelimit-remaining-requests-minute": "3",
            "x-ratelimit-remaining-minute": "2",  # same requests:minute: skipped
            "x-ratelimit-remaining-requests": "5",  # sambanova profile → minute: skipped
            "ratelimit-remaining": "1",
        }
    )
    got = read_quota(headers, "sambanova", "m", now_ms=NOW)
    assert [(r.source, r.window, r.remaining) for r in got] == [
        ("x-ratelimit-remaining-requests-day", "day", 10),
        ("x-ratelimit-remaining-requests-minute", "minute", 3),
    ]


def test_unknown_provider_window_is_unknown_and_limit_may_be_missing():
    got = read_quota({"ratelimit-remaining": "7"}, "somewhere", "m", now_ms=NOW)
    assert [(r.window, r.limit, r.reset_at_ms, r.source) for r in got] == [
        ("unknown", None, None, "ratelimit-remaining")
    ]


@pytest.mark.parametrize("value", ["", "  ", "nan", "inf", "lots"])
def test_blank_or_non_finite_headers_are_skipped(value):
    assert read_quota({"x-ratelimit-remaining": value}, "openrouter", "m", now_ms=NOW) == []


def test_no_headers_is_an_empty_list():
    assert read_quota(httpx.Headers(), "gemini", "m", now_ms=NOW) == []
    assert read_quota(None, "gemini", "m", now_ms=NOW) == []


def test_reading_from_refusal():
    r = reading_from_refusal("groq", "m", 3.6, now_ms=NOW)
    assert (r.remaining, r.limit, r.window, r.reset_at_ms, r.source, r.scope) == (
        0,
        None,
        "day",
        NOW + 3600,
        "429",
        "requests",
    )
    r = reading_from_refusal("groq", "m", None, scope="tokens", now_ms=NOW)
    assert (r.window, r.reset_at_ms) == ("minute", None)
    assert reading_from_refusal("x", "m", math.inf, now_ms=NOW).reset_at_ms is None


def test_answers_remaining():
    req = QuotaReading("p", "m", "requests", "day", None, 7.9, None, "h", NOW)
    tok = QuotaReading("p", "m", "tokens", "minute", None, 8000, None, "h", NOW)
    assert answers_remaining(req, None) == 7
    assert answers_remaining(tok, 3000) == 2
    assert answers_remaining(tok, 0) is None
    assert answers_remaining(tok, math.nan) is None
    assert answers_remaining(tok, None) is None
    neg = QuotaReading("p", "m", "requests", "day", None, -3, None, "h", NOW)
    assert answers_remaining(neg, None) == 0


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({"retry-after-ms": "1500"}, "", 1.5),
        ({"Retry-After": "20"}, "", 20.0),
        ({"retry-after-ms": "250", "retry-after": "20"}, "", 0.25),
        ({}, "Please try again in 56m26.88s.", 3386.88),
        ({}, "Please try again in 3.6s.", 3.6),
        ({}, "Please try again in 547ms.", 0.547),
        ({}, "try again in 2m", 120.0),
        ({}, '{"error": {"details": [{"retryDelay": "17s"}]}}', 17.0),
        ({}, b"Please try again in 1s", 1.0),
        ({}, "rate limited, no hint", None),
        ({}, "", None),
        (None, None, None),
        ({"retry-after": "garbage"}, "", None),
    ],
)
def test_retry_after_s(headers, body, expected):
    got = retry_after_s(headers, body)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_retry_after_http_date_and_zero_is_not_none():
    when = datetime.fromtimestamp(NOW / 1000 + 90, tz=UTC)
    got = retry_after_s({"retry-after": format_datetime(when, usegmt=True)}, "", now_ms=NOW)
    assert got == pytest.approx(90.0)
    assert retry_after_s({"retry-after": "0"}, "") == 0.0
