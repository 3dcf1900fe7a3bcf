"""Whole processes against the simulator: raw client ceiling, `workbench run`, Inspect AI.

The raw HTTP client ceiling, `workbench run` and Inspect AI's `inspect eval`, in one run.

The simulator runs as its own process (one zero-latency persona, `_sim_process.SimProcess`).
Everything measured is a whole process, as a user runs it:

  clients   a child process per client kind posts the same OpenAI chat body to the
            simulator's /v1/chat/completions `--n` (or `--client-n`) times, C at a time,
            reading the JSON, after a warm-up (`--warmup`, at least 2 × C requests): a
            bare `aiohttp.ClientSession(TCPConnector(limit=C))`, an
            `httpx.AsyncClient` over `httpx_aiohttp.AiohttpTransport(limits=Limits(C, C))`,
            and a bare `httpx.AsyncClient(limits=Limits(C, C))`. Requests/s: the ceiling of
            a keep-alive client on this machine, against this server.
  runner    `workbench run ITEMS --providers P --db FRESH.duckdb --concurrency C --quiet
            --no-report` on `--n` one-message items ({"id": "i0", "prompt": "Reply with
            exactly: pong 0"}, ...) with a providers file pointing at the simulator. Items/s
            three ways: raw (items ÷ the process's wall time), start-up corrected ((n - 1) ÷
            (wall - wall of the same command on one item), per round) and the run's own
            "in X s" (its first output line, 0.1 s resolution).
  journal   if `workbench run --help` lists `--durability`: the same at concurrency
            `--journal-concurrency` (32) with `--durability fsync`, `write` and `off`.
  inspect   Inspect AI's `inspect eval task.py --model openai-api/sim/bench --max-connections C
            --display none --log-dir TMP` on the same items (a `@task` with a MemoryDataset,
            `generate()`, `includes()`), start-up corrected by a one-item run the same way.
            Inspect is never a dependency of the project: it runs from
            `benchmarks/.venv-inspect`, a venv created on first use (`python -m venv`,
            `pip install inspect-ai openai`; `--no-inspect` skips it).
  start-up  wall time of `workbench --help`, of a one-item `workbench run` with and without
            the report, and of a one-item `inspect eval`.

`--rounds` rounds (default 3); in each, every kind runs once, the order reversed every other
round, so drift of the machine falls on all alike; figures are medians over the rounds. The
simulator's request log is reset before and counted after every process: it must equal what
that process was meant to send, all answered 200 (else the exit status is 1).

    .venv/bin/python benchmarks/runner_ceiling.py [--n 1000] [--client-n N] [--levels 1,8,32,128]
        [--rounds 3] [--inspect-levels 32] [--journal-concurrency 32] [--no-inspect]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import httpx
from _sim_process import PERSONA, SimProcess, machine, median, write_json
from _whole_process import (
    INSPECT_BIN,
    INSPECT_TASK,
    INSPECT_VENV,
    ensure_inspect_venv,
    inspect_version,
    run_process,
    workbench_cmd,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
JSON_NAME = "runner_ceiling.json"

CLIENT_KINDS = ("aiohttp", "httpx-aiohttp", "httpx")
CLIENT_LABELS = {
    "aiohttp": "aiohttp ClientSession",
    "httpx-aiohttp": "httpx + AiohttpTransport",
    "httpx": "httpx AsyncClient",
}
DURABILITY = ("fsync", "write", "off")
API_KEY = "x"
AUTH = {"authorization": f"Bearer {API_KEY}"}
BODY = {"model": PERSONA, "messages": [{"role": "user", "content": "Reply with exactly: pong 0"}]}
TARGET = 10.0  # workbench ÷ Inspect items/s at concurrency 32

PROVIDERS_TOML = """\
[router]
name = "bench"

