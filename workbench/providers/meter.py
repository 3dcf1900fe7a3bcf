"""Quota read from response headers (each vendor's own profile), never polled, and the wait a
refusal asks for.

Vendors say how much is left on every response; reading it there costs nothing and is
current, where polling a usage endpoint costs a request and is stale. Times are epoch
milliseconds. Where ai-kit reads `547ms` in a body as 547 minutes, this reads 0.547 seconds.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Literal

__all__ = [
    "QuotaReading",
    "answers_remaining",
    "parse_reset_at",
    "read_quota",
    "reading_from_refusal",
    "retry_after_s",
]

QuotaScope = Literal["requests", "tokens"]
QuotaWindow = Literal["minute", "day", "unknown"]


@dataclass(frozen=True, slots=True)
class QuotaReading:
    provider: str
    model: str
    scope: QuotaScope
    window: QuotaWindow
    limit: float | None
    remaining: float
    reset_at_ms: int | None
    source: str  # the header name, or "429" for a refusal
    observed_at_ms: int


# When a header does not name its window, the provider's documented one applies.
_PROFILES: dict[str, dict[str, QuotaWindow]] = {
    "groq": {"requests": "day", "tokens": "minute"},
    "openrouter": {"requests": "day"},
    "sambanova": {"requests": "minute"},
    "ovh": {"requests": "minute"},
    "mistral": {"requests": "minute"},
}

# Tested in this order; the first per scope:window wins.
_REMAINING: tuple[tuple[str, QuotaScope, QuotaWindow | None], ...] = (
    ("x-ratelimit-remaining-requests-day", "requests", "day"),
    ("x-ratelimit-remaining-tokens-day", "tokens", "day"),
    ("x-ratelimit-remaining-requests-minute", "requests", "minute"),
    ("x-ratelimit-remaining-minute", "requests", "minute"),
    ("x-ratelimit-remaining-requests", "requests", None),
    ("x-ratelimit-remaining-tokens", "tokens", None),
    ("x-ratelimit-remaining", "requests", None),
    ("ratelimit-remaining", "requests", None),
)


def _now_ms(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else int(now_ms)


def _window(provider: str, scope: str) -> QuotaWindow:
    return _PROFILES.get(provider, {}).get(scope, "unknown")


def _get(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    if isinstance(headers, dict):
        for k, v in headers.items():
            if isinstance(k, str) and k.lower() == name:
                return v if isinstance(v, str) else str(v)
        return None
    value = headers.get(name)
    return value if value is None or isinstance(value, str) else str(value)


def _number(raw: str | None) -> float | None:
    if raw is None or not raw.strip():
        return None
    try:
        n = float(raw.strip())
    except ValueError:
        return None
    if not math.isfinite(n):
        return None
    return int(n) if n.is_integer() else n


def _round(x: float) -> int:
    return math.floor(x + 0.5)


_HMS = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?$")


def parse_reset_at(raw: str | None, now_ms: int | None = None) -> int | None:
    """When a quota resets, as epoch ms, from a reset header: epoch ms (above 1e12), bare
    seconds, `547ms`, or `1h2m3.5s`. Anything else → None: never guess."""
    if raw is None or not raw.strip():
        return None
    now = _now_ms(now_ms)
    t = raw.strip()
    if t.isdigit():
        n = int(t)
        return n if n > 1e12 else now + n * 1000
    m = re.fullmatch(r"(\d+(?:\.\d+)?)ms", t)
    if m:
        return _round(now + float(m.group(1)))
    m = _HMS.fullmatch(t)
    if m and any(m.groups()):
        h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        return _round(now + (h * 3600 + mi * 60 + s) * 1000)
    return None


def read_quota(
    headers: Any, provider: str, model: str, now_ms: int | None = None
) -> list[QuotaReading]:
    """Every quota the vendor stated in `headers` (anything with a case-insensitive `.get`);
    `[]` when it said nothing (Gemini sends no headers)."""
    now = _now_ms(now_ms)
    seen: set[str] = set()
    out: list[QuotaReading] = []
    for name, scope, named_window in _REMAINING:
        remaining = _number(_get(headers, name))
        if remaining is None:
            continue
        window = named_window or _window(provider, scope)
        if f"{scope}:{window}" in seen:
            continue
        seen.add(f"{scope}:{window}")
        limit = _number(_get(headers, name.replace("remaining", "limit", 1)))
        reset = parse_reset_at(_get(headers, name.replace("remaining", "reset", 1)), now)
        out.append(QuotaReading(provider, model, scope, window, limit, remaining, reset, name, now))
    return out


def reading_from_refusal(
    provider: str,
    model: str,
    retry_after_s: float | None,
    scope: QuotaScope = "requests",
    now_ms: int | None = None,
) -> QuotaReading:
    """A 429 is a quota reading too: nothing remains until the wait it asked for is over."""
    now = _now_ms(now_ms)
    reset = None
    if retry_after_s is not None and math.isfinite(retry_after_s):
        reset = _round(now + retry_after_s * 1000)
    return QuotaReading(
        provider, model, scope, _window(provider, scope), None, 0, reset, "429", now
    )


def answers_remaining(reading: QuotaReading, tokens_per_turn: float | None) -> int | None:
    """How many more answers the reading allows: requests directly, tokens per turn's size."""
    if reading.scope == "requests":
        return max(0, math.floor(reading.remaining))
    if tokens_per_turn is None or not math.isfinite(tokens_per_turn) or tokens_per_turn <= 0:
        return None
    return max(0, math.floor(reading.remaining / tokens_per_turn))


_TRY_AGAIN = re.compile(
    r"(?:try again|retry) in\s*(?:(\d+(?:\.\d+)?)\s*ms\b|"
    r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?)",
    re.I,
)
_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


def retry_after_s(
    headers: Any, body: str | bytes | None, now_ms: int | None = None
) -> float | None:
    """Seconds a refusal asks us to wait: `retry-after-ms`, `retry-after` (seconds or an HTTP
    date), "try again in 56m26.88s" / "3.6s" / "547ms" in the body, Gemini's `"retryDelay":
    "17s"`. None when nobody says — which is not the same as 0."""
    ms = _number(_get(headers, "retry-after-ms"))
    if ms is not None and ms >= 0:
        return ms / 1000
    raw = _get(headers, "retry-after")
    if raw is not None and raw.strip():
        n = _number(raw)
        if n is not None and n >= 0:
            return float(n)
        try:
            when = parsedate_to_datetime(raw.strip())
        except (TypeError, ValueError, IndexError):
            when = None
        if when is not None and when.tzinfo is not None:
            return max(0.0, when.timestamp() - _now_ms(now_ms) / 1000)
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if not body:
        return None
    m = _TRY_AGAIN.search(body)
    if m and any(m.groups()):
        ms_part, h, mi, s = m.groups()
        if ms_part is not None:
            return float(ms_part) / 1000
        return float(h or 0) * 3600 + float(mi or 0) * 60 + float(s or 0)
    m = _RETRY_DELAY.search(body)
    if m:
        return float(m.group(1))
    return None
