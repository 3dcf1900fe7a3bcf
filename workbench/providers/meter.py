"""Quota read from response headers (each vendor's own profile), never polled, and the wait a
refusal asks for.

Vendors say how much is left on every response; reading it there costs nothing and is
current, where polling a usage endpoint costs a request and is stale. Times are epoch
milliseconds. Where ai-kit reads `547ms` in a body as 547 minutes, this reads 0.547 seconds.

A refusal says more than its headers: Groq's and OpenAI's bodies name the limit they hit
("on requests per minute (RPM): Limit 30, Used 30, Requested 1"), which Groq's headers (its
request headers count the day) never state; Gemini sends nothing on success and puts its
quota id (…PerMinute…, …PerDay…) and value in the 429 body. `read_refusal` reads those.

A vendor's malformed header is ignored and logged once per header name (a process answering
thousands of requests would log it thousands of times); a wait absurdly far ahead is clamped
to the day after the next UTC midnight, also logged once, as is a Retry-After date already
past (read as no wait: the caller's retry policy, not the vendor, then decides how long).
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from dataclasses import dataclass
from dataclasses import replace as dataclasses_replace
from email.utils import parsedate_to_datetime
from typing import Any, Literal

__all__ = [
    "QuotaReading",
    "answers_remaining",
    "parse_reset_at",
    "read_quota",
    "read_refusal",
    "reading_from_refusal",
    "retry_after_s",
]

log = logging.getLogger("workbench.meter")

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
    "openai": {"requests": "minute", "tokens": "minute"},
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


_DAY_MS = 86_400_000
_warned: set[str] = set()  # header names (and "clamp") already logged by this process


def _warn_once(name: str, message: str, *args: object) -> None:
    """One log line per header name per process: a vendor that sends a malformed header sends
    it on every response, and the line says nothing new the second time."""
    if name in _warned:
        return
    _warned.add(name)
    log.warning(message, *args)


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
        remaining = _checked(headers, name, _number)
        if remaining is None or remaining < 0:
            continue
        window = named_window or _window(provider, scope)
        if f"{scope}:{window}" in seen:
            continue
        seen.add(f"{scope}:{window}")
        limit = _checked(headers, name.replace("remaining", "limit", 1), _number)
        if limit is not None and limit < 0:  # a negative limit is no limit anyone can use
            limit = None
        reset_name = name.replace("remaining", "reset", 1)
        reset = _checked(headers, reset_name, lambda raw: parse_reset_at(raw, now))
        reset = None if reset is None else _clamped(reset, now)
        out.append(QuotaReading(provider, model, scope, window, limit, remaining, reset, name, now))
    return out


def _checked(headers: Any, name: str, parse: Any) -> Any:
    """The header's value parsed, or None; a header present but unreadable is logged once."""
    raw = _get(headers, name)
    if raw is None:
        return None
    value = parse(raw)
    if value is None:
        _warn_once(name, "ignoring a malformed %s header: %r", name, raw[:40])
    return value


