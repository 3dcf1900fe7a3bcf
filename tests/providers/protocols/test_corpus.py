"""The shared corpus of real prose tool calls: 200 outputs of open models served without a
tool parser, recorded from public parsers' tests and vendors' documentation, with the calls
each one means. Read through `strip_reasoning` then `read_text_tool_calls`, as the adapters
read a reply; streamed through the same filters, chunk by chunk.

The corpus lives beside the repository (never copied into it); without it these tests skip.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from workbench.providers.protocols import read_text_tool_calls, tool_schemas_from
from workbench.providers.protocols.prose_stream import ProtocolFilter
from workbench.providers.reasoning import ReasoningFilter, strip_reasoning

# $WORKBENCH_CORPUS (scripts/test sets it for a clone elsewhere), else beside the repository.
CORPUS = (
    Path(
        os.environ.get("WORKBENCH_CORPUS")
        or Path(__file__).resolve().parents[4] / "shared" / "corpus"
    )
    / "prose_tool_calls.jsonl"
)
ROWS: list[dict[str, Any]] = (
    [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    if CORPUS.exists()
    else []
)
pytestmark = pytest.mark.skipif(not ROWS, reason=f"corpus not found at {CORPUS}")

# The corpus's family names → the family our readers report. Several corpus families are one
# format to us (Hunyuan-A13B writes Jamba's; Granite 3.1's `<tool_call> [list]` is Hermes').
FAMILY = {
    "hermes": "hermes",
    "mistral": "mistral",
    "mistral_v11": "mistral",
    "llama3_json": "llama3_json",
    "pythonic": "pythonic",
    "llama4_pythonic": "llama4_pythonic",
    "olmo3": "olmo",
    "lfm2": "lfm2",
    "granite": "granite",
    "granite_20b_fc": "granite_20b",
    "internlm2": "internlm",
    "phi4mini": "phi4_mini",
    "xlam": "xlam",
    "jamba": "jamba",
    "hunyuan_a13b": "jamba",
    "minimax": "minimax",
    "minimax_m2": "minimax_m2",
    "longcat": "longcat",
    "deepseek_v3": "deepseek",
    "deepseek_v31": "deepseek",
    "deepseek_v32": "deepseek_dsml",
    "kimi_k2": "kimi",
    "step3": "step3",
    "qwen3coder": "qwen3_xml",
    "seed_oss": "seed_oss",
    "glm4_moe": "glm",
    "glm47": "glm",
    "hy_v3": "hunyuan",
    "gpt_oss": "harmony",
    "gigachat3": "gigachat",
    "apertus": "apertus",
    "functiongemma": "function_gemma",
    "gemma4": "gemma4",
    "gemma_tool_code": "gemma_tool_code",
    "cohere_command": "cohere",
}
# Rows where a recorded parser reads what our rules say is not a call: a call object in the
# middle of prose is data (the same shape as the corpus's own negative, a request quoted in a
# sentence). Kept as a test so that a change of rule is a decision, not an accident.
NOT_READ_ON_PURPOSE = {"llama3_json-06"}
# Rows whose expected family is not the corpus's: Granite 3.1 wraps its list in `<tool_call>`
# (Hermes' tag), xLAM after `[TOOL_CALLS]` or inside `<tool_call>` is those families' shape.
FAMILY_OF_ROW = {
    "granite-03": "hermes",
    "granite-06": "hermes",
    "xlam-04": "mistral",
    "xlam-05": "hermes",
}


def _read(row: dict[str, Any]) -> tuple[list[Any], str]:
    names = [t["function"]["name"] for t in row["tools"]]
    text = strip_reasoning(row["text"])
    return read_text_tool_calls(text, names, schemas=tool_schemas_from(row["tools"]))


def _calls(calls: list[Any]) -> list[str]:
    return [json.dumps({"name": c.name, "arguments": c.arguments}, sort_keys=True) for c in calls]


def _ids(kind: str) -> list[str]:
    if kind == "calls":
        return [r["id"] for r in ROWS if r["expect_calls"] and r["id"] not in NOT_READ_ON_PURPOSE]
    if kind == "none":
        return [r["id"] for r in ROWS if not r["expect_calls"]]
    return [r["id"] for r in ROWS if r["expect_content"] is not None]


BY_ID = {r["id"]: r for r in ROWS}


@pytest.mark.parametrize("row_id", _ids("calls") or ["-"])
def test_every_call_the_model_meant_is_read_with_its_family(row_id):
    row = BY_ID[row_id]
    calls, _ = _read(row)
    valid = [c for c in calls if not c.invalid]
    got, want = (
        _calls(valid),
        _calls(
            [
                type("C", (), {"name": c["name"], "arguments": c["arguments"]})
                for c in row["expect_calls"]
            ]
        ),
    )
    assert (got if row["ordered"] else sorted(got)) == (want if row["ordered"] else sorted(want))
    family = FAMILY_OF_ROW.get(row_id, FAMILY[row["family"]])
    assert {c.family for c in valid} == {family}
    assert all(c.source == "text" for c in calls)


@pytest.mark.parametrize("row_id", _ids("none") or ["-"])
def test_outputs_without_a_call_yield_no_valid_call(row_id):
    calls, _ = _read(BY_ID[row_id])
    assert [c for c in calls if not c.invalid] == []


@pytest.mark.parametrize("row_id", _ids("content") or ["-"])
def test_only_the_markup_leaves_the_text(row_id):
    row = BY_ID[row_id]
    _, rest = _read(row)
    # The corpus records content as its parser returns it, reasoning included; the adapters
    # take reasoning out first, so the expectation goes through the same step.
    assert rest == strip_reasoning(row["expect_content"]).strip()


def test_a_call_object_inside_prose_stays_prose():
    (row_id,) = NOT_READ_ON_PURPOSE
    calls, rest = _read(BY_ID[row_id])
    assert calls == []
    assert rest == BY_ID[row_id]["text"]


def _stream(names: list[str], text: str, cuts: list[int], reasoning: bool) -> list[str]:
    """What a reader is shown, piece by piece: through the reasoning filter (released at once)
    and the protocol filter, as the adapters stream, or the protocol filter alone."""
    think, protocol = ReasoningFilter(0), ProtocolFilter(names)
    shown, pos = [], 0
    for cut in [*sorted(cuts), len(text)]:
        piece, pos = text[pos:cut], max(pos, cut)
        shown.append(protocol.feed(think.feed(piece) if reasoning else piece))
    if reasoning:
        shown.append(protocol.feed(think.finish()))
    shown.append(protocol.finish())
    return shown


def _splits(text: str, seed: str) -> list[list[int]]:
    rng = random.Random(seed)
    some = [rng.sample(range(1, len(text)), min(6, len(text) - 1)) for _ in range(5)]
    return [list(range(1, len(text))), *some]  # one character at a time, and at random


def _never_takes_back(shown: list[str], final: str) -> None:
    so_far = ""
    for piece in shown:
        so_far += piece
        # Whatever was shown is where the final text begins: no markup was shown early.
        assert final.startswith(so_far), so_far
    assert so_far == final


@pytest.mark.parametrize("row_id", [r["id"] for r in ROWS] or ["-"])
def test_a_stream_split_anywhere_shows_exactly_the_final_text_and_never_takes_any_back(row_id):
    row = BY_ID[row_id]
    names = [t["function"]["name"] for t in row["tools"]]
    text = strip_reasoning(row["text"])
    final = read_text_tool_calls(text, names)[1]
    for cuts in _splits(text, row_id):
        _never_takes_back(_stream(names, text, cuts, reasoning=False), final)


@pytest.mark.parametrize(
    "row_id",
    # A lone close after visible text is the reasoning filter's documented trade-off.
    [r["id"] for r in ROWS if strip_reasoning("x " + r["text"]).startswith("x ")] or ["-"],
)
def test_reasoning_and_markup_together_stream_as_the_adapters_stream_them(row_id):
    row = BY_ID[row_id]
    names = [t["function"]["name"] for t in row["tools"]]
    final = read_text_tool_calls(strip_reasoning(row["text"]), names)[1]
    for cuts in _splits(row["text"], row_id):
        _never_takes_back(_stream(names, row["text"], cuts, reasoning=True), final)
