"""What both adapters share: per-call resolution of key, URL and client; the HTTP edge that
turns every transport and status failure into a `ProviderError`; and the reading of a reply
(reasoning dropped, prose tool calls read, native wins on a tie, an empty 200 refused).

Each adapter only says how its vendor's wire format looks (`_body`, `_endpoint`, `_read`,
`_read_frame`); the reading rules live here once, so both vendors obey them alike. A provider
speaks to its vendor and nothing else: planning which tools to offer, caching, masking and
classifying the model are steps of the router's attempt pipeline (`routing/attempt.py`).
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from workbench.errors import (
    ConfigError,
    ProviderError,
    ProviderErrorKind,
    StreamInterrupted,
    kind_for_status,
)
from workbench.providers.http import (
    DEFAULT_POOL,
    DEFAULT_TRANSPORT,
    HttpTransport,
    _skipping_cookies,
    check_transport,
    failure_kind,
    is_send_failure,
    new_client,
)
from workbench.providers.meter import QuotaReading, read_quota, retry_after_s
from workbench.providers.protocols import (
    merge_tool_calls,
    read_text_tool_calls,
    tool_names_from,
    tool_schemas_from,
)
from workbench.providers.protocols.prose_stream import ProtocolFilter
from workbench.providers.reasoning import ReasoningFilter, strip_reasoning
from workbench.providers.spec import KeySource, ModelSpec, UrlSource, check_base_url
from workbench.providers.streamed_calls import SseCut, ToolSlots, iter_sse_json
from workbench.types import CallContext, ChatRequest, Protocol, Reply, ToolCall, Usage

if TYPE_CHECKING:
    from workbench.cassettes import Cassette

DEFAULT_TIMEOUT_S = 30.0


@dataclass(slots=True)
class FrameRead:
    """What one streamed frame contributed."""

    text: str = ""
    fragments: list[tuple[int | None, str | None, str | None, str | None]] = field(
        default_factory=list
    )
    finish_reason: str | None = None
    usage: Usage | None = None


class HttpProvider:
    """An LLM endpoint reached over HTTP. Subclasses describe the wire format only."""

    default_url: str = ""
    # Whether the endpoint serves its vendor's batch API (`workbench.providers.batch_api`): None
    # decides from the adapter and the host, a providers file's `batch = true|false` says.
    batch: bool | None = None

    def __init__(
        self,
        id: str,
        url: UrlSource,
        get_key: KeySource,
        models: Iterable[str | dict[str, Any] | ModelSpec],
        *,
        client: httpx.AsyncClient | None = None,
        extra: dict[str, Any] | None = None,
        external: bool = True,
        headers: dict[str, str] | None = None,
        vision_models: Iterable[str] | None = None,
        lane: str | Callable[[CallContext], str | None] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        lone_think_window: int = 0,
        http_transport: HttpTransport = DEFAULT_TRANSPORT,
        pool: int = DEFAULT_POOL,
        cache_origin: str | None = None,
    ) -> None:
        self.id = id
        self._url = url
        self._cache_origin = cache_origin
        self._get_key = get_key
        self.models = [ModelSpec.of(m) for m in models]
        self._client = client
        # This provider's own clients, one per event loop (an aiohttp pool belongs to its loop).
        self._own: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self.http_transport = check_transport(http_transport)
        self.pool = max(1, int(pool))
        self.extra = dict(extra or {})
        self.external = external
        self.headers = dict(headers or {})
        self.vision_models = list(vision_models) if vision_models is not None else None
        self._lane = lane
        self.timeout_s = timeout_s
        # A lone `</think>` (reasoning whose opening tag was lost) can only be hidden from a
        # stream by holding text back; holding costs every reader time-to-first-token, so it
        # is opt-in per provider, for the models known to do it. `call()` always strips it.
        self.lone_think_window = lone_think_window
        self._cassette: Cassette | None = None
        # The cassette's clients, one per client they send through (None: replay, no client).
        self._taped: weakref.WeakKeyDictionary[object, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._taped_replay: httpx.AsyncClient | None = None
        if isinstance(url, str):
            check_base_url(url)

    def __getstate__(self) -> dict[str, Any]:
        """A provider sent to another process (a Ray worker) travels without its HTTP clients:
        a client belongs to one process and one event loop; the worker makes its own."""
        state = dict(self.__dict__)
        state["_own"] = None
        state["_client"] = None
        state["_cassette"] = None  # a cassette is one file written by one process
        state["_taped"] = None
        state["_taped_replay"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._own = weakref.WeakKeyDictionary()
        self._taped = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(id={self.id!r}, models={[m.id for m in self.models]!r})"

    # -- per-call resolution -------------------------------------------------------------
    def available(self, ctx: CallContext) -> bool:
        """An HTTP provider is always worth a try; its failures say the rest."""
        return True

    def lane(self, ctx: CallContext | None = None) -> str | None:
        if callable(self._lane):
            return self._lane(ctx or CallContext())
        return self._lane

    @property
    def keyed(self) -> bool:
        """Whether this provider was given a key at all: a local server often takes none, and
        then a missing key is no reason to skip it."""
        return self._get_key is not None

    def key(self, ctx: CallContext) -> str | None:
        if callable(self._get_key):
            return self._get_key(ctx)
        return self._get_key

    def base_url(self, ctx: CallContext) -> str:
        url = self._url(ctx) if callable(self._url) else self._url
        return check_base_url(url)

    def cache_origin(self, ctx: CallContext) -> str:
        """What names this endpoint in a response-cache key: its URL, unless it was given a
        name of its own. A server this process starts on a free port (the embedded
        simulator, the local model) has a new URL every run and the same answers: named by
        what it serves, so `--cache` answers the next run from this one's replies. A URL
        chosen per call (a callable `url`) is covered by the one name: give one only when
        every such URL answers alike."""
        return self._cache_origin or self.base_url(ctx)

    @property
    def cassette(self) -> Cassette | None:
        return self._cassette

    def use_cassette(self, cassette: Cassette | None) -> None:
        """Send every request through `cassette` (`workbench.cassettes`): recorded, replayed
        with no network, or both; None stops. A client the caller gave (at construction or in
        `ctx.client`) is recorded through too: the cassette wraps whichever client a call
        would have used. Batch APIs send their own multipart uploads and are refused."""
        self._cassette = cassette
        self._taped = weakref.WeakKeyDictionary()
        self._taped_replay = None

    def client(self, ctx: CallContext) -> httpx.AsyncClient:
        """The client a call sends with: the cassette's (`use_cassette`) when one is set, over
        the client the call would otherwise use (`_real_client`)."""
        if self._cassette is None:
            return self._real_client(ctx)
        from workbench.cassettes.transport import CassetteTransport

        if self._cassette.mode == "replay":  # nothing is sent: no real client is made
            if self._taped_replay is None:
                self._taped_replay = _skipping_cookies(
                    httpx.AsyncClient(transport=CassetteTransport(self._cassette, self.id, None))
                )
            return self._taped_replay
        real = self._real_client(ctx)
        taped = self._taped.get(real)
        if taped is None:
            sender = weakref.ref(real)

            def send() -> httpx.AsyncClient:
                client = sender()
                if client is None:  # collected: its provider made a new one since
                    return self._real_client(ctx)
                return client

            taped = self._taped[real] = _skipping_cookies(
                httpx.AsyncClient(
                    # What httpx applies while building a request (not in `send`): the real
                    # client's default headers (a user agent, an org header), query params
                    # and timeouts, so a recorded request is the one sent without a cassette.
                    # Its auth and event hooks apply in its own `send`, which records.
                    headers=real.headers,
                    params=real.params,
                    timeout=real.timeout,
                    follow_redirects=real.follow_redirects,
                    transport=CassetteTransport(self._cassette, self.id, send),
                )
            )
        return taped

    def _real_client(self, ctx: CallContext) -> httpx.AsyncClient:
        """The caller's client (`ctx.client`), else the one given at construction, else this
        provider's own (`new_client(http_transport, pool)`), one per event loop: an aiohttp
        pool belongs to the loop it was made in."""
        if ctx.client is not None:
            return ctx.client
        if self._client is not None:
            return self._client
        loop = asyncio.get_running_loop()
        own = self._own.get(loop)
        if own is None or own.is_closed:
            own = self._own[loop] = new_client(self.http_transport, self.pool, loop)
        return own

    def use_http(self, transport: HttpTransport | None = None, pool: int | None = None) -> None:
        """Choose the transport and pool size of this provider's own client (a client given
        at construction is kept as it is); takes effect with the next client made."""
        if transport is not None:
            self.http_transport = check_transport(transport)
        if pool is not None:
            self.pool = max(1, int(pool))

    def model_spec(self, model: str | None) -> ModelSpec:
        if model is None:
            if not self.models:
                raise ConfigError(
                    f"provider {self.id!r} declares no model", code="PROVIDERS_INVALID"
                )
            return self.models[0]
        for spec in self.models:
            if spec.id == model:
                return spec
        return ModelSpec(id=model)

    async def aclose(self) -> None:
        """Close this loop's own client (another loop's is closed from that loop, or when its
        loop is gone and it is collected)."""
        own = self._own.pop(asyncio.get_running_loop(), None)
        if own is not None:
            await own.aclose()

    # -- wire format, per vendor ---------------------------------------------------------
    def _endpoint(self, base: str, model: str, stream: bool) -> str:
        raise NotImplementedError

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def _body(self, request: ChatRequest, spec: ModelSpec, stream: bool) -> dict[str, Any]:
        raise NotImplementedError

    def _read(self, parsed: Any) -> tuple[str, list[ToolCall], str | None, Usage]:
        """(content, native calls, finish reason, usage) of a whole JSON reply."""
        raise NotImplementedError

    def _read_frame(self, frame: dict[str, Any]) -> FrameRead:
        raise NotImplementedError

    @staticmethod
    def _is_cut(finish_reason: str | None) -> bool:
        return (finish_reason or "").lower() in ("length", "max_tokens")

    # -- the HTTP edge -------------------------------------------------------------------
    def _prepare(
        self, request: ChatRequest, ctx: CallContext | None, model: str | None, stream: bool
    ) -> tuple[CallContext, ModelSpec, str | None, str, dict[str, str], dict[str, Any]]:
        ctx = ctx or CallContext()
        spec = self.model_spec(model)
        key = self.key(ctx)
        url = self._endpoint(self.base_url(ctx), spec.id, stream)
        headers = {"content-type": "application/json", **self.headers}
        if stream:
            headers["accept"] = "text/event-stream"
        headers.update(self._auth_headers(key))  # the credential always wins
        body = self._body(request, spec, stream)
        return ctx, spec, key, url, headers, body

    def _error(
        self,
        message: str,
        spec: ModelSpec,
        key: str | None,
        *,
        kind: ProviderErrorKind,
        status: int = 0,
        body: str = "",
        retry: float | None = None,
        code: str | None = None,
        quota: list[QuotaReading] | None = None,
        finish_reason: str | None = None,
    ) -> ProviderError:
        return ProviderError(
            message,
            kind=kind,
            status_code=status,
            provider=self.id,
            model=spec.id,
            body=body,
            retry_after_s=retry,
            code=code,
            secrets=[key],
            quota=quota,
            finish_reason=finish_reason,
        )

    def _transport_error(self, exc: Exception, spec: ModelSpec, key: str | None) -> ProviderError:
        kind = failure_kind(exc)
        if kind == "timeout":
            return self._error(f"timed out ({type(exc).__name__})", spec, key, kind="timeout")
        if kind == "bad_url":
            return self._error(f"bad URL: {exc}", spec, key, kind="network", code="BAD_BASE_URL")
        reason = str(exc) or type(exc).__name__
        return self._error(f"transport error: {reason}", spec, key, kind="network")

    def _status_error(
        self, resp: httpx.Response, spec: ModelSpec, key: str | None
    ) -> ProviderError:
        text = resp.text
        quota = read_quota(resp.headers, self.id, spec.id)
        return self._error(
            f"HTTP {resp.status_code}",
            spec,
            key,
            kind=kind_for_status(resp.status_code),
            status=resp.status_code,
            body=text,
            retry=retry_after_s(resp.headers, text),
            quota=quota,
        )

    def _finish(
        self,
        request: ChatRequest,
        spec: ModelSpec,
        key: str | None,
        *,
        content: str,
        native: list[ToolCall],
        finish_reason: str | None,
        usage: Usage,
        status: int,
        started: float,
        quota: list[QuotaReading],
        raw: Any,
    ) -> Reply:
        """The reading rules, once for both vendors and both modes: reasoning never reaches the
        text, a call written in prose counts only under an offered name, native wins a tie."""
        text = written = strip_reasoning(content)
        text_calls: list[ToolCall] = []
        names = _offered_names(request)
        if names and request.tool_protocol == "both":
            schemas = tool_schemas_from(request.tools)
            text_calls, text = read_text_tool_calls(text, names, schemas=schemas)
        calls = merge_tool_calls(native, text_calls)
        if not text.strip() and not calls:
            # An outage wearing a success code: the router must move on.
            raise self._error(
                "200 with neither text nor a tool call",
                spec,
                key,
                kind="empty",
                status=status,
                quota=quota,
                finish_reason=finish_reason,
            )
        protocol: Protocol = "native" if native else ("text" if text_calls else "none")
        return Reply(
            text=text.strip(),
            tool_calls=calls,
            cut=self._is_cut(finish_reason),
            usage=usage,
            raw_status=status,
            latency_ms=(time.perf_counter() - started) * 1000,
            provider=self.id,
            model=spec.id,
            protocol=protocol,
            finish_reason=finish_reason,
            quota=quota,
            raw=raw,
            # Kept as written (BFCL trims only backticks, newlines and spaces, not a tab or \r)
            # when it differs from `text`, for tool-bearing requests alone.
            content=written if names and written != text.strip() else None,
        )

    # -- public API ----------------------------------------------------------------------
    async def call(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> Reply:
        """One chat turn. Raises ProviderError on any failure; never leaks the key."""
        ctx, spec, key, url, headers, body = self._prepare(request, ctx, model, stream=False)
        timeout = ctx.timeout_s or self.timeout_s
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                resp = await self.client(ctx).post(url, json=body, headers=headers, timeout=timeout)
        except Exception as exc:
            if not is_send_failure(exc):
                raise
            raise self._transport_error(exc, spec, key) from None
        if resp.status_code >= 400:
            raise self._status_error(resp, spec, key)
        quota = read_quota(resp.headers, self.id, spec.id)
        try:
            parsed = resp.json()
            content, native, finish, usage = self._read(parsed)
        except (
            json.JSONDecodeError,
            UnicodeDecodeError,
            TypeError,
            KeyError,
            IndexError,
            AttributeError,
            ValueError,
        ):
            raise self._error(
                "200 whose body is not the JSON the API promises",
                spec,
                key,
                kind="outage",
                status=resp.status_code,
                body=resp.text,
                code="PROVIDER_MALFORMED",
                quota=quota,
            ) from None
        return self._finish(
            request,
            spec,
            key,
            content=content,
            native=native,
            finish_reason=finish,
            usage=usage,
            status=resp.status_code,
            started=started,
            quota=quota,
            raw=parsed,
        )

    def request_body(self, request: ChatRequest, model: str | None = None) -> dict[str, Any]:
        """The JSON body `call()` would send for `request` to `model`: a batch line carries
        the same body, so a batch asks exactly what the run would have asked one by one."""
        return self._body(request, self.model_spec(model), False)

    def request_headers(self, ctx: CallContext) -> tuple[dict[str, str], str | None]:
        """The headers every call carries (the credential last: it always wins), and the key
        itself, so an error built from a reply can scrub it."""
        key = self.key(ctx)
        return {**self.headers, **self._auth_headers(key)}, key

    def read_reply(
        self, request: ChatRequest, model: str | None, parsed: Any, *, status: int = 200
    ) -> Reply:
        """A whole JSON reply read as `call()` reads one: what a batch API returns per request
        is the same body, so it obeys the same reading rules. Raises ProviderError as `call()`
        would (a body of the wrong shape is PROVIDER_MALFORMED, an empty one PROVIDER_EMPTY)."""
        spec = self.model_spec(model)
        try:
            content, native, finish, usage = self._read(parsed)
        except (TypeError, KeyError, IndexError, AttributeError, ValueError):
            raise self._error(
                "a batch result whose body is not the JSON the API promises",
                spec,
                None,
                kind="outage",
                status=status,
                body=json.dumps(parsed)[:2000] if parsed is not None else "",
                code="PROVIDER_MALFORMED",
            ) from None
        return self._finish(
            request,
            spec,
            None,
            content=content,
            native=native,
            finish_reason=finish,
            usage=usage,
            status=status,
            started=time.perf_counter(),
            quota=[],
            raw=parsed,
        )

    async def stream(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> AsyncIterator[str | Reply]:
        """Text deltas as they arrive (reasoning and protocol lines filtered), then the Reply.

        A failure before the first visible delta is a ProviderError (the router may try the
        next model); after it, StreamInterrupted with the partial text (nobody retries what
        the reader has already seen). A finish reason is remembered when a frame carries one:
        several OpenAI-compatible servers never send it, so a stream that ends after whole
        frames (`[DONE]`, or the connection closed cleanly) is a finished answer; only a read
        error, or a frame cut in the middle, is an interruption."""
        ctx, spec, key, url, headers, body = self._prepare(request, ctx, model, stream=True)
        timeout = ctx.timeout_s or self.timeout_s
        started = time.perf_counter()
        names = _offered_names(request)
        reasoning = ReasoningFilter(self.lone_think_window)
        lines = ProtocolFilter(names) if names and request.tool_protocol == "both" else None
        slots = ToolSlots()
        raw_text: list[str] = []
        shown: list[str] = []
        finish: str | None = None
        usage = Usage()
        seen_frame = False

        def visible(chunk: str, final: bool = False) -> str:
            out = reasoning.finish() if final else reasoning.feed(chunk)
            if lines is None:
                return out
            return lines.feed(out) + (lines.finish() if final else "")

        def broken(cause: ProviderError) -> ProviderError:
            return StreamInterrupted(cause, "".join(shown)) if shown else cause

        try:
            async with self.client(ctx).stream(
                "POST", url, json=body, headers=headers, timeout=timeout
            ) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise self._status_error(resp, spec, key)
                status = resp.status_code
                quota = read_quota(resp.headers, self.id, spec.id)
                async for frame in iter_sse_json(resp.aiter_bytes()):
                    seen_frame = True
                    got = self._read_frame(frame)
                    for fragment in got.fragments:
                        slots.absorb(*fragment)
                    finish = got.finish_reason or finish
                    usage = got.usage or usage
                    if got.text:
                        raw_text.append(got.text)
                        out = visible(got.text)
                        if out:
                            shown.append(out)
                            yield out
        except ProviderError:
            raise
        except SseCut as exc:
            cause = self._error(
                f"the stream broke inside a frame ({exc})",
                spec,
                key,
                kind="network",
                status=resp.status_code,
            )
            raise broken(cause) from None
        except Exception as exc:
            if not is_send_failure(exc):
                raise
            raise broken(self._transport_error(exc, spec, key)) from None
        if not seen_frame:
            raise self._error(
                "a 200 stream without a single server-sent event frame",
                spec,
                key,
                kind="network",
                status=status,
                code="PROVIDER_MALFORMED",
                quota=quota,
            )
        tail = visible("", final=True)
        if tail:
            yield tail
        yield self._finish(
            request,
            spec,
            key,
            content="".join(raw_text),
            native=slots.calls(),
            finish_reason=finish,
            usage=usage,
            status=status,
            started=started,
            quota=quota,
            raw=None,
        )

    async def stream_text(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> AsyncIterator[str]:
        """Only the text deltas of `stream()`, for callers that do not need the Reply."""
        async for item in self.stream(request, ctx, model):
            if isinstance(item, str):
                yield item

    def call_sync(
        self, request: ChatRequest, ctx: CallContext | None = None, model: str | None = None
    ) -> Reply:
        """`call()` for scripts and notebook cells without a running loop."""
        return asyncio.run(self._call_and_close(request, ctx, model))

    async def _call_and_close(
        self, request: ChatRequest, ctx: CallContext | None, model: str | None
    ) -> Reply:
        try:
            return await self.call(request, ctx, model)
        finally:
            await self.aclose()


def _offered_names(request: ChatRequest) -> list[str]:
    """The names a call written in prose may use: the tools' own, and those a caller's prose
    description gave them."""
    if not request.tools:
        return []
    names = tool_names_from(request.tools)
    if request.tools_in_prose is not None:
        names += [n for n in request.tools_in_prose.names if n not in names]
    return names
