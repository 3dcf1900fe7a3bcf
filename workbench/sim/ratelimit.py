"""Per-persona RPM / RPD / TPM / TPD enforcement, in memory, answered in each vendor's style.

Windows slide (a persona's `window_s` for minute limits, 60 s by default; its `day_s` for
daily ones, 24 h by default: a free tier can run in seconds while every header, body and
Retry-After states the real time left in its windows). A request refused with 429 does not
count against the limits; an admitted one does, whatever happens to it afterwards.
Success headers follow the vendor's profile: Groq's request headers count the day and its
token headers the minute (on its refusals too: the per-minute request limit is only in its
429 body); OpenAI's count the minute, requests and tokens, its resets spelt "1s", "6m0s",
"20ms"; OpenRouter's bare headers count the day's pool (reset as epoch milliseconds at the
next UTC midnight), its per-minute limit shown only on a refusal; Gemini sends none.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

from workbench.sim.fleet import Persona
from workbench.sim.vendor_errors import SimError

MINUTE, DAY = 60.0, 86400.0
Window = str  # "rpm" | "rpd" | "tpm" | "tpd"


def groq_duration(seconds: float) -> str:
    """Groq's reset spelling: '547ms', '7.66s', '1m26.4s', '56m26.88s', '2h3m4s'."""
    seconds = max(0.0, seconds)
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = ""
    if hours >= 1:
        out += f"{int(hours)}h"
    if minutes >= 1 or hours >= 1:
        out += f"{int(minutes)}m"
    text = f"{secs:.2f}".rstrip("0").rstrip(".")
    return out + (text or "0") + "s"


def openai_duration(seconds: float) -> str:
    """OpenAI's reset spelling: '20ms', '1s', '1.5s', '6m0s', '1h2m3s'."""
    seconds = max(0.0, seconds)
    if seconds < 1:
        return f"{math.ceil(seconds * 1000)}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.3f}".rstrip("0").rstrip(".") or "0"
    if hours >= 1:
        return f"{int(hours)}h{int(minutes)}m{text}s"
    if minutes >= 1:
        return f"{int(minutes)}m{text}s"
    return f"{text}s"


