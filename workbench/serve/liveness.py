"""An on-demand liveness probe and a health route.

`LivenessProbe(router).run()` asks the chain one tiny question ("What colour is a clear
midday sky?"). A success is cached for `min_interval_s` (so a health route hammered by a
monitor costs one model call per interval); a failure is NEVER cached: the next run asks
again. Concurrent runs share the probe in flight.

`ai_health_handler(secret, health, probe)` is an ASGI app. A plain GET answers the passive
health (no model call, no secret); `?probe=1` runs the probe, and only for a caller who
offers the secret (header `x-probe-secret`, else query `secret`), compared in constant time.
The secret may be a callable read on every request, so it rotates without a restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.types import Receive, Scope, Send

from workbench.errors import RoutingError, WorkbenchError, scrub
from workbench.routing.chain_health import HealthTracker
from workbench.types import CallContext, ChatRequest, user

__all__ = [
    "NO_USABLE_LINK",
    "PROBE_QUESTION",
    "PROBE_SYSTEM",
    "LivenessProbe",
    "LivenessResult",
    "ai_health_handler",
]

PROBE_SYSTEM = "Answer with a single word, no punctuation."
PROBE_QUESTION = "What colour is a clear midday sky? Answer in one word."
NO_USABLE_LINK = "No usable link — every provider is missing its key or has no models."

ERR_NOT_CONFIGURED = "Probing is not configured on this deployment (no secret set)."
ERR_NO_PROBE = "Probing is not configured on this deployment (no probe set)."
ERR_BAD_SECRET = "Bad or missing probe secret."


@dataclass
class LivenessResult:
    ok: bool
    served_by: str | None = None
    answer: str | None = None
    ms: float | None = None
    cached: bool = False
    cached_age_ms: float | None = None
    failures: list[str] = field(default_factory=list)
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class _ProbeFailed(Exception):
    """The probe's own verdict (an empty answer): its message is the whole story."""


def _message(error: BaseException) -> str:
    """One scrubbed line: a WorkbenchError's message, else the exception's type and text."""
    if isinstance(error, WorkbenchError | _ProbeFailed):
        return str(error)
    text = " ".join(str(error).split())
    return scrub(f"{type(error).__name__}: {text}" if text else type(error).__name__)[:300]


def _routing_failures(error: RoutingError) -> tuple[list[str], str | None]:
    failures = []
    for attempt in error.attempts:
        if attempt.error is not None:
            failures.append(_message(attempt.error))
        else:
            failures.append(f"{attempt.key}: {attempt.reason or attempt.outcome}")
    if failures:
        return failures, None
    if error.code in ("AI_NO_PROVIDER", "AI_NO_MATCH"):
        return [], NO_USABLE_LINK
    return [_message(error)], None


