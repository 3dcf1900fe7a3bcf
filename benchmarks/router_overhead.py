"""What a router adds per call: workbench's `Router` and LiteLLM's `Router`, each against a bare
HTTP round trip measured in its own process.

The simulator runs in a separate process with one zero-latency persona. Against that one
endpoint, the same non-streaming chat-completions request is made `--n` times, one after
another, in three ways:

  bare       `httpx.AsyncClient.post(url, json=body, headers=auth)` then `resp.json()`
  workbench  `Router([openai_compatible_provider(...)]).route(request, ctx=...)`, with
             in-memory quotas and rpm/tpd set (high) on the model, so the reservation, the
             attempt bookkeeping, the breaker, cooldowns and events all run
  litellm    `litellm.Router(model_list=[...]).acompletion(model="bench", messages=[...])`

LiteLLM is never a dependency of the project: its part runs in a child process under
`benchmarks/.venv-litellm/bin/python` (a venv created on first use with `pip install litellm`
and `pip install -e <repo>`), kept offline (`LITELLM_LOCAL_MODEL_COST_MAP=True`, no callbacks,
no telemetry, quiet logging). Each process measures bare against its router, interleaved in
blocks (`--block`, order flipped every round) after a warm-up, so each router's overhead is
a ratio against a baseline from its own process and time window.

After each part, the simulator's `/sim/requests` log is read back: its count must equal the
number of calls the part made (warm-ups included), every one answered 200 by the `bench`
persona, so neither router can have answered from anywhere else.

    .venv/bin/python benchmarks/router_overhead.py [--n 500] [--block 50] [--warmup 50]
                                                   [--no-litellm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from _sim_process import PERSONA, SimProcess, machine, median, percentile, write_json

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LITELLM_VENV = HERE / ".venv-litellm"
LITELLM_PYTHON = LITELLM_VENV / "bin" / "python"

PROMPT = "Say hello in one short sentence."
MESSAGES = [{"role": "user", "content": PROMPT}]
API_KEY = "k"
AUTH = {"authorization": f"Bearer {API_KEY}"}
BODY = {"model": PERSONA, "messages": MESSAGES}
# High enough never to refuse, low enough that the accounting is real arithmetic.
RPM, TPD = 1_000_000, 1_000_000_000

Fn = Callable[[], Awaitable[Any]]


# ------------------------------------------------------------------------ measuring


async def timed(fn: Fn, count: int, into: list[float]) -> None:
    for _ in range(count):
        start = time.perf_counter_ns()
        await fn()
        into.append((time.perf_counter_ns() - start) / 1000)  # microseconds


async def interleaved(
    fns: dict[str, Fn], n: int, block: int, warmup: int
) -> dict[str, list[float]]:
    """Warm-up each way, then alternate blocks of `block` calls, the order flipped each round."""
    names = list(fns)
    sink: list[float] = []
    for name in names:
        await timed(fns[name], warmup, sink)
    samples: dict[str, list[float]] = {name: [] for name in names}
    done = rounds = 0
    while done < n:
        count = min(block, n - done)
        order = names if rounds % 2 == 0 else names[::-1]
        for name in order:
            await timed(fns[name], count, samples[name])
        done += count
        rounds += 1
    return samples


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median_us": median(values),
        "p95_us": percentile(values, 95),
        "mean_us": sum(values) / len(values),
        "min_us": min(values),
    }


def sim_log(base_url: str) -> list[dict[str, Any]]:
    resp = httpx.get(base_url + "/sim/requests", timeout=30)
    resp.raise_for_status()
    return resp.json()


def sim_reset(base_url: str) -> None:
    httpx.post(base_url + "/sim/reset", timeout=5).raise_for_status()


def check_log(base_url: str, expected: int) -> dict[str, Any]:
    """The simulator's own count of what this part sent it, and whether it matches."""
    log = sim_log(base_url)
    ok = [e for e in log if e.get("status") == 200 and e.get("persona") == PERSONA]
    return {
        "expected": expected,
        "sim_requests": len(log),
        "sim_200_from_persona": len(ok),
        "match": len(log) == expected == len(ok),
        "bodies": sorted({json.dumps(e.get("body"), sort_keys=True) for e in log}),
    }