class RateLimiter:
    def __init__(
        self, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time
    ) -> None:
        self.clock, self.wall = clock, wall
        self.reset()

    def reset(self) -> None:
        self._minute: dict[str, deque[float]] = defaultdict(deque)
        self._day: dict[str, deque[float]] = defaultdict(deque)
        self._tokens: dict[str, deque[tuple[float, int]]] = defaultdict(deque)
        self._day_tokens: dict[str, deque[tuple[float, int]]] = defaultdict(deque)

    def _trim(self, persona: Persona, now: float) -> None:
        pid = persona.id
        for q, span in ((self._minute[pid], persona.window_s), (self._day[pid], persona.day_s)):
            while q and q[0] <= now - span:
                q.popleft()
        for tq, span in (
            (self._tokens[pid], persona.window_s),
            (self._day_tokens[pid], persona.day_s),
        ):
            while tq and tq[0][0] <= now - span:
                tq.popleft()

    def used(self, persona: Persona) -> dict[str, int]:
        now = self.clock()
        self._trim(persona, now)
        pid = persona.id
        return {
            "rpm": len(self._minute[pid]),
            "rpd": len(self._day[pid]),
            "tpm": sum(n for _, n in self._tokens[pid]),
            "tpd": sum(n for _, n in self._day_tokens[pid]),
        }

    def admit(self, persona: Persona, prompt_tokens: int, model: str) -> SimError | None:
        """Count the request, or return the vendor's 429 when a limit is reached."""
        if not (persona.rpm or persona.rpd or persona.tpm or persona.tpd):
            return None
        pid, now = persona.id, self.clock()
        self._trim(persona, now)
        wall = self.wall()
        if persona.rpd and len(self._day[pid]) >= persona.rpd:
            wait = self._day[pid][0] + persona.day_s - now
            return rate_limit_error(
                persona, "rpd", persona.rpd, len(self._day[pid]), 1, wait, model, wall, self
            )
        if persona.tpd:
            refused = self._tokens_refusal(
                persona, "tpd", self._day_tokens[pid], persona.tpd, persona.day_s, prompt_tokens
            )
            if refused is not None:
                used, wait = refused
                return rate_limit_error(
                    persona, "tpd", persona.tpd, used, prompt_tokens, wait, model, wall, self
                )
        if persona.rpm and len(self._minute[pid]) >= persona.rpm:
            wait = self._minute[pid][0] + persona.window_s - now
            return rate_limit_error(
                persona, "rpm", persona.rpm, len(self._minute[pid]), 1, wait, model, wall, self
            )
        if persona.tpm:
            refused = self._tokens_refusal(
                persona, "tpm", self._tokens[pid], persona.tpm, persona.window_s, prompt_tokens
            )
            if refused is not None:
                used, wait = refused
                return rate_limit_error(
                    persona, "tpm", persona.tpm, used, prompt_tokens, wait, model, wall, self
                )
        self._minute[pid].append(now)
        self._day[pid].append(now)
        self._tokens[pid].append((now, prompt_tokens))
        self._day_tokens[pid].append((now, prompt_tokens))
        return None

    def _tokens_refusal(
        self,
        persona: Persona,
        window: Window,
        tq: deque[tuple[float, int]],
        limit: int,
        span: float,
        prompt_tokens: int,
    ) -> tuple[int, float] | None:
        """(used, wait) when `prompt_tokens` more would pass `limit`: the wait is until enough
        old tokens leave the window."""
        used = sum(n for _, n in tq)
        if used + prompt_tokens <= limit or used == 0:
            return None
        need, freed, wait, now = used + prompt_tokens - limit, 0, 0.0, self.clock()
        for t, n in tq:
            freed += n
            wait = t + span - now
            if freed >= need:
                break
        return used, wait

    def add_tokens(self, persona: Persona, tokens: int) -> None:
        if tokens > 0:
            now = self.clock()
            if persona.tpm:
                self._tokens[persona.id].append((now, tokens))
            if persona.tpd:
                self._day_tokens[persona.id].append((now, tokens))

    def _full_in(self, q: deque[Any], span: float) -> float:
        """Seconds until the window is whole again: its newest entry leaves it."""
        if not q:
            return 0.0
        newest = q[-1] if isinstance(q[-1], float) else q[-1][0]
        return max(0.0, newest + span - self.clock())

    def headers(self, persona: Persona) -> dict[str, str]:
        """Quota headers an answer (or a refusal, in Groq's and OpenAI's style) carries."""
        used = self.used(persona)
        pid = persona.id
        out: dict[str, str] = {}
        if persona.rate_limit_style == "groq":
            # Resets: when the window is whole again (the simulator's windows slide).
            if persona.rpd or persona.rpm:
                limit, n, q, span = (
                    (persona.rpd, used["rpd"], self._day[pid], persona.day_s)
                    if persona.rpd
                    else (persona.rpm, used["rpm"], self._minute[pid], persona.window_s)
                )
                out["x-ratelimit-limit-requests"] = str(limit)
                out["x-ratelimit-remaining-requests"] = str(max(0, limit - n))
                out["x-ratelimit-reset-requests"] = groq_duration(self._full_in(q, span))
            if persona.tpm:
                out["x-ratelimit-limit-tokens"] = str(persona.tpm)
                out["x-ratelimit-remaining-tokens"] = str(max(0, persona.tpm - used["tpm"]))
                out["x-ratelimit-reset-tokens"] = groq_duration(
                    self._full_in(self._tokens[pid], persona.window_s)
                )
        elif persona.rate_limit_style == "openai":
            if persona.rpm:
                out["x-ratelimit-limit-requests"] = str(persona.rpm)
                out["x-ratelimit-remaining-requests"] = str(max(0, persona.rpm - used["rpm"]))
                out["x-ratelimit-reset-requests"] = openai_duration(
                    self._full_in(self._minute[pid], persona.window_s)
                )
            if persona.tpm:
                out["x-ratelimit-limit-tokens"] = str(persona.tpm)
                out["x-ratelimit-remaining-tokens"] = str(max(0, persona.tpm - used["tpm"]))
                out["x-ratelimit-reset-tokens"] = openai_duration(
                    self._full_in(self._tokens[pid], persona.window_s)
                )
        elif persona.rate_limit_style == "openrouter":
            if persona.rpd:
                out["x-ratelimit-limit"] = str(persona.rpd)
                out["x-ratelimit-remaining"] = str(max(0, persona.rpd - used["rpd"]))
                out["x-ratelimit-reset"] = str(_next_day_ms(persona, self.wall()))
        return out


def _next_day_ms(persona: Persona, wall: float) -> int:
    """The next UTC midnight, in the persona's day: epoch ms."""
    return int((math.floor(wall / persona.day_s) + 1) * persona.day_s * 1000)


