"""The `workbench` command. Errors print one line with their stable code, never a traceback.

Exit codes: 0 success, 1 the job ran and failed, 2 the user's input (flags, files) is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack

from workbench.errors import ConfigError, WorkbenchError


def _build_parser() -> argparse.ArgumentParser:
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
    probe.add_argument("--providers", metavar="FILE", help="a providers TOML file (real endpoints)")
    probe.add_argument("--fleet", metavar="FILE", help="a simulator fleet TOML (default: built-in)")
    probe.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    probe.add_argument("--no-vision", action="store_true", help="skip the picture probes")
    probe.add_argument("--no-local", action="store_true", help="leave the local model out")
    probe.add_argument("--timeout", type=float, default=30.0, metavar="S", help="per call")

    sim = verbs.add_parser("sim", help="the provider simulator")
    sim_verbs = sim.add_subparsers(dest="sim_verb", metavar="VERB", required=True)
    serve = sim_verbs.add_parser("serve", help="serve the simulator fleet on loopback")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--fleet", metavar="FILE", help="a fleet TOML (default: built-in)")

    local = verbs.add_parser("local", help="the real local model (SmolLM2 via llama.cpp)")
    local_verbs = local.add_subparsers(dest="local_verb", metavar="VERB", required=True)
    lserve = local_verbs.add_parser("serve", help="serve SmolLM2 as an OpenAI-compatible endpoint")
    lserve.add_argument("--port", type=int, default=8766)
    return parser


async def _probe(args: argparse.Namespace) -> int:
    from workbench.eval.fleet_providers import sim_providers
    from workbench.eval.probe import probe_models, verdict_table
    from workbench.local.server import MODEL_ID, LocalModel, local_model_available
    from workbench.providers.openai_compat import openai_compatible_provider
    from workbench.sim import SimServer

    async with AsyncExitStack() as stack:
        if args.providers:
            from workbench.eval.config import load_providers

            providers = load_providers(args.providers)
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


def _sim_serve(args: argparse.Namespace) -> int:
    from workbench.sim import run_forever

    run_forever(args.fleet, host=args.host, port=args.port)
    return 0


def _local_serve(args: argparse.Namespace) -> int:
    from workbench.local.server import LocalModel

    model = LocalModel(args.port)
    print(f"serving SmolLM2 at {model.base_url} (Ctrl-C to stop)", flush=True)
    model.serve_forever()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        if args.verb == "probe":
            return asyncio.run(_probe(args))
        if args.verb == "sim":
            return _sim_serve(args)
        if args.verb == "local":
            return _local_serve(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
