"""Free-tier rate limits: workbench and Inspect AI against a quota nobody wrote down.

A free-tier key allows R requests a minute (or T tokens a minute), a limit nobody wrote in the
providers file. This benchmark runs the same N items (N several times R) through `workbench
run` and Inspect AI's `inspect eval` against a simulator persona enforcing such a limit, and
reports how close each comes to the quota-bound minimum, how many items it answered, and how
many 429s it drew on the way.

Personas (one simulator process, `_sim_process.SimProcess`, every persona answering in
`--latency-ms` (L), no jitter):

  groq-rpm    R requests per sliding 60 s window (`--rpm`), Groq's style: x-ratelimit-*
              headers on every success (the minute's requests), a 429 with Groq's body,
              retry-after and the headers when the window is spent.
  groq-tpm    T tokens per sliding 60 s window (`--tpm`), Groq's style (token headers).
  gemini-rpm  R requests per sliding 60 s window, Gemini's style: no headers on a success, a
              429 RESOURCE_EXHAUSTED whose details carry a QuotaFailure and a RetryInfo
              (retryDelay), no retry-after header. Reached on the native generateContent API.

The providers file names only the model, as a user writes it (no rpm, no tpm):

    [[providers]]
    id = "groq"             # or "google" with adapter = "gemini"
    adapter = "openai"
    base_url = "<the simulator>"
    key_env = "SIM_KEY"
    models = ["groq-rpm"]

Items: `{"id": "i00", "prompt": "Reply with exactly: pong 00"}`, … (fixed-width numbers, so
every item costs the same tokens). Each tool is run as a whole process, as a user runs it:

  workbench   workbench run ITEMS --providers FILE --db FRESH.duckdb --concurrency C --quiet
              --no-report   (C = `--concurrency`, 16)
  workbench-wait  the same with `when_all_cooling = "wait"` in the file's [router] table: the
              knob a user has today (`--no-wait` skips it)
  inspect     inspect eval task.py -T items=ITEMS --model openai-api/sim/groq-rpm (or
              google/gemini-rpm, with GOOGLE_BASE_URL at the simulator) --max-connections C
              --display none --log-dir TMP  (a `@task` of `generate()` and `includes()`, the
              same as runner_ceiling.py's; Inspect runs from benchmarks/.venv-inspect, built on
              first use by `_whole_process.ensure_inspect_venv`, with google-genai)

Before every process the simulator is reset (POST /sim/reset: the log and every rate-limit
window), so no run inherits another's spent window.

The quota-bound minimum. A limit that admits m items per sliding 60 s window cannot answer
N items faster than: the first m admitted at once, the next m when the first leave the window
60 s later, …, the last batch answered L after it is admitted:

    minimum = (ceil(N / m) - 1) × 60 s + L

For the request limit m = R. For the token limit, each admitted item costs k = p + c tokens
(its prompt's p, counted when it is admitted, and its answer's c, counted when written; both
as the simulator counts them, read from one probe request's `usage` before the run), and a
request is admitted while the window's tokens plus its p stay within T, so
m = floor((T - p) / k) + 1. The default T is (R - 1) × k + p: the token limit then admits R
items a minute, and the two minima are equal.

Figures per persona and tool:

  wall ÷ minimum   the whole process's wall time (start-up included) ÷ the minimum
  span ÷ minimum   (the arrival of the last request the simulator answered 200 − the arrival of
                   the first request, + L) ÷ the minimum: the same without start-up (in the
                   JSON always; in the table only when every item was answered, the minimum
                   being for all N)
  answered         distinct items the simulator answered 200 (read from its request log, GET
                   /sim/requests: a tool's own summary can be wrong, the server's log cannot)
  429s             requests the simulator refused with 429; also every request and other
                   errors, and each tool's exit status and own summary line

Nothing here is a pass/fail check of the tools: items lost are what the benchmark reports.
The exit status is 1 only when the benchmark itself could not measure (the simulator broke,
a process could not start); a process that overruns 4 × the minimum + 120 s is stopped and
reported as timed out.

    .venv/bin/python benchmarks/rate_limits.py [--n 90] [--rpm 30] [--tpm T] [--concurrency 16]
        [--latency-ms 200] [--personas groq-rpm,groq-tpm,gemini-rpm] [--no-wait] [--no-inspect]
        [--quick]

`--quick`: --n 20 --rpm 10, the request limit only (groq-rpm), --no-wait: two processes of
about a minute each. The defaults: nine processes, about 12 minutes. Writes benchmarks/results/rate_limits.json and prints a Markdown table
(`python -m benchmarks` puts the same table in its report).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _sim_process import FLEET_TOML, PERSONA, SimProcess, machine, write_json
from _whole_process import (
    INSPECT_BIN,
    INSPECT_PYTHON,
    INSPECT_TASK,
    INSPECT_VENV,
    ensure_inspect_venv,
    inspect_version,
    workbench_cmd,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
JSON_NAME = "rate_limits.json"
WINDOW_S = 60.0
API_KEY = "x"
PERSONAS = ("groq-rpm", "groq-tpm", "gemini-rpm")
TOOLS = ("workbench", "workbench-wait", "inspect")
BAR = 1.05  # the goal: every item answered within 1.05 × the minimum, at most a couple of 429s
ITEM = re.compile(r"pong (\d+)")
FIRST_LINE = re.compile(r"^run \S+: .*$")

PERSONA_TOML = """
[[persona]]
id = "{id}"
description = "{description}"
tool_style = "native"
vision = true
latency_ms = {latency_ms}
latency_jitter_ms = 0
ttft_ms = 0
rate_limit_style = "{style}"
{limit}
"""

DESCRIPTIONS = {
    "groq-rpm": "Groq-style free tier: a request limit per minute, headers on every success",
    "groq-tpm": "Groq-style free tier: a token limit per minute, headers on every success",
    "gemini-rpm": "Gemini-style free tier: a request limit per minute, RetryInfo in the 429",
}


@dataclass(frozen=True)
class Limit:
    """One persona's limit and the quota-bound minimum it sets for N items."""

    persona: str
    style: str  # the simulator's rate_limit_style
    rpm: int
    tpm: int
    per_window: int  # m: items the limit admits per sliding 60 s window
    latency_s: float
    n: int

    @property
    def minimum_s(self) -> float:
        return (math.ceil(self.n / self.per_window) - 1) * WINDOW_S + self.latency_s

    @property
    def google(self) -> bool:
        return self.style == "gemini"

    def toml(self) -> str:
        limit = f"rpm = {self.rpm}" if self.rpm else f"tpm = {self.tpm}"
        return PERSONA_TOML.format(
            id=self.persona,
            description=DESCRIPTIONS[self.persona],
            latency_ms=self.latency_s * 1000,
            style=self.style,
            limit=limit,
        )


