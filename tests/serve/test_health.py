"""The liveness probe and the health route."""

from __future__ import annotations

import asyncio
import hmac

import httpx
import pytest

from workbench.errors import ProviderError, RoutingError
from workbench.providers import openai_compatible_provider
from workbench.routing import HealthTracker, Router
from workbench.routing.walk import Attempt
from workbench.serve import LivenessProbe, LivenessResult, ai_health_handler
from workbench.serve.liveness import NO_USABLE_LINK, PROBE_QUESTION, PROBE_SYSTEM
from workbench.sim import SimServer

FLEET = {
    "seed": 5,
    "persona": [
        {"id": "plain", "tool_style": "none", "latency_ms": 0},
        {
            "id": "flaky",
            "tool_style": "none",
            "latency_ms": 0,
            "failures": [{"kind": "500", "at": [1, 2]}],
        },
    ],
}


@pytest.fixture(scope="module")
def fleet_sim():
    with SimServer(FLEET) as sim:
        yield sim


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Asker:
    """An app-supplied `ask` that counts its calls and replies from a script."""

    def __init__(self, *replies: object) -> None:
        self.replies = list(replies)
        self.calls = 0

    async def __call__(self) -> dict:
        self.calls += 1
        reply = self.replies[min(self.calls, len(self.replies)) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return reply


def client_for(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app")


# -- the probe -------------------------------------------------------------------------------
async def test_a_real_router_probe_asks_the_sky_question_and_caches_the_success(fleet_sim):
    fleet_sim.reset()
    clock = Clock()
    router = Router([openai_compatible_provider("sim", fleet_sim.openai_url, "k", ["plain"])])
    probe = LivenessProbe(router, min_interval_s=600, clock=clock)
    try:
        first = await probe.run()
        assert first.ok and first.served_by == "sim:plain" and not first.cached
        assert first.answer and first.answer == first.answer.strip()
        body = fleet_sim.requests()[0]["body"]
        assert body["messages"][0] == {"role": "system", "content": PROBE_SYSTEM}
        assert PROBE_QUESTION in str(body["messages"][1]["content"])
        assert body["max_tokens"] == 256 and body["temperature"] == 0

        clock.t += 599.5
        second = await probe.run()
        assert second.cached and second.cached_age_ms == pytest.approx(599_500)
        assert (second.answer, second.served_by) == (first.answer, first.served_by)
        assert len(fleet_sim.requests()) == 1  # served from the cache: no model call

        clock.t += 0.5  # min_interval_s has passed
        third = await probe.run()
        assert not third.cached and len(fleet_sim.requests()) == 2
    finally:
        await router.close()


async def test_a_real_router_failure_is_never_cached(fleet_sim):
    fleet_sim.reset()
    clock = Clock()
    router = Router([openai_compatible_provider("sim", fleet_sim.openai_url, "k", ["flaky"])])
    probe = LivenessProbe(router, clock=clock)
    try:
        for n in (1, 2):
            result = await probe.run()
            assert not result.ok and not result.cached
            assert result.failures == ["PROVIDER_OUTAGE: sim:flaky: HTTP 500"]  # per attempt
            assert len(fleet_sim.requests()) == n  # asked again every time
        recovered = await probe.run()
        assert recovered.ok and not recovered.cached
        assert (await probe.run()).cached
        assert len(fleet_sim.requests()) == 3
    finally:
        await router.close()


async def test_success_is_cached_failure_is_not_with_an_injected_clock():
    clock = Clock()
    asker = Asker(RuntimeError("boom"), {"text": ""}, {"text": "  Blue \n", "id": "m1"})
    probe = LivenessProbe(ask=asker, min_interval_s=60, clock=clock)

    failed = await probe.run()
    assert failed == LivenessResult(ok=False, ms=0.0, failures=["RuntimeError: boom"])
    blank = await probe.run()
    assert not blank.ok and "empty content" in blank.failures[0]
    assert asker.calls == 2  # failures are not cached

    ok = await probe.run()
    assert (ok.ok, ok.answer, ok.served_by, ok.cached) == (True, "Blue", "m1", False)
    clock.t += 59.9
    again = await probe.run()
    assert again.cached and again.cached_age_ms == pytest.approx(59_900) and asker.calls == 3
    clock.t += 0.1
    assert not (await probe.run()).cached and asker.calls == 4


async def test_min_interval_zero_disables_the_cache_and_reset_forgets_it():
    asker = Asker({"text": "blue"})
    probe = LivenessProbe(ask=asker, min_interval_s=0, clock=Clock())
    await probe.run()
    await probe.run()
    assert asker.calls == 2
    cached = LivenessProbe(ask=asker, clock=Clock())
    await cached.run()
    await cached.run()
    assert asker.calls == 3
    cached.reset()
    assert not (await cached.run()).cached and asker.calls == 4


async def test_a_cached_copy_cannot_be_altered_by_the_caller():
    probe = LivenessProbe(ask=Asker({"text": "blue"}), clock=Clock())
    first = await probe.run()
    first.answer = "tampered"
    first.failures.append("x")
    again = await probe.run()
    assert again.answer == "blue" and again.failures == []


async def test_the_ms_come_from_the_clock():
    clock = Clock()

    async def slow() -> dict:
        clock.t += 0.25
        return {"text": "blue"}

    result = await LivenessProbe(ask=slow, clock=clock).run()
    assert result.ms == pytest.approx(250)


async def test_a_probe_that_hangs_fails_at_the_timeout():
    async def hang() -> dict:
        await asyncio.sleep(30)
        return {"text": "blue"}

    result = await LivenessProbe(ask=hang, timeout_s=0.05).run()
    assert not result.ok and result.failures == ["no answer within 0.05 s"]


async def test_concurrent_runs_share_one_probe():
    gate = asyncio.Event()
    calls = 0

    async def ask() -> dict:
        nonlocal calls
        calls += 1
        await gate.wait()
        return {"text": "blue"}

    probe = LivenessProbe(ask=ask)
    runs = [asyncio.create_task(probe.run()) for _ in range(5)]
    await asyncio.sleep(0.01)
    gate.set()
    results = await asyncio.gather(*runs)
    assert calls == 1 and all(r.ok for r in results)


# The probe's seam is a router's `route()`: the fakes below are routers, not providers, each
# raising the exact `RoutingError` (or watching the context) a case needs. Kept as the tests' own:
# a real Router over a `ScriptedProvider` would word the attempts its own way, and its deadline
# and the probe's signal would race to end the call.
async def test_routing_error_failures_are_its_per_attempt_messages():
    cause = ProviderError("HTTP 429", kind="rate_limit", status_code=429, provider="g", model="a")
    attempts = [
        Attempt(key="g:a", lane=None, outcome="error", position=0, error=cause),
        Attempt(key="g:b", lane=None, outcome="skipped_cooling", position=1, reason="cooling"),
    ]

    class FakeRouter:
        async def route(self, request, ctx=None):
            raise RoutingError("no model could answer", attempts=attempts)

    result = await LivenessProbe(FakeRouter()).run()
    assert result.failures == [str(cause), "g:b: cooling"]
    assert result.skipped is None


async def test_an_empty_chain_is_skipped_not_failed():
    class Empty:
        async def route(self, request, ctx=None):
            raise RoutingError("no provider", code="AI_NO_PROVIDER")

    result = await LivenessProbe(Empty()).run()
    assert (result.ok, result.failures, result.skipped) == (False, [], NO_USABLE_LINK)
    assert (await LivenessProbe().run()).skipped == NO_USABLE_LINK  # no router, no ask


async def test_the_router_gets_a_signal_and_a_deadline():
    seen = {}

    class Spy:
        async def route(self, request, ctx=None):
            seen["ctx"] = ctx
            await ctx.signal.wait()  # a router honouring the signal stops here
            raise RoutingError("cancelled", code="AI_CANCELLED")

    result = await LivenessProbe(Spy(), timeout_s=0.05).run()
    assert seen["ctx"].deadline_s == 0.05 and seen["ctx"].signal.is_set()
    assert not result.ok and result.failures == ["AI_CANCELLED: cancelled"]


# -- the route ------------------------------------------------------------------------------
async def test_no_probe_requested_is_200_with_the_passive_health_and_no_model_call():
    asker = Asker({"text": "blue"})
    tracker = HealthTracker()
    app = ai_health_handler(secret="s3cret", health=tracker, probe=LivenessProbe(ask=asker))
    async with client_for(app) as client:
        response = await client.get("/api/ai-health")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    assert response.json() == {
        "probed": False,
        "health": {
            "status": "unknown",
            "consecutive_failures": 0,
            "last_error": None,
            "last_success_at": None,
            "last_failure_at": None,
        },
    }
    assert asker.calls == 0


async def test_without_a_tracker_the_passive_body_has_no_health():
    async with client_for(ai_health_handler()) as client:
        response = await client.get("/")
    assert response.status_code == 200 and response.json() == {"probed": False}


async def test_no_secret_configured_is_501():
    asker = Asker({"text": "blue"})
    app = ai_health_handler(secret=None, probe=LivenessProbe(ask=asker))
    async with client_for(app) as client:
        response = await client.get("/", params={"probe": "1", "secret": "anything"})
    assert response.status_code == 501
    body = response.json()
    assert body["probed"] is False and "no secret set" in body["error"]
    assert response.headers["cache-control"] == "no-store"
    assert asker.calls == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"params": {"probe": "1", "secret": "wrong"}},
        {"params": {"probe": "1", "secret": "s3cre"}},  # a prefix
        {"params": {"probe": "1"}, "headers": {"x-probe-secret": "S3CRET"}},
        {"params": {"probe": "1", "secret": ""}},
    ],
)
async def test_a_missing_or_wrong_secret_is_401(kwargs):
    kwargs.setdefault("params", {"probe": "1"})
    asker = Asker({"text": "blue"})
    tracker = HealthTracker()
    app = ai_health_handler(secret="s3cret", health=tracker, probe=LivenessProbe(ask=asker))
    async with client_for(app) as client:
        response = await client.get("/", **kwargs)
    assert response.status_code == 401
    assert response.json()["error"] == "Bad or missing probe secret."
    assert response.json()["health"]["status"] == "unknown"
    assert asker.calls == 0


