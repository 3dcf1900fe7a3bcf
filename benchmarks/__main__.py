"""One command for the headline benchmarks, each script run N times, side by side.

    python -m benchmarks [--quick] [--repeats N] [--no-litellm] [--no-inspect]

Runs, from the repository root, each script below as a subprocess with its own flags, reads
the JSON it writes under benchmarks/results/, and reports every figure as the median over the
N runs of the script with its spread [min–max]:

  router_overhead.py     per-call µs: bare httpx, workbench Router.route, LiteLLM Router
  runner_throughput.py   run_prompt_set items/s at concurrency 1, 8, 32, 128 (and direct calls/s)
  duckdb_logging.py      Store.write attempt rows/s
  redis_reservations.py  RedisQuota / MemoryQuota reservations/s
  masker_throughput.py   ReversibleMasker mask / unmask MB/s
  cleaner_throughput.py  ResponseCleaner.clean MB/s
  bfcl_grading.py        BFCL load time ÷ raw JSON parse; grade_calls vs BFCL's ast_checker calls/s
  prose_parsing.py       prose tool-call reading µs/reply, every family vs the reader before them
  runner_ceiling.py      whole processes: raw aiohttp/httpx requests/s, `workbench run`
                         items/s, journal cost, Inspect AI's `inspect eval` items/s, start-up
  rate_limits.py         `workbench run` and `inspect eval` under a free-tier quota the providers
                         file does not name: wall ÷ the quota-bound minimum, answered, 429s
                         (run once, in the first round: minutes of real rate-limit windows)
  batch_cost.py          the smoke set and bfcl:simple_python with and without --batch: cost
                         from the providers file's prices, and the wall time a batch adds

The runs are interleaved (run 1 of every script, then run 2 of every script, …) so that drift
of the machine falls on all of them alike. Writes benchmarks/results/<YYYY-MM-DD>.md (the
report) and .json (settings, machine, commands, every run's figures and the aggregates).
--quick: one run of each, smaller sizes (a smoke test of the whole set, ~4 min, of which
rate_limits.py's two one-minute windows take ~2.5).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"

Metrics = dict[str, float]


# ------------------------------------------------------------------ what each script gives


def _router(d: dict[str, Any]) -> Metrics:
    wb, ll, der = d["workbench_process"], d.get("litellm_process"), d["derived"]
    m = {
        "bare_wb": wb["bare"]["median_us"],
        "workbench": wb["workbench"]["median_us"],
        "workbench_added": der["workbench Router.route"]["added_us_median"],
        "workbench_ratio": der["workbench Router.route"]["ratio_median"],
    }
    if ll:
        m |= {
            "bare_ll": ll["bare"]["median_us"],
            "litellm": ll["litellm"]["median_us"],
            "litellm_added": der["litellm Router.acompletion"]["added_us_median"],
            "litellm_ratio": der["litellm Router.acompletion"]["ratio_median"],
        }
        if d.get("litellm_over_workbench_added") is not None:
            m["ll_over_wb"] = d["litellm_over_workbench_added"]
    return m


def _runner(d: dict[str, Any]) -> Metrics:
    m: Metrics = {}
    for r in d["levels"]:
        c = r["concurrency"]
        m |= {
            f"{c}|runner": r["runner_items_per_s"],
            f"{c}|direct": r["direct_items_per_s"],
            f"{c}|ratio": r["ratio"],
        }
    return m


def _duckdb(d: dict[str, Any]) -> Metrics:
    return {"rows_per_s": d["store"]["rows_per_s"]}


def _redis(d: dict[str, Any]) -> Metrics:
    return {f"{r['store']}|{r['level']}": r["per_s"] for r in d["results"]}


def _masker(d: dict[str, Any]) -> Metrics:
    m: Metrics = {}
    for r in d["throughput"]:
        mb = r["chars"] / 1e6
        for what in ("mask", "unmask", "stream_unmask"):
            m[f"{r['names']}|{what}"] = mb / r[f"{what}_s"]
    return m


def _cleaner(d: dict[str, Any]) -> Metrics:
    return {f"{r['input']}|{r['cleaner']}": r["median_mb_s"] for r in d["rows"]}


def _bfcl(d: dict[str, Any]) -> Metrics:
    if d.get("skipped"):  # no wheel cached: no figures, and not a failure
        return {}
    load = d["load"]
    m: Metrics = {
        "load_s": load["load_s"],
        "load_items_per_s": load["load_items_per_s"],
        "raw_s": load["raw_s"],
        "load_over_raw": load["load_over_raw"],
    }
    for name, p in d["grading"]["passes"].items():
        m[f"{name}|disagreements"] = p["disagreements"] + p["bfcl_crashes"]
        m[f"{name}|wb_calls"] = p["workbench_calls_per_s"]
        m[f"{name}|wb_items"] = p["workbench_items_per_s"]
        if p["bfcl_s"] is not None:
            m[f"{name}|bfcl_calls"] = p["bfcl_calls_per_s"]
            m[f"{name}|bfcl_over_wb"] = p["bfcl_over_workbench"]
    return m


def _prose(d: dict[str, Any]) -> Metrics:
    if d.get("skipped"):  # not a git checkout: no baseline to compare with
        return {}
    m: Metrics = {}
    for label, r in d["results"].items():
        m[f"{label}|new"] = r["new_us"]
        m[f"{label}|old"] = r["old_us"]
        m[f"{label}|ratio"] = r["ratio_new_over_old"]
    return m


def _ceiling(d: dict[str, Any]) -> Metrics:
    m: Metrics = {}

    def put(key: str, value: Any) -> None:
        if isinstance(value, int | float):
            m[key] = value

    for kind, levels in d["clients"].items():
        for c, r in levels.items():
            put(f"client|{kind}|{c}", r["per_s"])
    for c, r in d["runner"].items():
        put(f"runner|{c}|corrected", r["corrected_per_s"])
        put(f"runner|{c}|raw", r["raw_per_s"])
        put(f"runner|{c}|own", r["own_per_s"])
        for kind, ratio in r["over_client"].items():
            put(f"ratio|{kind}|{c}", ratio)
    put("runner_128_over_32", d["runner_128_over_32"])
    for mode, r in d["journal"]["modes"].items():
        put(f"journal|{mode}", r["corrected_per_s"])
    put("journal|fsync_over_off", d["journal"].get("fsync_over_off"))
    put("journal|write_over_off", d["journal"].get("write_over_off"))
    for c, r in d["inspect"]["levels"].items():
        put(f"inspect|{c}|corrected", r["corrected_per_s"])
        put(f"inspect|{c}|raw", r["raw_per_s"])
        put(f"inspect|{c}|wb_over", r.get("workbench_over_inspect"))
        put(f"inspect|{c}|wb_over_raw", r.get("workbench_over_inspect_raw"))
    for what, seconds in d["startup"].items():
        put(f"startup|{what}", seconds)
    return m


def _rate_limits(d: dict[str, Any]) -> Metrics:
    m: Metrics = {}
    for r in d["runs"]:
        key = f"{r['persona']}|{r['tool']}"
        m[f"{key}|wall_over_min"] = r["wall_over_minimum"]
        if r["span_over_minimum"] is not None:
            m[f"{key}|span_over_min"] = r["span_over_minimum"]
        m[f"{key}|answered"] = r["answered"]
        m[f"{key}|n"] = r["n"]
        m[f"{key}|429s"] = r["status_429"]
    return m


def _batch_cost(d: dict[str, Any]) -> Metrics:
    m: Metrics = {"batch_available": float(d["batch_available"])}
    for name, r in d["sets"].items():
        for mode in ("sync", "batch"):
            row = r[mode]
            if isinstance(row, dict) and "cost_usd" in row:
                m[f"{name}|{mode}|cost"] = row["cost_usd"]
                m[f"{name}|{mode}|wall"] = row["wall_s"]
                m[f"{name}|{mode}|answered"] = row["answered"]
                m[f"{name}|{mode}|outputs"] = row["outputs"]
        if "batch_over_sync_cost" in r:
            m[f"{name}|ratio"] = r["batch_over_sync_cost"]
            m[f"{name}|adds_s"] = r["batch_adds_s"]
    return m


@dataclass
class Bench:
    name: str
    script: str
    json_name: str
    default: list[str]
    quick: list[str]
    extract: Callable[[dict[str, Any]], Metrics]
    once: bool = False  # run in the first round only (too long to repeat)


BENCHES = [
    Bench("router_overhead", "router_overhead.py", "router_overhead.json",
          [], ["--n", "100", "--block", "25", "--warmup", "10"], _router),
    Bench("runner_throughput", "runner_throughput.py", "runner_throughput.json",
          ["--levels", "1,8,32,128"],
          ["--levels", "1,8,32,128", "--repeats", "5", "--rounds", "1"], _runner),
    Bench("duckdb_logging", "duckdb_logging.py", "duckdb_logging.json",
          ["--no-compare"], ["--n", "20000", "--no-compare"], _duckdb),
    Bench("redis_reservations", "redis_reservations.py", "redis_reservations.json",
          [], ["--seconds", "1", "--warmup", "0.2"], _redis),
    Bench("masker_throughput", "masker_throughput.py", "masker.json",
          [], ["--size-mb", "0.25", "--repeats", "1"], _masker),
    Bench("cleaner_throughput", "cleaner_throughput.py", "cleaner.json",
          [], ["--size", "250000", "--repeat", "1"], _cleaner),
    Bench("bfcl_grading", "bfcl_grading.py", "bfcl_grading.json",
          [], ["--rounds", "1", "--passes", "1"], _bfcl),
    Bench("prose_parsing", "prose_parsing.py", "prose_parsing.json",
          [], ["--rounds", "1", "--passes", "2"], _prose),
    Bench("runner_ceiling", "runner_ceiling.py", "runner_ceiling.json",
          ["--rounds", "1"], ["--n", "300", "--rounds", "1"], _ceiling),
    Bench("rate_limits", "rate_limits.py", "rate_limits.json",
          [], ["--quick"], _rate_limits, once=True),
    Bench("batch_cost", "batch_cost.py", "batch_cost.json",
          [], ["--quick"], _batch_cost),
]  # fmt: skip


# ------------------------------------------------------------------ running


def python_display() -> str:
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(REPO))
    except ValueError:
        return str(exe)


def command(bench: Bench, args: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, str(Path("benchmarks") / bench.script)]
    cmd += bench.quick if args.quick else bench.default
    if bench.name == "router_overhead" and args.no_litellm:
        cmd.append("--no-litellm")
    if bench.name in ("runner_ceiling", "rate_limits") and args.no_inspect:
        cmd.append("--no-inspect")
    return cmd


def run_once(bench: Bench, cmd: list[str], i: int, n: int) -> dict[str, Any]:
    print(f"[{i}/{n}] {bench.name}: {shlex.join([python_display(), *cmd[1:]])}", flush=True)
    started = time.time()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    wall = time.time() - started
    out: dict[str, Any] = {"exit": proc.returncode, "seconds": round(wall, 1)}
    path = RESULTS / bench.json_name
    if path.exists() and path.stat().st_mtime >= started:  # written by this run, not stale
        try:
            written = json.loads(path.read_text(encoding="utf-8"))
            out["metrics"] = bench.extract(written)
            if written.get("skipped"):
                out["skipped"] = written["skipped"]
        except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
            out["error"] = f"could not read {path.name}: {exc!r}"
    else:
        out["error"] = f"{path.name} not written"
    if proc.returncode != 0 or "error" in out:
        out["output_tail"] = (proc.stdout[-1500:] + "\n" + proc.stderr[-1500:]).strip()
    status = "ok" if proc.returncode == 0 and "error" not in out else "FAILED"
    print(f"      {wall:.1f} s, exit {proc.returncode} → {status}", flush=True)
    return out


def aggregate(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    values: dict[str, list[float]] = {}
    for r in runs:
        for k, v in r.get("metrics", {}).items():
            values.setdefault(k, []).append(v)
    return {
        k: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
        for k, v in values.items()
    }


# ------------------------------------------------------------------ report


def cell(agg: dict[str, dict[str, float]], key: str, fmt: str, suffix: str = "") -> str:
    a = agg.get(key)
    if a is None:
        return "—"
    med = format(a["median"], fmt) + suffix
    if a["n"] == 1:
        return med
    return f"{med} [{format(a['min'], fmt)}–{format(a['max'], fmt)}{suffix}]"


def router_table(agg: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        "| way | median µs per call | added µs per call (vs own bare) | ratio (vs own bare) |",
        "|---|--:|--:|--:|",
        f"| bare httpx (workbench process) | {cell(agg, 'bare_wb', '.0f')} | — | 1.00× |",
        f"| workbench Router.route | {cell(agg, 'workbench', '.0f')} "
        f"| {cell(agg, 'workbench_added', '+.0f')} | {cell(agg, 'workbench_ratio', '.2f', '×')} |",
    ]
    if "litellm" in agg:
        lines += [
            f"| bare httpx (LiteLLM process) | {cell(agg, 'bare_ll', '.0f')} | — | 1.00× |",
            f"| litellm Router.acompletion | {cell(agg, 'litellm', '.0f')} "
            f"| {cell(agg, 'litellm_added', '+.0f')} "
            f"| {cell(agg, 'litellm_ratio', '.2f', '×')} |",
            "",
            f"LiteLLM's added µs ÷ workbench's added µs: {cell(agg, 'll_over_wb', '.1f', '×')} "
            "(target ≥ 10×).",
        ]
    else:
        lines += ["", "LiteLLM part not run."]
    return lines


def runner_table(agg: dict[str, dict[str, float]]) -> list[str]:
    levels = sorted({int(k.split("|")[0]) for k in agg})
    lines = [
        "| concurrency | runner items/s | direct calls/s | direct ÷ runner |",
        "|--:|--:|--:|--:|",
    ]
    for c in levels:
        lines.append(
            f"| {c} | {cell(agg, f'{c}|runner', ',.0f')} | {cell(agg, f'{c}|direct', ',.0f')} "
            f"| {cell(agg, f'{c}|ratio', '.2f', '×')} |"
        )
    return lines


def duckdb_table(agg: dict[str, dict[str, float]]) -> list[str]:
    return [
        "| path | attempt rows/s |",
        "|---|--:|",
        f"| Store.write(AttemptEvent) + flush | {cell(agg, 'rows_per_s', ',.0f')} |",
    ]


def redis_table(agg: dict[str, dict[str, float]]) -> list[str]:
    lines = ["| store | level | reservations/s |", "|---|---|--:|"]
    for key in agg:
        store, level = key.split("|")
        lines.append(f"| {store} | {level} | {cell(agg, key, ',.0f')} |")
    return lines


def masker_table(agg: dict[str, dict[str, float]]) -> list[str]:
    counts = sorted({int(k.split("|")[0]) for k in agg})
    lines = [
        "| registered names | mask MB/s | unmask MB/s | stream unmask MB/s |",
        "|--:|--:|--:|--:|",
    ]
    for c in counts:
        lines.append(
            f"| {c:,} | {cell(agg, f'{c}|mask', '.1f')} | {cell(agg, f'{c}|unmask', '.1f')} "
            f"| {cell(agg, f'{c}|stream_unmask', '.1f')} |"
        )
    return lines


def cleaner_table(agg: dict[str, dict[str, float]]) -> list[str]:
    lines = ["| input | cleaner | MB/s |", "|---|---|--:|"]
    for key in agg:
        inp, cleaner = key.split("|")
        lines.append(f"| {inp} | {cleaner} | {cell(agg, key, '.1f')} |")
    return lines


def bfcl_table(agg: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        "| load (all 13 categories) | s | items/s | ÷ raw parse |",
        "|---|--:|--:|--:|",
        f"| `bfcl_dataset` | {cell(agg, 'load_s', '.3f')} | {cell(agg, 'load_items_per_s', ',.0f')} "
        f"| {cell(agg, 'load_over_raw', '.1f', '×')} |",
        f"| raw: zip read + `json.loads` per line | {cell(agg, 'raw_s', '.3f')} | — | 1.0× |",
        "",
        "| grading pass | workbench calls/s | items/s | BFCL calls/s | BFCL s ÷ ours "
        "| disagreements |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name in ("right", "perturbed"):
        lines.append(
            f"| {name} | {cell(agg, f'{name}|wb_calls', ',.0f')} "
            f"| {cell(agg, f'{name}|wb_items', ',.0f')} | {cell(agg, f'{name}|bfcl_calls', ',.0f')} "
            f"| {cell(agg, f'{name}|bfcl_over_wb', '.2f', '×')} "
            f"| {cell(agg, f'{name}|disagreements', '.0f')} |"
        )
    return lines


def prose_table(agg: dict[str, dict[str, float]]) -> list[str]:
    lines = ["| replies | every family, µs | before, µs | ÷ before |", "|---|--:|--:|--:|"]
    for label in ("read no_calls", "read with_calls", "stream no_calls", "stream with_calls"):
        lines.append(
            f"| {label.replace('_', ' ')} | {cell(agg, f'{label}|new', '.1f')} "
            f"| {cell(agg, f'{label}|old', '.1f')} | {cell(agg, f'{label}|ratio', '.2f', '×')} |"
        )
    return lines


CLIENTS = {"aiohttp": "aiohttp", "httpx-aiohttp": "httpx + aiohttp transport", "httpx": "httpx"}


def ceiling_table(agg: dict[str, dict[str, float]]) -> list[str]:
    def levels(prefix: str, at: int) -> list[int]:
        return sorted({int(k.split("|")[at]) for k in agg if k.startswith(prefix)})

    lines = [
        "Raw keep-alive client, requests/s:",
        "",
        "| concurrency | " + " | ".join(CLIENTS.values()) + " |",
        "|--:|" + "--:|" * len(CLIENTS),
    ]
    for c in levels("client|", 2):
        cells = [cell(agg, f"client|{k}|{c}", ",.0f") for k in CLIENTS]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "`workbench run`, items/s (start-up corrected; raw = items ÷ whole-process wall; own = "
        'the run\'s "in X s"), and corrected ÷ each raw client at the same concurrency:',
        "",
        "| concurrency | corrected | raw | own | "
        + " | ".join(f"÷ {v}" for v in CLIENTS.values())
        + " |",
        "|--:|--:|--:|--:|" + "--:|" * len(CLIENTS),
    ]
    for c in levels("runner|", 1):
        ratios = [cell(agg, f"ratio|{k}|{c}", ".2f", "×") for k in CLIENTS]
        lines.append(
            f"| {c} | {cell(agg, f'runner|{c}|corrected', ',.0f')} "
            f"| {cell(agg, f'runner|{c}|raw', ',.0f')} | {cell(agg, f'runner|{c}|own', ',.0f')} | "
            + " | ".join(ratios)
            + " |"
        )
    lines += ["", f"Runner at 128 ÷ at 32: {cell(agg, 'runner_128_over_32', '.2f', '×')}.", ""]
    modes = [m for m in ("fsync", "write", "off") if f"journal|{m}" in agg]
    if modes:
        lines += [
            "Journal cost at concurrency 32 (items/s, corrected):",
            "",
            "| durability | items/s |",
            "|---|--:|",
        ]
        lines += [f"| {m} | {cell(agg, f'journal|{m}', ',.0f')} |" for m in modes]
        lines += [
            "",
            f"fsync ÷ off: {cell(agg, 'journal|fsync_over_off', '.2f', '×')}, "
            f"write ÷ off: {cell(agg, 'journal|write_over_off', '.2f', '×')}.",
            "",
        ]
    else:
        lines += ["Journal cost: not measured (`workbench run` has no `--durability`).", ""]
    ilevels = levels("inspect|", 1)
    if ilevels:
        lines += [
            "Inspect AI `inspect eval` on the same items (target: workbench ≥ 10× at 32):",
            "",
            "| concurrency | inspect items/s (corrected) | raw | workbench ÷ inspect (corrected) "
            "| (raw) |",
            "|--:|--:|--:|--:|--:|",
        ]
        for c in ilevels:
            lines.append(
                f"| {c} | {cell(agg, f'inspect|{c}|corrected', ',.1f')} "
                f"| {cell(agg, f'inspect|{c}|raw', ',.1f')} "
                f"| {cell(agg, f'inspect|{c}|wb_over', '.1f', '×')} "
                f"| {cell(agg, f'inspect|{c}|wb_over_raw', '.1f', '×')} |"
            )
        lines.append("")
    else:
        lines += ["Inspect AI part not run.", ""]
    lines += [
        "Start-up, whole-process seconds:",
        "",
        "| command | s |",
        "|---|--:|",
        f"| `workbench --help` | {cell(agg, 'startup|workbench_help_s', '.2f')} |",
        "| `workbench run` one item, --no-report "
        f"| {cell(agg, 'startup|workbench_run_one_no_report_s', '.2f')} |",
        "| `workbench run` one item, with report "
        f"| {cell(agg, 'startup|workbench_run_one_report_s', '.2f')} |",
        f"| `inspect eval` one item | {cell(agg, 'startup|inspect_eval_one_s', '.2f')} |",
    ]
    return lines


RATE_PERSONAS = {
    "groq-rpm": "requests a minute, Groq style",
    "groq-tpm": "tokens a minute, Groq style",
    "gemini-rpm": "requests a minute, Gemini style",
}


def rate_table(agg: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        "| limit | tool | wall ÷ minimum | span ÷ minimum | answered | 429s |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for persona, words in RATE_PERSONAS.items():
        for tool in ("workbench", "workbench-wait", "inspect"):
            k = f"{persona}|{tool}"
            if f"{k}|n" not in agg:
                continue
            lost = (
                agg[f"{k}|n"]["max"] - agg[f"{k}|answered"]["min"] if f"{k}|answered" in agg else 0
            )
            lines.append(
                f"| {persona} ({words}) | {tool} | {cell(agg, f'{k}|wall_over_min', '.2f', '×')}"
                + (f" ({lost:.0f} lost)" if lost else "")
                + f" | {'—' if lost else cell(agg, f'{k}|span_over_min', '.2f', '×')} "
                f"| {cell(agg, f'{k}|answered', '.0f')} of {cell(agg, f'{k}|n', '.0f')} "
                f"| {cell(agg, f'{k}|429s', '.0f')} |"
            )
    lines += ["", "Bar: every item answered within 1.05× the minimum, at most a couple of 429s."]
    return lines


def batch_cost_table(agg: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        "| set | synchronous USD | batch USD | batch ÷ synchronous | batch adds, s "
        "| answered (sync / batch) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name in ("smoke", "bfcl"):
        if f"{name}|sync|cost" not in agg:
            continue
        lines.append(
            f"| {name} | {cell(agg, f'{name}|sync|cost', '.6f')} "
            f"| {cell(agg, f'{name}|batch|cost', '.6f')} | {cell(agg, f'{name}|ratio', '.2f', '×')} "
            f"| {cell(agg, f'{name}|adds_s', '.1f')} "
            f"| {cell(agg, f'{name}|sync|answered', '.0f')} / "
            f"{cell(agg, f'{name}|batch|answered', '.0f')} |"
        )
    if agg.get("batch_available", {}).get("max", 0) < 1:
        lines += ["", "`workbench run` has no `--batch` yet: the batch half was not run."]
    return lines


SECTIONS: dict[str, tuple[str, str, Callable[[dict[str, dict[str, float]]], list[str]]]] = {
    "router_overhead": (
        "Router overhead vs bare httpx vs LiteLLM",
        "Sequential non-streaming calls to the zero-latency simulator persona; per run, the "
        "median µs per call of each way, each router against a bare-httpx baseline in its own "
        "process.",
        router_table,
    ),
    "runner_throughput": (
        "Runner throughput",
        "`run_prompt_set` on smoke × 10 (200 items; × 5 = 100 with --quick) into a fresh DuckDB "
        "file; per run, the median over the script's rounds; direct = `provider.call` at the "
        "same concurrency, no router/store/grading.",
        runner_table,
    ),
    "duckdb_logging": (
        "DuckDB attempt logging",
        "`Store.write` of pre-built `AttemptEvent`s with the default batching, then `flush()`.",
        duckdb_table,
    ),
    "redis_reservations": (
        "Quota reservations",
        "One key, rpm/rpd/tpd set and never reached; RedisQuota against a real redis-server "
        "the script starts, MemoryQuota for reference.",
        redis_table,
    ),
    "masker_throughput": (
        "Masker",
        "ReversibleMasker on synthetic prose (MB = 10^6 characters), one EMAIL pattern; per "
        "run, the median of the script's repeats.",
        masker_table,
    ),
    "cleaner_throughput": (
        "Cleaner",
        "`ResponseCleaner.clean`, MB/s of UTF-8 input; per run, the median of the script's "
        "repeats.",
        cleaner_table,
    ),
    "bfcl_grading": (
        "BFCL load and grading",
        "The cached `bfcl-eval` wheel: `bfcl_dataset` of all 13 single-turn categories against "
        "a bare `json.loads` of the same files from the zip; `grade_calls` on every item of the "
        "10 AST categories (right answers, then one value changed per item) against BFCL's own "
        "`ast_checker` from the wheel on the same calls, every verdict compared (disagreements "
        "include BFCL crashes; must be 0). Per run, the median of the script's rounds.",
        bfcl_table,
    ),
    "prose_parsing": (
        "Prose tool calls",
        "`read_text_tool_calls` and the stream filter (16-character chunks) per reply, every "
        "family on, against the one-module reader before them (loaded from git) in the same run; "
        "replies without a call (the common case) and with calls.",
        prose_table,
    ),
    "runner_ceiling": (
        "Runner ceiling: whole processes",
        "Every figure a whole process against the simulator process: raw clients (a child "
        "process each) posting the same chat body, `workbench run` on 1,000 one-message items "
        "(300 with --quick) with start-up taken out by a one-item run, Inspect AI's `inspect "
        "eval` on the same items; one round per run (`--rounds 1`), so the spread is between runs.",
        ceiling_table,
    ),
    "rate_limits": (
        "Rate limits: a free-tier quota nobody wrote down",
        "`workbench run --concurrency 16` and `inspect eval --max-connections 16` on the same "
        "items (90 at 30 a minute; 20 at 10 with --quick) against a simulator persona whose "
        "limit the providers file does not name; the minimum is (ceil(N / per minute) − 1) × "
        "60 s + one request's latency; answered and 429s from the simulator's request log. Run "
        "once (the first round), whatever --repeats says.",
        rate_table,
    ),
    "batch_cost": (
        "Batch cost",
        "`workbench run` on the smoke set and bfcl:simple_python (--limit 50; 10 with --quick), "
        "synchronous and `--batch`, priced from the providers file's price table (a batch at "
        "0.5× it); what the batch delay adds to the wall time.",
        batch_cost_table,
    ),
}


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    redis = "not installed"
    if shutil.which("redis-server"):
        out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
        redis = next((w[2:] for w in out.stdout.split() if w.startswith("v=")), "?")
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "duckdb": _version("duckdb"),
        "httpx": _version("httpx"),
        "redis_py": _version("redis"),
        "redis_server": redis,
    }


def report(data: dict[str, Any]) -> str:
    m, s = data["machine"], data["settings"]
    litellm = data.get("litellm_version")
    inspect_ai = data.get("inspect_version")
    mode = "--quick (1 run, smaller sizes)" if s["quick"] else "defaults"
    lines = [
        f"# Benchmarks, {data['date']}",
        "",
        f"Machine: {m['cpu']}, {m['cpus']} CPUs, {m['platform']}; {m['python']}; "
        f"DuckDB {m['duckdb']}, httpx {m['httpx']}, redis-py {m['redis_py']}, "
        f"redis-server {m['redis_server']}"
        + (f", LiteLLM {litellm}" if litellm else "")
        + (f", Inspect AI {inspect_ai}" if inspect_ai else "")
        + ".",
        "",
        f"Date: {data['started']} (total {data['total_seconds'] / 60:.1f} min). Settings: {mode}; "
        f"each script run {s['repeats']} time(s), interleaved; every figure is the median over "
        "those runs [min–max]." + ("" if s["repeats"] > 1 else " (One run: no spread.)"),
    ]
    for b in BENCHES:
        title, note, render = SECTIONS[b.name]
        result = data["benchmarks"][b.name]
        runs = result["runs"]
        failed = [i + 1 for i, r in enumerate(runs) if r["exit"] != 0 or "error" in r]
        lines += ["", f"## {title}", "", note, ""]
        skipped = next((r["skipped"] for r in runs if "skipped" in r), None)
        if result["aggregate"]:
            lines += render(result["aggregate"])
        elif skipped:
            lines.append(f"Skipped: {skipped}")
        else:
            lines.append("No figures: every run failed.")
        secs = ", ".join(f"{r['seconds']:.0f}" for r in runs)
        lines += [
            "",
            f"Runs: {len(runs)} ({secs} s)"
            + (
                f"; FAILED (non-zero exit or no JSON): run {', '.join(map(str, failed))}"
                if failed
                else "; all checks OK"
            )
            + ".",
        ]
    lines += ["", "## Commands", "", "```sh", data["invocation"]]
    lines += [data["benchmarks"][b.name]["command"] for b in BENCHES]
    lines += ["```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="1 run each, smaller sizes")
    parser.add_argument("--repeats", type=int, help="runs of each script (default 3; --quick: 1)")
    parser.add_argument("--no-litellm", action="store_true", help="skip LiteLLM's part")
    parser.add_argument("--no-inspect", action="store_true", help="skip Inspect AI's part")
    args = parser.parse_args()
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")

    start = time.time()
    now = dt.datetime.now().astimezone()
    cmds = {b.name: command(b, args) for b in BENCHES}
    runs: dict[str, list[dict[str, Any]]] = {b.name: [] for b in BENCHES}
    total = sum(1 if b.once else args.repeats for b in BENCHES)
    i = 0
    for r in range(args.repeats):
        for b in BENCHES:
            if b.once and r > 0:
                continue
            i += 1
            runs[b.name].append(run_once(b, cmds[b.name], i, total))

    litellm_version = None
    router_json = RESULTS / "router_overhead.json"
    if router_json.exists() and not args.no_litellm:
        ll = json.loads(router_json.read_text(encoding="utf-8")).get("litellm_process")
        litellm_version = ll and ll.get("litellm_version")
    inspect_version = None
    ceiling_json = RESULTS / "runner_ceiling.json"
    if ceiling_json.exists() and not args.no_inspect:
        ins = json.loads(ceiling_json.read_text(encoding="utf-8")).get("inspect") or {}
        inspect_version = (ins.get("versions") or {}).get("inspect_ai")
    invocation = shlex.join(
        ["python", "-m", "benchmarks"]
        + (["--quick"] if args.quick else [])
        + ["--repeats", str(args.repeats)]
        + (["--no-litellm"] if args.no_litellm else [])
        + (["--no-inspect"] if args.no_inspect else [])
    )
    data: dict[str, Any] = {
        "date": now.date().isoformat(),
        "started": now.isoformat(timespec="seconds"),
        "total_seconds": round(time.time() - start, 1),
        "settings": {
            "quick": args.quick,
            "repeats": args.repeats,
            "no_litellm": args.no_litellm,
            "no_inspect": args.no_inspect,
        },
        "machine": machine(),
        "litellm_version": litellm_version,
        "inspect_version": inspect_version,
        "invocation": invocation,
        "benchmarks": {
            b.name: {
                "command": shlex.join([python_display(), *cmds[b.name][1:]]),
                "json": f"benchmarks/results/{b.json_name}",
                "runs": runs[b.name],
                "aggregate": aggregate(runs[b.name]),
            }
            for b in BENCHES
        },
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    md = report(data)
    md_path = RESULTS / f"{data['date']}.md"
    md_path.write_text(md, encoding="utf-8")
    json_path = md_path.with_suffix(".json")
    json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print()
    print(md)
    print(f"written: {md_path.relative_to(REPO)}, {json_path.relative_to(REPO)}")
    ok = all(r["exit"] == 0 and "error" not in r for rs in runs.values() for r in rs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