def items(n: int) -> list[dict[str, str]]:
    width = len(str(n - 1))
    return [
        {"id": f"i{i:0{width}d}", "prompt": f"Reply with exactly: pong {i:0{width}d}"}
        for i in range(n)
    ]


def chat_body(model: str, prompt: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}]}


def item_tokens(prompt: str) -> tuple[int, int]:
    """(prompt tokens, answer tokens) of one item, as the simulator counts them: one request to
    a throwaway simulator without limits, its `usage` read."""
    with SimProcess(fleet_toml=FLEET_TOML) as probe:
        resp = httpx.post(
            probe.openai_url + "/chat/completions",
            json=chat_body(PERSONA, prompt),
            headers={"authorization": f"Bearer {API_KEY}"},
            timeout=30,
        )
        resp.raise_for_status()
        usage = resp.json()["usage"]
    return int(usage["prompt_tokens"]), int(usage["completion_tokens"])


def probe_matches(
    sim: SimProcess, chosen: dict[str, Limit], prompt: str, tokens: tuple[int, int]
) -> bool | None:
    """The token-limited persona counts an item as the probe did (then the log and windows are
    reset): the minimum's m is right. None when that persona is not measured."""
    if "groq-tpm" not in chosen:
        return None
    resp = httpx.post(
        sim.openai_url + "/chat/completions",
        json=chat_body("groq-tpm", prompt),
        headers={"authorization": f"Bearer {API_KEY}"},
        timeout=30,
    )
    sim.reset()
    usage = resp.json().get("usage", {}) if resp.status_code == 200 else {}
    return (usage.get("prompt_tokens"), usage.get("completion_tokens")) == tokens


