"""The BFCL personas play BFCL's multi-turn entries: the oracle's calls are the ground truth,
each mistake persona errs where it should and nowhere else.

The plays run through BFCL's own backends and are graded by BFCL's own `multi_turn_checker`,
both imported from an unpacked copy of the fetched wheel (never installed), as the single-turn
tests use BFCL's checker as their oracle. The wire is tested over real loopback HTTP.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import types
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from workbench.providers.openai_compat import openai_compatible_provider
from workbench.sim import SimServer, load_fleet
from workbench.sim.bfcl_agentic import NOTED
from workbench.sim.bfcl_data import (
    CATEGORIES,
    MORE_FUNCTIONS,
    Call,
    Entry,
    EntryIndex,
    entry_index,
    find_files,
    parse_call,
    same_text,
)
from workbench.sim.bfcl_play import (
    DONE,
    MISTAKES,
    locate,
    mistake_plan,
    play,
    python_calls,
    turn_calls,
)
from workbench.sim.conversation import Conversation, Tool, Turn
from workbench.types import ChatRequest, user

FLEET = load_fleet(None)
WHEEL_SOURCE = "bfcl_eval/eval_checker/multi_turn_eval/func_source_code/"
BACKEND_FILES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
# Entries whose requests, up to a turn, are the same as another entry's while their ground truth
# differs there, and whose results never tell them apart: no player that reads the requests can
# tell which one it is. miss_param_180 and 195 ask exactly what base_180 and 195 ask (BFCL left
# the parameter in); long_context_29, 48 and 143 want a value that only the padded backend's
# numbers give (a file size, a priority, a balance written "10000.00"), and results show numbers
# in both. The oracle plays the base entry there.
UNTELLABLE = frozenset(
    {
        "multi_turn_miss_param_180",
        "multi_turn_miss_param_195",
        "multi_turn_long_context_29",
        "multi_turn_long_context_48",
        "multi_turn_long_context_143",
    }
)


@pytest.fixture(scope="module")
def index() -> EntryIndex:
    found = entry_index()
    if found is None:
        pytest.skip("BFCL's data is not fetched: run `workbench bfcl fetch`")
    return found


@pytest.fixture(scope="module")
def entries(index: EntryIndex) -> dict[str, Entry]:
    return {e.id: e for group in index.by_first.values() for e in group}


@pytest.fixture(scope="module")
def wheel(index: EntryIndex) -> Path:
    files = find_files()
    assert files is not None
    if not files.wheel:
        pytest.skip("BFCL's backends are read from its wheel")
    return files.where


@pytest.fixture(scope="module")
def bfcl(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """BFCL's `execute_multi_turn_func_call` and `multi_turn_checker`, from an unpacked copy of
    the wheel, with stubs for what they never use."""
    root = tmp_path_factory.mktemp("bfcl_eval")
    # The single-turn tests' fixture may have imported BFCL's package already: one copy per
    # session, with the same stubs, so neither sees the other's.
    if "bfcl_eval" not in sys.modules:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(root, [n for n in z.namelist() if n.startswith("bfcl_eval/")])
        sys.path.insert(0, str(root))
        import bfcl_eval.constants  # type: ignore[import-not-found]  # noqa: F401

        oracle = types.SimpleNamespace(underscore_to_dot=False)
        stubs: dict[str, dict[str, Any]] = {
            "bfcl_eval.constants.model_config": {"MODEL_CONFIG_MAPPING": {"oracle": oracle}}
        }
        retry = ("retry", "retry_if_exception_message", "retry_if_exception_type")
        for name, attrs in {
            "filelock": {"FileLock": object},
            "tenacity": dict.fromkeys(
                (*retry, "wait_random_exponential"), lambda *a, **k: lambda f: f
            ),
        }.items():
            if importlib.util.find_spec(name) is None:
                stubs[name] = attrs
        for name, attrs in stubs.items():
            module = types.ModuleType(name)
            module.__dict__.update(attrs)
            sys.modules[name] = module
    from bfcl_eval.eval_checker.multi_turn_eval import (  # type: ignore[import-not-found]
        multi_turn_checker,
        multi_turn_utils,
    )

    yield types.SimpleNamespace(
        execute=multi_turn_utils.execute_multi_turn_func_call,
        check=multi_turn_checker.multi_turn_checker,
    )
    if str(root) in sys.path:
        sys.path.remove(str(root))


# ------------------------------------------------------------------ playing an entry


def _questions(wheel: Path, category: str) -> list[dict[str, Any]]:
    with zipfile.ZipFile(wheel) as z:
        text = z.read(f"bfcl_eval/data/BFCL_v4_{category}.json").decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _docs(wheel: Path, classes: list[str]) -> list[dict[str, Any]]:
    with zipfile.ZipFile(wheel) as z:
        return [
            json.loads(line)
            for c in classes
            for line in z.read(f"bfcl_eval/data/multi_turn_func_doc/{BACKEND_FILES[c]}.json")
            .decode()
            .splitlines()
            if line.strip()
        ]


def _bfcl_text(call: Call) -> str:
    return python_calls([call])[1:-1]


def play_entry(
    bfcl: Any, wheel: Path, q: dict[str, Any], persona: str, index: EntryIndex, prompting: bool
) -> list[list[list[str]]]:
    """One entry played as the runner plays it (function calling: tool messages after the
    calls; prompting: BFCL's system prompt of docs, the results in a user message as BFCL
    writes them), through BFCL's own backends; the calls of each step of each turn, as text."""
    who = FLEET.persona(persona)
    docs = _docs(wheel, q["involved_classes"])
    missed = {int(t): set(n) for t, n in (q.get("missed_function") or {}).items()}
    held = set().union(*missed.values()) if missed else set()
    first = [d for d in docs if d["name"] not in held]
    conv = Conversation(
        turns=[],
        system=json.dumps(first, indent=4) if prompting else None,
        tools=[] if prompting else [Tool(d["name"]) for d in first],
    )
    played: list[list[list[str]]] = []
    for t, turn in enumerate(q["question"]):
        text = turn[0]["content"] if turn else MORE_FUNCTIONS
        if not turn:
            new = [d for d in docs if d["name"] in missed[t]]
            if prompting:
                text = f"{new}\n{MORE_FUNCTIONS}"
            else:
                conv.tools += [Tool(d["name"]) for d in new]
        conv.turns.append(Turn("user", text))
        steps: list[list[str]] = []
        for _ in range(20):
            ans = play(who, conv, index)
            assert ans is not None, (q["id"], t)
            if prompting:
                calls = [
                    parse_call(c, {}) for c in _split_python(ans.text)
                ]  # keyword-only: no docs needed
            else:
                calls = [Call(c.name, c.args) for c in ans.calls]
            if not calls:
                conv.turns.append(Turn("assistant", ans.text))
                break
            texts = [_bfcl_text(c) for c in calls]
            steps.append(texts)
            results, _ = bfcl.execute(
                texts,
                q["initial_config"],
                q["involved_classes"],
                f"sim_{persona}_{'p' if prompting else 'f'}".replace("-", "_"),
                q["id"],
                long_context="long_context" in q["id"],
            )
            if prompting:
                conv.turns.append(Turn("assistant", ans.text))
                shown = [
                    {"role": "tool", "name": n, "content": r}
                    for n, r in zip(texts, results, strict=True)
                ]
                conv.turns.append(Turn("user", repr(shown)))
            else:
                conv.turns.append(
                    Turn(
                        "assistant",
                        tool_calls=[
                            {"id": c.id, "name": c.name, "arguments": c.arguments}
                            for c in ans.calls
                        ],
                    )
                )
                conv.turns += [
                    Turn("tool", r, tool_call_id=c.id)
                    for c, r in zip(ans.calls, results, strict=True)
                ]
        played.append(steps)
    return played


