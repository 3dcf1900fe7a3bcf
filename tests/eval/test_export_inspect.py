"""`workbench export inspect`: a real run read back with inspect_ai's own reader and
`samples_df`, one log per configuration, scores, metadata, model and tool events, a tool loop's
conversation, masked content."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from export_run import REPEATS, SECRET, SENSITIVE, ExportRun, make_run
from inspect_ai.analysis import events_df, samples_df
from inspect_ai.event import InfoEvent, ModelEvent, ScoreEvent, ToolEvent
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessageTool

from workbench.cli import main
from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.export import inspect as inspect_export
from workbench.eval.export.inspect import export_inspect


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> ExportRun:
    return make_run(tmp_path_factory.mktemp("inspect-run"))


@pytest.fixture(scope="module")
def logs(run, tmp_path_factory) -> dict[str, EvalLog]:
    out = tmp_path_factory.mktemp("inspect-logs")
    paths = export_inspect(run.db, run.run_id, out)
    return {read_eval_log(str(p)).eval.model: read_eval_log(str(p)) for p in paths}


def _db(run: ExportRun, sql: str) -> list[tuple]:
    with RunFrames.open(run.db, snapshot=True) as wb:
        return wb.con.execute(sql, [run.run_id]).fetchall()


def test_one_log_per_configuration_with_a_sample_per_item_and_repeat(run, logs):
    assert set(logs) == {"workbench/sim", "workbench/broken"}
    items = {i for (i,) in _db(run, "SELECT item_id FROM items WHERE run_id = ?")}
    for log in logs.values():
        assert log.status == "success" and log.eval.run_id == run.run_id
        assert log.eval.task == "export" and log.eval.config.epochs == REPEATS
        got = {(s.id, s.epoch) for s in log.samples}
        assert got == {(i, r + 1) for i in items for r in range(REPEATS)}
        assert len(log.samples) == log.results.total_samples == len(items) * REPEATS
    # The same task in both logs: Inspect compares the configurations side by side.
    assert len({log.eval.task_id for log in logs.values()}) == 2


def test_scores_are_the_grades_with_their_reasons(run, logs):
    graded = {
        (i, r, c): (p, json.loads(g)["reason"] if g else None)
        for i, r, c, p, g in _db(
            run, "SELECT item_id, repeat, config, passed, grade FROM outputs WHERE run_id = ?"
        )
    }
    for model, log in logs.items():
        config = model.split("/", 1)[1]
        for s in log.samples:
            passed, reason = graded[(s.id, s.epoch - 1, config)]
            if passed is None:  # nothing expected: no score at all
                assert s.scores is None
                continue
            score = s.scores["grade"]
            assert score.value == ("C" if passed else "I")
            if reason:
                assert score.explanation == reason
            assert [e.score.value for e in s.events if isinstance(e, ScoreEvent)] == [score.value]
    sim = logs["workbench/sim"].results.scores[0].metrics["accuracy"].value
    # Every route of "broken" failed: no answer, no verdict, so no accuracy (the pass rate is
    # over graded answers, in the export as in the summary), not 0.
    assert sim == 1.0 and logs["workbench/broken"].results.scores == []


def test_every_attempt_is_an_event_with_its_logged_times(run, logs):
    attempts = _db(
        run,
        "SELECT item_id, repeat, config, key, outcome, status, error_code, start_ms, latency_ms "
        "FROM attempts WHERE run_id = ? ORDER BY start_ms",
    )
    events = [
        (log.eval.model.split("/", 1)[1], s, e)
        for log in logs.values()
        for s in log.samples
        for e in s.events
        if isinstance(e, ModelEvent | InfoEvent)
    ]
    assert len(events) == len(attempts)
    calls = [e for _, _, e in events if isinstance(e, ModelEvent)]
    assert len(calls) == run.requests  # every request the simulator received, and no other
    by_key = {
        (i, r, c, k, datetime.fromtimestamp(start / 1000, UTC)): (outcome, status, code, lat)
        for i, r, c, k, outcome, status, code, start, lat in attempts
    }
    for config, sample, event in events:
        key = (sample.id, sample.epoch - 1, config, event.metadata["key"], event.timestamp)
        outcome, status, code, latency = by_key[key]
        assert event.metadata["outcome"] == outcome
        if isinstance(event, ModelEvent):
            provider, model = event.metadata["key"].split(":", 1)
            assert event.model == f"{provider}/{model}"
            assert event.completed.timestamp() == pytest.approx(
                event.timestamp.timestamp() + latency / 1000, abs=1e-3
            )
            if outcome == "ok":
                assert event.error is None and event.working_time == pytest.approx(latency / 1000)
            else:
                assert event.error.startswith(code) and event.metadata["status"] == status
        else:
            assert outcome.startswith("skipped") and event.data["skipped"] == event.metadata["key"]
    failed = [e for e in calls if e.error]
    assert {e.error.split(":", 1)[0] for e in failed} >= {"PROVIDER_BAD_REQUEST"}


def test_the_fallback_chain_is_in_the_metadata(run, logs):
    with RunFrames.open(run.db, snapshot=True) as wb:
        fallbacks = wb.fallbacks(run.run_id)
    deep = fallbacks[fallbacks["fallback_depth"] > 0]
    assert len(deep) > 0  # the flaky provider leads the chain
    samples = {(s.id, s.epoch - 1): s for s in logs["workbench/sim"].samples}
    for row in deep[deep["config"] == "sim"].itertuples():
        sample = samples[(row.item_id, row.repeat)]
        if row.item_id == "tool-weather":  # two routes: this one's chain is part of the sample's
            assert set(row.chain) <= set(sample.metadata["fallback_chain"])
        else:
            assert sample.metadata["fallback_chain"] == list(row.chain)
            assert sample.metadata["fallback_depth"] == row.fallback_depth
        fell = sample.model_fallbacks[0]
        assert fell.model == "flaky/sim-flaky" and fell.fallback_model == row.chosen.replace(
            ":", "/"
        )
    broken = logs["workbench/broken"].samples[0]
    assert broken.error is not None and broken.metadata["error_code"] == "AI_UNAVAILABLE"
    assert broken.metadata["answered_by"] is None


def test_a_tool_loop_sample_shows_its_call_and_its_turns(logs):
    sample = next(s for s in logs["workbench/sim"].samples if s.id == "tool-weather")
    assert sample.output.message.tool_calls[0].function == "get_weather"
    assert sample.output.message.tool_calls[0].arguments == {"city": "Paris"}
    answered = [e for e in sample.events if isinstance(e, ModelEvent) and not e.error]
    assert len(answered) == len(sample.metadata["routes"]) == 2  # the call, then the answer
    assert answered[0].output.message.tool_calls[0].function == "get_weather"
    assert answered[0].output.usage.output_tokens > 0


def _loop(logs: dict[str, EvalLog], epoch: int = 1):
    return next(
        s for s in logs["workbench/sim"].samples if s.id == "tool-weather" and s.epoch == epoch
    )


def test_a_tool_loop_sample_is_its_conversation(run, logs):
    rows = _db(
        run,
        "SELECT key, reply FROM replies WHERE run_id = ? AND item_id = 'tool-weather' "
        "AND repeat = 0 AND config = 'sim' ORDER BY turn",
    )
    models = [key.replace(":", "/") for key, _ in rows]
    replies = [json.loads(reply) for _, reply in rows]
    assert len(replies) == 2 and replies[0]["tool_calls"] and not replies[1]["tool_calls"]
    sample = _loop(logs)
    assert [m.role for m in sample.messages] == ["user", "assistant", "tool", "assistant"]
    user, called, result, answer = sample.messages
    assert user.text == "What is the weather in Paris?"
    # Turn 1's answer carries turn 1's call, and only it.
    (call,) = called.tool_calls
    logged = replies[0]["tool_calls"][0]
    assert call.id == logged["id"] and call.function == "get_weather"
    assert call.arguments == {"city": "Paris"}
    assert (called.model, answer.model) == tuple(models)  # who answered each turn
    # The result the loop sent back, as the next turn's request carried it.
    assert isinstance(result, ChatMessageTool)
    assert result.tool_call_id == call.id and result.function == "get_weather"
    assert json.loads(result.text)["city"] == "Paris"
    assert answer.text == replies[1]["text"] and not answer.tool_calls
    # An item without tools: its input, then its answer.
    plain = next(s for s in logs["workbench/sim"].samples if s.id == "pii-two")
    assert [m.role for m in plain.messages] == ["user", "assistant"]
    assert plain.messages[1].text == plain.output.completion


def test_every_tool_step_is_a_tool_event_after_the_turn_that_called_it(run, logs):
    steps = {
        (i, r, c, step): (start, end, ok)
        for i, r, c, step, start, end, ok in _db(
            run,
            "SELECT item_id, repeat, config, step_id, min(at_ms), max(at_ms), bool_or(ok) "
            "FROM tool_steps WHERE run_id = ? GROUP BY ALL",
        )
    }
    events = [
        (log.eval.model.split("/", 1)[1], s, e)
        for log in logs.values()
        for s in log.samples
        for e in s.events
        if isinstance(e, ToolEvent)
    ]
    assert steps and len(events) == len(steps)
    for config, sample, event in events:
        start, end, ok = steps[(sample.id, sample.epoch - 1, config, event.id)]
        assert ok and event.error is None and event.function == "get_weather"
        assert event.timestamp == datetime.fromtimestamp(start / 1000, UTC)
        assert event.completed == datetime.fromtimestamp(end / 1000, UTC)
        assert event.arguments == {"city": "Paris"}
        (message,) = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
        assert event.message_id == message.id and event.result == message.text
        assert event.metadata["params"] == "city=Paris"
        # In the transcript: after the model event that called it, before the next turn's.
        models = [n for n, e in enumerate(sample.events) if isinstance(e, ModelEvent)]
        at = sample.events.index(event)
        calling = next(
            n
            for n in models
            if sample.events[n].output.choices and sample.events[n].output.message.tool_calls
        )
        assert calling < at < models[-1]


def test_model_events_list_the_tools_they_sent_natively(run, logs, tmp_path):
    loop = [e for e in _loop(logs).events if isinstance(e, ModelEvent)]
    assert loop
    for event in loop:
        (tool,) = event.tools
        assert tool.name == "get_weather" and tool.description == "Current weather for a city."
        assert set(tool.parameters.properties) == {"city", "unit"}
        assert tool.parameters.required == ["city"]
    plain = next(s for s in logs["workbench/sim"].samples if s.id == "pii-two")
    assert all(e.tools == [] for e in plain.events if isinstance(e, ModelEvent))
    # Tools described in the system prompt instead were not sent as tools: none are listed.
    db = tmp_path / "prose.duckdb"
    shutil.copy(run.db, db)
    with RunFrames.open(db, read_only=False) as wb:
        wb.con.execute(
            "UPDATE attempts SET request = replace(CAST(request AS VARCHAR), ?, ?) "
            "WHERE run_id = ? AND item_id = 'tool-weather' AND repeat = 0",
            ['"tools_sent":"native"', '"tools_sent":"in the prompt"', run.run_id],
        )
    paths = export_inspect(db, run.run_id, tmp_path / "logs")
    (sim,) = [read_eval_log(str(p)) for p in paths if "sim" in read_eval_log(str(p)).eval.model]
    prose = [e for e in _loop({"workbench/sim": sim}).events if isinstance(e, ModelEvent)]
    assert len(prose) == len(loop) and all(e.tools == [] for e in prose)
    other = [e for e in _loop({"workbench/sim": sim}, epoch=2).events if isinstance(e, ModelEvent)]
    assert all([t.name for t in e.tools] == ["get_weather"] for e in other)


def test_a_sample_never_worked_longer_than_it_took(logs):
    samples = [s for log in logs.values() for s in log.samples]
    assert all(s.total_time >= s.working_time > 0 for s in samples)


def test_samples_df_and_events_df_read_the_folder(logs, run, tmp_path):
    out = tmp_path / "again"
    export_inspect(run.db, run.name, out)  # by the run's name
    df = samples_df(str(out))
    assert len(df) == sum(len(log.samples) for log in logs.values())
    assert set(df["score_grade"].dropna()) == {"C"}  # the failed routes have no score
    assert {"metadata_fallback_chain", "metadata_fallback_depth", "metadata_config"} <= set(df)
    assert df["metadata_fallback_depth"].max() >= 1
    events = events_df(str(out))
    assert (events["event"] == "model").sum() == run.requests
    (steps,) = _db(
        run,
        "SELECT count(DISTINCT (item_id, repeat, config, step_id)) "
        "FROM tool_steps WHERE run_id = ?",
    )[0]
    assert steps > 0 and (events["event"] == "tool").sum() == steps


def test_no_sensitive_value_and_no_key_is_in_the_files(run, tmp_path):
    paths = export_inspect(run.db, "latest", tmp_path)
    text = ""
    for path in paths:
        with zipfile.ZipFile(path) as z:
            text += "".join(z.read(n).decode("utf-8") for n in z.namelist())
    assert "#PERSON_0001" in text and "#EMAIL_0001" in text  # masked, as it left the machine
    leaked = [v for v in SENSITIVE if v in text]
    assert not leaked
    assert SECRET not in text


def test_the_input_is_the_masked_request(logs):
    sample = next(s for s in logs["workbench/sim"].samples if s.id == "pii-two")
    assert sample.input[0].text == "Summarise: #PERSON_0001 met #PERSON_0002 in 1833."
    # the answer came back unmasked in the store; it leaves masked, with the same tokens
    assert "#PERSON_0001" in sample.output.completion and "Ada" not in sample.output.completion


def test_exporting_again_replaces_the_logs(run, tmp_path):
    first = export_inspect(run.db, run.run_id, tmp_path)
    second = export_inspect(run.db, run.run_id, tmp_path)
    assert first == second
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in first)


def test_a_failure_while_writing_leaves_nothing_half_written(run, tmp_path, monkeypatch):
    (tmp_path / "keep.txt").write_text("before")
    real = inspect_export.write_eval_log
    written = []

    def second_one_fails(log, location, format):  # type: ignore[no-untyped-def]
        if written:
            raise OSError(28, "No space left on device")
        written.append(location)
        return real(log, location, format=format)

    monkeypatch.setattr(inspect_export, "write_eval_log", second_one_fails)
    with pytest.raises(ConfigError) as caught:
        export_inspect(run.db, run.run_id, tmp_path)
    assert caught.value.code == "OUT_NOT_WRITABLE"
    assert written and [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_an_unknown_run_and_an_unwritable_folder_are_one_coded_line(run, tmp_path, capsys):
    assert main(["export", "inspect", "nope", "--db", str(run.db), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: RUN_UNKNOWN") and err.count("\n") == 1
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["export", "inspect", "--db", str(run.db), "--out", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: OUT_NOT_WRITABLE") and err.count("\n") == 1


def test_a_moved_prompt_set_is_refused_unless_named(run, tmp_path, capsys):
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "export.jsonl").write_bytes(run.dataset.read_bytes())
    (moved / "tools.json").write_bytes((run.dataset.parent / "tools.json").read_bytes())
    run.dataset.rename(run.dataset.with_suffix(".gone"))
    try:
        out = tmp_path / "logs"
        assert main(["export", "inspect", "--db", str(run.db), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: EXPORT_DATASET_MISSING") and "--dataset" in err
        assert not list(out.iterdir())  # refused before anything was written
        argv = ["export", "inspect", "--db", str(run.db), "--out", str(out)]
        assert main([*argv, "--dataset", str(moved / "export.jsonl")]) == 0
        assert len(list(out.glob("*.eval"))) == 2
    finally:
        run.dataset.with_suffix(".gone").rename(run.dataset)


def test_a_prompt_set_changed_where_the_run_read_it_is_refused(run, tmp_path, capsys):
    """Same prompts, another `sensitive` list: masking with it would let the old values out."""
    original = run.dataset.read_bytes()
    run.dataset.write_bytes(original.replace(b'"sensitive"', b'"sensitive_was"', 1))
    try:
        out = tmp_path / "logs"
        assert main(["export", "inspect", "--db", str(run.db), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: EXPORT_DATASET_MISSING") and not list(out.glob("*"))
    finally:
        run.dataset.write_bytes(original)


def test_without_the_extra_the_command_names_it(run, tmp_path):
    code = (
        "import sys; sys.modules['inspect_ai'] = None\n"
        "from workbench.cli import main\n"
        f"sys.exit(main(['export', 'inspect', '--db', {str(run.db)!r}, '--out', {str(tmp_path)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("error: EXPORT_UNAVAILABLE") and "`inspect` extra" in done.stderr
    assert done.stderr.count("\n") == 1 and not list(Path(tmp_path).iterdir())


def test_a_call_id_reused_in_a_later_turn_keeps_each_steps_own_call_and_result(
    run, tmp_path, monkeypatch
):
    """Ids repeat across turns (`call_0` from servers that give none, a prose call's name):
    a step is matched to the call of the turn that asked for it, and to its own result."""
    import copy
    from dataclasses import replace

    from workbench.eval.export import otel as otel_export
    from workbench.eval.export._run import load_run

    base = load_run(run.db, run.run_id)
    sample = next(
        s
        for s in base.samples
        if s.item_id == "tool-weather" and s.repeat == 0 and len(s.routes) == 2 and s.tool_steps
    )
    first, second = sample.routes
    call_id = first.reply["tool_calls"][0]["id"]
    again = copy.deepcopy(first.reply)  # turn 2 calls the same id, for London
    again["tool_calls"][0]["arguments"] = {"city": "London"}
    sent = copy.deepcopy(next(a.request for a in second.attempts if a.request))
    sent["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"London"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": call_id,
            "name": "get_weather",
            "content": '{"city":"London","temperature":9}',
        },
    ]
    third = replace(
        second,
        route_id="third",
        at_ms=second.at_ms + 1000,
        attempts=tuple(
            replace(a, start_ms=a.start_ms + 1000, request=sent if a.request else None)
            for a in second.attempts
        ),
    )
    step = sample.tool_steps[0]
    later = replace(
        step, params="city=London", start_ms=step.start_ms + 500, end_ms=step.start_ms + 501
    )
    looped = replace(
        sample, routes=(first, replace(second, reply=again), third), tool_steps=(step, later)
    )
    only = replace(base, samples=(looped,), configs=(looped.config,))
    monkeypatch.setattr(inspect_export, "load_run", lambda db, ref: only)
    monkeypatch.setattr(otel_export, "load_run", lambda db, ref: only)

    (path,) = inspect_export.export_inspect(run.db, run.run_id, tmp_path / "logs")
    logged = read_eval_log(str(path)).samples[0]
    messages = {m.id: m for m in logged.messages}
    tools = [e for e in logged.events if isinstance(e, ToolEvent)]
    assert [e.arguments for e in tools] == [{"city": "Paris"}, {"city": "London"}]
    assert "London" in str(messages[tools[1].message_id].content)
    assert "London" not in str(messages[tools[0].message_id].content)
    spans = otel_export.run_spans(run.db, run.run_id, content=True)
    told = [
        s.attributes["gen_ai.tool.call.arguments"]
        for s in spans
        if s.name.startswith("execute_tool")
    ]
    assert [json.loads(t)["city"] for t in told] == ["Paris", "London"]


def test_an_unanswered_sample_is_an_error_not_a_wrong_answer(run, tmp_path):
    db = tmp_path / "held.duckdb"
    shutil.copy(run.db, db)
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE outputs SET unanswered = 'rate_limit', retry_at_ms = 1796114495981, "
        "passed = NULL, score = NULL, error_code = 'RUN_MAX_WAIT', error_message = 'held' "
        "WHERE run_id = ? AND config = 'sim' AND item_id = 'pii-two' AND repeat = 0",
        [run.run_id],
    )
    con.close()
    paths = export_inspect(db, run.run_id, tmp_path / "logs")
    log = next(read_eval_log(str(p)) for p in paths if "sim" in read_eval_log(str(p)).eval.model)
    held = next(s for s in log.samples if s.id == "pii-two" and s.epoch == 1)
    assert held.scores is None and held.error is not None
    assert held.error.message.startswith("unanswered (rate_limit): RUN_MAX_WAIT")
    assert held.metadata["unanswered"] == "rate_limit"
    (score,) = log.results.scores
    assert score.unscored_samples >= 1  # not in the accuracy: neither right nor wrong
