"""Providers for tests: answers written down in advance, so a test of routing, streaming or a
tool loop says what the model did instead of standing up a server.

`ScriptedProvider` answers its calls, in order, from a script: one step per call (`call()` or
`stream()`), and it keeps every request it received. `FunctionProvider` answers each call with
a function of the request. Both are whole `Provider`s: the router takes them as they are.

A step of a script is one of:

- a `str` or a `Reply`: the answer (a string is a reply of that text);
- a `Fail`: the `ProviderError` an HTTP adapter would raise for that status (a 429 with its
  `retry_after_s`, a 503, a network failure with `status=0`), named with this provider and the
  model asked;
- a `Stream`: text pieces for `stream()`, then how the stream ends (its `Reply` by default; a
  failure, a hang, or nothing at all);
- a `Hang`: the call waits forever, or `seconds` and then does its `then` step, so a deadline
  or a cancellation has something to cut;
- any other exception: raised as it is (a bug in a user's provider).

Anything that crosses the wire (status codes, SSE framing, headers) belongs to the simulator
(`workbench.sim`); these doubles stand at the provider seam only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from workbench.errors import ProviderError, ProviderErrorKind, kind_for_status
from workbench.providers.spec import ModelSpec
from workbench.types import CallContext, ChatRequest, Reply

__all__ = [
    "Fail",
    "FunctionProvider",
    "Hang",
    "Received",
    "ScriptedProvider",
    "Step",
    "Stream",
]


@dataclass(frozen=True, slots=True)
class Fail:
    """A failed call, as the HTTP adapters report it: `kind` follows the status unless given
    (`status=0` is a network failure, the one kind no status names)."""

    status: int = 0
    retry_after_s: float | None = None
    body: str = ""
    kind: ProviderErrorKind | None = None
    code: str | None = None
    message: str | None = None

    def error(self, provider: str, model: str) -> ProviderError:
        kind = self.kind or (kind_for_status(self.status) if self.status else "network")
        return ProviderError(
            self.message or (f"HTTP {self.status}" if self.status else "transport error"),
            kind=kind,
            status_code=self.status,
            provider=provider,
            model=model,
            body=self.body,
            retry_after_s=self.retry_after_s,
            code=self.code,
        )


@dataclass(frozen=True, slots=True)
class Hang:
    """A call that does not answer: forever (`seconds=None`), or for `seconds` and then its
    `then` step. Without one, a timed-out call (`ProviderError` of kind "timeout"), as an
    adapter whose request outlived its timeout reports it."""

    seconds: float | None = None
    then: Step | None = None


class _Joined:
    """A stream's default end: the reply of its pieces joined."""

    def __repr__(self) -> str:
        return "JOINED"


_JOINED = _Joined()


@dataclass(frozen=True, slots=True)
class Stream:
    """Pieces of text `stream()` yields one by one, then `then`: by default the `Reply` of the
    pieces joined; a `Reply` or a `str`; a `Fail`, `Hang` or exception (the stream breaks
    after its text); or `None`, a stream that ends without its reply. `call()` on this step
    answers as the stream would have ended: with `then`, or the joined text when the stream
    ends on its pieces."""

    pieces: Sequence[str]
    then: Step | _Joined | None = _JOINED


Step: TypeAlias = str | Reply | Fail | Hang | Stream | BaseException


@dataclass(frozen=True, slots=True)
class Received:
    """One call as the provider received it."""

    request: ChatRequest
    model: str
    ctx: CallContext
    stream: bool


class _TestProvider:
    """The `Provider` members a test double does not vary per call, and the record of calls."""

    def __init__(
        self,
        id: str,
        models: Iterable[str | dict[str, Any] | ModelSpec],
        *,
        external: bool,
        lane: str | None,
        key: str | None,
        base_url: str,
    ) -> None:
        self.id = id
        self._models = [ModelSpec.of(m) for m in models]
        self.external = external
        self._lane = lane
        self._key = key
        self._base_url = base_url
        self.received: list[Received] = []
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, models={[m.id for m in self.models]!r})"

    @property
    def models(self) -> list[ModelSpec]:
        return self._models

    @property
    def requests(self) -> list[ChatRequest]:
        """The requests received, in order."""
        return [r.request for r in self.received]

    @property
    def asked(self) -> list[str]:
        """The model of every call received, in order."""
        return [r.model for r in self.received]

    def available(self, ctx: CallContext) -> bool:
        return True

    def lane(self, ctx: CallContext | None = None) -> str | None:
        return self._lane

    def key(self, ctx: CallContext) -> str | None:
        return self._key

    def base_url(self, ctx: CallContext) -> str:
        return self._base_url

    async def aclose(self) -> None:
        return None

    async def called(self, count: int = 1) -> None:
        """Wait until `count` calls have been received: a test waits for what it asserts
        about (a stream begun, a request in flight), never for time."""
        if len(self.received) >= count:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((count, waiter))
        await waiter

    def _receive(
        self, request: ChatRequest, ctx: CallContext | None, model: str | None, stream: bool
    ) -> Received:
        received = Received(request, self._model(model), ctx or CallContext(), stream)
        self.received.append(received)
        still = []
        for count, waiter in self._waiting:
            if len(self.received) >= count:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                still.append((count, waiter))
        self._waiting = still
        return received

    def _model(self, model: str | None) -> str:
        return model if model is not None else (self.models[0].id if self.models else "")

    def _reply(self, answer: str | Reply, model: str) -> Reply:
        """The answer named as this provider's, as an adapter's reply is."""
        if isinstance(answer, str):
            return Reply(answer, provider=self.id, model=model)
        if answer.provider and answer.model:
            return answer
        return dataclasses.replace(
            answer, provider=answer.provider or self.id, model=answer.model or model
        )


