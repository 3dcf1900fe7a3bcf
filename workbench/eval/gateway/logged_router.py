"""`LoggedRouter`: a providers file's router whose every route is logged to a workbench DuckDB
file as one output of a run, for callers that are not the runner: the OpenAI-compatible
gateway (`workbench serve gateway`) and the Inspect AI model provider.

Their requests are the items of a run nobody listed in advance. So the router is built as a
run builds it (`build_configs`: it observes capabilities into the file, and caches into it when
asked), one run is started when the router opens and finished when it closes, and each route
adds its item (its id, its prompt) and one output row — what the model said, or the error it
ended in — beside the attempts, the route and the verdicts its sink received. `RunFrames`,
`workbench runs` and `workbench report` read that traffic as they read any run.

    logged = LoggedRouter.open("providers.toml", "workbench.duckdb", dataset="gateway")
    result = await logged.route(ChatRequest.of("hi"), item_id="req-1")
    await logged.aclose()

A caller that stops a stream early (a client that hung up) still gets its output row, with
error code `AI_CANCELLED`; the router logs the attempt (outcome `cancelled`) and the route.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from workbench.config.providers_file import ProvidersConfig, load_config
from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.dataset.masking import conversation_masker
from workbench.eval.run.jobs import Configuration, build_configs
from workbench.eval.run.options import RunConfig
from workbench.eval.store.database import OutputRow, Store
from workbench.routing import RouteResult
from workbench.routing.cache import reply_to_dict
from workbench.text.cleaner import ResponseCleaner
from workbench.types import CallContext, ChatRequest, Reply, ToolsMode

__all__ = ["CHAIN", "LoggedRouter"]

# The model name of the whole chain, as the gateway lists it and Inspect names it.
CHAIN = "workbench/chain"
# The output code of a route its caller stopped (a cancelled task, a stream left early).
CANCELLED = "AI_CANCELLED"
# A route's stop signal and why it would fire (`CallContext.signal`, `.cancel_reason`).
Stop = tuple[asyncio.Event, str]


class LoggedRouter:
    """A router over one providers file, logging every route to one run of one store.
    `LoggedRouter.open(...)` makes one; `aclose()` finishes the run and closes the file."""

    def __init__(
        self,
        config: Configuration,
        store: Store,
        run_id: str,
        *,
        mask: bool = True,
        tools_mode: ToolsMode = "plan",
        model: str | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.run_id = run_id
        self.mask = mask
        self.tools_mode: ToolsMode = tools_mode
        self._cleaner = ResponseCleaner()
        self._closed = False
        self.owns_store = True  # `aclose` closes it (`open` given an open store: not)
        self.model = None if model is None else self.check_model(model)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        providers: str | Path | ProvidersConfig,
        db: str | Path | Store,
        *,
        dataset: str,
        name: str | None = None,
        mask: bool = True,
        model: str | None = None,
        tools_mode: ToolsMode = "plan",
        concurrency: int = 16,
        cache_ttl_s: float | None = None,
    ) -> LoggedRouter:
        """Load `providers`, open `db` (or take an open store, which stays open after `aclose`:
        several runs of one process share the file's one writer) and start a run named `name`
        whose dataset reads `dataset` (what sends the traffic:
        "gateway", an Inspect task). `model` ("provider:model") pins every route to that one
        model; `mask` masks each conversation's sensitive values before they leave the machine,
        as runs do; `concurrency` sizes the pace and the connection pool, as a run's does."""
        entry = providers if isinstance(providers, ProvidersConfig) else load_config(providers)
        store = db if isinstance(db, Store) else Store.open(db)
        try:
            # An app's router keeps the file's `when_all_cooling` (a run's fails fast, to hold
            # the item instead: nobody holds a gateway's request but the router).
            (config,) = build_configs(
                [entry],
                store.capabilities,
                store.cache,
                cache_ttl_s,
                concurrency,
                router_options={
                    "when_all_cooling": entry.router_options.get("when_all_cooling", "fail")
                },
            )
            run = RunConfig(
                concurrency=concurrency,
                tools_mode=tools_mode,
                cache_ttl_s=cache_ttl_s,
                mask=mask,
                tool_loop=False,
                run_name=name,
            )
            logged = cls(config, store, "", mask=mask, tools_mode=tools_mode, model=model)
            logged.owns_store = not isinstance(db, Store)
            logged.run_id = store.start_run(
                name=name,
                dataset=dataset,
                dataset_sha="",
                configs=[config.name],
                settings={
                    "concurrency": concurrency,
                    "repeats": 1,
                    "tools_mode": tools_mode,
                    "cache_ttl_s": cache_ttl_s,
                    "dataset_name": dataset,
                    "engine": "logged router",
                    "model": model or CHAIN,
                },
                config=run.to_json(),
            )
        except BaseException:
            if not isinstance(db, Store):
                store.close()
            raise
        return logged

    # ------------------------------------------------------------------ models
    def models(self) -> list[tuple[str, str]]:
        """(provider id, model id) of every model the file names, in chain order."""
        return [(p.id, m.id) for p in self.config.router.providers for m in p.models]

    def check_model(self, model: str) -> str | None:
        """`workbench/chain` (or its short name `chain`): None, the whole chain; otherwise the
        `provider:model` the file names, or `GATEWAY_MODEL_UNKNOWN`."""
        if model in (CHAIN, "chain"):
            return None
        if model not in {f"{p}:{m}" for p, m in self.models()}:
            raise ConfigError(
                f"model {model!r} is not in the providers file: {CHAIN}, or one of "
                + ", ".join(f"{p}:{m}" for p, m in self.models()),
                code="GATEWAY_MODEL_UNKNOWN",
                status=404,
            )
        return model

    def _candidates(self, model: str | None) -> list[dict[str, Any]] | None:
        pinned = self.model if model is None else self.check_model(model)
        if pinned is None:
            return None
        provider, _, name = pinned.partition(":")
        return [{"provider": provider, "model": name}]

    # ------------------------------------------------------------------ routing
    def _context(
        self,
        item_id: str,
        repeat: int,
        tools_mode: ToolsMode | None,
        tries: int = 0,
        stop: Stop | None = None,
    ) -> CallContext:
        signal, reason = stop if stop is not None else (None, None)
        return CallContext(
            sinks=(self.store.sink(self.run_id, item_id, repeat, self.config.name, tries=tries),),
            purpose="eval",
            tools_mode=tools_mode or self.tools_mode,
            repeat=repeat,
            signal=signal,
            cancel_reason=reason,
        )

    def _begin(self, request: ChatRequest, item_id: str, turn: int = 0) -> None:
        if self._closed:
            raise ConfigError("the logged router is closed", code="STORE_CLOSED")
        if turn == 0:  # a later turn's last user message is a tool's result, not the prompt
            self.store.add_item(self.run_id, {"item_id": item_id, "prompt": prompt_of(request)})

    async def route(
        self,
        request: ChatRequest,
        *,
        item_id: str,
        repeat: int = 0,
        tools_mode: ToolsMode | None = None,
        model: str | None = None,
        turn: int = 0,
        tries: int = 0,
        stop: Stop | None = None,
    ) -> RouteResult:
        """Route `request` (pinned to `model` if given, else to the router's own pin or the
        whole chain) and log it as item `item_id`; a failure is logged, then raised.

        A conversation routed turn by turn (an Inspect sample's tool loop) is one item: each
        route after the first says its `turn` (its reply journaled under it, the item's prompt
        kept from turn 0) and `tries`, the attempts its earlier turns logged, so that no two
        of its attempts share an id. Its output is its last turn's.

        `stop` is (an event, why): once the event is set the route ends at once with
        `AI_CANCELLED`, saying why (the gateway's shutdown)."""
        candidates = self._candidates(model)
        self._begin(request, item_id, turn)
        ctx = self._context(item_id, repeat, tools_mode, tries, stop)
        masker = conversation_masker() if self.mask else None
        started = time.perf_counter()
        try:
            result = await self.config.router.route(
                request, candidates=candidates, ctx=ctx, masker=masker
            )
        except BaseException as exc:
            self._failed(item_id, repeat, exc, started, "")
            raise
        self._answered(item_id, repeat, result, started, turn)
        return result

    async def stream(
        self,
        request: ChatRequest,
        *,
        item_id: str,
        repeat: int = 0,
        tools_mode: ToolsMode | None = None,
        model: str | None = None,
        stop: Stop | None = None,
    ) -> AsyncIterator[str | RouteResult]:
        """`Router.stream` logged as `route` is: text deltas, then the RouteResult. A reader
        that stops early (or is cancelled) leaves an output row with code `AI_CANCELLED`."""
        candidates = self._candidates(model)
        self._begin(request, item_id)
        ctx = self._context(item_id, repeat, tools_mode, stop=stop)
        masker = conversation_masker() if self.mask else None
        started = time.perf_counter()
        shown: list[str] = []
        answered = False  # a reader that leaves after the RouteResult changes nothing
        items = self.config.router.stream(request, candidates=candidates, ctx=ctx, masker=masker)
        try:
            try:
                async for item in items:
                    if isinstance(item, RouteResult):
                        self._answered(item_id, repeat, item, started)
                        answered = True
                        yield item
                        return
                    shown.append(item)
                    yield item
            finally:
                # The router's stream logs its cancelled attempt and route as it closes:
                # before this output row, so a reader of the file sees them together.
                await items.aclose()  # type: ignore[attr-defined]
        except BaseException as exc:
            if not answered:
                self._failed(item_id, repeat, exc, started, "".join(shown))
            raise

    def _answered(
        self, item_id: str, repeat: int, result: RouteResult, started: float, turn: int = 0
    ) -> None:
        reply = result.value
        key = result.key
        self.store.add_reply(
            self.run_id,
            item_id,
            repeat,
            self.config.name,
            turn,
            key,
            reply_to_dict(reply) | {"cached": reply.cached},
        )
        self.store.add_output(
            OutputRow(
                run_id=self.run_id,
                item_id=item_id,
                repeat=repeat,
                config=self.config.name,
                key=key,
                raw=reply.text,
                cleaned=self._cleaner.clean(reply.text),
                tool_calls=_calls_json(reply),
                protocol=reply.protocol,
                latency_ms=(time.perf_counter() - started) * 1000,
                tokens_in=reply.usage.prompt_tokens,
                tokens_out=reply.usage.completion_tokens,
                cached=reply.cached,
                at_ms=int(time.time() * 1000),
            )
        )

    def _failed(
        self, item_id: str, repeat: int, exc: BaseException, started: float, shown: str
    ) -> None:
        """The output row of a route that ended without its answer: its error's code (a
        route stopped by its caller is `AI_CANCELLED`), and the text shown before it broke."""
        if isinstance(exc, asyncio.CancelledError | GeneratorExit):
            code, message = CANCELLED, "the caller stopped the route"
        elif isinstance(exc, WorkbenchError):
            code, message = exc.code, str(exc)
        else:
            code, message = "INTERNAL", f"{type(exc).__name__}: {exc}"
        self.store.add_output(
            OutputRow(
                run_id=self.run_id,
                item_id=item_id,
                repeat=repeat,
                config=self.config.name,
                raw=shown or None,
                tool_calls="[]",
                latency_ms=(time.perf_counter() - started) * 1000,
                cached=False,
                error_code=code,
                error_message=message[:500],
                at_ms=int(time.time() * 1000),
            )
        )

    # ------------------------------------------------------------------ closing
    async def aclose(self, status: str = "finished") -> None:
        """Finish the run (`status`), flush the store and close it (unless it was given open),
        close the router's connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.config.router.close()
        finally:
            try:
                self.store.finish_run(self.run_id, status)
            finally:
                if self.owns_store:
                    self.store.close()

    async def __aenter__(self) -> LoggedRouter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def prompt_of(request: ChatRequest) -> str:
    """The item's prompt: the last user message's text (its text parts, for a message of
    parts), or the system text of a request without one."""
    for message in reversed(request.messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(
                str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
            )
    return request.system or ""


def _calls_json(reply: Reply) -> str:
    return json.dumps([asdict(c) for c in reply.tool_calls], ensure_ascii=False)
