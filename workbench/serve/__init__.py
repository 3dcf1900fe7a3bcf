"""Serving helpers for apps built on the router.

- `event_stream` / `EventStream` / `sse_event` / `SSE_HEADERS`: server-sent events over ASGI;
- `AskLimit` / `AskRefusal`: a sliding-window limit per person, a code and a wait;
- `DeterministicFallback` / `FallbackResult`: an honest answer without a model;
- `LivenessProbe` / `LivenessResult` / `ai_health_handler`: a probe and a health route.
"""

from workbench.serve.ask_limit import AskLimit, AskRefusal
from workbench.serve.fallback import DeterministicFallback, FallbackResult
from workbench.serve.liveness import LivenessProbe, LivenessResult, ai_health_handler
from workbench.serve.sse import SSE_HEADERS, EventStream, event_stream, sse_event

__all__ = [
    "SSE_HEADERS",
    "AskLimit",
    "AskRefusal",
    "DeterministicFallback",
    "EventStream",
    "FallbackResult",
    "LivenessProbe",
    "LivenessResult",
    "ai_health_handler",
    "event_stream",
    "sse_event",
]
