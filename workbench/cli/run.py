"""`workbench run`: a prompt set through one or more router configurations, every attempt
logged to DuckDB, then the summary and the HTML report."""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from contextlib import AsyncExitStack, ExitStack
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import DEFAULT_DB, Verb, providers_file
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.cassettes import CassetteMode
    from workbench.cli.shared import Subcommands
    from workbench.eval.run.summary import RunSummary


def add(verbs: Subcommands) -> None:
    parser = verbs.add_parser(
        "run",
        help="run a prompt set through the router; log everything to DuckDB; write a report",
        description="Run every item of a prompt set through one or more router configurations "
        "(default: the built-in simulator chain, plus the local SmolLM2 model when the `local` "
        "extra is installed), log every attempt, route, verdict and output to DuckDB, and "
        "write an HTML report.",
    )
    parser.add_argument(
        "dataset",
        help="a prompt set (.jsonl or .yaml), e.g. datasets/smoke.jsonl, or BFCL categories, "
        "e.g. bfcl:simple_python or bfcl:simple_python,multiple (after `workbench bfcl fetch`)",
    )
    parser.add_argument(
        "--limit", type=int, metavar="N", help="only the first N items (per BFCL category)"
    )
    parser.add_argument(
        "--bfcl-source",
        metavar="PATH",
        help="read BFCL's data from a bfcl-eval wheel, an unpacked wheel or a BFCL checkout "
        "instead of the cache",
    )
    parser.add_argument(
        "--providers",
        metavar="FILE",
        action="append",
        default=[],
        help="a providers TOML or a LiteLLM proxy config.yaml (repeat it to compare "
        "configurations side by side)",
    )
    parser.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH", help=f"DuckDB file (default {DEFAULT_DB})"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="N",
        help="jobs in flight (per worker with --engine ray)",
    )
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="run the jobs in this process (local, the default) or on Ray actors (ray: the "
        "`ray` extra; quotas shared through Redis)",
    )
    parser.add_argument(
        "--workers", type=int, metavar="N", help="Ray actors (--engine ray; default 2)"
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="join a running Ray cluster (auto, host:port or ray://host:port); default: start "
        "a local one with at least --workers CPUs",
    )
    parser.add_argument("--repeats", type=int, default=1, metavar="N")
    parser.add_argument("--name", help="a name for the run")
    parser.add_argument(
        "--resume", metavar="RUN_ID", help="skip the items this run already finished"
    )
    parser.add_argument(
        "--max-wait",
        default="15m",
        metavar="DURATION",
        help="the longest one item is held and asked again when the provider refuses it (a "
        "429, a spent window, an outage), e.g. 90s, 10m, 1h or seconds; then it is logged "
        "unanswered (default 15m)",
    )
    parser.add_argument(
        "--max-tries",
        type=int,
        default=10,
        metavar="N",
        help="routes of one item the provider may refuse before it is logged unanswered "
        "(default 10)",
    )
    parser.add_argument(
        "--tools-mode",
        choices=("plan", "native", "text"),
        default="plan",
        help="plan from observed capabilities (default), always native, always prose",
    )
    parser.add_argument(
        "--cache",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="answer repeated identical requests from the response cache",
    )
    parser.add_argument("--cache-ttl", type=float, default=86400.0, metavar="S")
    parser.add_argument(
        "--fleet", metavar="FILE", help="a simulator fleet TOML (default: built-in)"
    )
    parser.add_argument(
        "--batch",
        action="store_true",
        help="send every request through its configuration's first model's batch API (OpenAI, "
        "Groq, Gemini, or a provider with `batch = true`): half the price, no fallback, "
        "answers within the vendor's window; --resume polls the batches already sent; the "
        "built-in fleet's local model (no batch API) is left out",
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="record every provider exchange to a cassette in DIR (DIR/cassette.jsonl, "
        "replaced when the run ends; never a key or an auth header)",
    )
    parser.add_argument(
        "--replay",
        metavar="DIR",
        help="answer every provider request from the cassette in DIR, with no network; a "
        "request it never recorded stops the run with REPLAY_MISS",
    )
    parser.add_argument(
        "--record-missing",
        action="store_true",
        help="with --replay: send what the cassette lacks and add it",
    )
    parser.add_argument("--no-local", action="store_true", help="leave the local model out")
    parser.add_argument("--no-report", action="store_true", help="do not write the HTML report")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--durability",
        choices=("fsync", "write", "off"),
        default="fsync",
        help="journal every event beside the DuckDB file before it is batched, fsynced in "
        "small groups (fsync, the default); journaled without fsync (write: survives a killed "
        "process, not a power cut); or not journaled (off)",
    )


def run(args: argparse.Namespace) -> int:

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
        again = wording.resume_command(args.db, args.dataset, args.limit, summary.run_id)
        for line in wording.run_summary_lines(summary, again):
            print(line)
        print(wording.database_line(args.db))
        if not args.no_report:
            from workbench.eval.report.page import write_report

            path = write_report(args.db, summary.run_id, "reports")
            print(wording.report_line(path))
        return 0 if summary.status == "finished" else 1


