"""`workbench export otel`: GenAI spans of a real run — a trace per sample, its routes and
tool steps under one root, a child per attempt, the logged times, content off by default and
masked when on — through the SDK's in-memory exporter, a real OTLP/HTTP receiver on loopback,
a refused port, and a JSON file."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from export_run import SECRET, SENSITIVE, ExportRun, make_run
from loopback import LoopbackServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from workbench.cli import main
from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.export.otel import export_otel, provider_name, run_spans

CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "workbench.tool.params",
)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> ExportRun:
    return make_run(tmp_path_factory.mktemp("otel-run"))


@pytest.fixture(scope="module")
def spans(run):
    memory = InMemorySpanExporter()
    sent = export_otel(run.db, run.run_id, exporter=memory)
    finished = list(memory.get_finished_spans())
    assert sent == len(finished)
    return finished


def _db(run: ExportRun, sql: str) -> list[tuple]:
    with RunFrames.open(run.db, snapshot=True) as wb:
        return wb.con.execute(sql, [run.run_id]).fetchall()


def _attempts(spans):
    return [s for s in spans if "workbench.attempt.key" in s.attributes]


def test_a_trace_per_sample_with_its_routes_attempts_and_tool_steps(run, spans):
    samples = _db(run, "SELECT item_id, repeat, config FROM outputs WHERE run_id = ?")
    routes = {r for (r,) in _db(run, "SELECT route_id FROM routes WHERE run_id = ?")}
    attempts = _db(run, "SELECT route_id, position FROM attempts WHERE run_id = ?")
    steps = _db(
        run,
        "SELECT item_id, repeat, config, step_id, min(at_ms), max(at_ms) FROM tool_steps "
        "WHERE run_id = ? GROUP BY ALL",
    )
    by_id = {s.context.span_id: s for s in spans}
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == len(samples) == len({s.context.trace_id for s in spans})
    assert {
        (
            r.attributes["workbench.item.id"],
            r.attributes["workbench.repeat"],
            r.attributes["workbench.config"],
        )
        for r in roots
    } == set(samples)
    assert all(r.name == "invoke_agent workbench" and r.kind is SpanKind.INTERNAL for r in roots)
    assert {r.attributes["gen_ai.operation.name"] for r in roots} == {"invoke_agent"}
    under_root = [
        s for s in spans if s.parent is not None and by_id[s.parent.span_id].parent is None
    ]
    route_spans = [s for s in under_root if s.name.startswith("route ")]
    tool_spans = [s for s in under_root if s.name.startswith("execute_tool ")]
    assert {s.attributes["workbench.route.id"] for s in route_spans} == routes
    assert len(route_spans) == len(routes) and len(route_spans) + len(tool_spans) == len(under_root)
    children = _attempts(spans)
    assert len(children) == len(attempts)
    assert len(roots) + len(under_root) + len(children) == len(spans)
    for child in [*under_root, *children]:
        parent = by_id[child.parent.span_id]
        assert child.context.trace_id == parent.context.trace_id
        assert parent.start_time <= child.start_time <= child.end_time <= parent.end_time
    for child in children:
        parent = by_id[child.parent.span_id]
        assert parent in route_spans
        assert child.attributes["workbench.route.id"] == parent.attributes["workbench.route.id"]
    calls = [s for s in children if s.kind is SpanKind.CLIENT]
    assert len(calls) == run.requests  # every request the simulator received, and no other
    # A span per logged tool step, with its logged times, under its sample's root.
    assert steps and len(tool_spans) == len(steps)
    logged = {(i, r, c, step): (start, end) for i, r, c, step, start, end in steps}
    for span in tool_spans:
        a = span.attributes
        start, end = logged[
            (
                a["workbench.item.id"],
                a["workbench.repeat"],
                a["workbench.config"],
                a["gen_ai.tool.call.id"],
            )
        ]
        assert span.name == f"execute_tool {a['gen_ai.tool.name']}" == "execute_tool get_weather"
        assert a["gen_ai.operation.name"] == "execute_tool" and span.kind is SpanKind.INTERNAL
        assert (span.start_time, span.end_time) == (start * 1_000_000, end * 1_000_000)
        assert a["workbench.tool.outcome"] == "ok" and "error.type" not in a


def test_a_tool_loop_is_one_trace_its_step_between_its_turns(spans):
    loop = [
        s
        for s in spans
        if s.attributes.get("workbench.item.id") == "tool-weather"
        and s.attributes.get("workbench.config") == "sim"
        and s.attributes["workbench.repeat"] == 0
    ]
    (root,) = [s for s in loop if s.parent is None]
    assert {s.context.trace_id for s in loop} == {root.context.trace_id}
    turns = sorted(
        (s for s in loop if s.name == "route sim"), key=lambda s: s.attributes["workbench.turn"]
    )
    (step,) = [s for s in loop if s.name == "execute_tool get_weather"]
    assert len(turns) == 2 == root.attributes["workbench.turns"]
    assert all(s.parent.span_id == root.context.span_id for s in [*turns, step])
    # The call came back on turn 0, its result went out on turn 1.
    assert turns[0].start_time <= step.start_time <= turns[1].end_time
    assert root.attributes["workbench.tool_steps"] == 1
    assert root.attributes["gen_ai.provider.name"] == "workbench"


def test_attempt_spans_carry_the_genai_attributes_and_the_logged_times(run, spans):
    logged = {
        (route, position): (provider, model, outcome, code, start, latency, cached)
        for route, position, provider, model, outcome, code, start, latency, cached in _db(
            run,
            "SELECT route_id, position, provider, model, outcome, error_code, start_ms, "
            "latency_ms, cached FROM attempts WHERE run_id = ?",
        )
    }
    seen = set()
    for span in _attempts(spans):
        a = span.attributes
        provider, model, outcome, code, start, latency, cached = logged[
            (a["workbench.route.id"], a["workbench.attempt.position"])
        ]
        assert a["workbench.provider"] == provider and a["gen_ai.request.model"] == model
        # The simulator's ids: `google` names Gemini; flaky, groq, broken go as they are.
        assert a["gen_ai.provider.name"] == {"google": "gcp.gemini"}.get(provider, provider)
        assert a["workbench.attempt.outcome"] == outcome and a["workbench.cache_hit"] == cached
        assert {"workbench.run.id", "workbench.item.id", "workbench.repeat"} <= set(a)
        assert span.start_time == round(start * 1_000_000)  # the logged time, not the export's
        seen.add(outcome)
        if outcome.startswith("skipped"):
            assert span.name == f"skip {model}" and "gen_ai.operation.name" not in a
            assert span.end_time == span.start_time
            continue
        assert span.name == f"chat {model}" and a["gen_ai.operation.name"] == "chat"
        assert span.end_time == pytest.approx(round((start + latency) * 1_000_000), abs=1_000)
        if outcome == "ok":
            assert a["gen_ai.response.model"] == model
            assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
            assert span.status.status_code is StatusCode.UNSET and "error.type" not in a
        else:
            assert a["error.type"] == code and span.status.status_code is StatusCode.ERROR
            assert span.status.description == code  # content off: the code, never the message
            assert "gen_ai.response.model" not in a
    assert {"ok", "error", "skipped_cooling"} <= seen


def test_a_route_nobody_answered_is_an_error_with_our_code(spans):
    broken = [s for s in spans if s.name == "route broken"]
    assert broken and all(s.status.status_code is StatusCode.ERROR for s in broken)
    assert {s.attributes["error.type"] for s in broken} == {"AI_UNAVAILABLE"}
    fine = [s for s in spans if s.name == "route sim"]
    assert all("error.type" not in s.attributes for s in fine)
    assert max(s.attributes["workbench.fallback_depth"] for s in fine) >= 1
    # The sample that route ended is an error too, at its root.
    roots = {s.context.trace_id: s for s in spans if s.parent is None}
    for route in broken:
        root = roots[route.context.trace_id]
        assert root.status.status_code is StatusCode.ERROR
        assert root.attributes["error.type"] == "AI_UNAVAILABLE"
        assert root.status.description == "AI_UNAVAILABLE"  # content off: the code alone
    assert all(
        roots[s.context.trace_id].status.status_code is StatusCode.UNSET for s in fine
    )  # every sim item was answered


def test_the_provider_is_a_well_known_name_only_when_our_id_names_one():
    assert provider_name("groq") == "groq" and provider_name("OpenAI") == "openai"
    assert provider_name("google") == "gcp.gemini" == provider_name("gemini")
    assert provider_name("mistral") == "mistral_ai" and provider_name("xai") == "x_ai"
    # An aggregator, the simulator's own provider, a local server: our id, as it is.
    assert [provider_name(p) for p in ("openrouter", "flaky", "local")] == [
        "openrouter",
        "flaky",
        "local",
    ]


def test_the_resource_names_the_service(run):
    (span, *_) = run_spans(run.db, run.run_id, service_name="evals")
    assert span.resource.attributes["service.name"] == "evals"
    # Exported twice, the same resource: the run is the instance, not the export.
    assert span.resource.attributes["service.instance.id"] == run.run_id


def test_content_is_off_by_default(spans):
    assert not [k for s in spans for k in s.attributes if k in CONTENT_KEYS]


def test_content_on_is_the_masked_request_and_answer(run):
    spans = run_spans(run.db, run.run_id, content=True)
    calls = [s for s in spans if s.kind is SpanKind.CLIENT]
    assert all("gen_ai.input.messages" in s.attributes for s in calls)
    answered = [s for s in calls if s.attributes["workbench.attempt.outcome"] == "ok"]
    assert all("gen_ai.output.messages" in s.attributes for s in answered)
    two = next(s for s in answered if s.attributes["workbench.item.id"] == "pii-two").attributes
    sent = json.loads(two["gen_ai.input.messages"])
    assert sent == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Summarise: #PERSON_0001 met #PERSON_0002 in 1833."}
            ],
        }
    ]
    (answer,) = json.loads(two["gen_ai.output.messages"])
    assert answer["role"] == "assistant" and answer["finish_reason"] == "stop"
    assert "#PERSON_0001" in answer["parts"][0]["content"]
    tool = [s for s in answered if s.attributes["workbench.item.id"] == "tool-weather"]
    parts = [
        p
        for s in tool
        for m in json.loads(s.attributes["gen_ai.output.messages"])
        for p in m["parts"]
    ]
    assert {"type": "tool_call", "name": "get_weather"}.items() <= next(
        p for p in parts if p["type"] == "tool_call"
    ).items()
    # A step carries its call's arguments and the result the model read on the next turn.
    steps = [s for s in spans if s.name == "execute_tool get_weather"]
    assert steps
    for step in steps:
        assert json.loads(step.attributes["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
        assert json.loads(step.attributes["gen_ai.tool.call.result"])["city"] == "Paris"
    text = json.dumps([dict(s.attributes) for s in spans])
    assert not [v for v in SENSITIVE if v in text] and SECRET not in text


def test_exporting_twice_sends_the_same_spans(run, spans):
    def ids(found):
        return [
            (s.name, s.context.trace_id, s.context.span_id, s.parent.span_id if s.parent else None)
            for s in found
        ]

    again = run_spans(run.db, run.run_id)
    assert ids(again) == ids(spans)
    assert len({s.context.span_id for s in again}) == len(again)  # no two spans share an id
    # In start order, a parent before its children.
    seen: set[int] = set()
    for span in again:
        assert span.parent is None or span.parent.span_id in seen
        seen.add(span.context.span_id)


def test_a_json_file_is_the_otlp_body(run, spans, tmp_path, capsys):
    out = tmp_path / "traces" / "run.json"
    assert (
        main(["export", "otel", run.name, "--db", str(run.db), "--out", str(out), "--content"]) == 0
    )
    assert capsys.readouterr().out.startswith(f"{len(spans)} span(s)")
    body = json.loads(out.read_text(encoding="utf-8"))
    (resource,) = body["resourceSpans"]
    written = [s for scope in resource["scopeSpans"] for s in scope["spans"]]
    assert len(written) == len(spans)
    ids = {s["spanId"] for s in written}
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in written)
    assert all(s["parentSpanId"] in ids for s in written if "parentSpanId" in s)
    assert {s["kind"] for s in written} == {1, 3}  # internal, client
    text = out.read_text(encoding="utf-8")
    assert "#PERSON_0001" in text and not [v for v in SENSITIVE if v in text]
    assert SECRET not in text
    assert [p.name for p in out.parent.iterdir()] == ["run.json"]  # no temporary left


class _Collector:
    """An OTLP/HTTP receiver: decodes each protobuf body, keeps its spans."""

    def __init__(self) -> None:
        self.spans: list = []
        self.types: list[str] = []
        self.app = Starlette(routes=[Route("/v1/traces", self.traces, methods=["POST"])])

    async def traces(self, request: Request) -> Response:
        self.types.append(request.headers.get("content-type", ""))
        body = ExportTraceServiceRequest()
        body.ParseFromString(await request.body())
        self.spans += [s for r in body.resource_spans for sc in r.scope_spans for s in sc.spans]
        return Response(b"", media_type="application/x-protobuf")


def test_spans_reach_a_real_otlp_receiver(run, spans, capsys):
    collector = _Collector()
    with LoopbackServer(collector.app) as server:
        assert (
            main(["export", "otel", run.run_id, "--db", str(run.db), "--endpoint", server.url]) == 0
        )
    assert capsys.readouterr().out.startswith(f"{len(spans)} span(s)")
    assert len(collector.spans) == len(spans)
    assert set(collector.types) == {"application/x-protobuf"}
    names = {s.name for s in collector.spans}
    assert {"route sim", "route broken", "chat groq-gpt-oss"} <= names
    assert {s.span_id.hex() for s in collector.spans} == {
        f"{s.context.span_id:016x}" for s in spans
    }


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nobody listens there


def test_a_refused_endpoint_is_one_coded_line_and_exit_1(run, capsys):
    url = f"http://127.0.0.1:{_refused_port()}"
    argv = ["export", "otel", "--db", str(run.db), "--endpoint", url, "--timeout", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: EXPORT_FAILED") and url in err and err.count("\n") == 1
    with pytest.raises(WorkbenchError) as caught:
        export_otel(run.db, endpoint=url, timeout_s=1)
    assert caught.value.code == "EXPORT_FAILED" and caught.value.details["sent"] == 0


def test_bad_input_is_refused_with_its_code(run, tmp_path, capsys):
    db = str(run.db)
    assert main(["export", "otel", "nope", "--db", db, "--out", str(tmp_path / "x.json")]) == 2
    assert capsys.readouterr().err.startswith("error: RUN_UNKNOWN")
    assert main(["export", "otel", "--db", db, "--endpoint", "ftp://collector"]) == 2
    assert capsys.readouterr().err.startswith("error: EXPORT_INVALID")
    assert main(["export", "otel", "--db", db, "--out", str(tmp_path)]) == 2  # a folder
    assert capsys.readouterr().err.startswith("error: OUT_NOT_WRITABLE")
    with pytest.raises(ConfigError) as caught:
        export_otel(run.db, exporter=InMemorySpanExporter(), out=tmp_path / "y.json")
    assert caught.value.code == "EXPORT_INVALID"
    assert not Path(tmp_path / "x.json").exists() and not (tmp_path / "y.json").exists()


def test_an_unanswered_sample_has_an_error_status_that_says_so(run, tmp_path):
    import shutil

    import duckdb

    db = tmp_path / "held.duckdb"
    shutil.copy(run.db, db)
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE outputs SET unanswered = 'daily_quota', retry_at_ms = 1796114495981, "
        "passed = NULL, score = NULL, error_code = 'AI_UNAVAILABLE' "
        "WHERE run_id = ? AND config = 'sim' AND item_id = 'pii-two' AND repeat = 0",
        [run.run_id],
    )
    con.close()
    memory = InMemorySpanExporter()
    export_otel(db, run.run_id, exporter=memory)
    roots = [
        s
        for s in memory.get_finished_spans()
        if s.attributes.get("workbench.unanswered") == "daily_quota"
    ]
    assert len(roots) == 1 and roots[0].status.status_code == StatusCode.ERROR
    assert roots[0].status.description.startswith("unanswered (daily_quota): AI_UNAVAILABLE")
    assert roots[0].attributes["workbench.retry_at_ms"] == 1796114495981
    assert "workbench.passed" not in roots[0].attributes  # no grade: not a wrong answer