def _clamped(at_ms: int, now_ms: int) -> int:
    """A reset or a wait no later than a day past the next UTC midnight (every vendor's daily
    quota resets by then): a wait of years is a vendor's bug, not a reason to stop for ever."""
    limit = (now_ms // _DAY_MS + 2) * _DAY_MS
    if at_ms > limit:
        _warn_once(
            "clamp",
            "a quota reset %d s ahead was clamped to %d s",
            (at_ms - now_ms) // 1000,
            (limit - now_ms) // 1000,
        )
        return limit
    return at_ms


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
    date; one in the past is 0, free now, logged once; a malformed one is logged once and the
    next source read), "try again in 56m26.88s" / "3.6s" / "547ms" in the
    body, Gemini's `"retryDelay": "17s"`. None when nobody says — which is not the same as 0.
    A wait past the day after the next UTC midnight is clamped there (logged once)."""
    wait = _stated_wait(headers, body, now_ms)
    if wait is None:
        return None
    now = _now_ms(now_ms)
    return (_clamped(now + math.ceil(wait * 1000), now) - now) / 1000 if wait > 0 else wait


def _stated_wait(headers: Any, body: str | bytes | None, now_ms: int | None) -> float | None:
    raw_ms = _get(headers, "retry-after-ms")
    if raw_ms is not None and raw_ms.strip():
        ms = _number(raw_ms)
        if ms is not None and ms >= 0:
            return ms / 1000
        # Said, not read: the retry-after header or the body may still say the wait.
        _warn_once("retry-after-ms", "ignoring a malformed retry-after-ms header: %r", raw_ms[:40])
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
            ahead = when.timestamp() - _now_ms(now_ms) / 1000
            if ahead < 0:
                # A date already past (a vendor's clock behind ours, or a stale proxy reply):
                # free now, which is a guess the log should show once.
                _warn_once(
                    "retry-after-past",
                    "a retry-after date %d s in the past was read as no wait: %r",
                    math.ceil(-ahead),
                    raw[:40],
                )
            return max(0.0, ahead)
        _warn_once("retry-after", "ignoring a malformed retry-after header: %r", raw[:40])
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


# Groq's and OpenAI's refusal: "on requests per minute (RPM): Limit 30, Used 30, Requested 1"
# (OpenAI writes "per min").
_LIMIT_WORDS = re.compile(
    r"on (requests|tokens) per (min|minute|day)\b[^:]*:\s*Limit (\d+), Used (\d+), "
    r"Requested (\d+)",
    re.I,
)
# OpenRouter's refusal names its window only in words; its bare headers state the numbers.
_OPENROUTER_WINDOW = re.compile(r"\b(free-models|tokens)-per-(min|day)\b", re.I)


def read_refusal(
    provider: str,
    model: str,
    body: str | bytes | None,
    headers: list[QuotaReading] | None = None,
    retry_s: float | None = None,
    now_ms: int | None = None,
) -> list[QuotaReading]:
    """What a 429 says of the provider's limits: the readings its body states (Groq's and
    OpenAI's words, Gemini's QuotaFailure, OpenRouter's window named in words over its bare
    headers), laid over the readings of its headers; nothing remains of a window it names
    until `retry_s` (or the reset its headers state). When neither names a window, the refusal
    is one reading of its own (`reading_from_refusal`) while a wait is known."""
    now = _now_ms(now_ms)
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    text = body or ""
    reset = None if retry_s is None else _clamped(_round(now + max(0.0, retry_s) * 1000), now)
    stated: list[QuotaReading] = []
    for m in _LIMIT_WORDS.finditer(text):
        scope: QuotaScope = "requests" if m.group(1).lower() == "requests" else "tokens"
        window: QuotaWindow = "day" if m.group(2).lower() == "day" else "minute"
        limit, used = int(m.group(3)), int(m.group(4))
        left = max(0, limit - used) if scope == "tokens" else 0
        stated.append(
            QuotaReading(provider, model, scope, window, limit, left, reset, "429 body", now)
        )
    stated += _gemini_violations(provider, model, text, reset, now)
    relabel = _OPENROUTER_WINDOW.search(text)
    out: dict[tuple[str, str], QuotaReading] = {}
    for r in headers or ():
        if relabel is not None and r.source in ("x-ratelimit-remaining", "ratelimit-remaining"):
            scope = "tokens" if relabel.group(1).lower() == "tokens" else "requests"
            window = "day" if relabel.group(2).lower() == "day" else "minute"
            r = QuotaReading(
                provider, model, scope, window, r.limit, 0, r.reset_at_ms or reset, "429 body", now
            )
        out[(r.scope, r.window)] = r
    for r in stated:
        out[(r.scope, r.window)] = r
    if not out and reset is not None:
        refusal = reading_from_refusal(provider, model, retry_s, now_ms=now)
        return [dataclasses_replace(refusal, reset_at_ms=reset)]
    return list(out.values())


def _gemini_violations(
    provider: str, model: str, text: str, reset: int | None, now: int
) -> list[QuotaReading]:
    """Gemini's QuotaFailure: each violated quota's id (…PerMinute…, …PerDay…), what it counts
    (requests, or input tokens) and its value, the limit."""
    if "QuotaFailure" not in text:
        return []
    try:
        error = json.loads(text).get("error", {})
        details = error.get("details") or []
    except (ValueError, AttributeError):
        return []
    out = []
    for detail in details if isinstance(details, list) else ():
        if not isinstance(detail, dict) or not str(detail.get("@type", "")).endswith(
            "QuotaFailure"
        ):
            continue
        for v in detail.get("violations") or ():
            if not isinstance(v, dict):
                continue
            quota_id = str(v.get("quotaId", ""))
            lowered = quota_id.lower()
            window: QuotaWindow = (
                "day" if "perday" in lowered else "minute" if "perminute" in lowered else "unknown"
            )
            counts = (str(v.get("quotaMetric", "")) + quota_id).lower()
            scope: QuotaScope = "tokens" if "token" in counts else "requests"
            limit = _number(str(v.get("quotaValue", "")))
            out.append(
                QuotaReading(provider, model, scope, window, limit, 0, reset, "429 body", now)
            )
    return out
