"""`run_chaos`: a fault-injection run of the workbench.

A simulator fleet of faulty personas (a 429 storm with Retry-After, 5xx bursts, hangs past a
short attempt deadline, empty 200s, truncated and malformed bodies), one RPM-capped persona and
one healthy persona last in the chain; the smoke prompt set through `run_prompt_set` into a
real DuckDB file, optionally with the quota's Redis killed and restarted mid-run. Then the
checks, each a promise of the docs' "Reliability" page:

- `attempts_logged`: every request the simulator received is one attempt row (outcome ok,
  error, rejected or partial) in DuckDB, and no more;
- `rpm_respected`: no persona received more requests in a calendar minute than the RPM its
  model was configured with (counted from the simulator's own log);
- `items_accounted`: every (item, repeat) has exactly one output, which either answered (no
  error code) or failed with a coded error;
- `no_exception`: `run_prompt_set` returned, with status `finished`;
- `faults_injected`: the simulator really served every fault kind (else the run proved nothing);
- `store_locked`: while another process holds the DuckDB file, `Store.open` raises
  `ConfigError(STORE_LOCKED)`;
- `redis_outage` (only with `kill_redis`): the kill and the restart happened during the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import subprocess
import sys
import textwrap
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from workbench.config.providers_file import ProvidersConfig
from workbench.errors import ConfigError
from workbench.eval.analysis.outcomes import SENT_OUTCOMES
from workbench.eval.dataset.prompt_set import load_dataset
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.events import QuotaBackendEvent
from workbench.providers.base import HttpProvider
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.providers.spec import ModelSpec
from workbench.sim import SimServer

SMOKE = Path(__file__).resolve().parents[3] / "datasets" / "smoke.jsonl"
ATTEMPT_TIMEOUT_S = 0.5
# A router reserves its RPM slot a moment before the request reaches the simulator: a request
# that lands this soon after a minute boundary may belong to the previous minute's count.
BOUNDARY_SKEW_MS = 250

# (persona, router rpm or None, fleet fields): the chain, in order; the healthy one is last.
CHAIN: tuple[tuple[str, int | None, dict[str, Any]], ...] = (
    (
        "chaos-429",
        None,
        {
            "rate_limit_style": "groq",
            "retry_after_s": 1.0,
            "failures": [{"kind": "429", "rate": 0.7}],
        },
    ),
    (
        "chaos-5xx",
        12,
        {
            "failures": [
                {"kind": "500", "rate": 0.25},
                {"kind": "502", "rate": 0.2},
                {"kind": "503", "rate": 0.2},
            ]
        },
    ),
    ("chaos-hang", None, {"hang_s": 5.0, "failures": [{"kind": "hang", "rate": 0.5}]}),
    (
        "chaos-junk",
        10,
        {
            "failures": [
                {"kind": "empty", "rate": 0.3},
                {"kind": "truncated", "rate": 0.25},
                {"kind": "malformed", "rate": 0.25},
            ]
        },
    ),
    ("chaos-capped", 4, {}),
    ("chaos-healthy", None, {"latency_ms": 250.0}),  # slow: the run outlives a Redis outage
)
FAULT_KINDS = ("429", "5xx", "hang", "empty", "truncated", "malformed")

HOLDER = textwrap.dedent(
    """
    import sys
    from workbench.eval.store.database import Store
    s = Store.open(sys.argv[1])
    print("held", flush=True)
    sys.stdin.readline()
    s.close()
    """
)


@dataclass(slots=True)
class ChaosReport:
    ok: bool
    checks: dict[str, bool]
    details: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> Iterator[str]:
        """Lines for the terminal: the verdict, then one per check with its evidence."""
        d = self.details
        yield (
            f"chaos: {'OK' if self.ok else 'FAILED'}: {d.get('jobs', '?')} items, "
            f"{d.get('requests', '?')} requests in {d.get('seconds', 0):.1f} s "
            f"(run {d.get('run_id', '?')})"
        )
        for name, passed in self.checks.items():
            why = d.get(name)
            yield f"  {'ok  ' if passed else 'FAIL'} {name}" + (f": {why}" if why else "")


def _fleet(seed: int) -> dict[str, Any]:
    personas = [
        {"id": pid, "tool_style": "native", "latency_ms": 5.0, "latency_jitter_ms": 3.0} | extra
        for pid, _, extra in CHAIN
    ]
    return {"seed": seed, "description": "workbench chaos fleet", "persona": personas}


def chaos_config(
    sim: SimServer, redis_url: str | None = None, sinks: tuple[Any, ...] = ()
) -> ProvidersConfig:
    """One provider per persona (each its own breaker and cooldown), in chain order; `sinks`
    are the router's (its quota backend transitions go there, not to the store)."""

    def key(_ctx: Any) -> str:
        return "sim-key"

    providers: list[HttpProvider] = [
        openai_compatible_provider(pid, sim.openai_url, key, [ModelSpec(pid, rpm=rpm)])
        for pid, rpm, _ in CHAIN
    ]
    options: dict[str, Any] = {
        "attempt_timeout_s": ATTEMPT_TIMEOUT_S,
        "cooldown_s": 1.0,
        "sinks": sinks,
    }
    if redis_url:
        options["redis_url"] = redis_url
    return ProvidersConfig("chaos", providers, options)


