"""`workbench export otel RUN`: a logged run as OpenTelemetry spans in the GenAI semantic
conventions, so any tracing backend shows what the router did for each item.

- a span per route (`route CONFIG`, internal): an item's request through the router, from its
  first attempt to its decision; status ERROR when nobody answered (`error.type` = our code);
- a child span per attempt: `chat MODEL` (client) for a call, with `gen_ai.operation.name`,
  `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, the turn's
  `gen_ai.usage.input_tokens` / `output_tokens`, and on a failure `error.type` (our error
  code), `http.response.status_code` and status ERROR; `skip MODEL` (internal, no duration and
  no `gen_ai.operation.name`: nothing was asked) for a candidate the router passed over;
- our own attributes under `workbench.`: run id, item id, repeat, configuration, route id,
  fallback depth, attempt position and outcome, cache hit;
- start and end times are the logged ones, never the time of the export; span and trace ids
  are derived from the run and the route, so exporting a run twice sends the same spans.

Message content is off by default. With `content=True` the attempt spans carry
`gen_ai.system_instructions`, `gen_ai.input.messages` (what the attempt sent, as it left the
machine) and, on the attempt that answered, `gen_ai.output.messages`, all masked with the
run's maskers (`_content.py`).
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
from workbench.eval.analysis import Workbench
from workbench.eval.datasets import Dataset
from workbench.eval.export._content import Masking, SampleContent, Turn
from workbench.eval.export._run import LoggedAttempt, LoggedRoute, LoggedRun, load_run
from workbench.eval.output_files import staged, writable_file

try:  # the `otel` extra
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from opentelemetry import trace
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


# ------------------------------------------------------------------ building the spans
def run_spans(
    db: str | Path | Workbench,
    run: str = "latest",
    *,
    content: bool = False,
    dataset: str | Path | Dataset | None = None,
    service_name: str = "workbench",
) -> list[ReadableSpan]:
    """The run's spans, finished, in the order they started (a route before its attempts).
    `content=True` adds the masked messages, which needs the run's prompt set (`dataset` when
    it is no longer where the run read it)."""
    logged = load_run(db, run)
    masking = Masking.for_run(logged, dataset) if content else None
    ids = _Ids()
    kept = _Keep()
    provider = TracerProvider(
        resource=Resource.create(
            # The run is the instance: exporting a run twice sends the same resource too.
            {"service.name": service_name, "service.version": logged.version or "",
             "service.instance.id": logged.run_id}
        ),
        id_generator=ids,
        shutdown_on_exit=False,
    )
    provider.add_span_processor(kept)
    tracer = provider.get_tracer(SCOPE, logged.version or None)
    with _quiet():
        for sample in logged.samples:
            said = masking.sample(sample) if masking is not None else None
            tags = {
                "workbench.run.id": logged.run_id, "workbench.item.id": sample.item_id,
                "workbench.repeat": sample.repeat, "workbench.config": sample.config,
            }  # fmt: skip
            for turn, route in enumerate(sample.routes):
                _route_span(tracer, ids, logged, route, tags | {"workbench.turn": turn}, said)
    provider.shutdown()
    # A span ends after its children: in start order, a route comes before its attempts.
    return sorted(kept.spans, key=lambda s: (s.start_time or 0, s.parent is not None))


def _route_span(
    tracer: trace.Tracer,
    ids: _Ids,
    run: LoggedRun,
    route: LoggedRoute,
    tags: dict[str, Any],
    said: SampleContent | None,
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
    ids.next(run.run_id, route.route_id)
    span = tracer.start_span(
        f"route {tags['workbench.config']}", kind=SpanKind.INTERNAL,
        attributes=_attrs(attributes), start_time=route.start_ns,
    )  # fmt: skip
    if route.chosen is None:
        span.set_status(Status(StatusCode.ERROR, route.error_code or "no candidate answered"))
    parent = trace.set_span_in_context(span)
    for attempt in route.attempts:
        ids.next(run.run_id, route.route_id, attempt.seq, attempt.position, child=True)
        child = tracer.start_span(
            _name(attempt), context=parent,
            kind=SpanKind.CLIENT if attempt.called else SpanKind.INTERNAL,
            attributes=_attrs(tags | _attempt_attributes(route, attempt, said)),
            start_time=attempt.start_ns,
        )  # fmt: skip
        if attempt.failed:
            # The message may quote the request (a vendor echoing it): with content off, only
            # the code leaves; with content on, the message, masked as the content is.
            code = attempt.error_code or attempt.outcome
            why = said.text(attempt.error_message or code) if said else code
            child.set_status(Status(StatusCode.ERROR, why))
        child.end(end_time=attempt.end_ns if attempt.called else attempt.start_ns)
    span.end(end_time=route.end_ns)


def _name(attempt: LoggedAttempt) -> str:
    return f"{'chat' if attempt.called else 'skip'} {attempt.model or attempt.key}"


def _attempt_attributes(
    route: LoggedRoute, attempt: LoggedAttempt, said: SampleContent | None
) -> dict[str, Any]:
    reply = route.reply if attempt is route.answered_by else None
    usage = (reply or {}).get("usage") or {}
    out: dict[str, Any] = {
        "gen_ai.operation.name": "chat" if attempt.called else None,
        "gen_ai.provider.name": attempt.provider,
        "gen_ai.request.model": attempt.model,
        "gen_ai.response.model": ((reply or {}).get("model") or attempt.model)
        if attempt.outcome == "ok" else None,
        "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
        "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
        "gen_ai.response.finish_reasons": [reply["finish_reason"]]
        if reply and reply.get("finish_reason") else None,
        "error.type": (attempt.error_code or attempt.outcome) if attempt.failed else None,
        "http.response.status_code": attempt.status or None,
        "workbench.route.id": route.route_id,
        "workbench.fallback_depth": route.fallback_depth,
        "workbench.attempt.key": attempt.key,
        "workbench.attempt.position": attempt.position,
        "workbench.attempt.outcome": attempt.outcome,
        "workbench.cache_hit": attempt.cached,
        "workbench.skip.reason": attempt.reason if not attempt.called else None,
    }  # fmt: skip
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
    """Ids derived from what a span is (the run and its route, the attempt's place in it), set
    just before the span starts: a second export of a run sends the same spans, which a
    backend can recognise, instead of a copy of every trace."""

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
    db: str | Path | Workbench,
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
