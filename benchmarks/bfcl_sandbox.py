"""What running BFCL's backends safely costs, each figure next to a baseline in the same run.

Two parts, on the `bfcl-eval` wheel that `workbench bfcl fetch` caches (or `--source`), over
the ground truth of every entry of the four multi-turn categories (800 entries):

  steps    every ground-truth call executed through one `BackendSandbox` (one worker,
           `reset` to each entry) against the same backend classes called in this process
           (instances made and results formatted as BFCL does, no worker). Figures: calls/s
           of each, the sandbox's time ÷ in-process; and a worker's start (process + imports
           + one entry loaded), the median over `--starts` fresh sandboxes.
  grading  `grade_multi_turn` (one shared two-sided sandbox) against BFCL's own
           `multi_turn_checker` (from the unpacked wheel, its backends run with its `eval`)
           on the same traces: each entry's ground truth, the same with its last call
           dropped, and with that call's name unknown. Every verdict is compared first.

One untimed warm-up, then `--rounds` rounds alternating which way goes first; medians.

    .venv/bin/python benchmarks/bfcl_sandbox.py [--rounds 3] [--starts 10] [--source WHEEL]

Writes benchmarks/results/bfcl_sandbox.json and prints Markdown tables. Without the wheel it
says so on one line and exits 0. Exit status 1 if a verdict disagrees with BFCL's.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import inspect
import itertools
import json
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _sim_process import machine, write_json

from workbench.errors import ConfigError
from workbench.eval.suites.bfcl.backends import (
    CLASS_MODULES,
    STATELESS,
    BackendCall,
    backends_root,
)
from workbench.eval.suites.bfcl.case import MULTI_TURN_CATEGORIES, BfclEntry
from workbench.eval.suites.bfcl.loader import bfcl_dataset
from workbench.eval.suites.bfcl.multi_turn_checker import grade_multi_turn, grading_sides
from workbench.eval.suites.bfcl.sandbox import BackendSandbox
from workbench.eval.suites.bfcl.source import VERSION, open_source

JSON_NAME = "bfcl_sandbox.json"
Trace = list[list[list[BackendCall]]]


def alternating(
    a: Callable[[], object], b: Callable[[], object], rounds: int
) -> tuple[float, float]:
    a()
    b()
    ta: list[float] = []
    tb: list[float] = []
    for r in range(rounds):
        for fn, into in ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta)):
            t0 = time.perf_counter()
            fn()
            into.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


# ------------------------------------------------------------------ steps


def in_process(entries: list[BfclEntry], calls: list[list[BackendCall]]) -> None:
    """The baseline: BFCL's backends in this process, dispatched as the sandbox's worker
    dispatches (by name to a public method), results formatted as BFCL formats them."""
    for entry, entry_calls in zip(entries, calls, strict=True):
        methods: dict[str, Any] = {}
        for name in entry.involved_classes:
            instance = getattr(importlib.import_module(CLASS_MODULES[name]), name)()
            if name not in STATELESS:
                instance._load_scenario(
                    copy.deepcopy(entry.initial_config.get(name, {})),
                    long_context=entry.long_context,
                )
            for method, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method.startswith("_"):
                    methods[method] = instance
        for call in entry_calls:
            try:
                result = getattr(methods[call.name], call.name)(*call.args, **call.kwargs)
                text = json.dumps(result) if type(result) is dict else str(result)
            except Exception as exc:
                text = f"Error during execution: {exc}"
            del text


def through_sandbox(
    sandbox: BackendSandbox, entries: list[BfclEntry], calls: list[list[BackendCall]]
) -> None:
    for entry, entry_calls in zip(entries, calls, strict=True):
        sandbox.reset(entry)
        sandbox.execute(entry_calls)


def steps_part(entries: list[BfclEntry], rounds: int, starts: int) -> dict[str, Any]:
    calls = [[BackendCall.parse(t) for turn in e.ground_truth for t in turn] for e in entries]
    n = sum(len(c) for c in calls)
    backends_root()  # extracted before the timing
    with BackendSandbox(entries[0]) as sandbox:
        sandboxed_s, in_process_s = alternating(
            lambda: through_sandbox(sandbox, entries, calls),
            lambda: in_process(entries, calls),
            rounds,
        )
    start_times = []
    for entry in itertools.islice(itertools.cycle(entries), starts):
        t0 = time.perf_counter()
        BackendSandbox(entry).close()
        start_times.append(time.perf_counter() - t0)
    return {
        "entries": len(entries),
        "calls": n,
        "sandbox_s": round(sandboxed_s, 4),
        "sandbox_calls_per_s": round(n / sandboxed_s, 1),
        "in_process_s": round(in_process_s, 4),
        "in_process_calls_per_s": round(n / in_process_s, 1),
        "sandbox_over_in_process": round(sandboxed_s / in_process_s, 2),
        "worker_start_ms": round(statistics.median(start_times) * 1000, 1),
    }


# ------------------------------------------------------------------ grading


def unpack(wheel: Path, into: Path) -> None:
    """BFCL's package importable here (never installed): the in-process baseline's backends
    and BFCL's checker come from it."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(into, [n for n in z.namelist() if n.startswith("bfcl_eval/")])
    sys.path.insert(0, str(into))


def bfcl_checker() -> Callable[..., dict[str, Any]]:
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (  # type: ignore[import-not-found]
        multi_turn_checker,
    )

    return multi_turn_checker  # type: ignore[no-any-return]