class LivenessProbe:
    """One tiny question through `router` (or the app's own `ask`), cached on success only.

    `clock` returns monotonic seconds. `min_interval_s=0` disables the cache; `timeout_s`
    bounds one probe (0 or None: no deadline)."""

    def __init__(
        self,
        router: Any = None,
        *,
        ask: Callable[[], Awaitable[dict[str, Any]]] | None = None,
        min_interval_s: float = 600.0,
        timeout_s: float | None = 10.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.router = router
        self.ask = ask
        self.min_interval_s = min_interval_s
        self.timeout_s = timeout_s
        self._clock = clock or time.monotonic
        self._cached: LivenessResult | None = None
        self._cached_at = 0.0
        self._inflight: asyncio.Future[LivenessResult] | None = None

    def reset(self) -> None:
        """Forget the cached success."""
        self._cached = None

    async def run(self) -> LivenessResult:
        cached = self._from_cache()
        if cached is not None:
            return cached
        inflight = self._inflight
        if inflight is None or inflight.done() or inflight.get_loop() is not _loop():
            inflight = self._inflight = asyncio.ensure_future(self._probe())
        # shield: a caller who leaves does not cancel the probe the others wait for
        return _copy(await asyncio.shield(inflight))

    def _from_cache(self) -> LivenessResult | None:
        if self._cached is None or not self.min_interval_s or self.min_interval_s <= 0:
            return None
        age = self._clock() - self._cached_at
        if age >= self.min_interval_s:
            return None
        return dataclasses.replace(
            _copy(self._cached), cached=True, cached_age_ms=max(0.0, age) * 1000
        )

    async def _probe(self) -> LivenessResult:
        started = self._clock()

        def took() -> float:
            return (self._clock() - started) * 1000

        timeout = self.timeout_s if self.timeout_s and self.timeout_s > 0 else None
        try:
            if self.ask is not None:
                text, served_by = await self._ask(timeout)
            elif self.router is not None:
                text, served_by = await self._route(timeout)
            else:
                return LivenessResult(ok=False, ms=took(), skipped=NO_USABLE_LINK)
        except RoutingError as error:
            failures, skipped = _routing_failures(error)
            return LivenessResult(ok=False, ms=took(), failures=failures, skipped=skipped)
        except TimeoutError:
            return LivenessResult(ok=False, ms=took(), failures=[f"no answer within {timeout} s"])
        except Exception as error:
            return LivenessResult(ok=False, ms=took(), failures=[_message(error)])
        result = LivenessResult(ok=True, served_by=served_by, answer=text.strip(), ms=took())
        self._cached, self._cached_at = _copy(result), self._clock()
        return result

    async def _ask(self, limit_s: float | None) -> tuple[str, str | None]:
        assert self.ask is not None
        async with asyncio.timeout(limit_s):
            reply = await self.ask()
        text = reply.get("text") if isinstance(reply, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise _ProbeFailed("the probe got empty content")
        served_by = reply.get("id")
        return text, None if served_by is None else str(served_by)

    async def _route(self, limit_s: float | None) -> tuple[str, str | None]:
        request = ChatRequest(
            system=PROBE_SYSTEM, messages=[user(PROBE_QUESTION)], max_tokens=256, temperature=0
        )
        signal = asyncio.Event()
        ctx = CallContext(
            signal=signal,
            deadline_s=limit_s,
            cancel_reason=f"the liveness probe gave up after {limit_s} s",
        )
        timer = None
        if limit_s is not None:
            timer = asyncio.get_running_loop().call_later(limit_s, signal.set)
        try:
            # the signal stops the walk cleanly; the hard timeout is a last resort
            async with asyncio.timeout(None if limit_s is None else limit_s + 1.0):
                result = await self.router.route(request, ctx=ctx)
        finally:
            if timer is not None:
                timer.cancel()
        text = result.value.text
        if not isinstance(text, str) or not text.strip():
            raise _ProbeFailed(f"{result.key}: the probe got empty content")
        return text, result.key


def _loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def _copy(result: LivenessResult) -> LivenessResult:
    return dataclasses.replace(result, failures=list(result.failures))


# -- the route ------------------------------------------------------------------------------
Secret = str | Callable[[], str | None] | None
_HEADERS = [
    (b"content-type", b"application/json"),
    (b"cache-control", b"no-store"),
]


def ai_health_handler(
    secret: Secret = None,
    health: HealthTracker | None = None,
    probe: LivenessProbe | None = None,
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An ASGI app answering GET on whatever path it is mounted on:

    - no `probe=1` → 200 `{probed: false, health?}`;
    - no secret configured (or the callable returns None/"") → 501;
    - secret missing or wrong → 401;
    - no probe object → 501;
    - else run the probe, record it into `health`, 200 if ok else 503,
      `{probed: true, ...result, health?}`.
    """

    def passive() -> dict[str, Any]:
        return {"health": dataclasses.asdict(health.get_health())} if health is not None else {}

    async def respond(send: Send, status: int, body: dict[str, Any], head: bool) -> None:
        payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        headers = [*_HEADERS, (b"content-length", str(len(payload)).encode())]
        if status == 405:
            headers.append((b"allow", b"GET, HEAD"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else payload})

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        method = scope.get("method", "GET")
        head = method == "HEAD"
        if method not in ("GET", "HEAD"):
            await respond(send, 405, {"probed": False, "error": "Method not allowed."}, head)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if query.get("probe", [None])[0] != "1":
            await respond(send, 200, {"probed": False, **passive()}, head)
            return
        expected = secret() if callable(secret) else secret
        if not expected:
            await respond(
                send, 501, {"probed": False, "error": ERR_NOT_CONFIGURED, **passive()}, head
            )
            return
        offered = _header(scope, b"x-probe-secret") or (query.get("secret", [""])[0]).encode()
        if not offered or not hmac.compare_digest(offered, str(expected).encode("utf-8")):
            await respond(send, 401, {"probed": False, "error": ERR_BAD_SECRET, **passive()}, head)
            return
        if probe is None:
            await respond(send, 501, {"probed": False, "error": ERR_NO_PROBE, **passive()}, head)
            return
        result = await probe.run()
        if health is not None:
            if result.ok:
                health.record_success()
            else:
                health.record_failure(
                    "; ".join(result.failures) or result.skipped or "probe failed"
                )
        body = {"probed": True, **result.to_dict(), **passive()}
        await respond(send, 200 if result.ok else 503, body, head)

    return app


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
