"""Routing for callers that are not the runner, every route logged as a run's output.

logged_router   `LoggedRouter`: a providers file's router logging each route to a DuckDB file
                (used by the gateway and by the Inspect AI model provider)
"""

from workbench.eval.gateway.logged_router import CHAIN, LoggedRouter

__all__ = ["CHAIN", "LoggedRouter"]