async def bare_fn(client: httpx.AsyncClient, openai_url: str) -> Fn:
    url = openai_url + "/chat/completions"

    async def bare() -> Any:
        resp = await client.post(url, json=BODY, headers=AUTH)
        return resp.json()

    data = await bare()
    assert data["choices"][0]["message"]["content"], data
    return bare


# ------------------------------------------------------------------------ the two parts


async def workbench_part(sim_base: str, n: int, block: int, warmup: int) -> dict[str, Any]:
    from workbench.providers.openai_compat import openai_compatible_provider
    from workbench.routing.router import Router
    from workbench.types import CallContext, ChatRequest

    openai_url = sim_base + "/v1"
    async with httpx.AsyncClient() as client:
        provider = openai_compatible_provider(
            "sim", openai_url, API_KEY, [{"id": PERSONA, "rpm": RPM, "tpd": TPD}], client=client
        )
        router = Router([provider])
        request = ChatRequest.of(PROMPT)
        ctx = CallContext(client=client)
        spec = provider.model_spec(PERSONA)
        assert provider._body(request, spec, False) == BODY, "the router would send another body"

        async def workbench() -> Any:
            return await router.route(request, ctx=ctx)

        bare = await bare_fn(client, openai_url)
        first = await workbench()
        assert first.value.text and first.key.startswith("sim:"), first
        sim_reset(sim_base)
        samples = await interleaved({"bare": bare, "workbench": workbench}, n, block, warmup)
        usage = await router.usage(first.key)
        await router.close()
    expected = 2 * (n + warmup)
    check = check_log(sim_base, expected)
    # The router's own quota saw every one of its calls since the sanity call (1 + n + warmup).
    check["router_quota_requests_today"] = usage.get("rpd")
    check["router_quota_expected"] = 1 + n + warmup
    sim_reset(sim_base)
    return {
        "process": sys.executable,
        "bare": summary(samples["bare"]),
        "workbench": summary(samples["workbench"]),
        "check": check,
        "quota_key": first.key,
    }


