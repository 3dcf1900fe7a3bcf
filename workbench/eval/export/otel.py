"""`workbench export otel RUN`: a logged run as OpenTelemetry spans in the GenAI semantic
conventions, so any tracing backend shows what the router did for each item.

- a trace per sample (item × repeat × configuration), its root `invoke_agent workbench`
  (internal, `gen_ai.operation.name` = `invoke_agent`): the item's whole exchange, every turn of
  a tool loop in one trace; status ERROR when the item failed (`error.type` = our code). Its
  `gen_ai.provider.name` is `workbench`: the router, not one vendor, answered the item;
- under it a span per route (`route CONFIG`, internal): one turn's request through the router,
  from its first attempt to its decision; status ERROR when nobody answered;
- under each route a span per attempt: `chat MODEL` (client) for a call, with
  `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
  `gen_ai.response.model`, the turn's `gen_ai.usage.input_tokens` / `output_tokens`, and on a
  failure `error.type` (our error code), `http.response.status_code` and status ERROR;
  `skip MODEL` (internal, no duration and no `gen_ai.operation.name`: nothing was asked) for a
  candidate the router passed over;
- under the root, beside the routes, an `execute_tool TOOL` span (internal) per tool step the
  loop ran between two turns: `gen_ai.tool.name`, `gen_ai.tool.call.id`, its logged times, and
  on a failure the loop's code as `error.type`;
- our own attributes under `workbench.`: run id, item id, repeat, configuration, route id,
  fallback depth, attempt position and outcome, cache hit, and our provider id
  (`workbench.provider`);
- start and end times are the logged ones, never the time of the export; trace and span ids
  are derived from the run, the sample, the route and the attempt's or step's place in it, so
  exporting a run twice sends the same spans.

`gen_ai.provider.name` must be a well-known value where one applies. The log knows our
provider id (a configuration's label), not the URL it called, so an id that names one vendor
unambiguously (`openai`, `groq`, `anthropic`, `mistral`, `deepseek`, `xai`, `cohere`,
`perplexity`; `google` or `gemini` is `gcp.gemini`) becomes its value, and any other id
(`openrouter`, a local server) is sent as it is. The built-in simulator's providers are named
like vendors (`groq`, `google`) while the simulator answered them: a simulated run's spans name
those vendors, and `workbench.provider` with the configuration is what tells them apart.

Message content is off by default. With `content=True` the attempt spans carry
`gen_ai.system_instructions`, `gen_ai.input.messages` (what the attempt sent, as it left the
machine) and, on the attempt that answered, `gen_ai.output.messages`; the tool spans carry
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result` (what the model read) and the tool's
own summary of its arguments (`workbench.tool.params`); all masked with the run's maskers
(`_content.py`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.dataset.prompt_set import Dataset
from workbench.eval.export._content import Exchange, Masking, SampleContent, Turn, step_trail
from workbench.eval.export._run import (
    LoggedAttempt,
    LoggedRoute,
    LoggedRun,
    LoggedSample,
    LoggedToolStep,
    load_run,
)
from workbench.output_files import staged, writable_file

try:  # the `otel` extra
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - exercised by the CLI without the extra
    raise ConfigError(
        f"OpenTelemetry is not installed ({exc.name}): install the `otel` extra "
        "(pip install 'workbench[otel]')",
        code="EXPORT_UNAVAILABLE",
    ) from None

__all__ = ["export_otel", "otlp_exporter", "run_spans", "write_otlp_json"]

SCOPE = "workbench.eval.export"
DEFAULT_TIMEOUT_S = 5.0
BATCH = 512  # spans per OTLP request
AGENT = "workbench"  # the agent of the root spans: the router and its tool loop
# Our provider ids that name one vendor of the conventions' well-known `gen_ai.provider.name`.
WELL_KNOWN = {
    "openai": "openai", "groq": "groq", "anthropic": "anthropic", "mistral": "mistral_ai",
    "mistral_ai": "mistral_ai", "deepseek": "deepseek", "xai": "x_ai", "x_ai": "x_ai",
    "cohere": "cohere", "perplexity": "perplexity", "google": "gcp.gemini",
    "gemini": "gcp.gemini",
}  # fmt: skip


# ------------------------------------------------------------------ building the spans
def run_spans(
    db: str | Path | RunFrames,
    run: str = "latest",
    *,
    content: bool = False,
    dataset: str | Path | Dataset | None = None,
    service_name: str = "workbench",
) -> list[ReadableSpan]:
    """The run's spans, finished, in the order they started (a parent before its children).
    `content=True` adds the masked messages, which needs the run's prompt set (`dataset` when
    it is no longer where the run read it)."""
    logged = load_run(db, run)
    masking = Masking.for_run(logged, dataset) if content else None
    ids = _Ids()
    kept = _Keep()
    provider = TracerProvider(
        resource=Resource.create(
            # The run is the instance: exporting a run twice sends the same resource too.
            {
                "service.name": service_name,
                "service.version": logged.version or "",
                "service.instance.id": logged.run_id,
            }
        ),
        id_generator=ids,
        shutdown_on_exit=False,
    )
    provider.add_span_processor(kept)
    tracer = provider.get_tracer(SCOPE, logged.version or None)
    with _quiet():
        for sample in logged.samples:
            said = masking.sample(sample) if masking is not None else None
            _sample_span(tracer, ids, logged, sample, said)
    provider.shutdown()
    # A span ends after its children; at the same start, a parent comes first.
    depth = _depths(kept.spans)
    return sorted(kept.spans, key=lambda s: (s.start_time or 0, depth[s.context.span_id]))


def _depths(spans: Sequence[ReadableSpan]) -> dict[int, int]:
    parents = {s.context.span_id: s.parent.span_id if s.parent else None for s in spans}

    def depth(span_id: int | None) -> int:
        n = 0
        while (span_id := parents.get(span_id)) is not None:
            n += 1
        return n

    return {span_id: depth(span_id) for span_id in parents}


def _sample_span(
    tracer: trace.Tracer,
    ids: _Ids,
    run: LoggedRun,
    sample: LoggedSample,
    said: SampleContent | None,
) -> None:
    """The sample's trace: its root, its routes (with their attempts) and its tool steps."""
    out = sample.output
    tags = {
        "workbench.run.id": run.run_id,
        "workbench.item.id": sample.item_id,
        "workbench.repeat": sample.repeat,
        "workbench.config": sample.config,
    }
    ids.next(run.run_id, sample.item_id, sample.repeat, sample.config)
    root = tracer.start_span(
        f"invoke_agent {AGENT}",
        kind=SpanKind.INTERNAL,
        start_time=sample.start_ns,
        attributes=_attrs(
            tags
            | {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": AGENT,
                "gen_ai.provider.name": AGENT,
                "error.type": out.error_code,
                "workbench.answered_by": out.key,
                "workbench.turns": len(sample.routes),
                "workbench.tool_steps": len(sample.tool_steps),
                "workbench.passed": out.passed,
                "workbench.score": out.score,
                "workbench.cache_hit": bool(out.cached),
                # Why the provider kept it from the model: an error, not a wrong answer.
                "workbench.unanswered": out.unanswered,
                "workbench.retry_at_ms": out.retry_at_ms,
            }
        ),
    )
    if out.error_code:
        # Like an attempt's: with content off the code alone, else the message, masked.
        why = said.text(out.error_message or out.error_code) if said else out.error_code
        if out.unanswered:
            why = f"unanswered ({out.unanswered}): {why}"
        root.set_status(Status(StatusCode.ERROR, why))
    parent = trace.set_span_in_context(root)
    for turn, route in enumerate(sample.routes):
        _route_span(tracer, ids, run, route, tags | {"workbench.turn": turn}, said, parent)
    exchanges = said.exchanges(sample) if said else []
    for n, step in enumerate(sample.tool_steps):
        _tool_span(tracer, ids, run, sample, n, step, tags, said, exchanges, parent)
    root.end(end_time=sample.end_ns)