def _split_python(text: str) -> list[str]:
    """BFCL's `[f(a=1), g(b=2)]` as its calls' texts; [] for prose."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return []
    return [ast.unparse(e) for e in node.elts] if isinstance(node, ast.List) else []


def _truth(wheel: Path, category: str) -> dict[str, list[list[str]]]:
    with zipfile.ZipFile(wheel) as z:
        text = z.read(f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json").decode()
    return {(a := json.loads(line))["id"]: a["ground_truth"] for line in text.splitlines() if line}


def graded_failures(
    bfcl: Any, wheel: Path, index: EntryIndex, persona: str, prompting: bool, every: int = 1
) -> tuple[set[str], int]:
    """The entries BFCL's own checker fails when `persona` plays them; and how many were played."""
    failed, played = set(), 0
    for category in CATEGORIES:
        truth = _truth(wheel, category)
        for q in _questions(wheel, category)[::every]:
            steps = play_entry(bfcl, wheel, q, persona, index, prompting)
            got = bfcl.check(steps, truth[q["id"]], q, category, f"sim_{persona}")
            played += 1
            if not got["valid"]:
                failed.add(q["id"])
    return failed, played


# ------------------------------------------------------------------ the tests


def test_the_oracle_scores_every_entry_bfcl_can_tell_apart_with_native_calls(
    bfcl: Any, wheel: Path, index: EntryIndex
) -> None:
    failed, played = graded_failures(bfcl, wheel, index, "bfcl-oracle", prompting=False)
    assert played == 800
    assert failed == UNTELLABLE