[[providers]]
id = "sim"
adapter = "openai"
base_url = "{url}"
key_env = "SIM_KEY"
models = [ {{ id = "{model}" }} ]
"""


# `run ID: finished, N done, N answered, 0 failed (not held), …/… passed (…) in S s`
FIRST_LINE = re.compile(r"^run \S+: (\w+), (\d+) done, (\d+) answered, .* in ([0-9.]+) s$")


# ------------------------------------------------------------------ the client child


def proc_cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def warmup_count(warmup: int, c: int) -> int:
    return max(warmup, 2 * c)


async def client_level(
    kind: str, url: str, c: int, n: int, warmup: int, sim_pid: int
) -> dict[str, Any]:
    """`n` POSTs after a warm-up, `c` at a time, over one client of `kind` (`c` connections)."""
    close: Callable[[], Any]
    if kind == "aiohttp":
        import aiohttp

        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c))

        async def one() -> bool:
            async with session.post(url, json=BODY, headers=AUTH) as resp:
                data = await resp.json()
                return resp.status == 200 and bool(data["choices"])

        close = session.close
    else:
        limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
        if kind == "httpx-aiohttp":
            from httpx_aiohttp import AiohttpTransport

            # An explicit transport ignores the client's `limits`: the transport takes them.
            client = httpx.AsyncClient(transport=AiohttpTransport(limits=limits))
        else:
            client = httpx.AsyncClient(limits=limits)

        async def one() -> bool:
            resp = await client.post(url, json=BODY, headers=AUTH)
            data = resp.json()
            return resp.status_code == 200 and bool(data["choices"])

        close = client.aclose

    async def drive(count: int) -> int:
        remaining, failed = count, 0

        async def worker() -> None:
            nonlocal remaining, failed
            while remaining > 0:
                remaining -= 1
                if not await one():
                    failed += 1

        await asyncio.gather(*(worker() for _ in range(min(c, count))))
        return failed

    w = warmup_count(warmup, c)
    failed = await drive(w)
    cpu0, sim0, t0 = time.process_time(), proc_cpu_seconds(sim_pid), time.perf_counter()
    failed += await drive(n)
    wall = time.perf_counter() - t0
    cpu, sim_cpu = time.process_time() - cpu0, proc_cpu_seconds(sim_pid) - sim0
    await close()
    return {
        "concurrency": c,
        "n": n,
        "warmup": w,
        "seconds": wall,
        "per_s": n / wall,
        "failed": failed,
        "client_cpu_share": cpu / wall,
        "sim_cpu_share": sim_cpu / wall,
    }


async def client_child(args: argparse.Namespace) -> dict[str, Any]:
    url = args.child_sim + "/v1/chat/completions"
    levels = []
    for c in args.levels:
        levels.append(
            await client_level(args.child_client, url, c, args.n, args.warmup, args.child_sim_pid)
        )
    return {"kind": args.child_client, "process": sys.executable, "levels": levels}


# ------------------------------------------------------------------ whole processes


def sim_reset(sim: SimProcess) -> None:
    httpx.post(sim.base_url + "/sim/reset", timeout=30).raise_for_status()


def sim_check(sim: SimProcess, expected: int) -> dict[str, Any]:
    resp = httpx.get(sim.base_url + "/sim/requests", timeout=120)
    resp.raise_for_status()
    log = resp.json()
    ok = sum(1 for e in log if e.get("status") == 200 and e.get("persona") == PERSONA)
    return {
        "expected": expected,
        "logged": len(log),
        "ok_200": ok,
        "match": len(log) == expected == ok,
    }


class Bench:
    """The temp files, the commands, and one method per kind of measured process."""

    def __init__(self, sim: SimProcess, tmp: Path, args: argparse.Namespace) -> None:
        self.sim, self.tmp, self.args = sim, tmp, args
        self.n = args.n
        self.client_n = args.client_n or args.n
        self.items = tmp / "items.jsonl"
        self.one = tmp / "one.jsonl"
        rows = [{"id": f"i{i}", "prompt": f"Reply with exactly: pong {i}"} for i in range(self.n)]
        self.items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        self.one.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
        self.providers = tmp / "providers.toml"
        self.providers.write_text(
            PROVIDERS_TOML.format(url=sim.openai_url, model=PERSONA), encoding="utf-8"
        )
        self.task = tmp / "inspect_task.py"
        self.task.write_text(INSPECT_TASK, encoding="utf-8")
        self.cwd = tmp / "cwd"  # `workbench run` writes reports/ under its working directory
        self.cwd.mkdir()
        self.wb_env = {**os.environ, "SIM_KEY": API_KEY}
        self.inspect_env = {
            **os.environ,
            "SIM_API_KEY": API_KEY,  # openai-api/<service>/...: <SERVICE>_API_KEY, _BASE_URL
            "SIM_BASE_URL": sim.openai_url,
        }
        self.checks: list[dict[str, Any]] = []
        self.commands: dict[str, str] = {}
        self._k = 0

    def _fresh(self) -> Path:
        self._k += 1
        d = self.tmp / "runs" / str(self._k)
        d.mkdir(parents=True)
        return d

    def _check(self, what: str, ok: bool, detail: str, run: dict[str, Any] | None = None) -> None:
        entry: dict[str, Any] = {"what": what, "ok": ok, "detail": detail}
        if not ok and run is not None:
            entry["output_tail"] = (run["stdout"][-1500:] + "\n" + run["stderr"][-1500:]).strip()
        self.checks.append(entry)
        if not ok:
            print(f"  CHECK FAILED: {what}: {detail}", flush=True)

    # -------------------------------------------------------------- clients

    def clients(self, kind: str) -> dict[str, Any] | None:
        out = self.tmp / f"client-{kind}.json"
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child-client",
            kind,
            "--child-sim",
            self.sim.base_url,
            "--child-sim-pid",
            str(self.sim.pid),
            "--child-out",
            str(out),
            "--n",
            str(self.client_n),
            "--warmup",
            str(self.args.warmup),
            "--levels",
            ",".join(map(str, self.args.levels)),
        ]
        self.commands[f"client {kind}"] = shlex.join(["python", *cmd[1:]])
        sim_reset(self.sim)
        run = run_process(cmd, dict(os.environ), REPO)
        expected = sum(warmup_count(self.args.warmup, c) + self.client_n for c in self.args.levels)
        check = sim_check(self.sim, expected)
        if run["exit"] != 0 or not out.exists():
            self._check(f"client {kind}", False, f"exit {run['exit']}", run)
            return None
        data = json.loads(out.read_text(encoding="utf-8"))
        failed = sum(lv["failed"] for lv in data["levels"])
        self._check(
            f"client {kind}",
            check["match"] and failed == 0,
            f"{check['logged']} logged, {check['ok_200']} 200s, {expected} sent, "
            f"{failed} bad replies",
        )
        return data

    # -------------------------------------------------------------- workbench run

    def workbench(
        self, items: Path, n: int, c: int, extra: list[str], label: str
    ) -> dict[str, Any] | None:
        d = self._fresh()
        cmd = [
            *workbench_cmd(),
            "run",
            str(items),
            "--providers",
            str(self.providers),
            "--db",
            str(d / "bench.duckdb"),
            "--concurrency",
            str(c),
            "--quiet",
            *extra,
        ]
        self.commands.setdefault(label, " ".join(["workbench", *cmd[len(workbench_cmd()) :]]))
        sim_reset(self.sim)
        sim0 = self.sim.cpu_seconds()
        run = run_process(cmd, self.wb_env, self.cwd)
        sim_cpu = self.sim.cpu_seconds() - sim0
        check = sim_check(self.sim, n)
        first = run["stdout"].splitlines()[0] if run["stdout"] else ""
        m = FIRST_LINE.match(first)
        ok = (
            run["exit"] == 0
            and m is not None
            and m.group(1) == "finished"
            and int(m.group(2)) == n
            and int(m.group(3)) == n
            and check["match"]
        )
        self._check(
            label,
            ok,
            f"exit {run['exit']}, {first!r}, sim {check['logged']} logged / "
            f"{check['ok_200']} 200s / {n} expected",
            run,
        )
        shutil.rmtree(d, ignore_errors=True)
        if not ok or m is None:
            return None
        return {
            "wall": run["wall"],
            "own_s": float(m.group(4)),
            "cpu_share": run["cpu_s"] / run["wall"],
            "sim_cpu_share": sim_cpu / run["wall"],
        }

    def help_wall(self) -> float | None:
        run = run_process([*workbench_cmd(), "--help"], self.wb_env, self.cwd)
        self.commands.setdefault("help", "workbench --help")
        ok = run["exit"] == 0
        self._check("workbench --help", ok, f"exit {run['exit']}", run)
        return run["wall"] if ok else None

    def durability_supported(self) -> bool:
        run = run_process([*workbench_cmd(), "run", "--help"], self.wb_env, self.cwd)
        return "--durability" in run["stdout"]

    # -------------------------------------------------------------- inspect eval

    def inspect(self, items: Path, n: int, c: int, label: str) -> dict[str, Any] | None:
        d = self._fresh()
        cmd = [
            str(INSPECT_BIN),
            "eval",
            self.task.name,
            "-T",
            f"items={items}",
            "--model",
            f"openai-api/sim/{PERSONA}",
            "--max-connections",
            str(c),
            "--display",
            "none",
            "--log-dir",
            str(d / "logs"),
        ]
        self.commands.setdefault(label, " ".join(["inspect", *cmd[1:]]))
        sim_reset(self.sim)
        sim0 = self.sim.cpu_seconds()
        run = run_process(cmd, self.inspect_env, self.tmp)  # a task path must be relative
        sim_cpu = self.sim.cpu_seconds() - sim0
        check = sim_check(self.sim, n)
        logs = sorted((d / "logs").glob("*.eval"))
        samples = -1
        if len(logs) == 1:
            try:
                with zipfile.ZipFile(logs[0]) as z:
                    samples = sum(1 for name in z.namelist() if name.startswith("samples/"))
            except (OSError, zipfile.BadZipFile):
                pass
        ok = run["exit"] == 0 and check["match"] and samples == n
        self._check(
            label,
            ok,
            f"exit {run['exit']}, {samples} samples in the log, sim "
            f"{check['logged']} logged / {check['ok_200']} 200s / {n} expected",
            run,
        )
        shutil.rmtree(d, ignore_errors=True)
        if not ok:
            return None
        return {
            "wall": run["wall"],
            "cpu_share": run["cpu_s"] / run["wall"],
            "sim_cpu_share": sim_cpu / run["wall"],
        }


# ------------------------------------------------------------------ the rounds


def measure(sim: SimProcess, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    b = Bench(sim, tmp, args)
    durability = b.durability_supported()
    inspect_error = None
    if not args.no_inspect:
        try:
            ensure_inspect_venv()
        except (subprocess.SubprocessError, OSError) as exc:
            inspect_error = f"could not build {INSPECT_VENV}: {exc}"
            print(inspect_error, flush=True)
    use_inspect = not args.no_inspect and inspect_error is None

    # raw samples, one list per key, one entry per round
    s: dict[str, list[Any]] = {}

    def add(key: str, value: Any) -> None:
        if value is not None:
            s.setdefault(key, []).append(value)

    jobs: list[tuple[str, str, Callable[[], Any]]] = []  # (shown, sample key, the call)

    def job(name: str, key: str, fn: Callable[..., Any], *fn_args: Any) -> None:
        jobs.append((name, key, functools.partial(fn, *fn_args)))

    quiet = ["--no-report"]
    for kind in CLIENT_KINDS:
        job(f"clients {kind}", f"client|{kind}", b.clients, kind)
    job("workbench one item", "wb|one", b.workbench, b.one, 1, 1, quiet, "workbench run, one item")
    for c in args.levels:
        job(
            f"workbench c={c}",
            f"wb|{c}",
            b.workbench,
            b.items,
            args.n,
            c,
            quiet,
            f"workbench run, concurrency {c}",
        )
    if durability:
        jc = args.journal_concurrency
        for mode in DURABILITY:
            job(
                f"workbench c={jc} --durability {mode}",
                f"journal|{mode}",
                b.workbench,
                b.items,
                args.n,
                jc,
                [*quiet, "--durability", mode],
                f"workbench run --durability {mode}",
            )
    for _ in range(3):
        job("workbench --help", "help", b.help_wall)
    job(
        "workbench one item with report",
        "wb|one_report",
        b.workbench,
        b.one,
        1,
        1,
        [],
        "workbench run, one item, with report",
    )
    if use_inspect:
        job(
            "inspect one item",
            "inspect|one",
            b.inspect,
            b.one,
            1,
            max(args.inspect_levels),
            "inspect eval, one item",
        )
        for c in args.inspect_levels:
            job(
                f"inspect c={c}",
                f"inspect|{c}",
                b.inspect,
                b.items,
                args.n,
                c,
                f"inspect eval, concurrency {c}",
            )

    # Uncounted: one of each process first, so the file cache is warm for round 1.
    print(
        "warm-up: one-item workbench run" + (", one-item inspect eval" if use_inspect else ""),
        flush=True,
    )
    b.workbench(b.one, 1, 1, ["--no-report"], "warm-up")
    if use_inspect:
        b.inspect(b.one, 1, max(args.inspect_levels), "warm-up inspect")
    for r in range(args.rounds):
        order = jobs if r % 2 == 0 else jobs[::-1]
        for name, key, call in order:
            t0 = time.perf_counter()
            add(key, call())
            print(
                f"round {r + 1}/{args.rounds}: {name} ({time.perf_counter() - t0:.1f} s)",
                flush=True,
            )
    return {
        "samples": s,
        "checks": b.checks,
        "commands": b.commands,
        "durability": durability,
        "inspect_error": inspect_error,
        "use_inspect": use_inspect,
    }


# ------------------------------------------------------------------ figures


def corrected(walls: list[float], ones: list[float], n: int) -> float | None:
    """Items/s with start-up taken out: (n - 1) items in (wall - one-item wall), per round."""
    rates = [(n - 1) / (w - o) for w, o in zip(walls, ones, strict=False) if w > o]
    return median(rates) if rates and n > 1 else None


def figures(m: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    s, n = m["samples"], args.n
    clients: dict[str, dict[int, dict[str, float]]] = {}
    for kind in CLIENT_KINDS:
        rounds = s.get(f"client|{kind}", [])
        per: dict[int, dict[str, float]] = {}
        for c in args.levels:
            rows = [lv for data in rounds for lv in data["levels"] if lv["concurrency"] == c]
            if rows:
                per[c] = {
                    "per_s": median([r["per_s"] for r in rows]),
                    "client_cpu_share": median([r["client_cpu_share"] for r in rows]),
                    "sim_cpu_share": median([r["sim_cpu_share"] for r in rows]),
                    "rounds": len(rows),
                    "per_s_rounds": [r["per_s"] for r in rows],
                }
        clients[kind] = per

    one_walls = [x["wall"] for x in s.get("wb|one", [])]

    def wb_row(key: str) -> dict[str, Any] | None:
        runs = s.get(key, [])
        if not runs:
            return None
        walls = [x["wall"] for x in runs]
        return {
            "wall_s": median(walls),
            "raw_per_s": median([n / w for w in walls]),
            "corrected_per_s": corrected(walls, one_walls, n),
            "own_per_s": median([n / x["own_s"] for x in runs if x["own_s"] > 0]),
            "own_s": median([x["own_s"] for x in runs]),
            "cpu_share": median([x["cpu_share"] for x in runs]),
            "sim_cpu_share": median([x["sim_cpu_share"] for x in runs]),
            "walls": walls,
        }

    runner: dict[int, dict[str, Any]] = {}
    for c in args.levels:
        row = wb_row(f"wb|{c}")
        if row is None:
            continue
        ratio = {}
        for kind in CLIENT_KINDS:
            cl = clients[kind].get(c)
            if cl and row["corrected_per_s"]:
                ratio[kind] = row["corrected_per_s"] / cl["per_s"]
        row["over_client"] = ratio
        runner[c] = row
    r128_32 = None
    if 128 in runner and 32 in runner and runner[32]["corrected_per_s"]:
        r128_32 = (runner[128]["corrected_per_s"] or 0) / runner[32]["corrected_per_s"]

    journal: dict[str, Any] = {
        "supported": m["durability"],
        "concurrency": args.journal_concurrency,
        "modes": {},
    }
    if m["durability"]:
        for mode in DURABILITY:
            row = wb_row(f"journal|{mode}")
            if row is not None:
                journal["modes"][mode] = row
        modes = journal["modes"]
        if "fsync" in modes and "off" in modes and modes["off"]["corrected_per_s"]:
            journal["fsync_over_off"] = (modes["fsync"]["corrected_per_s"] or 0) / modes["off"][
                "corrected_per_s"
            ]
        if "write" in modes and "off" in modes and modes["off"]["corrected_per_s"]:
            journal["write_over_off"] = (modes["write"]["corrected_per_s"] or 0) / modes["off"][
                "corrected_per_s"
            ]
    else:
        journal["note"] = "`workbench run --help` does not list --durability: part skipped"

    inspect: dict[str, Any] = {"ran": m["use_inspect"], "error": m["inspect_error"], "levels": {}}
    if m["use_inspect"]:
        inspect["versions"] = inspect_version()
        i_ones = [x["wall"] for x in s.get("inspect|one", [])]
        for c in args.inspect_levels:
            runs = s.get(f"inspect|{c}", [])
            if not runs:
                continue
            walls = [x["wall"] for x in runs]
            row = {
                "wall_s": median(walls),
                "raw_per_s": median([n / w for w in walls]),
                "corrected_per_s": corrected(walls, i_ones, n),
                "cpu_share": median([x["cpu_share"] for x in runs]),
                "sim_cpu_share": median([x["sim_cpu_share"] for x in runs]),
                "walls": walls,
            }
            wb = runner.get(c)
            if wb is not None:
                if wb["corrected_per_s"] and row["corrected_per_s"]:
                    row["workbench_over_inspect"] = wb["corrected_per_s"] / row["corrected_per_s"]
                row["workbench_over_inspect_raw"] = wb["raw_per_s"] / row["raw_per_s"]
            inspect["levels"][c] = row

    startup = {
        "workbench_help_s": median(s.get("help", [])) if s.get("help") else None,
        "workbench_run_one_no_report_s": median(one_walls) if one_walls else None,
        "workbench_run_one_report_s": median([x["wall"] for x in s["wb|one_report"]])
        if s.get("wb|one_report")
        else None,
        "inspect_eval_one_s": median([x["wall"] for x in s["inspect|one"]])
        if s.get("inspect|one")
        else None,
    }
    return {
        "clients": clients,
        "runner": runner,
        "runner_128_over_32": r128_32,
        "journal": journal,
        "inspect": inspect,
        "startup": startup,
    }


# ------------------------------------------------------------------ report


def fmt(v: float | None, spec: str = ",.0f", suffix: str = "") -> str:
    return "—" if v is None else format(v, spec) + suffix


def pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0%}"


def tables(f: dict[str, Any], args: argparse.Namespace) -> list[str]:
    n = args.n
    lines = [
        f"### Raw keep-alive client ceiling (requests/s, {args.client_n or n} requests per level; "
        "client CPU / simulator CPU as a share of one core)",
        "",
        "| concurrency | " + " | ".join(CLIENT_LABELS[k] for k in CLIENT_KINDS) + " |",
        "|--:|" + "--:|" * len(CLIENT_KINDS),
    ]
    for c in args.levels:
        cells = []
        for k in CLIENT_KINDS:
            r = f["clients"][k].get(c)
            cells.append(
                "—"
                if r is None
                else f"{r['per_s']:,.0f} ({pct(r['client_cpu_share'])} / {pct(r['sim_cpu_share'])})"
            )
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    one = f["startup"]["workbench_run_one_no_report_s"]
    lines += [
        "",
        f"### `workbench run` ({n} one-message items, fresh DuckDB, --quiet --no-report; "
        f"one-item run {fmt(one, '.2f', ' s')})",
        "",
        '| concurrency | wall s | items/s raw | items/s start-up corrected | items/s own "in X s" '
        "| ÷ aiohttp | ÷ httpx+aiohttp | ÷ httpx | runner CPU | sim CPU |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for c in args.levels:
        r = f["runner"].get(c)
        if r is None:
            lines.append(f"| {c} | — | — | — | — | — | — | — | — | — |")
            continue
        ratios = [fmt(r["over_client"].get(k), ".2f", "×") for k in CLIENT_KINDS]
        lines.append(
            f"| {c} | {r['wall_s']:.2f} | {r['raw_per_s']:,.0f} | {fmt(r['corrected_per_s'])} "
            f"| {fmt(r['own_per_s'])} | "
            + " | ".join(ratios)
            + f" | {pct(r['cpu_share'])} | {pct(r['sim_cpu_share'])} |"
        )
    r128 = fmt(f["runner_128_over_32"], ".2f", "×")
    lines += ["", f"Runner at 128 ÷ at 32 (corrected): {r128}."]
    j = f["journal"]
    lines += ["", f"### Journal cost (`--durability`, concurrency {j['concurrency']})", ""]
    if not j["supported"]:
        lines.append(j["note"] + ".")
    else:
        lines += [
            "| durability | wall s | items/s raw | items/s corrected | items/s own | ÷ off |",
            "|---|--:|--:|--:|--:|--:|",
        ]
        off = j["modes"].get("off", {}).get("corrected_per_s")
        for mode in DURABILITY:
            r = j["modes"].get(mode)
            if r is None:
                lines.append(f"| {mode} | — | — | — | — | — |")
                continue
            rel = r["corrected_per_s"] / off if off and r["corrected_per_s"] else None
            lines.append(
                f"| {mode} | {r['wall_s']:.2f} | {r['raw_per_s']:,.0f} "
                f"| {fmt(r['corrected_per_s'])} | {fmt(r['own_per_s'])} | {fmt(rel, '.2f', '×')} |"
            )
    ins = f["inspect"]
    lines += ["", "### Inspect AI `inspect eval` (same items, same simulator)", ""]
    if not ins["ran"]:
        lines.append(ins["error"] or "Not run (--no-inspect).")
    else:
        v = ins.get("versions") or {}
        lines += [
            f"inspect-ai {v.get('inspect_ai', '?')}, openai {v.get('openai', '?')}; "
            f"one-item run {fmt(f['startup']['inspect_eval_one_s'], '.2f', ' s')}.",
            "",
            "| concurrency | wall s | items/s raw | items/s corrected | workbench ÷ inspect "
            "(corrected) | workbench ÷ inspect (raw) | inspect CPU | sim CPU |",
            "|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for c in args.inspect_levels:
            r = ins["levels"].get(c)
            if r is None:
                lines.append(f"| {c} | — | — | — | — | — | — | — |")
                continue
            lines.append(
                f"| {c} | {r['wall_s']:.2f} | {r['raw_per_s']:,.1f} "
                f"| {fmt(r['corrected_per_s'], ',.1f')} "
                f"| {fmt(r.get('workbench_over_inspect'), '.1f', '×')} "
                f"| {fmt(r.get('workbench_over_inspect_raw'), '.1f', '×')} "
                f"| {pct(r['cpu_share'])} | {pct(r['sim_cpu_share'])} |"
            )
        r32 = ins["levels"].get(32)
        if r32 and r32.get("workbench_over_inspect"):
            x = r32["workbench_over_inspect"]
            verdict = "meets" if x >= TARGET else "MISSES"
            lines += [
                "",
                f"At concurrency 32 workbench gets {x:.1f}× Inspect AI's items/s "
                f"({verdict} the ≥ {TARGET:.0f}× target).",
            ]
    st = f["startup"]
    lines += [
        "",
        "### Start-up (whole-process wall time, median)",
        "",
        "| command | seconds |",
        "|---|--:|",
        f"| `workbench --help` | {fmt(st['workbench_help_s'], '.2f')} |",
        f"| `workbench run` one item, --no-report | "
        f"{fmt(st['workbench_run_one_no_report_s'], '.2f')} |",
        f"| `workbench run` one item, with report | "
        f"{fmt(st['workbench_run_one_report_s'], '.2f')} |",
        f"| `inspect eval` one item | {fmt(st['inspect_eval_one_s'], '.2f')} |",
    ]
    return lines


def main_parent(args: argparse.Namespace) -> int:
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="workbench-ceiling-") as tmp, SimProcess() as sim:
        m = measure(sim, Path(tmp), args)
    f = figures(m, args)
    print()
    print(
        f"runner ceiling: {args.n} items/requests, levels {args.levels}, {args.rounds} round(s), "
        "medians; one simulator process (zero-latency persona) on the same "
        f"{os.cpu_count()}-core machine; every figure a whole process"
    )
    print()
    for line in tables(f, args):
        print(line)
    failed = [c for c in m["checks"] if not c["ok"]]
    print()
    print(
        f"checks: {len(m['checks']) - len(failed)}/{len(m['checks'])} OK"
        + (
            "; FAILED: " + "; ".join(f"{c['what']} ({c['detail']})" for c in failed[:5])
            if failed
            else ""
        )
    )
    if m["inspect_error"]:
        print(f"The Inspect part did not run: {m['inspect_error']}")
    print("\ncommands:")
    for label, cmd in m["commands"].items():
        if not label.startswith("warm-up"):
            print(f"  {label}: {cmd}")
    versions = {}
    for dist in ("aiohttp", "httpx-aiohttp", "duckdb"):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = "?"
    path = write_json(
        JSON_NAME,
        {
            "benchmark": "runner_ceiling",
            "settings": {
                "n": args.n,
                "client_n": args.client_n or args.n,
                "levels": args.levels,
                "rounds": args.rounds,
                "warmup": args.warmup,
                "inspect_levels": args.inspect_levels,
                "journal_concurrency": args.journal_concurrency,
                "no_inspect": args.no_inspect,
                "simulator": "one separate process, zero-latency native persona",
            },
            "machine": {**machine(), **versions},
            "seconds": round(time.time() - started, 1),
            **f,
            "commands": m["commands"],
            "checks": m["checks"],
            "ok": not failed and m["inspect_error"] is None,
        },
    )
    print(f"\nJSON: {path}")
    return 0 if not failed and m["inspect_error"] is None else 1


def levels_arg(text: str) -> list[int]:
    values = [int(x) for x in text.split(",") if x.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of positive integers")
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="items (and requests per level)")
    parser.add_argument(
        "--client-n", type=int, help="requests per level for the raw clients (default: --n)"
    )
    parser.add_argument(
        "--levels",
        type=levels_arg,
        default=[1, 8, 32, 128],
        help="concurrency levels for the clients and the runner",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians over them)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=100,
        help="client warm-up requests per level (at least 2 × concurrency)",
    )
    parser.add_argument(
        "--inspect-levels",
        type=levels_arg,
        default=[32],
        help="concurrency levels for inspect eval (e.g. 8,32)",
    )
    parser.add_argument("--journal-concurrency", type=int, default=32)
    parser.add_argument("--no-inspect", action="store_true", help="skip the Inspect AI part")
    parser.add_argument("--child-client", choices=CLIENT_KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--child-sim", help=argparse.SUPPRESS)
    parser.add_argument("--child-sim-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.n < 2 or args.rounds < 1 or args.warmup < 0 or (args.client_n or 1) < 1:
        parser.error("--n must be >= 2, --client-n >= 1, --rounds >= 1, --warmup >= 0")
    if args.child_client:
        result = asyncio.run(client_child(args))
        Path(args.child_out).write_text(json.dumps(result), encoding="utf-8")
        return 0
    return main_parent(args)


if __name__ == "__main__":
    sys.exit(main())
