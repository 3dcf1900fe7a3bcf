"""`workbench probe`: one tool-bearing request (and a picture) to every model, and the
verdict each one earns."""

from __future__ import annotations

import argparse
import asyncio
import json
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from workbench.cli.shared import Verb, providers_file

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    probe = verbs.add_parser(
        "probe",
        help="send one tool-bearing request (and a picture) to every model; print verdicts",
        description="Probe every model of a fleet (default: the built-in simulator, plus the "
        "local SmolLM2 model when the `local` extra is installed) and print the verdict each "
        "one earns.",
    )
    probe.add_argument(
        "--providers",
        metavar="FILE",
        help="a providers TOML, or a LiteLLM proxy config.yaml (real endpoints)",
    )
    probe.add_argument("--fleet", metavar="FILE", help="a simulator fleet TOML (default: built-in)")
    probe.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    probe.add_argument("--no-vision", action="store_true", help="skip the picture probes")
    probe.add_argument("--no-local", action="store_true", help="leave the local model out")
    probe.add_argument("--timeout", type=float, default=30.0, metavar="S", help="per call")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_probe(args))


async def _probe(args: argparse.Namespace) -> int:
    from workbench.eval.diagnostics.probe import probe_models, verdict_table
    from workbench.eval.run.default_fleet import default_fleet
    from workbench.local.server import MODEL_ID
    from workbench.providers.openai_compat import openai_compatible_provider
    from workbench.sim.fleet_providers import sim_providers

    async with AsyncExitStack() as stack:
        if args.providers:
            providers = providers_file(args.providers).providers
        else:
            # Every persona on both surfaces, not the run's chain: each model earns its verdict.
            fleet = await stack.enter_async_context(
                default_fleet(args.fleet, local=not args.no_local)
            )
            providers = sim_providers(fleet.sim)
            if fleet.local is not None:
                providers.append(
                    openai_compatible_provider(
                        "local",
                        fleet.local.base_url,
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


VERB = Verb(add, run)