def _tool_span(
    tracer: trace.Tracer,
    ids: _Ids,
    run: LoggedRun,
    sample: LoggedSample,
    n: int,
    step: LoggedToolStep,
    tags: dict[str, Any],
    said: SampleContent | None,
    exchanges: list[Exchange],
    parent: Context,
) -> None:
    failure = sample.tool_failure(step)
    outcome = "never finished" if not step.finished else "failed" if failure else "ok"
    attributes = tags | {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": step.tool,
        "gen_ai.tool.call.id": step.step_id,
        "gen_ai.tool.type": "function",
        "error.type": failure or ("_OTHER" if not step.finished else None),
        "workbench.tool.outcome": outcome,
    }
    if said is not None:
        call, result = step_trail(exchanges, step, sample.turn_of(step))
        attributes["gen_ai.tool.call.arguments"] = _dumps(call.arguments) if call else None
        attributes["gen_ai.tool.call.result"] = result.text if result else None
        attributes["workbench.tool.params"] = said.params(step) or None
    # Each step of the sample by its place: a model may reuse a call id across turns.
    ids.next(run.run_id, sample.item_id, sample.repeat, sample.config, "tool", n, child=True)
    span = tracer.start_span(
        f"execute_tool {step.tool}",
        context=parent,
        kind=SpanKind.INTERNAL,
        attributes=_attrs(attributes),
        start_time=step.start_ns,
    )
    if failure or not step.finished:
        span.set_status(Status(StatusCode.ERROR, failure or "the run stopped while it ran"))
    span.end(end_time=step.end_ns)