async def test_a_good_secret_probes_records_and_answers_200_then_served_from_cache():
    clock = Clock()
    asker = Asker({"text": " blue ", "id": "sim:plain"})
    tracker = HealthTracker(now_ms=lambda: 42)
    app = ai_health_handler(
        secret="s3cret", health=tracker, probe=LivenessProbe(ask=asker, clock=clock)
    )
    async with client_for(app) as client:
        by_header = await client.get(
            "/", params={"probe": "1"}, headers={"x-probe-secret": "s3cret"}
        )
        clock.t += 5
        by_query = await client.get("/", params={"probe": "1", "secret": "s3cret"})
    assert by_header.status_code == 200
    body = by_header.json()
    assert body["probed"] is True and body["ok"] is True
    assert (body["answer"], body["served_by"], body["cached"]) == ("blue", "sim:plain", False)
    assert body["health"]["status"] == "ok" and body["health"]["last_success_at"] == 42
    assert by_query.status_code == 200
    assert by_query.json()["cached"] is True and by_query.json()["cached_age_ms"] == 5000
    assert asker.calls == 1


async def test_a_failing_probe_is_503_recorded_and_run_again_every_time():
    asker = Asker(RuntimeError("no route"))
    tracker = HealthTracker(down_after=2)
    app = ai_health_handler(secret="s3cret", health=tracker, probe=LivenessProbe(ask=asker))
    headers = {"x-probe-secret": "s3cret"}
    async with client_for(app) as client:
        first = await client.get("/", params={"probe": "1"}, headers=headers)
        second = await client.get("/", params={"probe": "1"}, headers=headers)
    assert first.status_code == second.status_code == 503
    assert first.headers["content-type"] == "application/json"
    body = second.json()
    assert body["probed"] is True and body["ok"] is False
    assert body["failures"] == ["RuntimeError: no route"]
    assert first.json()["health"]["status"] == "degraded"
    assert body["health"]["status"] == "down"
    assert body["health"]["last_error"] == "RuntimeError: no route"
    assert asker.calls == 2