def test_the_oracle_scores_them_in_prompting_mode_too(
    bfcl: Any, wheel: Path, index: EntryIndex
) -> None:
    failed, played = graded_failures(bfcl, wheel, index, "bfcl-oracle", True, every=3)
    assert played > 260
    assert failed <= UNTELLABLE


@pytest.mark.parametrize("prompting", [False, True], ids=["function calling", "prompting"])
def test_the_oracle_calls_each_turn_with_that_turn_ground_truth(
    bfcl: Any, wheel: Path, index: EntryIndex, entries: dict[str, Entry], prompting: bool
) -> None:
    for category in CATEGORIES:
        for q in _questions(wheel, category)[::25]:
            if q["id"] in UNTELLABLE:
                continue
            steps = play_entry(bfcl, wheel, q, "bfcl-oracle", index, prompting)
            made = [sorted(c for step in turn for c in step) for turn in steps]
            truth = [sorted(_bfcl_text(c) for c in turn) for turn in entries[q["id"]].truth]
            assert made == truth, q["id"]


@pytest.mark.parametrize("kind", MISTAKES)
def test_each_mistake_strikes_its_share_of_entries_and_nothing_else(
    kind: str, entries: dict[str, Entry]
) -> None:
    struck = 0
    for entry in entries.values():
        plan = mistake_plan(kind, entry, 0.5)
        played = [turn_calls(entry, t, plan) for t in range(len(entry.truth))]
        truth = [list(turn) for turn in entry.truth]
        if plan is None:
            assert played == truth, entry.id
            continue
        struck += 1
        assert mistake_plan(kind, entry, 0.5) == plan  # seeded: the same every time
        assert [t for t in range(len(truth)) if played[t] != truth[t]] == [plan.turn], entry.id
        made, meant = played[plan.turn], truth[plan.turn]
        if kind == "skips_step":
            assert len(made) == len(meant) - 1 and all(c in meant for c in made)
        elif kind == "wrong_arg":
            assert [c.name for c in made] == [c.name for c in meant]
            (wrong,) = [k for k, (a, b) in enumerate(zip(made, meant, strict=True)) if a != b]
            assert made[wrong].args.keys() == meant[wrong].args.keys()
        else:
            assert made == [] and meant[plan.call].args
    assert 0.4 * len(entries) < struck < 0.6 * len(entries)
    assert all(mistake_plan(kind, e, 0.0) is None for e in entries.values())


@pytest.mark.parametrize("persona", ["bfcl-skips-step", "bfcl-wrong-arg", "bfcl-asks-back"])
def test_a_mistake_persona_fails_where_it_errs_and_passes_elsewhere(
    bfcl: Any, wheel: Path, index: EntryIndex, entries: dict[str, Entry], persona: str
) -> None:
    kind = FLEET.persona(persona).bfcl
    failed, _ = graded_failures(bfcl, wheel, index, persona, prompting=False, every=4)
    struck = {e.id for e in entries.values() if mistake_plan(kind, e, 0.5) is not None}
    assert failed - UNTELLABLE <= struck
    played = {q["id"] for c in CATEGORIES for q in _questions(wheel, c)[::4]}
    # A wrong value of a call whose result and state do not change can pass (a read with
    # another argument that fails alike): most mistakes are caught, not all.
    assert len(failed & struck) >= 0.75 * len(struck & played)


