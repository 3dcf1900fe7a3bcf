"""The `workbench` command. Errors print one line with their stable code, never a traceback.

Exit codes: 0 success, 1 the job ran and failed, 2 the user's input (flags, files) is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import gc
import json
import os
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, WorkbenchError

DEFAULT_DB = "workbench.duckdb"
_DB_HELP = f"the DuckDB file (default: {DEFAULT_DB})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Route LLM traffic across providers, read every tool-call protocol, "
        "observe what each model can really do, and measure it.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    probe = verbs.add_parser(
        "probe",
        help="send one tool-bearing request (and a picture) to every model; print verdicts",
        description="Probe every model of a fleet (default: the built-in simulator, plus the "
        "local SmolLM2 model when the `local` extra is installed) and print the verdict each "
        "one earns.",
    )
    probe.add_argument(
        "--providers", metavar="FILE",
        help="a providers TOML, or a LiteLLM proxy config.yaml (real endpoints)",
    )  # fmt: skip
    probe.add_argument("--fleet", metavar="FILE", help="a simulator fleet TOML (default: built-in)")
    probe.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    probe.add_argument("--no-vision", action="store_true", help="skip the picture probes")
    probe.add_argument("--no-local", action="store_true", help="leave the local model out")
    probe.add_argument("--timeout", type=float, default=30.0, metavar="S", help="per call")

    catalog = verbs.add_parser(
        "catalog",
        help="has a pinned model id rotted? each pinned id against its vendor's model list",
        description="Ask every provider's model list (GET {base_url}/models, with the key a "
        "call would send) whether each pinned id is still there. Default: the built-in "
        "simulator chain that `workbench run` uses. Exit 1 when an id is GONE; an id whose "
        "list could not be read is UNCHECKED, which exits 0 but is not a pass.",
    )
    catalog.add_argument(
        "--providers", metavar="FILE",
        help="a providers TOML or a LiteLLM config.yaml (default: the built-in simulator chain)",
    )  # fmt: skip
    catalog.add_argument(
        "--fleet", metavar="FILE", help="a simulator fleet TOML (default: built-in)"
    )
    catalog.add_argument("--json", action="store_true", help="print the whole check as JSON")
    catalog.add_argument("--timeout", type=float, default=20.0, metavar="S", help="per list")

    sim = verbs.add_parser("sim", help="the provider simulator")
    sim_verbs = sim.add_subparsers(dest="sim_verb", metavar="VERB", required=True)
    serve = sim_verbs.add_parser("serve", help="serve the simulator fleet on loopback")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--fleet", metavar="FILE", help="a fleet TOML (default: built-in)")
    serve.add_argument(
        "--workers", type=int, default=1, metavar="N",
        help="processes serving the one port (default 1); each keeps its own request log, "
        "ordinals and rate-limit windows, so /sim/requests shows one worker's share",
    )  # fmt: skip

    local = verbs.add_parser("local", help="the real local model (SmolLM2 via llama.cpp)")
    local_verbs = local.add_subparsers(dest="local_verb", metavar="VERB", required=True)
    lserve = local_verbs.add_parser("serve", help="serve SmolLM2 as an OpenAI-compatible endpoint")
    lserve.add_argument("--port", type=int, default=8766)
    lserve.add_argument(
        "--tools",
        action="store_true",
        help="answer requests that carry tools with native OpenAI tool_calls (llama.cpp's "
        "chatml-function-calling format); without it the model's own chat template is used "
        "and tools are left to the prompt",
    )

    run = verbs.add_parser(
        "run",
        help="run a prompt set through the router; log everything to DuckDB; write a report",
        description="Run every item of a prompt set through one or more router configurations "
        "(default: the built-in simulator chain, plus the local SmolLM2 model when the `local` "
        "extra is installed), log every attempt, route, verdict and output to DuckDB, and "
        "write an HTML report.",
    )
    run.add_argument(
        "dataset",
        help="a prompt set (.jsonl or .yaml), e.g. datasets/smoke.jsonl, or BFCL categories, "
        "e.g. bfcl:simple_python or bfcl:simple_python,multiple (after `workbench bfcl fetch`)",
    )
    run.add_argument(
        "--limit", type=int, metavar="N", help="only the first N items (per BFCL category)"
    )
    run.add_argument(
        "--bfcl-source", metavar="PATH",
        help="read BFCL's data from a bfcl-eval wheel, an unpacked wheel or a BFCL checkout "
        "instead of the cache",
    )  # fmt: skip
    run.add_argument(
        "--providers",
        metavar="FILE",
        action="append",
        default=[],
        help="a providers TOML or a LiteLLM proxy config.yaml (repeat it to compare "
        "configurations side by side)",
    )
    run.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH", help=f"DuckDB file (default {DEFAULT_DB})"
    )
    run.add_argument("--concurrency", type=int, default=8, metavar="N",
                     help="jobs in flight (per worker with --engine ray)")  # fmt: skip
    run.add_argument(
        "--engine", choices=("local", "ray"), default="local",
        help="run the jobs in this process (local, the default) or on Ray actors (ray: the "
        "`ray` extra; quotas shared through Redis)",
    )  # fmt: skip
    run.add_argument("--workers", type=int, metavar="N",
                     help="Ray actors (--engine ray; default 2)")  # fmt: skip
    run.add_argument(
        "--ray-address", metavar="ADDR",
        help="join a running Ray cluster (auto, host:port or ray://host:port); default: start "
        "a local one with at least --workers CPUs",
    )  # fmt: skip
    run.add_argument("--repeats", type=int, default=1, metavar="N")
    run.add_argument("--name", help="a name for the run")
    run.add_argument("--resume", metavar="RUN_ID", help="skip the items this run already finished")
    run.add_argument(
        "--tools-mode",
        choices=("plan", "native", "text"),
        default="plan",
        help="plan from observed capabilities (default), always native, always prose",
    )
    run.add_argument(
        "--cache",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="answer repeated identical requests from the response cache",
    )
    run.add_argument("--cache-ttl", type=float, default=86400.0, metavar="S")
    run.add_argument("--fleet", metavar="FILE", help="a simulator fleet TOML (default: built-in)")
    run.add_argument("--no-local", action="store_true", help="leave the local model out")
    run.add_argument("--no-report", action="store_true", help="do not write the HTML report")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--durability", choices=("fsync", "write", "off"), default="fsync",
        help="journal every event beside the DuckDB file before it is batched, fsynced in "
        "small groups (fsync, the default); journaled without fsync (write: survives a killed "
        "process, not a power cut); or not journaled (off)",
    )  # fmt: skip

    report = verbs.add_parser(
        "report",
        help="write the self-contained interactive HTML report of a run (or of B against A)",
        description="Write one HTML file that opens from disk, offline: summary cards, charts, "
        "a sortable and filterable item table, and each item's story (every attempt of its "
        "chain, the request as it left the machine, the raw and cleaned reply, tool calls, "
        "verdicts, grade). With a second run, also a comparison page: pass-rate differences "
        "with paired intervals and every flipped item.",
    )
    report.add_argument(
        "run_id", nargs="?", default="latest",
        help="a run id, a run's --name or `latest` (the default)",
    )  # fmt: skip
    report.add_argument("run_b", nargs="?", help="a second run: compare it against the first")
    report.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=_DB_HELP)
    report.add_argument(
        "--out", default="reports", metavar="DIR",
        help="the folder to write into (default: reports): RUN_ID.html, and with RUN_B also "
        "RUN_B_ID.html and RUN_ID_vs_RUN_B_ID.html",
    )  # fmt: skip

    runs = verbs.add_parser("runs", help="list the runs in a DuckDB file")
    runs.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=_DB_HELP)

    verdicts = verbs.add_parser("verdicts", help="the capability verdicts observed so far")
    verdicts.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=_DB_HELP)
    verdicts.add_argument("--run", metavar="RUN_ID", help="every classification of one run")

    actions = verbs.add_parser(
        "actions",
        help="pending actions: what agents proposed, waiting for a person",
        description="List, show, approve or reject the write actions agents proposed during "
        "runs. Nothing an agent proposes is executed until someone approves it here.",
    )
    action_verbs = actions.add_subparsers(dest="action_verb", metavar="VERB", required=True)
    a_list = action_verbs.add_parser("list", help="list actions (default: pending)")
    a_list.add_argument(
        "--status",
        default="pending",
        choices=("pending", "executing", "executed", "failed", "rejected", "all"),
    )
    a_show = action_verbs.add_parser("show", help="one action, its payload and history")
    a_show.add_argument("action_id")
    a_ok = action_verbs.add_parser("approve", help="approve (and execute) a pending action")
    a_ok.add_argument("action_id")
    a_ok.add_argument("--by", required=True, help="who approves (recorded)")
    a_ok.add_argument(
        "--amend", metavar="JSON", help='fields to change first, e.g. \'{"to": "x@y.z"}\''
    )
    a_no = action_verbs.add_parser("reject", help="reject a pending action")
    a_no.add_argument("action_id")
    a_no.add_argument("--by", required=True, help="who rejects (recorded)")
    a_no.add_argument("--note", help="why")
    for parser_ in (a_list, a_show, a_ok, a_no):
        parser_.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=_DB_HELP)

    chaos = verbs.add_parser(
        "chaos",
        help="run a prompt set under failure schedules and check nothing is lost or exceeded",
        description="429 storms, 5xx bursts, hangs, empty and malformed replies (and Redis "
        "killed mid-run with --redis-url): checks every attempt is in DuckDB, no RPM is "
        "exceeded, every item ends answered or with a coded error, nothing escapes.",
    )
    chaos.add_argument("--db", default="chaos.duckdb", metavar="PATH")
    chaos.add_argument("--redis-url", metavar="URL", help="share the quotas through this Redis")
    chaos.add_argument("--items", type=int, default=120)
    chaos.add_argument("--seed", type=int, default=0)

    bfcl = verbs.add_parser(
        "bfcl", help="the Berkeley Function Calling Leaderboard's data and scores"
    )
    bfcl_verbs = bfcl.add_subparsers(dest="bfcl_verb", metavar="VERB", required=True)
    fetch = bfcl_verbs.add_parser(
        "fetch",
        help="download the bfcl-eval wheel (pip download --no-deps: nothing is installed) into "
        "the cache",
    )
    fetch.add_argument(
        "--source", metavar="PATH",
        help="take the data from a bfcl-eval wheel, an unpacked wheel or a BFCL checkout instead",
    )  # fmt: skip
    fetch.add_argument("--into", metavar="DIR", help="the cache folder (default: the user cache)")
    scores = bfcl_verbs.add_parser("scores", help="the leaderboard table of BFCL runs")
    scores.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    scores.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=_DB_HELP)

    compare = verbs.add_parser(
        "compare",
        help="is run B worse than run A? (items paired; exit 1 on a significant regression)",
    )
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=_DB_HELP)
    compare.add_argument("--metric", default="pass", help="what is compared (pass)")
    compare.add_argument(
        "--fail-if-worse-by",
        type=float,
        default=0.0,
        metavar="X",
        help="the pass-rate drop allowed (0.05 = five points) before B fails, if significant",
    )
    compare.add_argument("--alpha", type=float, default=0.05, help="McNemar's significance level")
    compare.add_argument("--json", action="store_true", help="the comparison as JSON")
    regrade = verbs.add_parser("regrade", help="grade a run's logged outputs again (no model call)")
    regrade.add_argument("run_id")
    regrade.add_argument(
        "dataset", help="the prompt set with the new expectations (or bfcl:CATEGORIES)"
    )
    regrade.add_argument("--bfcl-source", metavar="PATH", help="where BFCL's data is read from")
    regrade.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=_DB_HELP)
    _export_parser(verbs)
    return parser


def _export_parser(verbs: Any) -> None:
    export = verbs.add_parser(
        "export",
        help="a logged run for other tools: Inspect AI eval logs, OpenTelemetry GenAI spans",
        description="Export a run (its id, its --name, or `latest`). Content that a person or a "
        "model wrote is masked with the run's own maskers (which needs the prompt set the run "
        "read: --dataset when it has moved).",
    )
    export_verbs = export.add_subparsers(dest="export_verb", metavar="VERB", required=True)
    inspect_ = export_verbs.add_parser(
        "inspect",
        help="Inspect AI eval logs, one per configuration, for `inspect view` and "
        "inspect_ai.analysis (the `inspect` extra)",
    )
    inspect_.add_argument("--out", required=True, metavar="DIR", help="the folder of the logs")
    otel = export_verbs.add_parser(
        "otel",
        help="OpenTelemetry GenAI spans, a trace per sample (its routes, their attempts, its "
        "tool steps), to an OTLP/HTTP endpoint or a JSON file (the `otel` extra)",
    )
    where = otel.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--endpoint", metavar="URL",
        help="an OTLP/HTTP collector, e.g. http://127.0.0.1:4318 (/v1/traces is added)",
    )  # fmt: skip
    where.add_argument("--out", metavar="FILE", help="write the spans as one OTLP/JSON file")
    otel.add_argument(
        "--content", action="store_true",
        help="include the messages (masked, as they left the machine); off by default",
    )  # fmt: skip
    otel.add_argument(
        "--service-name", default="workbench", metavar="NAME", help="the service.name resource"
    )
    otel.add_argument("--timeout", type=float, default=5.0, metavar="S", help="per request")
    for parser_ in (inspect_, otel):
        parser_.add_argument("run", nargs="?", default="latest", help="a run (default: latest)")
        parser_.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=_DB_HELP)
        parser_.add_argument(
            "--dataset", metavar="FILE", help="the prompt set the run read, if it has moved"
        )


def _providers_file(path: str) -> Any:
    """A providers file, ours or a LiteLLM `config.yaml`. What a LiteLLM file holds that
    means nothing here is said once, on one stderr line, so that no setting is dropped
    unseen; the library only returns the list."""
    from workbench.config.providers_file import load_config

    config = load_config(path)
    if config.ignored:
        print(f"{path}: litellm config: ignored fields: {', '.join(config.ignored)}",
              file=sys.stderr)  # fmt: skip
    return config


async def _probe(args: argparse.Namespace) -> int:
    from workbench.eval.diagnostics.probe import probe_models, verdict_table
    from workbench.local.server import MODEL_ID, LocalModel, local_model_available
    from workbench.providers.openai_compat import openai_compatible_provider
    from workbench.sim import SimServer
    from workbench.sim.fleet_providers import sim_providers

    async with AsyncExitStack() as stack:
        if args.providers:
            providers = _providers_file(args.providers).providers
        else:
            sim = await stack.enter_async_context(SimServer(args.fleet))
            providers = sim_providers(sim)
            if not args.no_local and local_model_available():
                lm = await stack.enter_async_context(LocalModel())
                providers.append(
                    openai_compatible_provider(
                        "local",
                        lm.base_url,
                        None,
                        [{"id": MODEL_ID, "vision": False}],
                        external=False,
                    )
                )
        try:
            rows = await probe_models(providers, vision=not args.no_vision, timeout_s=args.timeout)
        finally:
            for provider in providers:
                await provider.aclose()
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], ensure_ascii=False, indent=2))
    else:
        print(verdict_table(rows))
    return 0


async def _catalog(args: argparse.Namespace) -> int:
    from workbench.providers.catalog import catalog_report, catalog_summary, check_catalog, has_rot

    async with AsyncExitStack() as stack:
        if args.providers:
            providers = _providers_file(args.providers).providers
        else:
            from workbench.sim import SimServer
            from workbench.sim.fleet_providers import sim_chain_config

            sim = await stack.enter_async_context(SimServer(args.fleet))
            providers = sim_chain_config(sim).providers
        checks = await check_catalog(providers, timeout_s=args.timeout)
    if args.json:
        print(json.dumps(catalog_summary(checks), ensure_ascii=False, indent=2))
    else:
        print("\n".join(catalog_report(checks)))
    return 1 if has_rot(checks) else 0


def _sim_serve(args: argparse.Namespace) -> int:
    from workbench.sim import run_forever

    run_forever(args.fleet, host=args.host, port=args.port, workers=args.workers)
    return 0


def _local_serve(args: argparse.Namespace) -> int:
    from workbench.local.server import LocalModel

    model = LocalModel(args.port, tools=args.tools)
    native = " with native tool calls" if args.tools else ""
    print(f"serving SmolLM2{native} at {model.base_url} (Ctrl-C to stop)", flush=True)
    model.serve_forever()
    return 0


async def _run(args: argparse.Namespace, finishing: ExitStack) -> Any:
    """The run itself; what may end while the summary and the report are written (the
    embedded simulator's shutdown) is left to `finishing`."""
    from workbench.eval.dataset.prompt_set import open_dataset
    from workbench.eval.run.prompt_set import run_prompt_set
    from workbench.eval.store.database import Store

    # Refused whole, before anything starts.
    if args.engine != "ray" and (args.ray_address or args.workers is not None):
        raise ConfigError("--workers and --ray-address need --engine ray", code="RUN_INVALID")
    dataset = open_dataset(args.dataset, limit=args.limit, bfcl_source=args.bfcl_source)
    configs = [_providers_file(path) for path in args.providers]
    sim = None
    async with AsyncExitStack() as stack:
        if not configs:
            # Imported only here: the simulator brings starlette and uvicorn, which a run
            # against a providers file never needs.
            import threading

            from workbench.local.provider_config import local_config
            from workbench.local.server import LocalModel, local_model_available
            from workbench.sim import SimServer
            from workbench.sim.fleet_providers import sim_chain_config

            sim = SimServer(args.fleet)
            await asyncio.to_thread(sim.start)
            # Stopped in the background once the run is over: uvicorn takes ~0.15 s to wind
            # down (it looks for the stop every 0.1 s, then waits 0.1 s for its connections),
            # time the summary and the report can use. The command waits for it at the end.
            stopping = threading.Thread(target=sim.stop, name="workbench-sim-stop")
            stack.callback(stopping.start)
            finishing.callback(stopping.join)
            configs.append(sim_chain_config(sim))
            if not args.no_local and local_model_available():
                lm = await stack.enter_async_context(LocalModel())
                configs.append(local_config(lm.base_url, lm.model_id,
                                            cache_origin=lm.cache_origin))  # fmt: skip
        store = stack.enter_context(Store.open(args.db, durability=args.durability))
        if store.recovered is not None and store.recovered.rows:
            print(f"recovered {store.recovered.rows} row(s) an interrupted run had journaled",
                  file=sys.stderr)  # fmt: skip
        engine = None
        if args.engine == "ray":
            from workbench.eval.engines.ray.engine import RayEngine

            engine = RayEngine(2 if args.workers is None else args.workers, args.ray_address,
                               say=lambda line: print(line, file=sys.stderr, flush=True))  # fmt: skip
        try:
            summary = await run_prompt_set(
                dataset, configs, store, concurrency=args.concurrency, repeats=args.repeats,
                engine=engine,
                tools_mode=args.tools_mode, run_name=args.name, resume=args.resume,
                cache_ttl_s=args.cache_ttl if args.cache else None, progress=not args.quiet,
                on_start=lambda rid, n: print(f"run {rid}: {n} job(s) → {args.db}",
                                              file=sys.stderr, flush=True),
            )  # fmt: skip
            if sim is not None:  # the simulator kept every request: did a sensitive value leave?
                from workbench.eval.diagnostics.audit import audit_leaks

                summary.leaks = audit_leaks(store, summary.run_id, dataset, sim.requests())
        except asyncio.CancelledError:
            row = store.con.execute(
                "SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1"
            ).fetchone()
            rid = row[0] if row else "?"
            limit = f" --limit {args.limit}" if args.limit else ""
            print(f"interrupted: everything so far is in {args.db}; resume with\n"
                  f"  workbench run {args.dataset}{limit} --resume {rid}", file=sys.stderr)  # fmt: skip
            return 1
    return summary


def _run_verb(args: argparse.Namespace) -> int:
    from workbench.eval.run.summary import describe

    # The command owns its process, so it collects garbage for a long run: a run makes and
    # drops a few hundred objects per item, and at CPython's default threshold (700) the
    # collector ran every few items, the more often the more items were in flight (at 128
    # concurrent items ~8 % of the run's time). What was imported is frozen out of its walks.
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    with ExitStack() as finishing:
        summary = asyncio.run(_run(args, finishing))
        if isinstance(summary, int):
            return summary
        for line in describe(summary):
            print(line)
        print(f"DuckDB:  {Path(args.db).resolve()}")
        if not args.no_report:
            from workbench.eval.report.page import write_report

            path = write_report(args.db, summary.run_id, "reports")
            print(f"report:  {path.resolve()}")
        return 0 if summary.status == "finished" else 1


def _report(args: argparse.Namespace) -> int:
    from workbench.eval.report.page import write_comparison, write_report

    if args.run_b:
        path = write_comparison(args.db, args.run_id, args.run_b, args.out)
    else:
        path = write_report(args.db, args.run_id, args.out)
    print(path.resolve())
    return 0


def _runs(args: argparse.Namespace) -> int:
    from workbench.eval.analysis.frames import RunFrames

    with RunFrames.open(args.db) as wb:
        table = wb.runs()
    print(table.to_string(index=False) if len(table) else "no runs yet")
    return 0


def _verdicts(args: argparse.Namespace) -> int:
    from workbench.eval.analysis.frames import RunFrames

    with RunFrames.open(args.db) as wb:
        if args.run:
            table = wb.con.execute(
                "SELECT provider, model, capability, verdict, protocol_family, recorded, "
                "evidence, count(*) AS n "
                "FROM verdicts WHERE run_id = ? GROUP BY ALL ORDER BY provider, model",
                [args.run],
            ).df()
        else:
            table = wb.con.execute(
                "SELECT provider, model, capability, verdict, protocol_family, via, "
                "observed_at, evidence FROM capabilities ORDER BY provider, model, capability"
            ).df()
    print(table.to_string(index=False) if len(table) else "no verdicts yet")
    return 0


async def _regrade(args: argparse.Namespace) -> int:
    from workbench.eval.dataset.prompt_set import open_dataset
    from workbench.eval.run.prompt_set import regrade
    from workbench.eval.run.summary import describe
    from workbench.eval.store.database import Store

    with Store.open(args.db) as store:
        dataset = open_dataset(args.dataset, bfcl_source=args.bfcl_source)
        summary = await regrade(store, args.run_id, dataset)
    for line in describe(summary):
        print(line)
    return 0


def _compare(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from workbench.eval.analysis.frames import RunFrames
    from workbench.eval.analysis.gate import compare_runs, describe

    with RunFrames.open(args.db, snapshot=True) as wb:
        c = compare_runs(
            wb, args.run_a, args.run_b, metric=args.metric, margin=args.fail_if_worse_by,
            alpha=args.alpha,
        )  # fmt: skip
    if args.json:
        print(json.dumps(dataclasses.asdict(c) | {"worse": c.worse}, indent=2))
    else:
        print("\n".join(describe(c)))
    return 1 if c.worse else 0


def _export(args: argparse.Namespace) -> int:
    from workbench.eval.analysis.frames import RunFrames

    if args.export_verb == "inspect":
        from workbench.eval.export.inspect import export_inspect

        with RunFrames.open(args.db, snapshot=True) as wb:
            paths = export_inspect(wb, args.run, args.out, dataset=args.dataset)
        for path in paths:
            print(path)
        return 0
    from workbench.eval.export.otel import export_otel

    with RunFrames.open(args.db, snapshot=True) as wb:
        n = export_otel(
            wb, args.run, endpoint=args.endpoint, out=args.out, content=args.content,
            dataset=args.dataset, service_name=args.service_name, timeout_s=args.timeout,
        )  # fmt: skip
    print(f"{n} span(s) → {args.out or args.endpoint}")
    return 0


def _bfcl(args: argparse.Namespace) -> int:
    if args.bfcl_verb == "fetch":
        from workbench.eval.suites.bfcl.source import fetch_bfcl

        print(f"BFCL data: {fetch_bfcl(args.source, into=args.into)}")
        return 0
    from workbench.eval.analysis.frames import RunFrames

    with RunFrames.open(args.db, snapshot=True) as wb:
        table = wb.bfcl_scores(args.run_ids)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.1%}"))
    return 0


async def _actions(args: argparse.Namespace) -> int:
    from workbench.eval.store.database import Store
    from workbench.tools.demo import demo_executors
    from workbench.tools.pending import PendingActions

    read_only = args.action_verb in ("list", "show")
    with Store.open(args.db, read_only=read_only, snapshot=read_only) as store:
        pending = PendingActions(store.actions, demo_executors())
        if args.action_verb == "list":
            found = await pending.list(None if args.status == "all" else args.status)
            for a in found:
                print(f"{a.id}  {a.status:<9} {a.action:<14} by {a.proposed_by:<24} "
                      f"{json.dumps(a.payload, ensure_ascii=False)[:80]}")  # fmt: skip
            if not found:
                print(f"no {args.status} actions")
            return 0
        if args.action_verb == "show":
            action = await pending.get(args.action_id)
        elif args.action_verb == "approve":
            try:
                amend = json.loads(args.amend) if args.amend else None
            except json.JSONDecodeError as exc:
                raise ConfigError(f"--amend is not JSON: {exc}", code="ACTION_INVALID") from None
            action = await pending.approve(args.action_id, args.by, amend)
        else:
            action = await pending.reject(args.action_id, args.by, args.note)
    print(json.dumps(action.to_dict(), ensure_ascii=False, indent=2, default=str))
    return 0 if action.status != "failed" else 1


def _chaos(args: argparse.Namespace) -> int:
    from workbench.eval.diagnostics.chaos import run_chaos

    def phase(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    report = asyncio.run(
        run_chaos(
            args.db, redis_url=args.redis_url, items=args.items, seed=args.seed, on_phase=phase
        )
    )
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    # At exit the collector's last passes walk and free every object pandas, numpy and DuckDB
    # made (~0.1 s of a one-item run) for memory the OS takes back anyway; frozen, they are
    # left alone. Harmless in a longer-lived process: it only acts when that process ends.
    atexit.register(gc.freeze)
    args = build_parser().parse_args(argv)
    try:
        if args.verb == "probe":
            return asyncio.run(_probe(args))
        if args.verb == "catalog":
            return asyncio.run(_catalog(args))
        if args.verb == "sim":
            return _sim_serve(args)
        if args.verb == "local":
            return _local_serve(args)
        if args.verb == "run":
            return _run_verb(args)
        if args.verb == "report":
            return _report(args)
        if args.verb == "runs":
            return _runs(args)
        if args.verb == "verdicts":
            return _verdicts(args)
        if args.verb == "actions":
            return asyncio.run(_actions(args))
        if args.verb == "chaos":
            return _chaos(args)
        if args.verb == "bfcl":
            return _bfcl(args)
        if args.verb == "regrade":
            return asyncio.run(_regrade(args))
        if args.verb == "compare":
            return _compare(args)
        if args.verb == "export":
            return _export(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug of ours: still one line; the traceback only on request
        if os.environ.get("WORKBENCH_DEBUG"):
            raise
        print(f"error: INTERNAL: {type(exc).__name__}: {' '.join(str(exc).split())[:300]} "
              "(set WORKBENCH_DEBUG=1 for the traceback)", file=sys.stderr)  # fmt: skip
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