def _route_span(
    tracer: trace.Tracer,
    ids: _Ids,
    run: LoggedRun,
    route: LoggedRoute,
    tags: dict[str, Any],
    said: SampleContent | None,
    root: Context,
) -> None:
    answered = route.answered_by
    attributes = tags | {
        "workbench.route.id": route.route_id,
        "workbench.route.candidates": list(route.candidates),
        "workbench.route.chosen": route.chosen,
        "workbench.fallback_depth": route.fallback_depth,
        "workbench.route.partial": route.partial,
        "workbench.cache_hit": bool(answered is not None and answered.cached),
        "error.type": route.error_code if route.chosen is None else None,
    }
    ids.next(run.run_id, route.route_id, child=True)
    span = tracer.start_span(
        f"route {tags['workbench.config']}",
        context=root,
        kind=SpanKind.INTERNAL,
        attributes=_attrs(attributes),
        start_time=route.start_ns,
    )
    if route.chosen is None:
        span.set_status(Status(StatusCode.ERROR, route.error_code or "no candidate answered"))
    parent = trace.set_span_in_context(span)
    for attempt in route.attempts:
        ids.next(run.run_id, route.route_id, attempt.seq, attempt.position, child=True)
        child = tracer.start_span(
            _name(attempt),
            context=parent,
            kind=SpanKind.CLIENT if attempt.called else SpanKind.INTERNAL,
            attributes=_attrs(tags | _attempt_attributes(route, attempt, said)),
            start_time=attempt.start_ns,
        )
        if attempt.failed:
            # The message may quote the request (a vendor echoing it): with content off, only
            # the code leaves; with content on, the message, masked as the content is.
            code = attempt.error_code or attempt.outcome
            why = said.text(attempt.error_message or code) if said else code
            child.set_status(Status(StatusCode.ERROR, why))
        child.end(end_time=attempt.end_ns if attempt.called else attempt.start_ns)
    span.end(end_time=route.end_ns)


def provider_name(provider: str) -> str:
    """`gen_ai.provider.name` for one of our provider ids: the well-known value it names, else
    the id itself (the log has no URL to tell an OpenAI-compatible host by)."""
    return WELL_KNOWN.get(provider.lower(), provider)


def _name(attempt: LoggedAttempt) -> str:
    return f"{'chat' if attempt.called else 'skip'} {attempt.model or attempt.key}"


def _attempt_attributes(
    route: LoggedRoute, attempt: LoggedAttempt, said: SampleContent | None
) -> dict[str, Any]:
    reply = route.reply if attempt is route.answered_by else None
    usage = (reply or {}).get("usage") or {}
    out: dict[str, Any] = {
        "gen_ai.operation.name": "chat" if attempt.called else None,
        "gen_ai.provider.name": provider_name(attempt.provider),
        "gen_ai.request.model": attempt.model,
        "gen_ai.response.model": ((reply or {}).get("model") or attempt.model)
        if attempt.outcome == "ok"
        else None,
        "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
        "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
        "gen_ai.response.finish_reasons": [reply["finish_reason"]]
        if reply and reply.get("finish_reason")
        else None,
        "error.type": (attempt.error_code or attempt.outcome) if attempt.failed else None,
        "http.response.status_code": attempt.status or None,
        "workbench.provider": attempt.provider,
        "workbench.route.id": route.route_id,
        "workbench.fallback_depth": route.fallback_depth,
        "workbench.attempt.key": attempt.key,
        "workbench.attempt.position": attempt.position,
        "workbench.attempt.outcome": attempt.outcome,
        "workbench.cache_hit": attempt.cached,
        "workbench.skip.reason": attempt.reason if not attempt.called else None,
    }
    if said is not None and attempt.called:
        sent = said.sent(attempt)
        system = [t for t in sent if t.role == "system"]
        out["gen_ai.system_instructions"] = (
            _dumps([{"type": "text", "content": t.text} for t in system]) if system else None
        )
        out["gen_ai.input.messages"] = _dumps([_message(t) for t in sent if t.role != "system"])
        if reply is not None:
            answer = _message(said.answer(reply))
            answer["finish_reason"] = str(reply.get("finish_reason") or "stop")
            out["gen_ai.output.messages"] = _dumps([answer])
    return out


