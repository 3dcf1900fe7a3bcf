"""Inspect tasks through `workbench/chain` on the real simulator, logged to a real DuckDB file:
the same scores as `workbench run` on the same items, every attempt in the file, a prose
caller's calls arriving in Inspect as ToolCalls, a pinned model, and bad model args refused in
one line."""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, includes, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import tool

import workbench.eval.inspect_model._registry  # noqa: F401 (the entry point's import)
from workbench.cli import main
from workbench.config.providers_file import load_config
from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.dataset.prompt_set import Item, load_dataset
from workbench.eval.inspect_model.convert import PROSE_CALLS
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.scoring.grading import grade
from workbench.eval.store.database import Store
from workbench.types import ToolCall

KEY = "sk-inspect-provider-secret-0123456789"
CAPITALS = [
    ("cap-fr", "What is the capital of France?", "Paris"),
    ("cap-jp", "What is the capital of Japan?", "Tokyo"),
    ("cap-pe", "What is the capital of Peru?", "Lima"),  # the simulator does not know it
    ("cap-ke", "What is the capital of Kenya?", "Nairobi"),  # nor this one
]
WEATHER_SPEC = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city."},
                "unit": {"type": "string", "description": "celsius or fahrenheit."},
            },
            "required": ["city"],
        },
    },
}
WEATHER = [
    ("w-lisbon", "What's the weather like in Lisbon right now?", {"city": "Lisbon"}),
    ("w-dublin", "Is it raining in Dublin? Check the weather.", {"city": "Dublin"}),
    ("w-chicago", "Tell me the temperature in Chicago in fahrenheit.", {"unit": "fahrenheit"}),
]


def _providers(tmp_path: Path, sim, *models: str) -> Path:
    path = tmp_path / "providers.toml"
    listed = ", ".join(f'"{m}"' for m in models)
    path.write_text(
        f'[router]\nname = "inspect"\n[[providers]]\nid = "sim"\n'
        f'base_url = "{sim.openai_url}"\nkey_env = "WB_TEST_INSPECT_KEY"\nmodels = [{listed}]\n'
    )
    return path