_GROQ_WORDS = {
    "rpm": ("requests per minute (RPM)", "requests"),
    "rpd": ("requests per day (RPD)", "requests"),
    "tpm": ("tokens per minute (TPM)", "tokens"),
    "tpd": ("tokens per day (TPD)", "tokens"),
}
_OPENAI_WORDS = {
    "rpm": "requests per min (RPM)",
    "rpd": "requests per day (RPD)",
    "tpm": "tokens per min (TPM)",
    "tpd": "tokens per day (TPD)",
}
_GEMINI_QUOTA = {
    "rpm": (
        "generativelanguage.googleapis.com/generate_content_free_tier_requests",
        "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
    ),
    "rpd": (
        "generativelanguage.googleapis.com/generate_content_free_tier_requests",
        "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
    ),
    "tpm": (
        "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
        "GenerateContentInputTokensPerModelPerMinute-FreeTier",
    ),
    "tpd": (
        "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
        "GenerateContentInputTokensPerModelPerDay-FreeTier",
    ),
}


def rate_limit_error(
    persona: Persona,
    window: Window,
    limit: int,
    used: int,
    requested: int,
    wait_s: float,
    model: str,
    wall: float | None = None,
    limiter: RateLimiter | None = None,
) -> SimError:
    """The 429 a vendor of `persona.rate_limit_style` sends when `window` is exhausted
    (`limiter`: whose success headers Groq and OpenAI repeat on it)."""
    wall = time.time() if wall is None else wall
    wait_s = max(0.0, wait_s)
    retry = str(max(1, math.ceil(wait_s)))
    style = persona.rate_limit_style
    if style == "groq":
        words, kind = _GROQ_WORDS[window]
        message = (
            f"Rate limit reached for model `{model}` in organization `org_sim` service tier "
            f"`on_demand` on {words}: Limit {limit}, Used {used}, Requested {requested}. "
            f"Please try again in {groq_duration(wait_s)}. Need more tokens? Upgrade to Dev "
            "Tier today at https://console.groq.com/settings/billing"
        )
        # Groq's refusal repeats its usual headers (requests: the day; tokens: the minute).
        headers = {"retry-after": retry} | (limiter.headers(persona) if limiter else {})
        body: dict[str, Any] = {
            "error": {"message": message, "type": kind, "code": "rate_limit_exceeded"}
        }
        return SimError(429, message, headers=headers, body=body)
    if style == "openai":
        words = _OPENAI_WORDS[window]
        message = (
            f"Rate limit reached for {model} in organization org-sim on {words}: Limit {limit}, "
            f"Used {used}, Requested {requested}. Please try again in {openai_duration(wait_s)}. "
            "Visit https://platform.openai.com/account/rate-limits to learn more."
        )
        body = {
            "error": {
                "message": message,
                "type": "requests" if window in ("rpm", "rpd") else "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
        headers = limiter.headers(persona) if limiter else {}
        return SimError(429, message, headers=headers, body=body)
    if style == "openrouter":
        reason = {
            "rpd": "free-models-per-day. Add 10 credits to unlock 1000 free model requests per day",
            "rpm": "free-models-per-min.",
            "tpm": "tokens-per-min.",
            "tpd": "tokens-per-day.",
        }[window]
        reset_ms = (
            _next_day_ms(persona, wall) if window in ("rpd", "tpd") else int((wall + wait_s) * 1000)
        )
        rl = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(reset_ms),
        }
        message = f"Rate limit exceeded: {reason}"
        body = {
            "error": {"message": message, "code": 429, "metadata": {"headers": rl}},
            "user_id": "user_sim",
        }
        headers = {k.lower(): v for k, v in rl.items()} | {"retry-after": retry}
        return SimError(429, message, headers=headers, body=body)
    if style == "gemini":
        metric, quota_id = _GEMINI_QUOTA[window]
        delay = f"{max(1, math.ceil(wait_s))}s"
        message = (
            "You exceeded your current quota, please check your plan and billing details. "
            "For more information on this error, head to: "
            "https://ai.google.dev/gemini-api/docs/rate-limits.\n"
            f"* Quota exceeded for metric: {metric}, limit: {limit}, model: {model}\n"
            f"Please retry in {wait_s:.9f}s."
        )
        body = {
            "error": {
                "code": 429,
                "message": message,
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": metric,
                                "quotaId": quota_id,
                                "quotaDimensions": {"location": "global", "model": model},
                                "quotaValue": str(limit),
                            }
                        ],
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.Help",
                        "links": [
                            {
                                "description": "Learn more about Gemini API quotas",
                                "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                            }
                        ],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
                ],
            }
        }
        return SimError(429, message, body=body)
    words = _GROQ_WORDS[window][0]
    message = (
        f"Rate limit exceeded for model `{model}` on {words}: limit {limit}. "
        f"Please try again in {retry}s."
    )
    return SimError(
        429,
        message,
        type="rate_limit_error",
        code="rate_limit_exceeded",
        headers={"retry-after": retry},
    )