async def test_a_callable_secret_is_read_on_every_request_and_rotates():
    current: dict[str, str | None] = {"secret": None}
    asker = Asker({"text": "blue"})
    app = ai_health_handler(
        secret=lambda: current["secret"], probe=LivenessProbe(ask=asker, min_interval_s=0)
    )

    async def probe(client, offered):
        return await client.get("/", params={"probe": "1"}, headers={"x-probe-secret": offered})

    async with client_for(app) as client:
        assert (await probe(client, "one")).status_code == 501  # not configured yet
        current["secret"] = "one"
        assert (await probe(client, "one")).status_code == 200
        current["secret"] = "two"  # rotated, no restart
        assert (await probe(client, "one")).status_code == 401
        assert (await probe(client, "two")).status_code == 200
        current["secret"] = None
        assert (await probe(client, "two")).status_code == 501
    assert asker.calls == 2


async def test_the_secret_comparison_is_hmac_compare_digest_on_bytes(monkeypatch):
    calls = []
    real = hmac.compare_digest

    def counting(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    app = ai_health_handler(secret="s3cret", probe=LivenessProbe(ask=Asker({"text": "blue"})))
    async with client_for(app) as client:
        wrong = await client.get("/", params={"probe": "1"}, headers={"x-probe-secret": "nope"})
        right = await client.get("/", params={"probe": "1", "secret": "s3cret"})
    assert (wrong.status_code, right.status_code) == (401, 200)
    assert calls == [(b"nope", b"s3cret"), (b"s3cret", b"s3cret")]


async def test_a_non_ascii_secret_works_by_header_and_by_query():
    app = ai_health_handler(secret="clé-été", probe=LivenessProbe(ask=Asker({"text": "blue"})))
    async with client_for(app) as client:
        by_query = await client.get("/", params={"probe": "1", "secret": "clé-été"})
        by_header = await client.get(
            "/", params={"probe": "1"}, headers={"x-probe-secret": "clé-été".encode()}
        )
    assert by_query.status_code == 200 and by_header.status_code == 200


async def test_secret_set_but_no_probe_is_501_after_the_secret_check():
    app = ai_health_handler(secret="s3cret")
    async with client_for(app) as client:
        wrong = await client.get("/", params={"probe": "1", "secret": "x"})
        right = await client.get("/", params={"probe": "1", "secret": "s3cret"})
    assert wrong.status_code == 401
    assert right.status_code == 501 and "no probe" in right.json()["error"]


async def test_only_get_and_head_are_answered():
    app = ai_health_handler()
    async with client_for(app) as client:
        post = await client.post("/")
        head = await client.head("/")
    assert post.status_code == 405 and post.json()["probed"] is False
    assert post.headers["allow"] == "GET, HEAD"
    assert head.status_code == 200 and head.content == b""


async def test_the_route_over_a_real_router_and_simulator(fleet_sim):
    fleet_sim.reset()
    tracker = HealthTracker()
    router = Router([openai_compatible_provider("sim", fleet_sim.openai_url, "k", ["flaky"])])
    app = ai_health_handler(secret="s3cret", health=tracker, probe=LivenessProbe(router))
    headers = {"x-probe-secret": "s3cret"}
    try:
        async with client_for(app) as client:
            codes = [
                (await client.get("/health", params={"probe": "1"}, headers=headers)).status_code
                for _ in range(4)
            ]
            last = (await client.get("/health", params={"probe": "1"}, headers=headers)).json()
    finally:
        await router.close()
    assert codes == [503, 503, 200, 200]  # two outages, a recovery, then the cache
    assert last["cached"] is True and last["served_by"] == "sim:flaky"
    assert last["health"]["status"] == "ok"
    assert len(fleet_sim.requests()) == 3
