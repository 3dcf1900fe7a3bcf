"""Per-persona RPM / RPD / TPM enforcement, in memory, answered in each vendor's style.

Windows slide (60 s for minute limits, 24 h for daily ones). A request refused with 429 does
not count against the limits; an admitted one does, whatever happens to it afterwards.
Success headers follow the vendor's profile: Groq's request headers count the
day and its token headers the minute; OpenRouter's bare headers count the day (reset as
epoch milliseconds); Gemini sends none.
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
Window = str  # "rpm" | "rpd" | "tpm"


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

    def _trim(self, pid: str, now: float) -> None:
        for q, span in ((self._minute[pid], MINUTE), (self._day[pid], DAY)):
            while q and q[0] <= now - span:
                q.popleft()
        tq = self._tokens[pid]
        while tq and tq[0][0] <= now - MINUTE:
            tq.popleft()

    def used(self, pid: str) -> dict[str, int]:
        now = self.clock()
        self._trim(pid, now)
        return {
            "rpm": len(self._minute[pid]),
            "rpd": len(self._day[pid]),
            "tpm": sum(n for _, n in self._tokens[pid]),
        }

    def admit(self, persona: Persona, prompt_tokens: int, model: str) -> SimError | None:
        """Count the request, or return the vendor's 429 when a limit is reached."""
        if not (persona.rpm or persona.rpd or persona.tpm):
            return None
        pid, now = persona.id, self.clock()
        self._trim(pid, now)
        if persona.rpd and len(self._day[pid]) >= persona.rpd:
            wait = self._day[pid][0] + DAY - now
            return rate_limit_error(
                persona, "rpd", persona.rpd, len(self._day[pid]), 1, wait, model, self.wall()
            )
        if persona.rpm and len(self._minute[pid]) >= persona.rpm:
            wait = self._minute[pid][0] + MINUTE - now
            return rate_limit_error(
                persona, "rpm", persona.rpm, len(self._minute[pid]), 1, wait, model, self.wall()
            )
        if persona.tpm:
            used = sum(n for _, n in self._tokens[pid])
            if used + prompt_tokens > persona.tpm and used > 0:
                # time until enough old tokens leave the window
                need, freed, wait = used + prompt_tokens - persona.tpm, 0, 0.0
                for t, n in self._tokens[pid]:
                    freed += n
                    wait = t + MINUTE - now
                    if freed >= need:
                        break
                return rate_limit_error(
                    persona, "tpm", persona.tpm, used, prompt_tokens, wait, model, self.wall()
                )
        self._minute[pid].append(now)
        self._day[pid].append(now)
        self._tokens[pid].append((now, prompt_tokens))
        return None

    def add_tokens(self, persona: Persona, tokens: int) -> None:
        if persona.tpm and tokens > 0:
            self._tokens[persona.id].append((self.clock(), tokens))

    def headers(self, persona: Persona) -> dict[str, str]:
        """Quota headers a successful answer carries (Groq and OpenRouter styles only)."""
        used = self.used(persona.id)
        out: dict[str, str] = {}
        if persona.rate_limit_style == "groq":
            if persona.rpd or persona.rpm:
                limit, n, span = (
                    (persona.rpd, used["rpd"], DAY)
                    if persona.rpd
                    else (persona.rpm, used["rpm"], MINUTE)
                )
                out["x-ratelimit-limit-requests"] = str(limit)
                out["x-ratelimit-remaining-requests"] = str(max(0, limit - n))
                out["x-ratelimit-reset-requests"] = groq_duration(n * span / limit)
            if persona.tpm:
                out["x-ratelimit-limit-tokens"] = str(persona.tpm)
                out["x-ratelimit-remaining-tokens"] = str(max(0, persona.tpm - used["tpm"]))
                out["x-ratelimit-reset-tokens"] = groq_duration(used["tpm"] * MINUTE / persona.tpm)
        elif persona.rate_limit_style == "openrouter":
            if persona.rpd or persona.rpm:
                limit, n = (persona.rpd, used["rpd"]) if persona.rpd else (persona.rpm, used["rpm"])
                out["x-ratelimit-limit"] = str(limit)
                out["x-ratelimit-remaining"] = str(max(0, limit - n))
                out["x-ratelimit-reset"] = str(_openrouter_reset_ms(persona, self.wall()))
        return out


def _openrouter_reset_ms(persona: Persona, wall: float) -> int:
    if persona.rpd:  # the daily pool resets at midnight UTC
        return int((math.floor(wall / DAY) + 1) * DAY * 1000)
    return int((math.floor(wall / MINUTE) + 1) * MINUTE * 1000)


_GROQ_WORDS = {
    "rpm": ("requests per minute (RPM)", "requests"),
    "rpd": ("requests per day (RPD)", "requests"),
    "tpm": ("tokens per minute (TPM)", "tokens"),
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
) -> SimError:
    """The 429 a vendor of `persona.rate_limit_style` sends when `window` is exhausted."""
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
        headers = {"retry-after": retry}
        if window in ("rpm", "rpd"):
            headers |= {
                "x-ratelimit-limit-requests": str(limit),
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": groq_duration(wait_s),
            }
        else:
            headers |= {
                "x-ratelimit-limit-tokens": str(limit),
                "x-ratelimit-remaining-tokens": str(max(0, limit - used)),
                "x-ratelimit-reset-tokens": groq_duration(wait_s),
            }
        body: dict[str, Any] = {
            "error": {"message": message, "type": kind, "code": "rate_limit_exceeded"}
        }
        return SimError(429, message, headers=headers, body=body)
    if style == "openrouter":
        reason = {
            "rpd": "free-models-per-day. Add 10 credits to unlock 1000 free model requests per day",
            "rpm": "free-models-per-min.",
            "tpm": "tokens-per-min.",
        }[window]
        reset_ms = (
            int((math.floor(wall / DAY) + 1) * DAY * 1000)
            if window == "rpd"
            else int((wall + wait_s) * 1000)
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
            f"Please retry in {wait_s:.1f}s."
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