def quiet_litellm() -> Any:
    """Import LiteLLM offline and quiet: local cost map, no callbacks, no telemetry."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    os.environ.setdefault("DISABLE_TELEMETRY", "True")
    import logging

    import litellm

    litellm.suppress_debug_info = True
    litellm.set_verbose = False
    litellm.telemetry = False
    litellm.callbacks = []
    litellm.success_callback = []
    litellm.failure_callback = []
    litellm._async_success_callback = []
    litellm._async_failure_callback = []
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return litellm


async def litellm_part(sim_base: str, n: int, block: int, warmup: int) -> dict[str, Any]:
    litellm = quiet_litellm()
    openai_url = sim_base + "/v1"
    router = litellm.Router(
        model_list=[
            {
                "model_name": "bench",
                "litellm_params": {
                    "model": f"openai/{PERSONA}",
                    "api_base": openai_url,
                    "api_key": API_KEY,
                },
            }
        ]
    )

    async def via_litellm() -> Any:
        return await router.acompletion(model="bench", messages=MESSAGES)

    async with httpx.AsyncClient() as client:
        bare = await bare_fn(client, openai_url)
        first = await via_litellm()
        assert first.choices[0].message.content, first
        sim_reset(sim_base)
        samples = await interleaved({"bare": bare, "litellm": via_litellm}, n, block, warmup)
    expected = 2 * (n + warmup)
    check = check_log(sim_base, expected)
    sim_reset(sim_base)
    aiohttp = not getattr(litellm, "disable_aiohttp_transport", True)
    return {
        "process": sys.executable,
        "litellm_version": _version("litellm"),
        "litellm_aiohttp_transport": aiohttp,
        "bare": summary(samples["bare"]),
        "litellm": summary(samples["litellm"]),
        "check": check,
    }


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


# ------------------------------------------------------------------------ the LiteLLM venv


def ensure_litellm_venv() -> Path:
    """benchmarks/.venv-litellm with litellm and this project installed; built on first use."""
    if LITELLM_PYTHON.exists():
        probe = subprocess.run(
            [str(LITELLM_PYTHON), "-c", "import litellm, workbench"],
            capture_output=True,
            text=True,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
        if probe.returncode == 0:
            return LITELLM_PYTHON
        print(f"{LITELLM_VENV} exists but cannot import litellm/workbench; reinstalling into it")
    else:
        print(
            f"LiteLLM runs in its own venv, never in the project's: creating {LITELLM_VENV}\n"
            "  (one time: python3 -m venv, pip install litellm, pip install -e <repo>; "
            "needs PyPI; --no-litellm skips this part)",
            flush=True,
        )
        subprocess.run(["python3", "-m", "venv", str(LITELLM_VENV)], check=True)
    pip = [str(LITELLM_PYTHON), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "litellm"], check=True)
    subprocess.run([*pip, "-e", str(REPO)], check=True)
    return LITELLM_PYTHON


def run_litellm_child(sim_base: str, args: argparse.Namespace) -> dict[str, Any]:
    python = ensure_litellm_venv()
    cmd = [
        str(python),
        str(Path(__file__).resolve()),
        "--child-litellm",
        sim_base,
        "--n",
        str(args.n),
        "--block",
        str(args.block),
        "--warmup",
        str(args.warmup),
    ]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as tmp:
        out = Path(tmp) / "litellm.json"
        cmd += ["--child-out", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(
                f"the LiteLLM part failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
            )
        return json.loads(out.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------ report


def table(wb: dict[str, Any], ll: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    rows = [("bare httpx (workbench process)", wb["bare"], None)]
    rows.append(("workbench Router.route", wb["workbench"], wb["bare"]))
    if ll is not None:
        rows.append(("bare httpx (LiteLLM process)", ll["bare"], None))
        rows.append(("litellm Router.acompletion", ll["litellm"], ll["bare"]))
    lines = [
        "| way | median µs | p95 µs | ratio median (vs own bare) | ratio p95 | added µs/call (median) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    derived: dict[str, Any] = {}
    for name, s, base in rows:
        if base is None:
            lines.append(
                f"| {name} | {s['median_us']:.0f} | {s['p95_us']:.0f} | 1.00× | 1.00× | — |"
            )
            continue
        rm, rp = s["median_us"] / base["median_us"], s["p95_us"] / base["p95_us"]
        added = s["median_us"] - base["median_us"]
        derived[name] = {"ratio_median": rm, "ratio_p95": rp, "added_us_median": added}
        lines.append(
            f"| {name} | {s['median_us']:.0f} | {s['p95_us']:.0f} | {rm:.2f}× | {rp:.2f}× "
            f"| {added:+.0f} |"
        )
    return "\n".join(lines), derived


def headline(derived: dict[str, Any]) -> tuple[str, float | None]:
    wb = derived["workbench Router.route"]["added_us_median"]
    ll_row = derived.get("litellm Router.acompletion")
    if ll_row is None:
        return "LiteLLM part skipped: no comparison.", None
    ll = ll_row["added_us_median"]
    if ll <= wb:
        return (
            f"LiteLLM is FASTER here: it adds {ll:+.0f} µs per call, workbench {wb:+.0f} µs.",
            ll / wb if wb > 0 else None,
        )
    if wb <= 0:
        return (
            f"workbench adds no measurable time ({wb:+.0f} µs/call, within noise); "
            f"LiteLLM adds {ll:+.0f} µs/call: ratio not defined.",
            None,
        )
    ratio = ll / wb
    verdict = "meets" if ratio >= 10 else "MISSES"
    return (
        f"LiteLLM adds {ll:.0f} µs/call, workbench {wb:.0f} µs/call: LiteLLM's added overhead "
        f"is {ratio:.1f}× workbench's ({verdict} the ≥ 10× target).",
        ratio,
    )


def main_parent(args: argparse.Namespace) -> int:
    with SimProcess() as sim:
        sim_reset(sim.base_url)
        wb = asyncio.run(workbench_part(sim.base_url, args.n, args.block, args.warmup))
        ll = None
        ll_error = None
        if not args.no_litellm:
            try:
                ll = run_litellm_child(sim.base_url, args)
            except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as exc:
                ll_error = str(exc)
    print(
        f"router overhead: n={args.n} calls per way, blocks of {args.block} alternating, "
        f"{args.warmup} warm-up calls per way; sequential; one simulator process "
        "(zero-latency persona) on the same machine; each router against a bare-httpx "
        "baseline from its own process"
    )
    if ll is not None:
        transport = "aiohttp transport" if ll["litellm_aiohttp_transport"] else "httpx transport"
        print(f"LiteLLM {ll['litellm_version']} ({transport}, its defaults), in {ll['process']}")
    print()
    text, derived = table(wb, ll)
    print(text)
    print()
    line, ratio = headline(derived)
    print(line)
    print()
    checks = [("workbench process", wb["check"])]
    if ll is not None:
        checks.append(("LiteLLM process", ll["check"]))
    all_match = True
    for name, c in checks:
        all_match &= c["match"]
        print(
            f"simulator /sim/requests, {name}: {c['sim_requests']} requests logged "
            f"({c['sim_200_from_persona']} answered 200 by '{PERSONA}'), "
            f"{c['expected']} calls made → {'OK' if c['match'] else 'MISMATCH'}"
        )
    wbq = wb["check"]
    print(
        f"workbench quota counter for {wb['quota_key']}: {wbq['router_quota_requests_today']} "
        f"requests reserved, {wbq['router_quota_expected']} routed"
    )
    if ll is not None:
        bodies = set(wb["check"]["bodies"]) | set(ll["check"]["bodies"])
        print(f"distinct request bodies the simulator saw across both processes: {len(bodies)}")
        for body in sorted(bodies):
            print(f"  {body}")
    if ll_error is not None:
        print(f"\nThe LiteLLM part did not run: {ll_error}")
    path = write_json(
        "router_overhead.json",
        {
            "benchmark": "router_overhead",
            "settings": {
                "n": args.n,
                "block": args.block,
                "warmup": args.warmup,
                "simulator": "one separate process, zero-latency native persona",
                "workbench_model_limits": {"rpm": RPM, "tpd": TPD},
            },
            "machine": machine(),
            "workbench_process": wb,
            "litellm_process": ll,
            "litellm_error": ll_error,
            "derived": derived,
            "headline": line,
            "litellm_over_workbench_added": ratio,
        },
    )
    print(f"\nJSON: {path}")
    return 0 if all_match and ll_error is None else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="measured calls per way")
    parser.add_argument("--block", type=int, default=50, help="calls per alternating block")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up calls per way")
    parser.add_argument("--no-litellm", action="store_true", help="skip the LiteLLM part")
    parser.add_argument("--child-litellm", metavar="SIM_URL", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.n < 1 or args.block < 1 or args.warmup < 0:
        parser.error("--n and --block must be >= 1, --warmup >= 0")
    if args.child_litellm:
        result = asyncio.run(litellm_part(args.child_litellm, args.n, args.block, args.warmup))
        Path(args.child_out).write_text(json.dumps(result), encoding="utf-8")
        return 0
    return main_parent(args)


if __name__ == "__main__":
    sys.exit(main())
