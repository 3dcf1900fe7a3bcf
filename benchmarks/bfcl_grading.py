"""How fast workbench loads and grades BFCL, each figure next to a baseline measured in the run.

Two parts, both on the `bfcl-eval` wheel that `workbench bfcl fetch` caches (or `--source`):

  load     `bfcl_dataset(<all 13 single-turn categories>)`: seconds and items/s, against
           merely `json.loads` of every line of the same files read from the same zip (the
           question file of each category, the possible-answer file of each AST one). The
           figure to quote is the ratio load ÷ raw parse.
  grading  `grade_calls` over every item of the 10 AST categories, in two passes:
             right      each expected call, its parameters at the first allowed value
                        (the optional marker "" skipped);
             perturbed  the same, with one value changed per item (the first call that has
                        arguments; the parameter picked by the item's index; int +1, float
                        +1.5, bool flipped, str + "x", list + its first element, dict + a key;
                        Java/JavaScript source text: a number +1, true/false flipped, else + "x";
                        an item whose calls take no arguments gets an unexpected one).
           The baseline is BFCL's own `ast_checker` on the same calls, imported from the wheel
           (zipimport, never installed; the one heavy module, its model table, stubbed). Every
           verdict is compared first (valid, and the error type when invalid): any disagreement
           is a failed check. Figures: calls/s and items/s of each, and BFCL's time ÷ ours.

Each part: one untimed warm-up, then `--rounds` rounds, the two ways alternating which goes
first; a grading round grades every item `--passes` times (one pass is ~50 ms, too short to
time alone); every figure is the median over rounds. Pure CPU, one process.

    .venv/bin/python benchmarks/bfcl_grading.py [--rounds 5] [--passes 5] [--source WHEEL]

Writes benchmarks/results/bfcl_grading.json and prints Markdown tables. Without the wheel it
says so on one line and exits 0 (the JSON then only says it was skipped). Exit status 1 if
any verdict disagrees with BFCL's or BFCL's checker raises.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import statistics
import sys
import time
import types
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _sim_process import machine, write_json

from workbench.errors import ConfigError
from workbench.eval.suites.bfcl.case import CATEGORIES, BfclCase, kind_of
from workbench.eval.suites.bfcl.checker import grade_calls
from workbench.eval.suites.bfcl.loader import bfcl_dataset
from workbench.eval.suites.bfcl.source import PREFIX, VERSION, open_source

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
JSON_PATH = RESULTS / "bfcl_grading.json"
_DATA = "bfcl_eval/data/"  # where the wheel keeps BFCL's files

Calls = list[dict[str, dict[str, Any]]]


# ------------------------------------------------------------------ BFCL's own checker


def bfcl_checker(wheel: Path) -> tuple[Callable[..., dict[str, Any]], dict[str, Any]]:
    """BFCL's `ast_checker` and its language enum by our language names, from the wheel.
    `bfcl_eval.constants.model_config` imports every model handler BFCL has, and with them
    the vendor SDKs the wheel depends on (none installed here); the checker only reads `MODEL_CONFIG_MAPPING[model].underscore_to_dot`, so a stub with one
    model, "oracle", that keeps dotted names (calls here carry BFCL's own names) stands in."""
    sys.path.insert(0, str(wheel))
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {"oracle": types.SimpleNamespace(underscore_to_dot=False)}  # type: ignore[attr-defined]
    # the package first, so that the stub is then found as its submodule
    import bfcl_eval.constants  # type: ignore[import-not-found]  # noqa: F401

    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language  # type: ignore[import-not-found]
    from bfcl_eval.eval_checker.ast_eval.ast_checker import (  # type: ignore[import-not-found]
        ast_checker,
    )

    languages = {
        "python": Language.PYTHON,
        "java": Language.JAVA,
        "javascript": Language.JAVASCRIPT,
    }
    return ast_checker, languages


# ------------------------------------------------------------------ the calls graded


def right_calls(case: BfclCase) -> Calls:
    """Every expected call, each parameter at its first allowed value ("" = optional, skipped)."""
    out: Calls = []
    for answer in case.ground_truth:
        name, params = next(iter(answer.items()))
        args = {}
        for param, allowed in params.items():
            values = [v for v in allowed if v != ""]
            if values:
                args[param] = copy.deepcopy(values[0])
        out.append({name: args})
    return out


def changed(value: Any, language: str) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        if language != "python":  # Java/JavaScript values are source text
            if value in ("true", "false"):
                return "false" if value == "true" else "true"
            for number in (int, float):
                try:
                    return repr(number(value) + 1)
                except ValueError:
                    pass
        return value + "x"
    if isinstance(value, list):
        return value + value[:1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "extra_key": 1}
    return "x"


def perturbed_calls(case: BfclCase, index: int) -> Calls:
    """`right_calls` with one value changed: in the first call that has arguments, the
    parameter `index` picks (sorted names); calls without arguments get an unexpected one."""
    out = right_calls(case)
    for call in out:
        args = next(iter(call.values()))
        if args:
            param = sorted(args)[index % len(args)]
            args[param] = changed(args[param], case.language)
            return out
    next(iter(out[0].values()))["unexpected_param"] = 1
    return out


# ------------------------------------------------------------------ timing


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def alternating(
    a: Callable[[], object], b: Callable[[], object], rounds: int
) -> tuple[list[float], list[float]]:
    """One warm-up of each, then `rounds` rounds, a first in even rounds and b first in odd."""
    a()
    b()
    ta: list[float] = []
    tb: list[float] = []
    for r in range(rounds):
        if r % 2 == 0:
            ta.append(timed(a))
            tb.append(timed(b))
        else:
            tb.append(timed(b))
            ta.append(timed(a))
    return ta, tb


# ------------------------------------------------------------------ the parts


def load_part(wheel: Path, rounds: int) -> dict[str, Any]:
    files = [f"{PREFIX}{c}.json" for c in CATEGORIES]
    files += [f"possible_answer/{PREFIX}{c}.json" for c in CATEGORIES if kind_of(c) == "ast"]
    names = ",".join(CATEGORIES)
    records = 0

    def raw() -> None:
        nonlocal records
        n = 0
        with zipfile.ZipFile(wheel) as z:
            for name in files:
                for line in z.read(_DATA + name).decode("utf-8").splitlines():
                    if line.strip():
                        json.loads(line)
                        n += 1
        records = n

    def load() -> None:
        bfcl_dataset(names, source=wheel)

    dataset = bfcl_dataset(names, source=wheel)
    items = len(dataset.items)
    with zipfile.ZipFile(wheel) as z:
        size = sum(z.getinfo(_DATA + f).file_size for f in files)
    t_load, t_raw = alternating(load, raw, rounds)
    load_s, raw_s = statistics.median(t_load), statistics.median(t_raw)
    return {
        "categories": len(CATEGORIES),
        "files": len(files),
        "bytes": size,
        "items": items,
        "records_parsed": records,
        "per_category": dict(Counter(i.category for i in dataset.items)),
        "load_s": round(load_s, 4),
        "load_items_per_s": round(items / load_s, 1),
        "raw_s": round(raw_s, 4),
        "raw_items_per_s": round(items / raw_s, 1),
        "load_over_raw": round(load_s / raw_s, 2),
        "load_s_all": [round(t, 4) for t in t_load],
        "raw_s_all": [round(t, 4) for t in t_raw],
    }


def grading_part(wheel: Path, rounds: int, passes_per_round: int) -> dict[str, Any]:
    ast_checker, languages = bfcl_checker(wheel)
    dataset = bfcl_dataset(",".join(CATEGORIES), source=wheel)
    cases = [
        case
        for item in dataset.items
        if item.expect is not None
        and isinstance(case := item.expect.bfcl, BfclCase)
        and case.kind == "ast"
    ]
    passes = {
        "right": [right_calls(c) for c in cases],
        "perturbed": [perturbed_calls(c, i) for i, c in enumerate(cases)],
    }
    # BFCL's arguments built once, outside the timing: docs, possible answers, language.
    theirs_args = [
        (list(c.functions), list(c.ground_truth), languages[c.language], c.category) for c in cases
    ]
    out: dict[str, Any] = {
        "items": len(cases),
        "categories": sorted({c.category for c in cases}),
        "passes": {},
    }
    for label, all_calls in passes.items():
        snapshot = copy.deepcopy(all_calls)
        n_calls = sum(len(calls) for calls in all_calls)
        disagreements: list[dict[str, Any]] = []
        crashes: list[dict[str, Any]] = []
        verdicts: Counter[str] = Counter()
        for case, calls, (funcs, truth, lang, cat) in zip(
            cases, all_calls, theirs_args, strict=True
        ):
            ours = grade_calls(case, calls)
            try:
                theirs = ast_checker(funcs, calls, truth, lang, cat, "oracle")
            except Exception as exc:  # a crash of BFCL's checker is a failed check too
                crashes.append({"id": case.id, "error": repr(exc)[:300]})
                continue
            their_type = None if theirs["valid"] else theirs.get("error_type")
            verdicts[their_type or "valid"] += 1
            if ours.valid != theirs["valid"] or (not ours.valid and ours.error_type != their_type):
                disagreements.append(
                    {"id": case.id, "calls": calls, "ours": ours.error_type, "bfcl": their_type}
                )

        def ours_all(all_calls: list[Calls] = all_calls) -> None:
            for _ in range(passes_per_round):
                for case, calls in zip(cases, all_calls, strict=True):
                    grade_calls(case, calls)

        def theirs_all(all_calls: list[Calls] = all_calls) -> None:
            for _ in range(passes_per_round):
                for calls, (funcs, truth, lang, cat) in zip(all_calls, theirs_args, strict=True):
                    ast_checker(funcs, calls, truth, lang, cat, "oracle")

        if crashes:  # BFCL cannot be timed over calls it raises on
            t_ours, t_theirs = alternating(ours_all, lambda: None, rounds)
        else:
            t_ours, t_theirs = alternating(ours_all, theirs_all, rounds)
        # seconds for one pass over the items: a round grades them `passes_per_round` times
        ours_s = statistics.median(t_ours) / passes_per_round
        theirs_s = statistics.median(t_theirs) / passes_per_round
        out["passes"][label] = {
            "calls": n_calls,
            "valid": verdicts["valid"],
            "verdicts": dict(verdicts.most_common()),
            "disagreements": len(disagreements),
            "disagreement_examples": disagreements[:5],
            "bfcl_crashes": len(crashes),
            "bfcl_crash_examples": crashes[:5],
            "inputs_unchanged": all_calls == snapshot,
            "workbench_s": round(ours_s, 5),
            "workbench_calls_per_s": round(n_calls / ours_s, 1),
            "workbench_items_per_s": round(len(cases) / ours_s, 1),
            "bfcl_s": None if crashes else round(theirs_s, 5),
            "bfcl_calls_per_s": None if crashes else round(n_calls / theirs_s, 1),
            "bfcl_items_per_s": None if crashes else round(len(cases) / theirs_s, 1),
            "bfcl_over_workbench": None if crashes else round(theirs_s / ours_s, 2),
            "workbench_s_all": [round(t / passes_per_round, 5) for t in t_ours],
            "bfcl_s_all": None if crashes else [round(t / passes_per_round, 5) for t in t_theirs],
        }
    return out


# ------------------------------------------------------------------ main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per part (default 5)")
    ap.add_argument(
        "--passes",
        type=int,
        default=5,
        help="grading passes over the items in one timed round (default 5)",
    )
    ap.add_argument(
        "--source", help="a bfcl-eval wheel (default: the one `workbench bfcl fetch` cached)"
    )
    args = ap.parse_args()
    if args.rounds < 1 or args.passes < 1:
        ap.error("--rounds and --passes must be >= 1")
    command = (
        "benchmarks/bfcl_grading.py "
        + f"--rounds {args.rounds} --passes {args.passes}"
        + (f" --source {args.source}" if args.source else "")
    )
    base: dict[str, Any] = {"benchmark": "bfcl_grading", "command": command, "machine": machine()}
    try:
        source = open_source(args.source)
    except ConfigError as exc:
        reason = str(exc)
    else:
        reason = (
            ""
            if source.wheel
            else f"{source.where} is a data folder: BFCL's checker needs the wheel"
        )
    if reason:
        print(f"bfcl_grading: skipped: {reason}")
        write_json(JSON_PATH.name, base | {"skipped": reason})
        return 0
    wheel = source.where

    load = load_part(wheel, args.rounds)
    grading = grading_part(wheel, args.rounds, args.passes)
    ok = all(
        p["disagreements"] == 0 and p["bfcl_crashes"] == 0 and p["inputs_unchanged"]
        for p in grading["passes"].values()
    )
    write_json(
        JSON_PATH.name,
        base
        | {
            "wheel": str(wheel),
            "bfcl_eval": VERSION,
            "rounds": args.rounds,
            "passes": args.passes,
            "load": load,
            "grading": grading,
            "ok": ok,
        },
    )

    print(f"bfcl-eval {VERSION} wheel: {wheel}; median of {args.rounds} rounds.\n")
    print(
        f"Load: {load['categories']} categories, {load['files']} files, "
        f"{load['bytes'] / 1e6:.1f} MB, {load['items']:,} items.\n"
    )
    print("| way | s | items/s | ÷ raw |")
    print("|---|--:|--:|--:|")
    print(
        f"| `bfcl_dataset` (all 13) | {load['load_s']:.3f} | {load['load_items_per_s']:,.0f} "
        f"| {load['load_over_raw']:.2f}× |"
    )
    print(
        f"| raw: zip read + `json.loads` per line | {load['raw_s']:.3f} "
        f"| {load['raw_items_per_s']:,.0f} | 1.00× |"
    )
    print(
        f"\nGrading: {grading['items']:,} items of the {len(grading['categories'])} AST "
        f"categories, {args.passes} passes over them per round.\n"
    )
    print(
        "| pass | calls | BFCL valid | workbench calls/s | items/s | BFCL calls/s | items/s "
        "| BFCL s ÷ ours | disagreements | BFCL crashes |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for label, p in grading["passes"].items():
        bfcl = (
            f"{p['bfcl_calls_per_s']:,.0f} | {p['bfcl_items_per_s']:,.0f} | {p['bfcl_over_workbench']:.2f}×"
            if p["bfcl_s"] is not None
            else "— | — | —"
        )
        print(
            f"| {label} | {p['calls']:,} | {p['valid']:,} | {p['workbench_calls_per_s']:,.0f} "
            f"| {p['workbench_items_per_s']:,.0f} | {bfcl} | {p['disagreements']} "
            f"| {p['bfcl_crashes']} |"
        )
    for label, p in grading["passes"].items():
        for d in p["disagreement_examples"]:
            print(f"DISAGREE {label} {d['id']}: ours {d['ours']}, BFCL {d['bfcl']}")
        for c in p["bfcl_crash_examples"]:
            print(f"BFCL CRASH {label} {c['id']}: {c['error']}")
        if not p["inputs_unchanged"]:
            print(f"FAIL {label}: the calls changed while being graded")
    print(f"\nchecks: {'OK' if ok else 'FAIL'}; written: {JSON_PATH.relative_to(REPO)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