def limits(args: argparse.Namespace, p: int, c: int) -> dict[str, Limit]:
    k = p + c
    tpm = args.tpm if args.tpm is not None else (args.rpm - 1) * k + p
    lat = args.latency_ms / 1000
    every = {
        "groq-rpm": Limit("groq-rpm", "groq", args.rpm, 0, args.rpm, lat, args.n),
        # the first request of a window is admitted whatever its size
        "groq-tpm": Limit("groq-tpm", "groq", 0, tpm, max(1, (tpm - p) // k + 1), lat, args.n),
        "gemini-rpm": Limit("gemini-rpm", "gemini", args.rpm, 0, args.rpm, lat, args.n),
    }
    return {name: every[name] for name in args.personas}


def providers_toml(limit: Limit, sim: SimProcess, *, wait: bool = False) -> str:
    """The providers file a user writes: the model, and nothing about its limits (with
    `wait`, the router told to wait for a cooling model rather than fail the request)."""
    adapter, pid, url = (
        ("gemini", "google", sim.base_url) if limit.google else ("openai", "groq", sim.openai_url)
    )
    return (
        '[router]\nname = "rate-limits"\n'
        + ('when_all_cooling = "wait"\n' if wait else "")
        + "\n[[providers]]\n"
        f'id = "{pid}"\nadapter = "{adapter}"\nbase_url = "{url}"\n'
        f'key_env = "SIM_KEY"\nmodels = ["{limit.persona}"]\n'
    )


# ------------------------------------------------------------------ one measured process


def run_timed(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> dict[str, Any]:
    """`cmd` to completion or to `timeout` (then killed and reported as timed out)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        return {"wall": time.perf_counter() - start, "exit": None, "stdout": out, "stderr": err}
    return {
        "wall": time.perf_counter() - start,
        "exit": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
    }


def _arrival(entry: dict[str, Any]) -> float:
    return dt.datetime.fromisoformat(entry["time"].replace("Z", "+00:00")).timestamp()


def read_log(log: list[dict[str, Any]], limit: Limit) -> dict[str, Any]:
    """What the simulator saw of one process: requests, 429s, the items it answered, the span."""
    mine = [e for e in log if e.get("persona") == limit.persona]
    answered: set[int] = set()
    last_ok = None
    for e in mine:
        if e.get("status") == 200:
            m = ITEM.search(json.dumps(e.get("body")))
            if m:
                answered.add(int(m.group(1)))
            last_ok = max(last_ok or 0.0, _arrival(e))
    first = min((_arrival(e) for e in mine), default=None)
    span = None if first is None or last_ok is None else last_ok - first + limit.latency_s
    statuses: dict[str, int] = {}
    for e in mine:
        key = str(e.get("status"))
        statuses[key] = statuses.get(key, 0) + 1
    return {
        "requests": len(mine),
        "other_models": len(log) - len(mine),
        "status_429": statuses.get("429", 0),
        "statuses": statuses,
        "answered": len(answered),
        "span_s": span,
    }


class Bench:
    """The temp files, the environment, and one method per tool."""

    def __init__(self, sim: SimProcess, tmp: Path, args: argparse.Namespace) -> None:
        self.sim, self.tmp, self.args = sim, tmp, args
        self.items = tmp / "items.jsonl"
        self.items.write_text(
            "".join(json.dumps(r) + "\n" for r in items(args.n)), encoding="utf-8"
        )
        self.task = tmp / "inspect_task.py"
        self.task.write_text(INSPECT_TASK, encoding="utf-8")
        self.cwd = tmp / "cwd"
        self.cwd.mkdir()
        self.env = {
            **os.environ,
            "SIM_KEY": API_KEY,
            "SIM_API_KEY": API_KEY,  # Inspect's openai-api/sim/...: SIM_API_KEY, SIM_BASE_URL
            "SIM_BASE_URL": sim.openai_url,
            "GOOGLE_API_KEY": API_KEY,  # Inspect's google/...: GOOGLE_API_KEY, GOOGLE_BASE_URL
            "GOOGLE_BASE_URL": sim.base_url,
        }
        self.commands: dict[str, str] = {}
        self._k = 0

    def _fresh(self) -> Path:
        self._k += 1
        d = self.tmp / "runs" / str(self._k)
        d.mkdir(parents=True)
        return d

    def _measure(
        self, tool: str, limit: Limit, cmd: list[str], shown: list[str], cwd: Path
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self.commands[f"{tool} {limit.persona}"] = shlex.join(shown)
        self.sim.reset()
        run = run_timed(cmd, self.env, cwd, timeout=4 * limit.minimum_s + 120)
        seen = read_log(self.sim.requests(), limit)
        wall = run["wall"]
        row: dict[str, Any] = {
            "persona": limit.persona,
            "tool": tool,
            "n": limit.n,
            "exit": run["exit"],
            "timed_out": run["exit"] is None,
            "wall_s": round(wall, 2),
            "minimum_s": limit.minimum_s,
            "wall_over_minimum": wall / limit.minimum_s,
            "span_over_minimum": None
            if seen["span_s"] is None
            else seen["span_s"] / limit.minimum_s,
            **seen,
            "within_bar": seen["answered"] == limit.n and wall / limit.minimum_s <= BAR,
        }
        if run["exit"] != 0:
            row["output_tail"] = (run["stdout"][-800:] + "\n" + run["stderr"][-1500:]).strip()
        return row, run

    def workbench(self, limit: Limit, *, wait: bool = False) -> dict[str, Any]:
        d = self._fresh()
        providers = d / "providers.toml"
        providers.write_text(providers_toml(limit, self.sim, wait=wait), encoding="utf-8")
        args = [
            "run",
            str(self.items),
            "--providers",
            str(providers),
            "--db",
            str(d / "bench.duckdb"),
            "--concurrency",
            str(self.args.concurrency),
            "--quiet",
            "--no-report",
        ]
        row, run = self._measure(
            "workbench-wait" if wait else "workbench",
            limit,
            [*workbench_cmd(), *args],
            ["workbench", *args],
            self.cwd,
        )
        # its own account: the first line (`run ID: finished, 90 done, 90 answered, 0 failed (not held), …`)
        row["summary"] = next(iter(run["stdout"].splitlines()), None)
        return row

    def inspect(self, limit: Limit) -> dict[str, Any]:
        d = self._fresh()
        model = f"google/{limit.persona}" if limit.google else f"openai-api/sim/{limit.persona}"
        args = [
            "eval",
            self.task.name,
            "-T",
            f"items={self.items}",
            "--model",
            model,
            "--max-connections",
            str(self.args.concurrency),
            "--display",
            "none",
            "--log-dir",
            str(d / "logs"),
        ]
        # Inspect wants the task file as a relative path: it runs from the temp dir.
        row, _ = self._measure(
            "inspect", limit, [str(INSPECT_BIN), *args], ["inspect", *args], self.tmp
        )
        row["summary"] = inspect_summary(d / "logs")
        return row


_READ_LOG = """
import sys
from inspect_ai.log import read_eval_log
log = read_eval_log(sys.argv[1])
samples = log.samples or []
errors = sum(1 for s in samples if s.error)
print(f"{log.status}, {len(samples)} samples, {errors} with an error")
"""


def inspect_summary(logs: Path) -> str | None:
    """Inspect's own account, read by Inspect from its .eval log (compressed in a way this
    Python's zipfile may not read): status, samples, samples with an error."""
    found = sorted(logs.glob("*.eval"))
    if len(found) != 1:
        return None
    out = subprocess.run(
        [str(INSPECT_PYTHON), "-c", _READ_LOG, str(found[0])], capture_output=True, text=True
    )
    return out.stdout.strip() or None


# ------------------------------------------------------------------ the run


def git_commit() -> str | None:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    )
    return out.stdout.strip() or None


def measure(args: argparse.Namespace) -> dict[str, Any]:
    prompt = items(args.n)[0]["prompt"]
    p, c = item_tokens(prompt)
    chosen = limits(args, p, c)
    inspect_error = None
    if not args.no_inspect:
        try:
            ensure_inspect_venv(google=any(lim.google for lim in chosen.values()))
        except (subprocess.SubprocessError, OSError) as exc:
            inspect_error = f"could not build {INSPECT_VENV}: {exc}"
            print(inspect_error, flush=True)
    tools = [
        t
        for t in TOOLS
        if t == "workbench"
        or (t == "workbench-wait" and not args.no_wait)
        or (t == "inspect" and not args.no_inspect and not inspect_error)
    ]
    fleet = 'seed = 1\ndescription = "rate-limit benchmark fleet"\n' + "".join(
        lim.toml() for lim in chosen.values()
    )
    rows: list[dict[str, Any]] = []
    with (
        SimProcess(fleet_toml=fleet) as sim,
        tempfile.TemporaryDirectory(prefix="workbench-rate-limits-") as tmp,
    ):
        b = Bench(sim, Path(tmp), args)
        probe_ok = probe_matches(sim, chosen, prompt, (p, c))
        for lim in chosen.values():
            for tool in tools:
                print(
                    f"{lim.persona}, {tool}: {args.n} items, minimum {lim.minimum_s:.1f} s …",
                    flush=True,
                )
                row = (
                    b.inspect(lim)
                    if tool == "inspect"
                    else b.workbench(lim, wait=tool == "workbench-wait")
                )
                rows.append(row)
                print(
                    f"  {row['wall_s']:.1f} s = {row['wall_over_minimum']:.2f}× the minimum, "
                    f"{row['answered']}/{args.n} answered, {row['status_429']} 429s "
                    f"({row['summary']})",
                    flush=True,
                )
        commands = b.commands
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": git_commit(),
        "settings": {
            "n": args.n,
            "rpm": args.rpm,
            "tpm": chosen["groq-tpm"].tpm if "groq-tpm" in chosen else args.tpm,
            "concurrency": args.concurrency,
            "latency_ms": args.latency_ms,
            "personas": list(chosen),
            "quick": args.quick,
            "no_inspect": args.no_inspect,
            "no_wait": args.no_wait,
        },
        "item_tokens": {"prompt": p, "answer": c, "same_on_groq_tpm": probe_ok},
        "bar": BAR,
        "limits": {
            name: {
                "style": lim.style,
                "rpm": lim.rpm or None,
                "tpm": lim.tpm or None,
                "items_per_window": lim.per_window,
                "minimum_s": lim.minimum_s,
            }
            for name, lim in chosen.items()
        },
        "runs": rows,
        "machine": machine(),
        "inspect": {
            "ran": "inspect" in tools,
            "error": inspect_error,
            "versions": inspect_version() if "inspect" in tools else None,
        },
        "commands": commands,
    }


def fmt(v: float | None, spec: str, suffix: str = "") -> str:
    return "—" if v is None else format(v, spec) + suffix


def table(data: dict[str, Any]) -> list[str]:
    s = data["settings"]
    lines = [
        f"{s['n']} items, concurrency {s['concurrency']}, {s['latency_ms']:g} ms latency; "
        "the providers file names only the model.",
        "",
        "| limit | tool | wall s | minimum s | wall ÷ minimum | span ÷ minimum | answered "
        "| 429s | requests | own summary |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in data["runs"]:
        lim = data["limits"][r["persona"]]
        what = f"{lim['rpm']} rpm" if lim["rpm"] else f"{lim['tpm']:,} tpm"
        wall = "timed out" if r["timed_out"] else f"{r['wall_s']:.1f}"
        lost = r["n"] - r["answered"]
        ratio = f"{r['wall_over_minimum']:.2f}×" + (f" ({lost} lost)" if lost else "")
        lines.append(
            f"| {r['persona']} ({what}) | {r['tool']} | {wall} | {r['minimum_s']:.1f} "
            f"| {ratio} | {fmt(None if lost else r['span_over_minimum'], '.2f', '×')} "
            f"| {r['answered']}/{r['n']} | {r['status_429']} | {r['requests']} "
            f"| {r['summary'] or '—'} |"
        )
    lines += [
        "",
        f"Bar: every item answered within {data['bar']}× the minimum, with at most a couple "
        "of 429s.",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, help="items (default 90; --quick: 20)")
    parser.add_argument("--rpm", type=int, help="requests a minute (default 30; --quick: 10)")
    parser.add_argument(
        "--tpm", type=int, help="tokens a minute (default: what admits --rpm items a minute)"
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument(
        "--personas",
        help=f"comma-separated, of {', '.join(PERSONAS)} (default all; --quick: groq-rpm)",
    )
    parser.add_argument("--no-inspect", action="store_true", help="skip Inspect AI's part")
    parser.add_argument(
        "--no-wait", action="store_true", help='skip `workbench run` with when_all_cooling = "wait"'
    )
    parser.add_argument(
        "--quick", action="store_true", help="--n 20 --rpm 10, groq-rpm only, --no-wait"
    )
    args = parser.parse_args()
    args.no_wait = args.no_wait or args.quick
    if args.n is None:
        args.n = 20 if args.quick else 90
    if args.rpm is None:
        args.rpm = 10 if args.quick else 30
    chosen = args.personas or ("groq-rpm" if args.quick else ",".join(PERSONAS))
    args.personas = [x.strip() for x in chosen.split(",") if x.strip()]
    unknown = [x for x in args.personas if x not in PERSONAS]
    if unknown:
        parser.error(f"unknown persona {', '.join(unknown)}: choose from {', '.join(PERSONAS)}")
    if args.n < 1 or args.rpm < 1 or args.concurrency < 1 or args.latency_ms < 0:
        parser.error("--n, --rpm and --concurrency must be >= 1, --latency-ms >= 0")
    if args.tpm is not None and args.tpm < 1:
        parser.error("--tpm must be >= 1")

    data = measure(args)
    lines = ["## Rate limits: workbench and Inspect AI against a free-tier quota", ""]
    lines += table(data)
    print("\n".join(lines))
    print(f"\nJSON: {write_json(JSON_NAME, data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
