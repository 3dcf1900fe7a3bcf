"""`workbench catalog`: has a pinned model id rotted? Each one against its vendor's list."""

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
    catalog = verbs.add_parser(
        "catalog",
        help="has a pinned model id rotted? each pinned id against its vendor's model list",
        description="Ask every provider's model list (GET {base_url}/models, with the key a "
        "call would send) whether each pinned id is still there. Default: the built-in "
        "simulator chain that `workbench run` uses. Exit 1 when an id is GONE; an id whose "
        "list could not be read is UNCHECKED, which exits 0 but is not a pass.",
    )
    catalog.add_argument(
        "--providers",
        metavar="FILE",
        help="a providers TOML or a LiteLLM config.yaml (default: the built-in simulator chain)",
    )
    catalog.add_argument(
        "--fleet", metavar="FILE", help="a simulator fleet TOML (default: built-in)"
    )
    catalog.add_argument("--json", action="store_true", help="print the whole check as JSON")
    catalog.add_argument("--timeout", type=float, default=20.0, metavar="S", help="per list")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_catalog(args))


async def _catalog(args: argparse.Namespace) -> int:
    from workbench.providers.catalog import catalog_report, catalog_summary, check_catalog, has_rot

    async with AsyncExitStack() as stack:
        if args.providers:
            providers = providers_file(args.providers).providers
        else:
            from workbench.eval.run.default_fleet import default_fleet

            # The simulator's chain alone: the local model is served from a file, not a list.
            fleet = await stack.enter_async_context(default_fleet(args.fleet, local=False))
            providers = fleet.sim_chain.providers
        checks = await check_catalog(providers, timeout_s=args.timeout)
    if args.json:
        print(json.dumps(catalog_summary(checks), ensure_ascii=False, indent=2))
    else:
        print("\n".join(catalog_report(checks)))
    return 1 if has_rot(checks) else 0


VERB = Verb(add, run)