def _prompt_set(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _workbench_run(prompt_set: Path, providers: Path, db: Path) -> dict[str, bool | None]:
    """`workbench run` on the prompt set: each item's verdict."""

    async def go():
        with Store.open(db) as store:
            summary = await run_prompt_set(
                prompt_set, [load_config(providers)], store, concurrency=4, progress=False
            )
            return {o.item_id: o.passed for o in store.outputs_for(summary.run_id)}

    return asyncio.run(go())


def _inspect(task: Task, model: str, providers: Path, db: Path, tmp_path: Path, **args) -> EvalLog:
    [log] = eval(
        task,
        model=model,
        model_args={"providers": str(providers), "db": str(db), **args},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    return log


def _run_of(db: Path, dataset: str) -> str:
    with RunFrames.open(db, snapshot=True) as wb:
        runs = wb.runs()
        return str(runs[runs["dataset"] == dataset]["run_id"].iloc[0])


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("WB_TEST_INSPECT_KEY", KEY)


def test_a_task_without_tools_scores_as_workbench_run_and_logs_every_attempt(tmp_path, sim):
    providers = _providers(tmp_path, sim, "sim-plain", "sim-native")
    rows = [{"id": i, "prompt": p, "expect": {"contains": [a]}} for i, p, a in CAPITALS]
    ran = _workbench_run(_prompt_set(tmp_path, rows), providers, tmp_path / "run.duckdb")
    db = tmp_path / "inspect.duckdb"
    task = Task(
        name="capitals",
        dataset=[Sample(id=i, input=p, target=a) for i, p, a in CAPITALS],
        solver=generate(),
        scorer=includes(),
    )
    log = _inspect(task, "workbench/chain", providers, db, tmp_path)
    scored = {s.id: s.scores["includes"].value == CORRECT for s in log.samples or []}
    assert scored == ran == {"cap-fr": True, "cap-jp": True, "cap-pe": False, "cap-ke": False}
    run_id = _run_of(db, "inspect:capitals")
    with RunFrames.open(db, snapshot=True) as wb:
        run = wb.runs().set_index("run_id").loc[run_id]
        assert run["status"] == "finished"
        attempts = wb.attempts(run_id)
        assert sorted(attempts["item_id"]) == sorted(i for i, _, _ in CAPITALS)
        assert set(attempts["outcome"]) == {"ok"} and set(attempts["key"]) == {"sim:sim-plain"}
        out = wb.outputs(run_id).set_index("item_id")
        # Inspect's score is the output's grade: the report's pass rate is Inspect's.
        assert out["passed"].to_dict() == scored
        assert json.loads(out.loc["cap-pe", "grade"])["checks"] == {"includes": INCORRECT}
        for table in ("attempts", "outputs", "runs", "items"):
            dump = wb.sql(f"SELECT * FROM {table}").to_json(date_format="iso")
            assert KEY not in dump, table
    written = list((tmp_path / "logs").glob("*.eval"))
    assert written
    for path in written:  # nor in Inspect's log
        with zipfile.ZipFile(path) as log_file:
            assert not any(KEY.encode() in log_file.read(n) for n in log_file.namelist())
    # Inspect's log names the model that answered each sample.
    assert {s.output.model for s in log.samples or []} == {"sim:sim-plain"}
    # `workbench report` reads the Inspect eval's run like any run.
    assert main(["report", run_id, "--db", str(db), "--out", str(tmp_path / "report")]) == 0
    [page] = (tmp_path / "report").glob("*.html")
    assert "cap-pe" in page.read_text()


@tool
def get_weather():
    async def execute(city: str, unit: str = "celsius") -> str:
        """The current weather in a city.

        Args:
            city: The city.
            unit: celsius or fahrenheit.
        """
        return f"18 degrees {unit} and sunny in {city}"

    return execute


def _graded_like_a_run(items: dict[str, Item]):
    """An Inspect scorer that grades the calls Inspect saw with workbench's own grader."""

    @scorer(metrics=[accuracy()])
    def calls_graded():
        async def score(state: TaskState, target: Target) -> Score:
            calls = [
                ToolCall(c.id, c.function, c.arguments, json.dumps(c.arguments))
                for m in state.messages
                if isinstance(m, ChatMessageAssistant)
                for c in m.tool_calls or []
            ]
            verdict = grade(items[str(state.sample_id)], state.output.completion.strip(), calls)
            assert verdict is not None
            return Score(value=CORRECT if verdict.passed else INCORRECT)

        return score

    return calls_graded()


def test_a_prose_callers_calls_reach_inspect_as_tool_calls_and_score_as_workbench_run(
    tmp_path, sim
):
    providers = _providers(tmp_path, sim, "hermes-prose")
    rows = [
        {
            "id": i,
            "prompt": p,
            "tools": [WEATHER_SPEC],
            "expect": {"tool": "get_weather", "args": a},
        }
        for i, p, a in WEATHER
    ]
    prompt_set = _prompt_set(tmp_path, rows)
    ran = _workbench_run(prompt_set, providers, tmp_path / "run.duckdb")
    items = {item.id: item for item in load_dataset(prompt_set).items}
    db = tmp_path / "inspect.duckdb"
    task = Task(
        name="weather",
        dataset=[Sample(id=i, input=p) for i, p, _ in WEATHER],
        solver=[use_tools(get_weather()), generate()],
        scorer=_graded_like_a_run(items),
    )
    log = _inspect(task, "workbench/chain", providers, db, tmp_path)
    scored = {s.id: s.scores["calls_graded"].value == CORRECT for s in log.samples or []}
    assert scored == ran and True in scored.values()
    lisbon = next(s for s in log.samples or [] if s.id == "w-lisbon")
    called = next(m for m in lisbon.messages if isinstance(m, ChatMessageAssistant))
    [call] = called.tool_calls or []
    # Written in prose by the model, read by the router, run by Inspect's own tool loop.
    assert (call.function, call.arguments["city"]) == ("get_weather", "Lisbon")
    assert called.metadata == {PROSE_CALLS: {call.id: "hermes"}}
    result = next(m for m in lisbon.messages if isinstance(m, ChatMessageTool))
    assert result.text == "18 degrees celsius and sunny in Lisbon"
    assert "Lisbon" in lisbon.output.completion and not lisbon.output.message.tool_calls
    run_id = _run_of(db, "inspect:weather")
    # Inspect's log says where each generate is in the file.
    assert lisbon.output.metadata == {
        "workbench": {
            "run_id": run_id,
            "item_id": "w-lisbon",
            "repeat": 0,
            "turn": 1,
            "protocol": "none",
            "attempts": 1,
        }
    }
    with RunFrames.open(db, snapshot=True) as wb:
        attempts = wb.attempts(run_id)
        # Two routes per sample (the call, then the answer from its result), every one logged.
        assert attempts.groupby("item_id").size().to_dict() == {i: 2 for i, _, _ in WEATHER}
        # One item per sample: its attempts numbered across its turns, its prompt the input.
        ids = attempts[attempts["item_id"] == "w-lisbon"]["attempt_id"].map(json.loads)
        assert sorted(i[-1] for i in ids) == [0, 1]
        items = wb.sql("SELECT item_id, prompt FROM items WHERE run_id = ?", [run_id])
        assert sorted(items.values.tolist()) == sorted([i, p] for i, p, _ in WEATHER)
        turns = wb.sql(
            "SELECT turn FROM replies WHERE run_id = ? AND item_id = 'w-lisbon'", [run_id]
        )
        assert sorted(turns["turn"]) == [0, 1]
        verdicts = wb.verdicts(run_id)
        assert "text" in set(verdicts["verdict"])  # the model was seen calling in prose


def test_a_pinned_model_is_the_only_one_asked(tmp_path, sim):
    providers = _providers(tmp_path, sim, "sim-native", "sim-plain")
    db = tmp_path / "pinned.duckdb"
    task = Task(
        name="pinned",
        dataset=[Sample(id=i, input=p, target=a) for i, p, a in CAPITALS[:2]],
        solver=generate(),
        scorer=includes(),
    )
    log = _inspect(task, "workbench/sim:sim-plain", providers, db, tmp_path, mask=False)
    assert log.eval.model == "workbench/sim:sim-plain"
    with RunFrames.open(db, snapshot=True) as wb:
        attempts = wb.attempts(_run_of(db, "inspect:pinned"))
        assert set(attempts["key"]) == {"sim:sim-plain"} and len(attempts) == 2


@pytest.mark.parametrize("mask", [True, False])
def test_a_sensitive_value_is_masked_before_it_leaves_and_inspect_reads_it_back(
    tmp_path, sim, mask
):
    providers = _providers(tmp_path, sim, "sim-plain")
    db = tmp_path / "masked.duckdb"
    said = "Reply with exactly: write to ana.lima@example.org"
    task = Task(name="masked", dataset=[Sample(id="m1", input=said)], solver=generate())
    log = _inspect(task, "workbench/chain", providers, db, tmp_path, mask=mask)
    [sample] = log.samples or []
    assert "ana.lima@example.org" in sample.output.completion  # unmasked on its way back
    with RunFrames.open(db, snapshot=True) as wb:
        [request] = wb.sql("SELECT request::VARCHAR AS r FROM attempts")["r"]
    assert ("ana.lima@example.org" in request) is not mask
    assert ("#EMAIL_" in request) is mask


def test_a_failed_route_errors_its_sample_and_is_logged_with_its_code(tmp_path, sim):
    providers = _providers(tmp_path, sim, "no-such-model")
    db = tmp_path / "failed.duckdb"
    task = Task(name="failing", dataset=[Sample(id="f1", input="hi")], solver=generate())
    [log] = eval(
        task,
        model="workbench/chain",
        model_args={"providers": str(providers), "db": str(db)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        fail_on_error=False,
    )
    [sample] = log.samples or []
    assert sample.error is not None
    assert sample.error.message.startswith("AI_UNAVAILABLE: no model could answer")
    run_id = _run_of(db, "inspect:failing")
    with RunFrames.open(db, snapshot=True) as wb:
        [code] = wb.outputs(run_id)["error_code"]
        [outcome] = wb.attempts(run_id)["outcome"]
    assert (code, outcome) == ("AI_UNAVAILABLE", "error")


FILE = "<the providers file>"


@pytest.mark.parametrize(
    ("model", "args", "says"),
    [
        ("workbench/chain", {}, "needs -M providers=FILE"),
        ("workbench/chain", {"providers": "nope.toml"}, "no such file"),
        ("workbench/chain", {"providers": FILE, "provider": "x"}, "unknown model arg 'provider'"),
        ("workbench/chain", {"providers": FILE, "tools_mode": "smoke"}, "plan, native or text"),
        ("workbench/chain", {"providers": FILE, "mask": "maybe"}, "mask must be true or false"),
        (
            "workbench/chain",
            {"providers": FILE, "max_wait": "soon"},
            "-M max_wait takes a positive",
        ),
        ("workbench/sim:gpt-9", {"providers": FILE}, "not a model of"),
        ("workbench/gpt-9", {"providers": FILE}, "`chain` or one `provider:model`"),
    ],
)
def test_bad_model_args_are_one_line_with_their_code(tmp_path, sim, model, args, says):
    providers = str(_providers(tmp_path, sim, "sim-native"))
    given = {k: providers if v == FILE else v for k, v in args.items()}
    with pytest.raises(PrerequisiteError) as caught:
        get_model(model, memoize=False, **given)
    line = str(caught.value)
    assert line.startswith("INSPECT_MODEL_INVALID: ") and says in line and "\n" not in line
    assert isinstance(caught.value.__cause__, ConfigError)


def test_a_bad_providers_file_is_one_line(tmp_path):
    bad = tmp_path / "providers.toml"
    bad.write_text("[[providers]]\nid = 3\n")
    with pytest.raises(PrerequisiteError) as caught:
        get_model("workbench/chain", memoize=False, providers=str(bad))
    assert str(caught.value).startswith("PROVIDERS_INVALID: ") and "\n" not in str(caught.value)


REFUSING = {
    "seed": 3,
    "persona": [
        {
            "id": "refusing",
            "latency_ms": 0,
            "retry_after_s": 30,
            "failures": [{"kind": "429", "at": list(range(1, 50))}],
        }
    ],
}


def test_a_sample_held_past_max_wait_errors_in_one_line_and_is_not_retried(tmp_path):
    from inspect_ai.model import RetryDecision

    from workbench.sim import SimServer

    sim = SimServer(REFUSING).start()
    try:
        providers = _providers(tmp_path, sim, "refusing")
        db = tmp_path / "held.duckdb"
        task = Task(name="held", dataset=[Sample(id="h1", input="hi")], solver=generate())
        [log] = eval(
            task,
            model="workbench/chain",
            model_args={"providers": str(providers), "db": str(db), "max_wait": "1s"},
            log_dir=str(tmp_path / "logs"),
            display="none",
            fail_on_error=False,
        )
    finally:
        sim.stop()
    [sample] = log.samples or []
    assert sample.error is not None
    # Free again in 30 s, past the sample's 1 s: given up at once, never slept on.
    assert sample.error.message.startswith("RUN_MAX_WAIT: held past -M max_wait=1s; last ")
    model = get_model("workbench/chain", memoize=False, providers=str(providers))
    assert model.api.should_retry(RuntimeError("anything")) == RetryDecision.no()


async def test_a_generate_outside_any_eval_is_a_run_finished_when_the_model_closes(tmp_path, sim):
    providers = _providers(tmp_path, sim, "sim-native")
    db = tmp_path / "direct.duckdb"
    async with get_model(
        "workbench/chain", memoize=False, providers=str(providers), db=str(db)
    ) as model:
        first = await model.generate("What is the capital of Italy?")
        again = await model.generate("What is the capital of Italy?")
    assert "Rome" in first.completion and "Rome" in again.completion
    with RunFrames.open(db, snapshot=True) as wb:
        [run] = wb.runs().to_dict("records")
        assert (run["dataset"], run["status"]) == ("inspect", "finished")
        attempts = wb.attempts(run["run_id"])
        # One item (named by its message), asked twice: two turns, their attempts numbered.
        assert attempts["item_id"].nunique() == 1 and attempts["item_id"][0].startswith("msg-")
        assert sorted(json.loads(a)[-1] for a in attempts["attempt_id"]) == [0, 1]


LIMITED = {
    "seed": 3,
    "persona": [
        # Its first request is refused with a 429 (Retry-After: 1 s); the next ones answer.
        {
            "id": "limited",
            "latency_ms": 0,
            "retry_after_s": 1,
            "failures": [{"kind": "429", "at": [1]}],
        },
        {"id": "backup", "latency_ms": 0},
    ],
}


@pytest.mark.parametrize(
    ("chain", "answered", "routes"),
    [
        # Alone in its chain: the sample is held until the model is free, then asked again.
        (["limited"], "sim:limited", [(None, "AI_UNAVAILABLE"), ("sim:limited", None)]),
        # With a fallback: the next model answers at once, and Inspect records the fallback.
        (["limited", "backup"], "sim:backup", [("sim:backup", None)]),
    ],
)
def test_a_rate_limit_is_held_or_fallen_back_before_inspect_sees_it(
    tmp_path, chain, answered, routes
):
    from inspect_ai.event import ModelEvent

    from workbench.sim import SimServer

    sim = SimServer(LIMITED).start()
    try:
        providers = _providers(tmp_path, sim, *chain)
        db = tmp_path / "limited.duckdb"
        task = Task(
            name="limited",
            dataset=[Sample(id="l1", input="What is the capital of Spain?", target="Madrid")],
            solver=generate(),
            scorer=includes(),
        )
        log = _inspect(task, "workbench/chain", providers, db, tmp_path)
    finally:
        sim.stop()
    [sample] = log.samples or []
    assert sample.scores["includes"].value == CORRECT and sample.output.model == answered
    # Inspect's own retry never ran: the 429 stayed inside workbench.
    [event] = [e for e in sample.events if isinstance(e, ModelEvent)]
    assert not event.retries and event.error is None
    fallback = sample.output.fallback
    if answered == "sim:limited":
        assert fallback is None
    else:
        assert fallback is not None and (fallback.model, fallback.fallback_model) == (
            "sim:limited",
            "sim:backup",
        )
    with RunFrames.open(db, snapshot=True) as wb:
        run_id = _run_of(db, "inspect:limited")
        attempts = wb.attempts(run_id)
        assert list(attempts["outcome"]) == ["error", "ok"]
        assert attempts["status"].tolist()[0] == 429
        logged = wb.sql(
            "SELECT chosen, error_code FROM routes WHERE run_id = ? ORDER BY at_ms", [run_id]
        )
        said = [tuple(v if isinstance(v, str) else None for v in row) for row in logged.values]
        assert said == routes
        [output] = wb.outputs(run_id).to_dict("records")
        assert output["key"] == answered and not isinstance(output["error_code"], str)


def test_tools_mode_text_offers_the_tools_in_the_prompt_and_inspect_still_gets_the_calls(
    tmp_path, sim
):
    providers = _providers(tmp_path, sim, "sim-native")
    db = tmp_path / "text.duckdb"
    task = Task(
        name="text",
        dataset=[Sample(id="t1", input=WEATHER[0][1])],
        solver=[use_tools(get_weather()), generate()],
    )
    log = _inspect(task, "workbench/chain", providers, db, tmp_path, tools_mode="text")
    [sample] = log.samples or []
    called = next(m for m in sample.messages if isinstance(m, ChatMessageAssistant))
    [call] = called.tool_calls or []
    assert call.function == "get_weather" and call.id in (called.metadata or {})[PROSE_CALLS]
    assert (
        sample.output.completion
        == "According to get_weather: 18 degrees celsius and sunny in Lisbon."
    )
    with RunFrames.open(db, snapshot=True) as wb:
        requests = wb.sql("SELECT request::VARCHAR AS r FROM attempts ORDER BY start_ms")["r"]
    assert all(json.loads(r)["tools_sent"] == "in the prompt" for r in requests)


def test_an_eval_recorded_to_a_cassette_replays_with_no_network(tmp_path, sim):
    """-M record=DIR, then -M replay=DIR against a providers file whose server is gone: the
    same answers and scores, every attempt logged, nothing sent."""
    cassette = tmp_path / "cassette"

    def capitals() -> Task:
        samples = [Sample(id=i, input=p, target=a) for i, p, a in CAPITALS]
        return Task(name="capitals", dataset=samples, solver=generate(), scorer=includes())

    live = _providers(tmp_path, sim, "sim-native")
    recorded = _inspect(
        capitals(), "workbench/chain", live, tmp_path / "rec.duckdb", tmp_path, record=str(cassette)
    )
    lines = (cassette / "cassette.jsonl").read_text().splitlines()
    assert len(lines) == 1 + len(CAPITALS) and KEY not in "".join(lines)
    gone = tmp_path / "gone.toml"  # the same provider id, at a port nobody listens on
    gone.write_text(live.read_text().replace(sim.openai_url, "http://127.0.0.1:9/v1"))
    sent = len(sim.requests())
    replayed = _inspect(
        capitals(), "workbench/chain", gone, tmp_path / "rep.duckdb", tmp_path, replay=str(cassette)
    )
    assert len(sim.requests()) == sent

    def scores(log: EvalLog) -> dict:
        return {s.id: (s.output.completion, s.scores["includes"].value) for s in log.samples or []}

    assert scores(replayed) == scores(recorded)
    with RunFrames.open(tmp_path / "rep.duckdb", snapshot=True) as wb:
        attempts = wb.attempts()
        assert len(attempts) == len(CAPITALS) and set(attempts["outcome"]) == {"ok"}


def test_record_and_replay_together_are_refused(tmp_path, sim):
    providers = str(_providers(tmp_path, sim, "sim-native"))
    with pytest.raises(PrerequisiteError) as both:
        get_model("workbench/chain", memoize=False, providers=providers, record="a", replay="b")
    assert "use -M replay=DIR -M record_missing=true" in str(both.value)
    with pytest.raises(PrerequisiteError) as missing:
        get_model(
            "workbench/chain", memoize=False, providers=providers, replay=str(tmp_path / "none")
        )
    assert str(missing.value).startswith("CASSETTE_MISSING: ")


def test_an_image_from_inspect_reaches_a_model_that_sees_it(tmp_path, sim):
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    from workbench.sim.png import encode_png

    picture = tmp_path / "red.png"
    picture.write_bytes(encode_png(8, 8, (220, 20, 30)))
    providers = _providers(tmp_path, sim, "sim-blind", "sim-native")
    db = tmp_path / "vision.duckdb"
    asked = ChatMessageUser(
        content=[ContentText(text="What colour is this image?"), ContentImage(image=str(picture))]
    )
    task = Task(
        name="vision",
        dataset=[Sample(id="v1", input=[asked], target="red")],
        solver=generate(),
        scorer=includes(),
    )
    log = _inspect(task, "workbench/chain", providers, db, tmp_path)
    [sample] = log.samples or []
    assert sample.output.completion == "The image is mostly red."
    assert sample.output.model == "sim:sim-native"  # the blind model refused it: fallen back
    with RunFrames.open(db, snapshot=True) as wb:
        verdicts = wb.verdicts(_run_of(db, "inspect:vision"))
    seen = {(v["model"], v["capability"], v["verdict"]) for v in verdicts.to_dict("records")}
    assert ("sim-blind", "vision", "none") in seen