def _ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def _rpm_overruns(log: list[dict[str, Any]]) -> dict[str, Any]:
    """Per capped persona, the calendar minutes whose request count passed the cap."""
    caps = {pid: rpm for pid, rpm, _ in CHAIN if rpm}
    times: dict[str, list[int]] = defaultdict(list)
    for entry in log:
        if entry.get("persona") in caps:
            times[entry["persona"]].append(_ms(entry["time"]))
    over: dict[str, Any] = {}
    for pid, stamps in times.items():
        cap, per_minute = caps[pid], Counter[int]()
        for t in sorted(stamps):
            minute = t // 60_000
            if t % 60_000 < BOUNDARY_SKEW_MS and per_minute[minute - 1] < cap:
                minute -= 1  # reserved just before the boundary, arrived just after it
            per_minute[minute] += 1
        bad = {m: n for m, n in per_minute.items() if n > cap}
        if bad:
            over[pid] = {"cap": cap, "minutes": bad}
    return over


def _faults(log: list[dict[str, Any]]) -> Counter[str]:
    seen: Counter[str] = Counter()
    for entry in log:
        kind = str(entry.get("outcome") or "")
        seen["5xx" if kind in ("500", "502", "503") else kind or "ok"] += 1
    return seen


def _check_locked(db_path: Path) -> tuple[bool, str]:
    """A real second process holds the file; this one must be refused with STORE_LOCKED."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "held":
            return False, "the holder process did not open the store"
        try:
            Store.open(db_path).close()
        except ConfigError as exc:
            return exc.code == "STORE_LOCKED", f"{exc.code} (holder PID {proc.pid})"
        return False, "a second writer opened the file"
    finally:
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def run_chaos(
    db_path: str | Path,
    *,
    redis_url: str | None = None,
    items: int = 120,
    seed: int = 0,
    concurrency: int = 8,
    kill_redis: Callable[[], Any] | None = None,
    restart_redis: Callable[[], Any] | None = None,
    kill_at: float = 0.2,
    restart_at: float = 0.4,
    on_phase: Callable[[str], Any] | None = None,
) -> ChaosReport:
    """Run the smoke set (repeated to at least `items` items) through the chaos fleet into
    `db_path`, then run the checks of the module docstring. `kill_redis`/`restart_redis` (blocking calls,
    run in a thread) fire when `kill_at`/`restart_at` of the items are done."""
    say = on_phase or (lambda _msg: None)
    db_path = Path(db_path)
    dataset = load_dataset(SMOKE)
    repeats = max(1, math.ceil(items / len(dataset.items)))
    jobs = len(dataset.items) * repeats
    checks: dict[str, bool] = {}
    details: dict[str, Any] = {"jobs": jobs, "seed": seed}
    chores: list[asyncio.Task[Any]] = []
    fired: dict[str, float] = {}
    transitions: list[str] = []

    def router_sink(event: Any) -> None:
        if isinstance(event, QuotaBackendEvent):
            transitions.append(f"{event.backend}:{event.state}")

    done = 0
    started = time.perf_counter()

    def on_item(_item: str, _repeat: int, _config: str) -> None:
        nonlocal done
        done += 1
        for name, action, at in (
            ("kill", kill_redis, kill_at),
            ("restart", restart_redis, restart_at),
        ):
            if action is not None and name not in fired and done >= at * jobs:
                fired[name] = time.perf_counter() - started
                say(f"redis: {name} after {done}/{jobs} items")
                chores.append(asyncio.get_running_loop().create_task(asyncio.to_thread(action)))

    say(f"simulator: {len(CHAIN)} personas, seed {seed}")
    async with SimServer(_fleet(seed)) as sim:
        say(f"run: {jobs} items, concurrency {concurrency}, redis {redis_url or 'none'}")
        summary = None
        try:
            with Store.open(db_path) as store:
                summary = await run_prompt_set(
                    dataset,
                    chaos_config(sim, redis_url, (router_sink,)),
                    store,
                    concurrency=concurrency,
                    repeats=repeats,
                    run_name=f"chaos-{seed}",
                    progress=False,
                    on_item=on_item,
                )
        except Exception as exc:  # the very thing the suite must never see
            details["no_exception"] = f"{type(exc).__name__}: {exc}"
        finally:
            for chore in chores:
                with contextlib.suppress(Exception):
                    await chore
        log = list(sim.requests())
    details["seconds"] = time.perf_counter() - started
    details["requests"] = len(log)
    checks["no_exception"] = summary is not None and summary.status == "finished"
    if summary is not None:
        details["run_id"] = summary.run_id
        details.setdefault(
            "no_exception",
            f"status {summary.status}, {summary.errors} coded errors, "
            f"{summary.passed}/{summary.graded} passed",
        )

    say("checking")
    with Store.open(db_path, read_only=True) as reader:
        run_id = str(details.get("run_id", ""))  # none: the run never started, counts are 0
        outcomes = reader.attempt_outcomes(run_id)
        tally = reader.output_tally(run_id)
    calls = sum(outcomes[o] for o in SENT_OUTCOMES)
    checks["attempts_logged"] = calls == len(log)
    details["attempts_logged"] = f"{calls} attempt rows, {len(log)} requests received"
    refused = outcomes["skipped_quota"]
    checks["items_accounted"] = tally.outputs == tally.distinct == jobs and not tally.unexplained
    details["items_accounted"] = (
        f"{tally.outputs} outputs ({tally.distinct} distinct) for {jobs} items; "
        f"coded errors {tally.codes or 'none'}"
    )
    over = _rpm_overruns(log)
    # A cap the run never reached proves nothing: the router must also have refused some.
    checks["rpm_respected"] = not over and refused > 0
    caps = {pid: rpm for pid, rpm, _ in CHAIN if rpm}
    details["rpm_respected"] = (
        f"over cap: {over}" if over else f"caps {caps} held"
    ) + f"; {refused} attempts skipped for quota"
    faults = _faults(log)
    missing = [k for k in FAULT_KINDS if not faults[k]]
    checks["faults_injected"] = not missing
    details["faults_injected"] = dict(faults) | ({"missing": missing} if missing else {})
    if kill_redis is not None or restart_redis is not None:
        # The quota noticed the kill (memory took over) and went back to Redis after the restart.
        expected = (["memory:degraded"] if kill_redis else []) + (
            ["redis:restored"] if kill_redis and restart_redis else []
        )
        wanted_fired = {n for n, a in (("kill", kill_redis), ("restart", restart_redis)) if a}
        checks["redis_outage"] = set(fired) == wanted_fired and transitions == expected
        details["redis_outage"] = {
            "fired_at_s": {k: round(v, 2) for k, v in fired.items()},
            "quota_backend": transitions,
        }

    say("checking: a second process holds the store")
    checks["store_locked"], details["store_locked"] = await asyncio.to_thread(
        _check_locked, db_path
    )
    return ChaosReport(all(checks.values()), checks, details)
