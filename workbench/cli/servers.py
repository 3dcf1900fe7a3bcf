"""`workbench sim serve` and `workbench local serve`: the two servers the default fleet
embeds, served on their own until Ctrl-C, for other tools (or other processes) to call; and
`workbench serve gateway`: an OpenAI-compatible server routing through a providers file,
every attempt logged to a DuckDB file."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import Verb, add_db, providers_file
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add_sim(verbs: Subcommands) -> None:
    sim = verbs.add_parser("sim", help="the provider simulator")
    sim_verbs = sim.add_subparsers(dest="sim_verb", metavar="VERB", required=True)
    serve = sim_verbs.add_parser("serve", help="serve the simulator fleet on loopback")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--fleet", metavar="FILE", help="a fleet TOML (default: built-in)")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes serving the one port (default 1); each keeps its own request log, "
        "ordinals and rate-limit windows, so /sim/requests shows one worker's share",
    )


def sim_serve(args: argparse.Namespace) -> int:
    from workbench.sim import run_forever

    run_forever(args.fleet, host=args.host, port=args.port, workers=args.workers)
    return 0


def add_local(verbs: Subcommands) -> None:
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


def local_serve(args: argparse.Namespace) -> int:
    from workbench.local.server import LocalModel

    model = LocalModel(args.port, tools=args.tools)
    print(wording.serving_local_line(model.base_url, args.tools), flush=True)
    model.serve_forever()
    return 0


def add_serve(verbs: Subcommands) -> None:
    serve = verbs.add_parser("serve", help="serve the router to other tools")
    serve_verbs = serve.add_subparsers(dest="serve_verb", metavar="VERB", required=True)
    gateway = serve_verbs.add_parser(
        "gateway",
        help="an OpenAI-compatible /v1/chat/completions and /v1/models over a providers file, "
        "every attempt logged to the DuckDB file",
    )
    gateway.add_argument("--providers", required=True, metavar="FILE", help="the providers file")
    add_db(gateway)
    gateway.add_argument("--host", default="127.0.0.1", help="default: loopback only")
    gateway.add_argument("--port", type=int, default=8780)
    gateway.add_argument(
        "--keys-file",
        metavar="FILE",
        help="client keys, one a line (# comments); added to WORKBENCH_GATEWAY_KEYS "
        "(comma-separated). No key, no route: the gateway will not start without one",
    )
    gateway.add_argument("--name", help="the name of the run its requests are logged under")
    gateway.add_argument(
        "--no-mask",
        action="store_true",
        help="send each conversation as it came (default: its sensitive values are masked "
        "before they leave the machine, as a run's are)",
    )
    gateway.add_argument(
        "--concurrency",
        type=int,
        default=16,
        metavar="N",
        help="requests in flight per model at most, paced down from there by what the "
        "provider says (default 16; more wait their turn)",
    )
    gateway.add_argument(
        "--max-body-mb",
        type=float,
        default=8.0,
        metavar="MB",
        help="the largest request body taken (default 8; larger: 413)",
    )
    gateway.add_argument(
        "--grace",
        type=float,
        default=30.0,
        metavar="S",
        help="on SIGTERM, seconds the requests in flight have to finish (default 30); "
        "those left (or all, on a second signal) are stopped, answered 503 and logged "
        "cancelled before the file is closed",
    )


def serve_gateway(args: argparse.Namespace) -> int:
    from workbench.eval.gateway import LoggedRouter
    from workbench.eval.gateway.keys import ClientKeys
    from workbench.eval.gateway.server import bind, is_loopback, serve

    keys = ClientKeys.load(args.keys_file)  # no key: refused before anything is opened
    if args.max_body_mb <= 0 or args.grace < 0 or args.concurrency < 1:
        raise ConfigError(
            "--max-body-mb must be above 0, --grace at least 0 and --concurrency at least 1",
            code="GATEWAY_INVALID",
        )
    sock = bind(args.host, args.port)  # a port in use: refused before the file is opened
    try:
        logged = LoggedRouter.open(
            providers_file(args.providers),
            args.db,
            dataset="gateway",
            name=args.name,
            mask=not args.no_mask,
            concurrency=args.concurrency,
        )
    except BaseException:
        sock.close()
        raise
    if not is_loopback(args.host):
        print(wording.gateway_exposed_line(args.host), file=sys.stderr)
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{sock.getsockname()[1]}/v1"

    def started() -> None:
        print(wording.serving_gateway_line(url, logged.run_id, args.db, len(keys)), flush=True)

    serve(
        logged,
        keys,
        sock,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        grace_s=args.grace,
        started=started,
    )
    print(wording.gateway_stopped_line(logged.run_id, args.db), flush=True)
    return 0


SIM = Verb(add_sim, sim_serve)
LOCAL = Verb(add_local, local_serve)
SERVE = Verb(add_serve, serve_gateway)
