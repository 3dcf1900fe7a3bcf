"""`workbench sim serve` and `workbench local serve`: the two servers the default fleet
embeds, served on their own until Ctrl-C, for other tools (or other processes) to call."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import Verb

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


SIM = Verb(add_sim, sim_serve)
LOCAL = Verb(add_local, local_serve)
