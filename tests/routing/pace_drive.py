"""Driving a Router as a runner would, against a rate-limited simulator persona: N requests at
concurrency C, each held and asked again at its `RoutingError.retry` until answered (or refused
for the day). Shared by the pacing tests and the Redis multi-process one."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from workbench.errors import RoutingError
from workbench.providers import openai_compatible_provider
from workbench.providers.gemini import gemini_provider
from workbench.providers.interface import Provider
from workbench.routing.retry_hint import RetryHint
from workbench.types import ChatRequest

# Provider ids name the vendor: its quota headers are read by the vendor's profile.
STYLES = ("groq", "openrouter", "gemini", "openai")


def persona(style: str, limit: str, value: int, **more: Any) -> dict[str, Any]:
    """Persona `{style}-{limit}`: `limit` (rpm, tpm, rpd) at `value`, minute windows of 1 s
    and a day of an hour. Groq's and OpenRouter's free tiers always have a day's pool as well
    (their headers count it): a large one unless the day is what is tested."""
    fields: dict[str, Any] = {"id": f"{style}-{limit}", "rate_limit_style": style, limit: value}
    fields |= {"window_s": 1.0, "day_s": 3600.0, "latency_ms": 1.0, "latency_jitter_ms": 0.0}
    if style in ("groq", "openrouter") and limit != "rpd":
        fields["rpd"] = 100_000
    return fields | more


def fleet_toml(*personas: dict[str, Any]) -> str:
    """A fleet file of these personas (what `SimProcess` serves)."""
    out = ["seed = 1"]
    for p in personas:
        out.append("[[persona]]")
        out += [f"{k} = {_toml(v)}" for k, v in p.items()]
    return "\n".join(out) + "\n"


def _toml(value: Any) -> str:
    return (
        f'"{value}"'
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )


def provider(style: str, base_url: str, model: str) -> Provider:
    """`style`'s provider for `model` on the simulator at `base_url` (its id is the vendor's)."""
    if style == "gemini":
        return gemini_provider("k", id="gemini", url=base_url, models=[model])
    return openai_compatible_provider(style, base_url + "/v1", "k", [model])


async def drive(router: Any, n: int, concurrency: int, max_tokens: int = 8) -> list[Any]:
    """Each request's reply text, or the `RetryHint` of a day's refusal."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> Any:
        async with gate:
            while True:
                try:
                    result = await router.route(ChatRequest.of(f"q{i}", max_tokens=max_tokens))
                    return result.value.text
                except RoutingError as exc:
                    hint: RetryHint | None = exc.retry
                    if hint is None:
                        raise
                    if hint.reason == "daily_quota":
                        return hint
                    await asyncio.sleep(max(0.0, hint.at_ms / 1000 - time.time()) + 0.005)

    return await asyncio.gather(*(one(i) for i in range(n)))


def refusals(log: list[dict[str, Any]], model: str) -> int:
    """The simulator's 429s to `model`."""
    return sum(1 for r in log if r.get("status") == 429 and r.get("persona") == model)


async def _worker(style: str, base_url: str, model: str, redis_url: str, n: int, c: int) -> int:
    from workbench.routing.router import Router

    router = Router(
        [provider(style, base_url, model)],
        redis_url=redis_url,
        adaptive_concurrency=c,
        cooldown_jitter_s=0,
    )
    try:
        out = await drive(router, n, c)
    finally:
        await router.close()
    return sum(1 for x in out if isinstance(x, str))


if __name__ == "__main__":  # one of the processes sharing a Redis: python pace_drive.py …
    import sys

    style, base_url, model, redis_url, n, c, start = sys.argv[1:8]
    time.sleep(max(0.0, float(start) - time.time()))  # every process starts at once
    print(asyncio.run(_worker(style, base_url, model, redis_url, int(n), int(c))))
