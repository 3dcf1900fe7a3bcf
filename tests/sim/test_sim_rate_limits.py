"""Vendor-styled 429s and quota headers; the simulator enforces its own RPM / RPD / TPM."""

from __future__ import annotations

import asyncio
import re
import time

import httpx
import pytest
from simhelp import chat_body

from workbench.sim import SimServer
from workbench.sim.ratelimit import groq_duration


def _fleet(style: str, limits: str) -> dict:
    kv = dict(x.split("=") for x in limits.split())
    return {
        "persona": [{"id": "rl", "rate_limit_style": style, **{k: int(v) for k, v in kv.items()}}]
    }


async def _hit(
    sim: SimServer, n: int, path: str = "/v1/chat/completions", prompt: str = "hi"
) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=sim.base_url) as c:
        return [await c.post(path, json=chat_body("rl", prompt)) for _ in range(n)]


def test_groq_duration_spelling() -> None:
    assert groq_duration(86.4) == "1m26.4s"
    assert groq_duration(0.547) == "547ms"
    assert groq_duration(3386.88) == "56m26.88s"
    assert groq_duration(3.6) == "3.6s"


async def test_rpm_is_enforced_and_reset_clears_it() -> None:
    async with SimServer(_fleet("none", "rpm=3")) as sim:
        codes = [r.status_code for r in await _hit(sim, 5)]
        assert codes == [200, 200, 200, 429, 429]
        await sim.reset()
        assert [r.status_code for r in await _hit(sim, 1)] == [200]


async def test_groq_headers_and_rpd_body() -> None:
    async with SimServer(_fleet("groq", "rpm=100 rpd=2 tpm=8000")) as sim:
        ok, ok2, refused = await _hit(sim, 3)
    assert ok.headers["x-ratelimit-limit-requests"] == "2"
    assert ok.headers["x-ratelimit-remaining-requests"] == "1"
    assert ok2.headers["x-ratelimit-remaining-requests"] == "0"
    assert re.fullmatch(r"(\d+h)?(\d+m)?[\d.]+s", ok.headers["x-ratelimit-reset-requests"])
    assert ok.headers["x-ratelimit-limit-tokens"] == "8000"
    assert int(ok.headers["x-ratelimit-remaining-tokens"]) < 8000
    assert re.fullmatch(r"\d+ms|[\d.]+s", ok.headers["x-ratelimit-reset-tokens"])
    assert refused.status_code == 429
    err = refused.json()["error"]
    assert err["code"] == "rate_limit_exceeded"
    assert err["message"].startswith(
        "Rate limit reached for model `rl` in organization `org_sim` service tier `on_demand` "
        "on requests per day (RPD): Limit 2, Used 2, Requested 1. Please try again in "
    )
    assert re.search(r"try again in \d+h\d+m[\d.]+s", err["message"])
    assert int(refused.headers["retry-after"]) > 3600


async def test_groq_tpm_body() -> None:
    async with SimServer(_fleet("groq", "tpm=40")) as sim:
        responses = await _hit(sim, 3, prompt="x" * 100)
    refused = responses[-1]
    assert refused.status_code == 429
    assert "on tokens per minute (TPM): Limit 40, Used" in refused.json()["error"]["message"]
    assert refused.headers["x-ratelimit-limit-tokens"] == "40"


async def test_openrouter_body_and_headers() -> None:
    async with SimServer(_fleet("openrouter", "rpd=1")) as sim:
        ok, refused = await _hit(sim, 2)
    assert ok.headers["x-ratelimit-limit"] == "1"
    assert ok.headers["x-ratelimit-remaining"] == "0"
    reset = int(ok.headers["x-ratelimit-reset"])
    assert reset > 1e12 and reset > time.time() * 1000
    assert refused.status_code == 429
    body = refused.json()
    assert body["error"]["code"] == 429
    assert body["error"]["message"].startswith("Rate limit exceeded: free-models-per-day")