async def _run(args: argparse.Namespace, finishing: ExitStack) -> RunSummary | int:
    """The run itself, or the exit code of an interrupted one; what may end while the
    summary and the report are written (the embedded simulator's shutdown) is left to
    `finishing`."""
    from workbench.eval.dataset.prompt_set import open_dataset
    from workbench.eval.run.options import parse_duration
    from workbench.eval.run.runner import run_prompt_set
    from workbench.eval.store.database import Store

    # Refused whole, before anything starts.
    max_wait_s = parse_duration(args.max_wait)
    if args.engine != "ray" and (args.ray_address or args.workers is not None):
        raise ConfigError("--workers and --ray-address need --engine ray", code="RUN_INVALID")
    cassette, cassette_mode = cassette_option(args)
    if cassette is not None and args.engine == "ray":
        from workbench.errors import CassetteError

        raise CassetteError(
            "--record and --replay run on the local engine: a cassette is one file this "
            "process writes and reads — leave out --engine ray",
            code="CASSETTE_UNSUPPORTED",
        )
    if args.batch and args.engine == "ray":
        from workbench.eval.run.runner import batch_engine_refused

        raise batch_engine_refused()
    if args.dataset.startswith("bfcl:") and args.bfcl_source is None:
        _fetch_bfcl_on_first_use()
    dataset = open_dataset(args.dataset, limit=args.limit, bfcl_source=args.bfcl_source)
    configs = [providers_file(path) for path in args.providers]
    fleet = None
    async with AsyncExitStack() as stack:
        if not configs:
            # Imported only here: the simulator brings starlette and uvicorn, which a run
            # against a providers file never needs.
            from workbench.eval.run.default_fleet import default_fleet

            fleet = await stack.enter_async_context(
                # The local model has no batch API: a batch run leaves it out.
                default_fleet(
                    args.fleet, local=not (args.no_local or args.batch), finishing=finishing
                )
            )
            configs.extend(fleet.configs)
        store = stack.enter_context(Store.open(args.db, durability=args.durability))
        if store.recovered is not None and store.recovered.rows:
            print(wording.recovered_line(store.recovered.rows), file=sys.stderr)
        engine = None
        if args.engine == "ray":
            from workbench.eval.engines.ray.engine import RayEngine

            engine = RayEngine(
                2 if args.workers is None else args.workers,
                args.ray_address,
                say=lambda line: print(line, file=sys.stderr, flush=True),
            )
        try:
            summary = await run_prompt_set(
                dataset,
                configs,
                store,
                concurrency=args.concurrency,
                repeats=args.repeats,
                engine=engine,
                tools_mode=args.tools_mode,
                run_name=args.name,
                resume=args.resume,
                batch=args.batch,
                max_wait_s=max_wait_s,
                max_tries=args.max_tries,
                cassette=cassette,
                cassette_mode=cassette_mode,
                cache_ttl_s=args.cache_ttl if args.cache else None,
                # On the embedded default, BFCL's web search reads the simulator's fixed web.
                bfcl_web=fleet.sim.base_url if fleet is not None else None,
                progress=not args.quiet,
                on_start=lambda rid, n: print(
                    wording.run_started_line(rid, n, args.db), file=sys.stderr, flush=True
                ),
            )
            # The simulator kept every request: did a sensitive value leave? (Its request log
            # holds no batch line, so a batch run's audit would see nothing: none is claimed.)
            if fleet is not None and not args.batch:
                from workbench.eval.diagnostics.audit import audit_leaks

                summary.leaks = audit_leaks(store, summary.run_id, dataset, fleet.sim.requests())
        except asyncio.CancelledError:
            latest = store.latest_run()
            rid = latest.run_id if latest is not None else "?"
            print(wording.run_interrupted(args.db, args.dataset, args.limit, rid), file=sys.stderr)
            return 1
    return summary


VERB = Verb(add, run)


def cassette_option(args: argparse.Namespace) -> tuple[str | None, CassetteMode]:
    """The run's cassette folder and mode from --record, --replay and --record-missing;
    `CASSETTE_CONFLICT` for a combination that says two things."""
    if args.record is not None and args.replay is not None:
        same = args.record == args.replay
        raise ConfigError(
            f"--record {args.record} and --replay {args.replay} together"
            + (" on the same folder" if same else "")
            + ": a run records or replays one cassette — to replay it and record only what "
            f"it lacks, use --replay {args.replay} --record-missing",
            code="CASSETTE_CONFLICT",
        )
    if args.record_missing and args.replay is None:
        raise ConfigError(
            "--record-missing fills the gaps of a cassette: it needs --replay DIR (to record a "
            "new cassette, use --record DIR)",
            code="CASSETTE_CONFLICT",
        )
    if args.record is not None:
        return args.record, "record"
    if args.replay is not None:
        return args.replay, "record_missing" if args.record_missing else "replay"
    return None, "replay"


def _fetch_bfcl_on_first_use() -> None:
    """BFCL's data is fetched the first time a run names it, saying so: a run never stops
    only to ask for `workbench bfcl fetch`. Without a registry, how to pass the data."""
    from workbench.eval.suites.bfcl.source import VERSION, cache_dir, fetch_bfcl, open_source

    try:
        open_source()
        return
    except ConfigError as exc:
        if exc.code != "BFCL_DATA_MISSING":
            raise
    print(wording.bfcl_fetching_line(VERSION, cache_dir()), file=sys.stderr, flush=True)
    try:
        print(wording.bfcl_data_line(fetch_bfcl()), file=sys.stderr, flush=True)
    except ConfigError as exc:
        raise ConfigError(
            f"{exc} — without a package registry, pass --bfcl-source PATH (a bfcl-eval wheel, "
            "an unpacked wheel or a BFCL checkout)",
            code=exc.code,
        ) from None
