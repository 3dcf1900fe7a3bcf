"""The deterministic fallback: answer without a model when every model failed.

`DeterministicFallback(responders, classify).with_fallback(fn, input)` calls `fn(input)`
(typically `router.ask`). When it fails with a provider or routing failure (any
`WorkbenchError`), `classify(input)` names a category and that category's responder
computes an answer from data the app already has. The honesty rules:

- a fallback answer always says `degraded=True` (serving it as a normal answer would teach
  readers to distrust the good ones);
- the provider error is carried in `provider_error`, never swallowed (your monitoring must
  still see the outage);
- a question with no category, no responder, or a responder that returns None (or blank
  text) is declined (`declined=True`, `answer=None`) — never invented.

Cancellation and programming errors (TypeError, …) are not provider failures: they
propagate, as do errors raised by `classify` or a responder (app bugs).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import WorkbenchError

__all__ = ["DeterministicFallback", "FallbackResult"]

Responder = Callable[[Any], "str | Awaitable[str | None] | None"]


@dataclass(frozen=True)
class FallbackResult:
    degraded: bool
    answer: str | None
    provider_error: BaseException | None
    declined: bool = False


class DeterministicFallback:
    def __init__(
        self,
        responders: Mapping[str, Responder],
        classify: Callable[[Any], str | None],
    ) -> None:
        self.responders = dict(responders)
        self.classify = classify

    async def with_fallback(
        self, fn: Callable[[Any], Awaitable[str]], input: Any
    ) -> FallbackResult:
        try:
            answer = await fn(input)
        except WorkbenchError as error:
            if error.code == "AI_CANCELLED":
                raise  # the reader left: nobody is waiting for a fallback answer
            return await self._fallback(input, error)
        return FallbackResult(degraded=False, answer=answer, provider_error=None)

    async def _fallback(self, input: Any, error: WorkbenchError) -> FallbackResult:
        category = self.classify(input)
        responder = self.responders.get(category) if category is not None else None
        answer: Any = None
        if responder is not None:
            answer = responder(input)
            if inspect.isawaitable(answer):
                answer = await answer
        if answer is not None and not isinstance(answer, str):
            raise TypeError(
                f"responder {category!r} must return str or None, not {type(answer).__name__}"
            )
        if answer is None or not answer.strip():
            return FallbackResult(degraded=True, answer=None, provider_error=error, declined=True)
        return FallbackResult(degraded=True, answer=answer, provider_error=error)