def test_positional_ground_truth_arguments_take_the_backend_method_parameter_names(
    wheel: Path, entries: dict[str, Entry], index: EntryIndex
) -> None:
    """BFCL runs a ground-truth call against the backend method: its signature is the order
    positional arguments fill. The docs' `properties` must list the same names first."""
    signatures: dict[str, list[str]] = {}
    with zipfile.ZipFile(wheel) as z:
        for module in BACKEND_FILES.values():
            tree = ast.parse(z.read(f"{WHEEL_SOURCE}{module}.py").decode())
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                    signatures.setdefault(node.name, [a.arg for a in node.args.args[1:]])
        raw = [
            call
            for category in CATEGORIES
            for line in z.read(f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json")
            .decode()
            .splitlines()
            if line.strip()
            for turn in json.loads(line)["ground_truth"]
            for call in turn
        ]
    positional = 0
    for text in raw:
        node = ast.parse(text, mode="eval").body
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        parsed = parse_call(text, index.docs)
        for k, _ in enumerate(node.args):
            positional += 1
            assert list(parsed.args)[k] == signatures[node.func.id][k], text
    assert positional > 100  # the data still holds positional arguments to check


def test_a_conversation_that_is_no_entry_gets_the_ordinary_answer(index: EntryIndex) -> None:
    conv = Conversation(turns=[Turn("user", "What is the weather in Paris?")], tools=[Tool("x")])
    assert locate(conv, index) is None
    assert play(FLEET.persona("bfcl-oracle"), conv, index) is None
    assert play(FLEET.persona("sim-native"), conv, index) is None


# ------------------------------------------------------------------ over the wire


def _openai_tools(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kinds = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}

    def schema(value: Any) -> Any:
        if isinstance(value, dict):
            out = {k: schema(v) for k, v in value.items()}
            if isinstance(out.get("type"), str):
                out["type"] = kinds.get(out["type"], out["type"])
            return out
        return value

    return [
        {
            "type": "function",
            "function": {**d, "parameters": {**schema(d["parameters"]), "type": "object"}},
        }
        for d in docs
    ]


async def test_the_oracle_answers_over_http_natively_then_in_text(
    http: httpx.AsyncClient, wheel: Path, entries: dict[str, Entry]
) -> None:
    q = _questions(wheel, "multi_turn_base")[0]
    entry = entries[q["id"]]
    tools = _openai_tools(_docs(wheel, q["involved_classes"]))
    messages = [{"role": "user", "content": entry.turns[0]}]
    body = {"model": "bfcl-oracle", "messages": messages, "tools": tools}
    got = (await http.post("/v1/chat/completions", json=body)).json()["choices"][0]["message"]
    calls = [
        Call(c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in got["tool_calls"]
    ]
    assert calls == list(entry.truth[0])
    # After the results, a text and no calls: the turn ends.
    messages += [
        got,
        *({"role": "tool", "tool_call_id": c["id"], "content": "{}"} for c in got["tool_calls"]),
    ]
    body = {"model": "bfcl-oracle", "messages": messages, "tools": tools}
    done = (await http.post("/v1/chat/completions", json=body)).json()["choices"][0]["message"]
    assert done["content"] == DONE and not done.get("tool_calls")
    # Prompting mode: no tools field, BFCL's list of calls in the text.
    body = {"model": "bfcl-oracle", "messages": messages[:1]}
    text = (await http.post("/v1/chat/completions", json=body)).json()["choices"][0]["message"]
    assert text["content"] == python_calls(list(entry.truth[0]))


@pytest.mark.parametrize(
    "persona", ["bfcl-prose-hermes", "bfcl-prose-mistral", "bfcl-prose-qwen3", "bfcl-prose-llama3"]
)
async def test_the_prose_personas_calls_read_back_as_the_ground_truth(
    sim: SimServer, wheel: Path, entries: dict[str, Entry], persona: str
) -> None:
    provider = openai_compatible_provider("sim", sim.openai_url, "sim-key", [persona])
    try:
        for category in CATEGORIES:
            for q in _questions(wheel, category)[:40:8]:
                entry = entries[q["id"]]
                if not entry.truth[0]:
                    continue
                request = ChatRequest(
                    messages=[user(entry.turns[0])],
                    tools=_openai_tools(_docs(wheel, q["involved_classes"])),
                )
                reply = await provider.call(request, model=persona)
                read = [Call(c.name, c.arguments) for c in reply.tool_calls]
                assert reply.protocol == "text", (persona, q["id"])
                assert read == [
                    Call(c.name, json.loads(json.dumps(c.args))) for c in entry.truth[0]
                ]
    finally:
        await provider.aclose()


def test_the_docs_list_every_bfcl_persona_of_the_default_fleet() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    players = [p.id for p in FLEET.personas.values() if p.bfcl]
    assert len(players) >= 8
    assert [p for p in players if f"`{p}`" not in docs] == []


# ------------------------------------------------------------------ through the real runner
#
# The plays above feed the personas as the runner does; these go through the runner itself
# (run_prompt_set against a simulator, a DuckDB file, BFCL's backends in the sandbox, BFCL's
# grading), requests masked as a run masks them by default.

# The entries of each category a sample plays: the first, a GorillaFileSystem one whose empty
# turn must end quietly (14), the one whose ground truth calls a function BFCL holds back until
# a later turn (miss_func 49), TravelAPI ones whose dates the router masks as phone numbers.
SAMPLE = (0, 14, 49, 77, 150, 163, 199)
# A prose call counts only under an offered name (the library's reading rule): miss_func_49's
# ground truth calls `tail` two turns before BFCL offers it, which BFCL's decoder reads anyway.
PROSE_UNREADABLE = frozenset({"multi_turn_miss_func_49"})
PROSE = ("bfcl-prose-hermes", "bfcl-prose-mistral", "bfcl-prose-qwen3", "bfcl-prose-llama3")


def _sample(wheel: Path, categories: str, picks: tuple[int, ...], skip: frozenset[str]) -> Any:
    import dataclasses

    from workbench.eval.suites.bfcl import bfcl_dataset

    dataset = bfcl_dataset(categories, source=wheel)
    wanted = {f"{c}_{k}" for c in categories.split(",") for k in picks}
    items = tuple(i for i in dataset.items if i.id in wanted and i.id not in skip)
    return dataclasses.replace(dataset, items=items)


async def _through_runner(
    dataset: Any, persona: str, mode: str, tmp_path: Path, **options: Any
) -> Any:
    """Each item's BFCL result row (valid, error_type, reason) as the run graded it."""
    from workbench.config.providers_file import ProvidersConfig
    from workbench.eval.analysis.frames import RunFrames
    from workbench.eval.run.runner import run_prompt_set
    from workbench.eval.store.database import Store

    db = tmp_path / f"{persona}-{mode}.duckdb"
    async with SimServer() as sim:
        provider = openai_compatible_provider("sim", sim.openai_url, "k", [persona])
        config = ProvidersConfig(persona, [provider])
        web = {"bfcl_web": sim.base_url} if options.pop("web", False) else {}
        with Store.open(db) as store:
            summary = await run_prompt_set(
                dataset,
                [config],
                store,
                tools_mode=mode,
                progress=False,
                concurrency=4,
                **web,
                **options,
            )
    with RunFrames.open(db) as frames:
        return frames.bfcl_results(summary.run_id), db


def _all_valid(results: Any, expected: int) -> None:
    assert len(results) == expected
    failed = results.loc[~results["valid"].astype(bool), ["item_id", "reason"]]
    assert failed.empty, failed.to_string()


MULTI_TURN = ",".join(CATEGORIES)


@pytest.mark.parametrize("mode", ["native", "text"])
async def test_the_oracle_scores_a_sample_of_every_category_through_the_runner(
    wheel: Path, tmp_path: Path, mode: str
) -> None:
    dataset = _sample(wheel, MULTI_TURN, SAMPLE, UNTELLABLE)
    assert len(dataset.items) == 4 * len(SAMPLE)
    results, _ = await _through_runner(dataset, "bfcl-oracle", mode, tmp_path)
    _all_valid(results, len(dataset.items))


@pytest.mark.parametrize("persona", PROSE)
async def test_the_prose_personas_score_a_sample_in_plan_mode(
    wheel: Path, tmp_path: Path, persona: str
) -> None:
    # long_context 20 and 41 open like their base twins and need the results to tell them
    # apart: the persona reads its own prose calls back from the history to go on (97, 151,
    # 155: a number an XML family writes as bare text, a date the run masks).
    picks = (1, 14, 20, 41, 97, 151, 155)
    dataset = _sample(wheel, MULTI_TURN, picks, UNTELLABLE | PROSE_UNREADABLE)
    results, _ = await _through_runner(dataset, persona, "plan", tmp_path)
    _all_valid(results, len(dataset.items))


@pytest.mark.parametrize("mode", ["native", "text"])
async def test_the_oracle_answers_memory_questions_after_their_prerequisites(
    wheel: Path, tmp_path: Path, mode: str
) -> None:
    from workbench.eval.suites.bfcl import bfcl_dataset

    dataset = bfcl_dataset("memory_kv,memory_rec_sum", source=wheel, limit=3)
    prerequisites = [i for i in dataset.items if i.expect.bfcl.prerequisite]
    assert prerequisites  # they run first, and nothing grades them
    results, db = await _through_runner(dataset, "bfcl-oracle", mode, tmp_path)
    _all_valid(results, 6)
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    said = dict(con.execute("SELECT item_id, raw FROM outputs").fetchall())
    # A question's answer is BFCL's answer format; a prerequisite turn, an acknowledgement.
    assert said["memory_kv_0-customer-0"].startswith("{'answer': 'Michael'")
    assert all(said[i.id] == NOTED for i in prerequisites)


async def test_the_oracle_searches_once_then_answers_web_search_offline(
    wheel: Path, tmp_path: Path
) -> None:
    from workbench.eval.suites.bfcl import bfcl_dataset

    dataset = bfcl_dataset("web_search_base,web_search_no_snippet", source=wheel, limit=3)
    results, db = await _through_runner(dataset, "bfcl-oracle", "native", tmp_path, web=True)
    _all_valid(results, 6)
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    for (grade,) in con.execute("SELECT grade FROM outputs").fetchall():
        ((search, answer),) = json.loads(grade)["turns"]
        assert [c["name"] for c in search] == ["search_engine_query"] and answer == []


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["native", "text"])
async def test_the_oracle_passes_all_800_entries_but_the_untellable_five(
    wheel: Path, tmp_path: Path, mode: str
) -> None:
    from workbench.eval.suites.bfcl import bfcl_dataset

    dataset = bfcl_dataset(MULTI_TURN, source=wheel)
    results, _ = await _through_runner(dataset, "bfcl-oracle", mode, tmp_path)
    assert len(results) == 800
    assert set(results.loc[~results["valid"].astype(bool), "item_id"]) == UNTELLABLE


def test_a_request_the_router_masked_is_read_through_the_masking(
    index: EntryIndex, entries: dict[str, Entry]
) -> None:
    """The runner masks personal data by default, and BFCL's dates read as phone numbers: the
    persona sees `#PHONE_0001` where the data says `2026-10-06`, in its own earlier calls too."""
    entry = entries["multi_turn_base_150"]
    (call,) = entry.truth[0]
    date = call.args["travel_date"]
    masked_args = {**call.args, "travel_date": "#PHONE_0001"}
    conv = Conversation(
        turns=[
            Turn("user", entry.turns[0]),
            Turn(
                "assistant",
                tool_calls=[{"id": "c1", "name": call.name, "arguments": json.dumps(masked_args)}],
            ),
            Turn("tool", '{"travel_cost_list": [220.0]}', tool_call_id="c1"),
        ],
        tools=[Tool(call.name)],
    )
    where = locate(conv, index)
    assert where is not None and where.entry.id == entry.id
    assert where.made == Counter({call.key: 1})  # the masked call is the one it made
    answer = play(FLEET.persona("bfcl-oracle"), conv, index)
    assert answer is not None and answer.text == DONE and not answer.calls
    assert same_text(entry.turns[0].replace(date, "#PHONE_0001"), entry.turns[0])
    assert not same_text("#PHONE_0001 somewhere else", entry.turns[0])


def test_agentic_questions_are_answered_from_bfcl_data_and_others_left_alone(
    index: EntryIndex,
) -> None:
    from workbench.sim.bfcl_agentic import SEARCH, agentic_index

    agentic = agentic_index()
    assert agentic is not None and len(agentic.memory) == 155 and len(agentic.web) == 100
    oracle = FLEET.persona("bfcl-oracle")
    asked = Conversation(turns=[Turn("user", "What is my first name?")])
    answer = play(oracle, asked, index)
    assert answer is not None and answer.text.startswith("{'answer': 'Michael', 'context': ")
    # A prerequisite turn, masked as a run masks it: an acknowledgement, no call.
    said = next(t for t in sorted(agentic.prerequisite) if "Michael" in t)
    told = Conversation(turns=[Turn("user", said.replace("Michael", "#PERSON_0001"))])
    answer = play(oracle, told, index)
    assert answer is not None and answer.text == NOTED and not answer.calls
    # Web search: one search when the function is offered, the answer once results are back.
    question, accepted = next(iter(agentic.web.items()))
    search = Conversation(turns=[Turn("user", question)], tools=[Tool(SEARCH)])
    answer = play(oracle, search, index)
    assert answer is not None and [c.name for c in answer.calls] == [SEARCH]
    search.turns += [
        Turn("assistant", tool_calls=[{"id": "s", "name": SEARCH, "arguments": "{}"}]),
        Turn("tool", "[]", tool_call_id="s"),
    ]
    answer = play(oracle, search, index)
    assert answer is not None and repr(accepted.answer) in answer.text and not answer.calls
    # A persona that plays no BFCL leaves them to the ordinary engine.
    assert play(FLEET.persona("sim-native"), asked, index) is None
