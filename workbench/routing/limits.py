"""The three kinds of 429, read from the vendor's words as ai-kit does, with the fixes below.

- `daily`: the day's quota is used up; nothing is served until it resets (usually the next
  UTC midnight). Checked first, because daily bodies also carry the capacity wording.
- `size`: this one request is too large; every model of the same size would refuse it,
  so the walk stops and nothing is cooled.
- `capacity`: the per-minute window is full; wait a little (the stated wait, else a minute).

Differences from ai-kit, all deliberate:
- OpenRouter's `free-models-per-day` (hyphenated) is daily here; ai-kit calls it capacity.
- Gemini's `RESOURCE_EXHAUSTED` bodies are read: a quota id such as
  `GenerateRequestsPerDayPerProjectPerModel-FreeTier` is daily, a `...PerMinute...` one is
  capacity, and `limit: 0` (a quota of zero: nothing is served until the quota changes)
  is daily.
- `retry_after_seconds` reads `547ms` as 0.547 s and `1h2m` as 3720 s (ai-kit reads 547
  minutes and None), and returns the exact number of seconds rather than its ceiling.
- `names_model` also accepts the id with or without Gemini's `models/` prefix.
"""

from __future__ import annotations

import math
import re
import time
from typing import Literal

from workbench.providers.meter import retry_after_s

__all__ = [
    "RateLimitKind",
    "classify_rate_limit",
    "humanize_wait",
    "names_model",
    "next_utc_midnight_ms",
    "rate_limit_message",
    "retry_after_seconds",
]

RateLimitKind = Literal["size", "capacity", "daily"]

DAY_MS = 86_400_000

# "per day", "per_day", and OpenRouter's hyphenated "free-models-per-day" (an ai-kit gap:
# there the hyphen hid it and the refusal was treated as capacity).
_PER_DAY = re.compile(r"\bper[\s_-]+day\b", re.I)
# Groq/OpenAI's "(TPD)" / "(RPD)" as standalone words only (not inside "RPDX" or "xTPD").
_DAILY_WORD = re.compile(r"\b(?:tpd|rpd)\b", re.I)
# Gemini quota ids / metrics, e.g. GenerateRequestsPerDayPerProjectPerModel-FreeTier or
# GenerateContentInputTokensPerModelPerDay. Anchored on what the quota counts, so an
# ordinary word that merely contains "perday" does not count.
_GEMINI_PER_DAY = re.compile(r"(?:requests|tokens|count|content|quota)[a-z0-9_]*?perday", re.I)
# A quota of zero ("limit: 0", or Gemini's "quotaValue": "0"): nothing will be served
# until the quota itself changes, which is a daily refusal, not a minute's wait.
_LIMIT_ZERO = re.compile(
    r"\blimit\s*:\s*0(?![\d.])|\"quotaValue\"\s*:\s*\"?0(?![\d.])",
    re.I,
)
_SIZE = ("request too large", "reduce your message size", "reduce the length")


def classify_rate_limit(body: str | None) -> RateLimitKind:
    """Which kind of 429 `body` describes: daily first, then size, else capacity (which also
    covers the empty body)."""
    if not body:
        return "capacity"
    if (
        _PER_DAY.search(body)
        or _DAILY_WORD.search(body)
        or _GEMINI_PER_DAY.search(body)
        or _LIMIT_ZERO.search(body)
    ):
        return "daily"
    lower = body.lower()
    if any(phrase in lower for phrase in _SIZE):
        return "size"
    # Everything else, including Gemini's ...PerMinute... quota ids, is a full minute window.
    return "capacity"


def retry_after_seconds(body: str | None) -> float | None:
    """Seconds the body asks us to wait ("try again in 56m26.88s" / "3.6s" / "547ms" /
    "1h2m", Gemini's `"retryDelay": "17s"`); None when it does not say. The reading is the
    meter's (`meter.retry_after_s` without headers), so the router and the meter agree."""
    if not body:
        return None
    return retry_after_s(None, body)


def humanize_wait(seconds: float | None) -> str | None:
    """A wait in words: `"4s"` under 90 s, `"{m} minutes"` under an hour, else
    `"about {h} hour(s)"`. None for None, non-finite or non-positive waits."""
    if seconds is None or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        return None
    if seconds <= 0:
        return None
    if seconds < 90:
        return f"{math.ceil(seconds)}s"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"{minutes} minutes"
    hours = math.floor(minutes / 60 + 0.5)  # JS Math.round: halves go up
    return "about 1 hour" if hours == 1 else f"about {hours} hours"


def rate_limit_message(raw: str | None) -> str:
    """A lower-case clause for a person, no final period, describing the 429 in `raw`."""
    raw = raw or ""
    kind = classify_rate_limit(raw)
    wait = humanize_wait(retry_after_seconds(raw))
    if kind == "daily":
        base = "the daily model quota is used up"
        return f"{base} (resets in {wait})" if wait else base
    if kind == "size":
        return "the question needed more context than the model allows in one request"
    base = "the model provider is rate-limited"
    return f"{base} (retry in {wait})" if wait else f"{base} — try again shortly"


def names_model(body: str | None, model: str | None) -> bool:
    """True when `body` names `model` wrapped in backticks, double or single quotes (a bare
    mention does not count). The id with or without a leading `models/` counts, and a
    JSON-escaped `\\"id\\"` counts as double-quoted."""
    if not body or not model:
        return False
    ids = {model}
    if model.startswith("models/"):
        if len(model) > len("models/"):
            ids.add(model[len("models/") :])
    else:
        ids.add(f"models/{model}")
    for ident in ids:
        for quote in ("`", '"', "'"):
            if f"{quote}{ident}{quote}" in body:
                return True
        if f'"{ident}\\"' in body:
            return True
    return False


def next_utc_midnight_ms(now_ms: int | float) -> int:
    """Epoch ms of the next UTC midnight strictly after `now_ms` (rolls months and years);
    at midnight exactly, the following one. A non-finite `now_ms` means "now"."""
    if not math.isfinite(now_ms):
        now_ms = time.time() * 1000
    return (math.floor(now_ms) // DAY_MS + 1) * DAY_MS