class ScriptedProvider(_TestProvider):
    """A provider whose calls answer, in order, from `script`: one step per call, `call()` and
    `stream()` alike. A call past the end of the script raises `AssertionError` (a test that
    asks more than it wrote down is wrong), which the router logs as the attempt's error.

        groq = ScriptedProvider("groq", ["m1", "m2"], [Fail(429, retry_after_s=2), "pong"])
        result = await Router([groq]).route(ChatRequest.of("ping"))
        assert result.key == "groq:m2" and groq.asked == ["m1", "m2"]

    `received` keeps every call (request, model, context, whether streamed); `add()` appends
    steps to the script, e.g. between two phases of a test.
    """

    def __init__(
        self,
        id: str = "scripted",
        models: Iterable[str | dict[str, Any] | ModelSpec] = ("m",),
        script: Iterable[Step] = (),
        *,
        external: bool = True,
        lane: str | None = None,
        key: str | None = None,
        base_url: str = "",
    ) -> None:
        super().__init__(id, models, external=external, lane=lane, key=key, base_url=base_url)
        self.script: list[Step] = list(script)

    def add(self, *steps: Step) -> None:
        self.script.extend(steps)

    @property
    def left(self) -> int:
        """Steps not yet used."""
        return max(0, len(self.script) - len(self.received))

    def _next(self) -> Step:
        """The step of the call just received (the nth call takes the nth step)."""
        n = len(self.received)
        if n > len(self.script):
            raise AssertionError(
                f"{self.id!r} was called {n} time(s); its script has {len(self.script)} step(s)"
            )
        return self.script[n - 1]

    async def call(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> Reply:
        received = self._receive(request, ctx, model, stream=False)
        return await self._answer(self._next(), received.model)

    async def stream(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> AsyncIterator[str | Reply]:
        received = self._receive(request, ctx, model, stream=True)
        step = self._next()
        if not isinstance(step, Stream):
            reply = await self._answer(step, received.model)
            if reply.text:
                yield reply.text
            yield reply
            return
        for piece in step.pieces:
            yield piece
            await asyncio.sleep(0)  # one piece per turn of the loop, as a network delivers them
        if step.then is None:
            return  # a stream that ends without its reply
        end = "".join(step.pieces) if isinstance(step.then, _Joined) else step.then
        yield await self._answer(end, received.model)

    async def _answer(self, step: Step, model: str) -> Reply:
        if isinstance(step, str | Reply):
            return self._reply(step, model)
        if isinstance(step, Fail):
            raise step.error(self.id, model)
        if isinstance(step, Hang):
            if step.seconds is None:
                await asyncio.Future()  # until cancelled
            await asyncio.sleep(step.seconds or 0)
            if step.then is None:
                raise Fail(kind="timeout", message=f"no answer in {step.seconds:g} s").error(
                    self.id, model
                )
            return await self._answer(step.then, model)
        if isinstance(step, Stream):  # asked without streaming: the whole answer at once
            if step.then is None or isinstance(step.then, _Joined):
                return self._reply("".join(step.pieces), model)
            return await self._answer(step.then, model)
        raise step


Answer: TypeAlias = Callable[[ChatRequest, CallContext], "Reply | str | Awaitable[Reply | str]"]


class FunctionProvider(_TestProvider):
    """A provider whose every call is answered by `fn(request, ctx)`, a plain or an async
    function returning a `Reply` or its text; what it raises, the call raises (raise a
    `ProviderError`, or `Fail(...).error(id, model)`, to fail as an adapter does).

        def echo(request, ctx):
            return "you said: " + request.messages[-1]["content"]

        router = Router([FunctionProvider(echo, id="echo")])

    `stream()` yields the answer's text as one piece, then the `Reply`.
    """

    def __init__(
        self,
        fn: Answer,
        *,
        id: str = "function",
        models: Iterable[str | dict[str, Any] | ModelSpec] = ("m",),
        external: bool = True,
        lane: str | None = None,
        key: str | None = None,
        base_url: str = "",
    ) -> None:
        super().__init__(id, models, external=external, lane=lane, key=key, base_url=base_url)
        self.fn = fn

    async def call(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> Reply:
        received = self._receive(request, ctx, model, stream=False)
        return await self._answer(received)

    async def stream(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> AsyncIterator[str | Reply]:
        reply = await self._answer(self._receive(request, ctx, model, stream=True))
        if reply.text:
            yield reply.text
        yield reply

    async def _answer(self, received: Received) -> Reply:
        answer = self.fn(received.request, received.ctx)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, str | Reply):
            raise TypeError(
                f"{self.id!r}: the function returned {type(answer).__name__}, not a Reply or str"
            )
        return self._reply(answer, received.model)