def _message(turn: Turn) -> dict[str, Any]:
    """A message as the GenAI conventions write it: a role and its parts."""
    parts: list[dict[str, Any]] = []
    if turn.role == "tool":
        parts.append({"type": "tool_call_response", "id": turn.tool_call_id, "response": turn.text})
    elif turn.text:
        parts.append({"type": "text", "content": turn.text})
    parts += [
        {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
        for c in turn.calls
    ]
    return {"role": turn.role, "parts": parts}


def _attrs(values: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes no None: an attribute without a value is left out."""
    return {k: v for k, v in values.items() if v is not None}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Ids(IdGenerator):
    """Ids derived from what a span is (the run and its sample for a trace, then the route, the
    attempt's or the step's place in it), set just before the span starts: a second export of
    a run sends the same spans, which a backend can recognise, instead of a copy of every
    trace."""

    def __init__(self) -> None:
        self._trace = self._span = 1

    def next(self, *parts: object, child: bool = False) -> None:
        digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
        if not child:
            self._trace = int.from_bytes(digest[:16], "big") or 1
        self._span = int.from_bytes(digest[16:24], "big") or 1

    def generate_trace_id(self) -> int:
        return self._trace

    def generate_span_id(self) -> int:
        return self._span


class _Keep(SpanProcessor):
    """Keeps every finished span: the export decides where they go, and when."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """OpenTelemetry logs its failures (a refused export, with retries) on its own loggers;
    the export reports them once, as a coded error, so they are silenced meanwhile."""
    root = logging.getLogger("opentelemetry")
    level = root.level
    root.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        root.setLevel(level)


# ------------------------------------------------------------------ sending them
def otlp_exporter(endpoint: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> OTLPSpanExporter:
    """An OTLP/HTTP exporter for `endpoint`: a collector's base URL (`/v1/traces` is added)
    or its full traces URL."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--endpoint {endpoint!r}: not an http(s):// URL", code="EXPORT_INVALID")
    if not timeout_s > 0:
        raise ConfigError(f"--timeout must be positive, not {timeout_s}", code="EXPORT_INVALID")
    if parts.path in ("", "/"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    return OTLPSpanExporter(endpoint=endpoint, timeout=timeout_s)


def export_otel(
    db: str | Path | RunFrames,
    run: str = "latest",
    *,
    exporter: SpanExporter | None = None,
    endpoint: str | None = None,
    out: str | Path | None = None,
    content: bool = False,
    dataset: str | Path | Dataset | None = None,
    service_name: str = "workbench",
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> int:
    """Send the run's spans to one place (an `exporter`, an OTLP/HTTP `endpoint`, or the JSON
    file `out`) and return how many went. `EXPORT_FAILED` when an exporter refuses a batch (an
    endpoint that refuses, or does not answer within `timeout_s`): the batches before it were
    sent. A file is checked before any work and written whole or not at all."""
    if sum(x is not None for x in (exporter, endpoint, out)) != 1:
        raise ConfigError(
            "export to one of an exporter, an endpoint or a file", code="EXPORT_INVALID"
        )
    if out is not None:
        file = writable_file(out)
        spans = run_spans(db, run, content=content, dataset=dataset, service_name=service_name)
        write_otlp_json(spans, file)
        return len(spans)
    owned = exporter is None
    if exporter is None:
        exporter = otlp_exporter(str(endpoint), timeout_s=timeout_s)
    try:
        spans = run_spans(db, run, content=content, dataset=dataset, service_name=service_name)
        return _send(spans, exporter, endpoint or type(exporter).__name__, timeout_s)
    finally:
        if owned:
            with _quiet():
                exporter.shutdown()


def _send(spans: list[ReadableSpan], exporter: SpanExporter, where: str, timeout_s: float) -> int:
    sent = 0
    with _quiet():
        for start in range(0, len(spans), BATCH):
            batch = spans[start : start + BATCH]
            if exporter.export(batch) is not SpanExportResult.SUCCESS:
                raise WorkbenchError(
                    f"{where} refused the spans or did not answer within {timeout_s:g} s "
                    f"({sent} of {len(spans)} sent)",
                    code="EXPORT_FAILED",
                    details={"sent": sent, "spans": len(spans)},
                )
            sent += len(batch)
    return sent


# ------------------------------------------------------------------ a file
def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The spans as the OTLP/JSON body a collector takes at /v1/traces (ids in hex, enums as
    numbers), encoded by OpenTelemetry's own OTLP encoder."""
    body: dict[str, Any] = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in body.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:  # protobuf's JSON writes bytes in base64; OTLP wants hex
                        span[key] = base64.b64decode(span[key]).hex()
    return body


def write_otlp_json(spans: Sequence[ReadableSpan], path: str | Path) -> Path:
    """Write the spans as one OTLP/JSON document (`curl --data @FILE` posts it to a
    collector), atomically."""
    file = writable_file(path)
    text = json.dumps(otlp_json(spans), ensure_ascii=False, indent=1)
    with staged(file.parent) as stage:
        temp = stage(file.name)
        with open(temp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    return file
