"""The provider simulator: a real loopback HTTP server speaking the OpenAI chat-completions
and Gemini generateContent APIs, serving a fleet of model personas declared in TOML.

    async with SimServer() as sim:                  # the packaged default fleet
        client = AsyncOpenAI(base_url=sim.openai_url, api_key="sim-key")
        ...
        log = await sim.requests()

See `workbench/sim/fleet.toml` for the default personas and `server.py` for the URL layout.
`workbench.sim.process.SimProcess` runs the simulator as processes of its own (`sim serve`),
for a client that must not share the server's GIL; it is left out of this namespace since
only tests and benchmarks need it.
"""

from workbench.sim.fleet import (
    DEFAULT_FLEET_PATH,
    FAILURE_KINDS,
    TOOL_STYLES,
    FailureRule,
    Fleet,
    Persona,
    load_fleet,
)
from workbench.sim.png import decode_png, dominant_colour, encode_png
from workbench.sim.server import SimApp, SimServer, create_app, run_forever, serve

__all__ = [
    "DEFAULT_FLEET_PATH",
    "FAILURE_KINDS",
    "TOOL_STYLES",
    "FailureRule",
    "Fleet",
    "Persona",
    "SimApp",
    "SimServer",
    "create_app",
    "decode_png",
    "dominant_colour",
    "encode_png",
    "load_fleet",
    "run_forever",
    "serve",
]