@pytest.mark.parametrize("path", ["/v1beta/models/rl:generateContent", "/v1/chat/completions"])
async def test_gemini_resource_exhausted(path: str) -> None:
    async with SimServer(_fleet("gemini", "rpm=1")) as sim:
        async with httpx.AsyncClient(base_url=sim.base_url) as c:
            body = (
                {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
                if "generateContent" in path
                else chat_body("rl", "hi")
            )
            ok = await c.post(path, json=body)
            refused = await c.post(path, json=body)
    assert ok.status_code == 200 and "x-ratelimit-limit" not in ok.headers
    assert refused.status_code == 429
    err = refused.json()["error"]
    assert err["status"] == "RESOURCE_EXHAUSTED" and err["code"] == 429
    details = {d["@type"].rsplit(".", 1)[-1]: d for d in err["details"]}
    assert (
        details["QuotaFailure"]["violations"][0]["quotaId"]
        == "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    )
    assert re.fullmatch(r"\d+s", details["RetryInfo"]["retryDelay"])


async def test_default_rate_limited_personas_allow_first_requests(sim, http) -> None:
    for model in ("groq-gpt-oss", "openrouter-free", "gemini-flash", "gemma-sys"):
        for _ in range(5):
            r = await http.post("/v1/chat/completions", json=chat_body(model, "hi"))
            assert r.status_code == 200, (model, r.text)


async def test_openai_headers_and_429_body() -> None:
    async with SimServer(_fleet("openai", "rpm=2 tpm=40000")) as sim:
        ok, ok2, refused = await _hit(sim, 3)
    assert ok.headers["x-ratelimit-limit-requests"] == "2"
    assert ok.headers["x-ratelimit-remaining-requests"] == "1"
    assert ok2.headers["x-ratelimit-remaining-requests"] == "0"
    assert re.fullmatch(r"(\d+m)?[\d.]+s|\d+ms", ok.headers["x-ratelimit-reset-requests"])
    assert ok.headers["x-ratelimit-limit-tokens"] == "40000"
    assert int(ok.headers["x-ratelimit-remaining-tokens"]) < 40000
    assert refused.status_code == 429
    err = refused.json()["error"]
    assert (err["type"], err["param"], err["code"]) == ("requests", None, "rate_limit_exceeded")
    assert err["message"].startswith(
        "Rate limit reached for rl in organization org-sim on requests per min (RPM): "
        "Limit 2, Used 2, Requested 1. Please try again in "
    )
    assert err["message"].endswith(
        "Visit https://platform.openai.com/account/rate-limits to learn more."
    )


@pytest.mark.parametrize(
    ("style", "words"),
    [
        ("groq", "on tokens per day (TPD): Limit 30"),
        ("openai", "on tokens per day (TPD): Limit 30"),
        ("openrouter", "tokens-per-day"),
        ("gemini", "GenerateContentInputTokensPerModelPerDay-FreeTier"),
    ],
)
async def test_tokens_per_day_in_every_style(style: str, words: str) -> None:
    async with SimServer(_fleet(style, "tpd=30")) as sim:
        responses = await _hit(sim, 3, prompt="x" * 100)
    assert [r.status_code for r in responses][-1] == 429
    assert words in responses[-1].text


async def test_a_short_window_frees_in_its_own_time_and_says_so() -> None:
    fleet = _fleet("groq", "rpm=1 rpd=1000")
    fleet["persona"][0]["window_s"] = 0.3
    async with SimServer(fleet) as sim:
        ok, refused = await _hit(sim, 2)
        assert ok.status_code == 200 and refused.status_code == 429
        wait = float(re.search(r"try again in (\d+)ms", refused.json()["error"]["message"])[1])
        assert 0 < wait <= 300  # the short window's time, not a minute's
        await asyncio.sleep(0.35)
        (again,) = await _hit(sim, 1)
    assert again.status_code == 200
