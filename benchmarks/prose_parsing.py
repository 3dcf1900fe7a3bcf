"""What reading prose tool calls costs per reply, every family on, next to the reader as it was
before the families (loaded from git at BASELINE_REV, the commit before them) in the same run.

Three sets of replies:

  no calls    the common case: 400 replies without a call — paragraphs, markdown lists and
              tables, ```python and ```json examples, JSON data in prose, HTML, a tool name
              mentioned — 40 to 4,000 characters, generated from a fixed seed; plus the shared
              corpus's 41 outputs without a call when ../shared/corpus is present;
  with calls  one reply per family (tests/providers/protocols/cases.py) and, with the corpus,
              its 159 real outputs with calls;
  streamed    the same two sets fed to the stream filter in 16-character chunks (as a server
              streams tokens), new filter against the old one.

With the corpus, also how many of its outputs each reader gets right, read as the adapters
read (after `strip_reasoning`, with the tools' schemas for the new one): calls (the valid
calls equal the expected ones, in order when the row says so), leftover text (equal to the
expected content, itself stripped of reasoning), and outputs without a call misread as one.

The figure to quote is µs per reply, new and old, and their ratio. One untimed warm-up, then
`--rounds` rounds alternating which reader goes first; each round reads every reply `--passes`
times; medians over rounds. Also: the share of no-call replies the one pre-scan lets through
to any family reader (the rest cost one regex search).

    .venv/bin/python benchmarks/prose_parsing.py [--rounds 7] [--passes 20]

Writes benchmarks/results/prose_parsing.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _sim_process import machine, write_json

from workbench.providers.protocols import read_text_tool_calls
from workbench.providers.protocols.families import _present
from workbench.providers.protocols.prose_stream import ProtocolFilter
from workbench.providers.reasoning import strip_reasoning

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = (
    Path(os.environ.get("WORKBENCH_CORPUS") or REPO.parent / "shared" / "corpus")
    / "prose_tool_calls.jsonl"
)
BASELINE_REV = "7f2378f"  # the last commit with the one-module reader
NAMES = ["get_weather", "search", "book_flight", "lookup_stock", "ping"]

sys.path.insert(0, str(REPO))
from tests.providers.protocols.cases import CASES  # noqa: E402


def _old_modules() -> tuple[Callable[..., Any], Callable[[list[str]], Any], Callable[[str], str]]:
    """The old reader and stream filter, from git, as modules of their own."""

    def load(path: str, name: str) -> types.ModuleType:
        src = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{BASELINE_REV}:{path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        spec = importlib.util.spec_from_loader(name, loader=None)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        exec(compile(src, f"{BASELINE_REV}:{path}", "exec"), module.__dict__)
        return module

    protocol = load("workbench/providers/protocol.py", "workbench.providers.protocol")
    reasoning = load("workbench/providers/reasoning.py", "_old_reasoning")
    return protocol.read_text_tool_calls, reasoning.ProtocolLineFilter, reasoning.strip_reasoning


def _prose(rng: random.Random) -> str:
    words = (
        "the a weather report city price flight train model tool answer data is was will "
        "can should because however and or of to in for with on at by from".split()
    )

    def sentence() -> str:
        n = rng.randint(6, 18)
        return " ".join(rng.choice(words) for _ in range(n)).capitalize() + rng.choice(".!?")

    parts = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        if kind < 0.45:
            parts.append(" ".join(sentence() for _ in range(rng.randint(1, 5))))
        elif kind < 0.6:
            parts.append("\n".join(f"- {sentence()}" for _ in range(rng.randint(2, 6))))
        elif kind < 0.68:
            parts.append("| city | temp |\n|---|---|\n| Paris | 18 |\n| Lyon | 21 |")
        elif kind < 0.76:
            parts.append('```python\nresult = get_weather(city="Paris")\nprint(result)\n```')
        elif kind < 0.84:
            parts.append('Here is the data: {"city": "Paris", "temp_c": 18}. ' + sentence())
        elif kind < 0.9:
            parts.append("<b>Note:</b> " + sentence() + " <i>(see [1])</i>")
        else:
            parts.append("You can use the get_weather tool for that. " + sentence())
    return "\n\n".join(parts)


def _sets(seed: int) -> dict[str, list[tuple[str, list[str]]]]:
    rng = random.Random(seed)
    plain = [(_prose(rng)[: rng.randint(40, 4000)], NAMES) for _ in range(400)]
    calls = [(c.text, NAMES) for c in CASES]
    if CORPUS.exists():
        for line in CORPUS.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            names = [t["function"]["name"] for t in row["tools"]]
            (calls if row["expect_calls"] else plain).append((row["text"], names))
    return {"no_calls": plain, "with_calls": calls}


def _accuracy(
    read: Callable[..., Any], strip_reasoning: Callable[[str], str], schemas: bool
) -> dict[str, str] | None:
    """Corpus rows read right, each reader after its own `strip_reasoning`."""
    from workbench.providers.protocols import tool_schemas_from

    if not CORPUS.exists():
        return None
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]

    def key(calls: list[dict[str, Any]]) -> list[str]:
        return [json.dumps(c, sort_keys=True) for c in calls]

    calls_ok = calls_n = text_ok = text_n = misread = negatives = 0
    for row in rows:
        names = [t["function"]["name"] for t in row["tools"]]
        kw = {"schemas": tool_schemas_from(row["tools"])} if schemas else {}
        calls, rest = read(strip_reasoning(row["text"]), names, **kw)
        got = key([{"name": c.name, "arguments": c.arguments} for c in calls if not c.invalid])
        want = key([{"name": c["name"], "arguments": c["arguments"]} for c in row["expect_calls"]])
        if row["expect_calls"]:
            calls_n += 1
            calls_ok += got == want if row["ordered"] else sorted(got) == sorted(want)
        else:
            negatives += 1
            misread += bool(got)
        if row["expect_content"] is not None:
            text_n += 1
            text_ok += rest.strip() == strip_reasoning(row["expect_content"]).strip()
    return {
        "calls_read_right": f"{calls_ok} of {calls_n}",
        "texts_right": f"{text_ok} of {text_n}",
        "outputs_without_a_call_misread": f"{misread} of {negatives}",
    }


def _time_read(
    read: Callable[..., Any], replies: list[tuple[str, list[str]]], passes: int
) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(passes):
        for text, names in replies:
            read(text, names)
    return (time.perf_counter() - start) / (passes * len(replies)) * 1e6


def _time_stream(
    make: Callable[[list[str]], Any], replies: list[tuple[str, list[str]]], passes: int
) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(passes):
        for text, names in replies:
            f = make(names)
            for i in range(0, len(text), 16):
                f.feed(text[i : i + 16])
            f.finish()
    return (time.perf_counter() - start) / (passes * len(replies)) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    try:
        old_read, old_filter, old_strip = _old_modules()
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"skipped: the baseline reader at {BASELINE_REV} is not in this git checkout ({e})")
        write_json("prose_parsing.json", {"skipped": str(e)})
        return 0
    sets = _sets(args.seed)
    through = sum(1 for text, _ in sets["no_calls"] if _present(text))
    jobs: dict[str, tuple[Callable[[], float], Callable[[], float]]] = {}
    for name, replies in sets.items():
        jobs[f"read {name}"] = (
            lambda r=replies: _time_read(read_text_tool_calls, r, args.passes),
            lambda r=replies: _time_read(old_read, r, args.passes),
        )
        jobs[f"stream {name}"] = (
            lambda r=replies: _time_stream(ProtocolFilter, r, max(1, args.passes // 4)),
            lambda r=replies: _time_stream(old_filter, r, max(1, args.passes // 4)),
        )
    for new, old in jobs.values():  # warm-up
        new(), old()
    results: dict[str, dict[str, Any]] = {}
    for label, (new, old) in jobs.items():
        news, olds = [], []
        for k in range(args.rounds):
            if k % 2:
                olds.append(old())
                news.append(new())
            else:
                news.append(new())
                olds.append(old())
        n, o = statistics.median(news), statistics.median(olds)
        results[label] = {
            "replies": len(sets[label.split(" ", 1)[1]]),
            "new_us": round(n, 2),
            "new_range_us": [round(min(news), 2), round(max(news), 2)],
            "old_us": round(o, 2),
            "old_range_us": [round(min(olds), 2), round(max(olds), 2)],
            "ratio_new_over_old": round(n / o, 2),
        }
    accuracy = {
        "new": _accuracy(read_text_tool_calls, strip_reasoning, True),
        "before": _accuracy(old_read, old_strip, False),
    }
    data = {
        "machine": machine(),
        "corpus_accuracy": accuracy,
        "settings": vars(args) | {"baseline": BASELINE_REV, "corpus": CORPUS.exists()},
        "no_call_replies_past_the_prescan": f"{through} of {len(sets['no_calls'])}",
        "results": results,
    }
    write_json("prose_parsing.json", data)
    print("| replies | n | new µs/reply [min–max] | before µs/reply [min–max] | new ÷ before |")
    print("|---|---:|---:|---:|---:|")
    for label, r in results.items():
        print(
            f"| {label} | {r['replies']} | {r['new_us']} [{r['new_range_us'][0]}–{r['new_range_us'][1]}]"
            f" | {r['old_us']} [{r['old_range_us'][0]}–{r['old_range_us'][1]}] | {r['ratio_new_over_old']} |"
        )
    print(
        f"\nNo-call replies that get past the one pre-scan to a family reader: {through} of {len(sets['no_calls'])}"
    )
    if accuracy["new"] is not None:
        print("\n| corpus | new | before |\n|---|---:|---:|")
        for k in accuracy["new"]:
            print(f"| {k.replace('_', ' ')} | {accuracy['new'][k]} | {accuracy['before'][k]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