def traces(entry: BfclEntry) -> list[Trace]:
    truth: Trace = [
        [[BackendCall.parse(t) for t in turn]] if turn else [] for turn in entry.ground_truth
    ]
    out = [truth]
    last = max((t for t, turn in enumerate(truth) if turn), default=None)
    if last is not None:
        dropped = copy.deepcopy(truth)
        gone = dropped[last][0].pop()
        if not dropped[last][0]:
            dropped[last] = []
        unknown = copy.deepcopy(truth)
        unknown[last][0][-1] = BackendCall("no_such_function", (), dict(gone.kwargs))
        out += [dropped, unknown]
    return out


def grading_part(entries: list[BfclEntry], rounds: int) -> dict[str, Any]:
    work = [(e, t) for e in entries for t in traces(e)]
    counter = itertools.count()
    checker = bfcl_checker()

    def theirs(entry: BfclEntry, trace: Trace) -> tuple[bool, str | None]:
        got = checker(
            [[[c.text() for c in step] for step in turn] for turn in trace],
            [list(turn) for turn in entry.ground_truth],
            {
                "id": entry.id,
                "initial_config": entry.initial_config,
                "involved_classes": list(entry.involved_classes),
            },
            entry.category,
            f"bench_{next(counter)}",  # BFCL keeps instances in globals() by this name
        )
        return got["valid"], got.get("error_type")

    with BackendSandbox(entries[0], sides=grading_sides()) as sandbox:
        disagreements = []
        for entry, trace in work:
            ours = grade_multi_turn(entry, trace, sandbox=sandbox)
            if (ours.valid, ours.error_type) != theirs(entry, trace):
                disagreements.append(entry.id)
        ours_s, theirs_s = alternating(
            lambda: [grade_multi_turn(e, t, sandbox=sandbox) for e, t in work],
            lambda: [theirs(e, t) for e, t in work],
            rounds,
        )
    return {
        "traces": len(work),
        "disagreements": len(disagreements),
        "disagreement_examples": disagreements[:5],
        "workbench_s": round(ours_s, 4),
        "workbench_traces_per_s": round(len(work) / ours_s, 1),
        "bfcl_s": round(theirs_s, 4),
        "bfcl_traces_per_s": round(len(work) / theirs_s, 1),
        "workbench_over_bfcl": round(ours_s / theirs_s, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--starts", type=int, default=10, help="fresh sandboxes timed (default 10)")
    ap.add_argument("--source", help="a bfcl-eval wheel (default: the cached one)")
    args = ap.parse_args()
    command = f"benchmarks/bfcl_sandbox.py --rounds {args.rounds} --starts {args.starts}"
    base: dict[str, Any] = {"benchmark": "bfcl_sandbox", "command": command, "machine": machine()}
    try:
        source = open_source(args.source)
        reason = "" if source.wheel else f"{source.where}: BFCL's checker needs the wheel"
    except ConfigError as exc:
        reason = str(exc)
    if reason:
        print(f"bfcl_sandbox: skipped: {reason}")
        write_json(JSON_NAME, base | {"skipped": reason})
        return 0
    dataset = bfcl_dataset(",".join(MULTI_TURN_CATEGORIES), source=source)
    entries = [i.expect.bfcl for i in dataset.items if isinstance(i.expect.bfcl, BfclEntry)]
    with tempfile.TemporaryDirectory() as tmp:
        unpack(source.where, Path(tmp))
        steps = steps_part(entries, args.rounds, args.starts)
        grading = grading_part(entries, args.rounds)
    ok = grading["disagreements"] == 0
    write_json(
        JSON_NAME, base | {"bfcl_eval": VERSION, "steps": steps, "grading": grading, "ok": ok}
    )

    print(
        f"bfcl-eval {VERSION}; {steps['entries']} multi-turn entries; median of {args.rounds} rounds.\n"
    )
    print("| steps | calls | s | calls/s | ÷ in-process |")
    print("|---|--:|--:|--:|--:|")
    print(
        f"| through the sandbox | {steps['calls']:,} | {steps['sandbox_s']:.3f} "
        f"| {steps['sandbox_calls_per_s']:,.0f} | {steps['sandbox_over_in_process']:.2f}× |"
    )
    print(
        f"| in-process | {steps['calls']:,} | {steps['in_process_s']:.3f} "
        f"| {steps['in_process_calls_per_s']:,.0f} | 1.00× |"
    )
    print(f"\nA worker's start (process, imports, one entry): {steps['worker_start_ms']} ms.\n")
    print("| grading | traces | s | traces/s | ÷ BFCL | disagreements |")
    print("|---|--:|--:|--:|--:|--:|")
    print(
        f"| `grade_multi_turn` | {grading['traces']:,} | {grading['workbench_s']:.3f} "
        f"| {grading['workbench_traces_per_s']:,.0f} | {grading['workbench_over_bfcl']:.2f}× "
        f"| {grading['disagreements']} |"
    )
    print(
        f"| BFCL's `multi_turn_checker` | {grading['traces']:,} | {grading['bfcl_s']:.3f} "
        f"| {grading['bfcl_traces_per_s']:,.0f} | 1.00× | |"
    )
    for example in grading["disagreement_examples"]:
        print(f"DISAGREE {example}")
    print(f"\nchecks: {'OK' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
