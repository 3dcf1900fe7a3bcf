"""Tools and agents: the registry and the text-protocol agent loop, native tools and
their loop, and pending actions — an agent proposes, a human decides.

Each name is imported from its module on first use: the store reads `tools.pending` on every
run, and must not pay for the agent loops and jsonschema to do so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names

if TYPE_CHECKING:
    from workbench.tools.agent_loop import AgentResult, AgentStep, run_agent_loop
    from workbench.tools.native_tools import Tool, tool_specs, validate_native_tools
    from workbench.tools.pending import Action, ActionStore, MemoryActionStore, PendingActions
    from workbench.tools.tool_loop import ToolLoopResult, ToolOutcome, run_tool_loop, tool_caller
    from workbench.tools.tool_registry import ToolRegistry

# public name → the module of this package that defines it
_HOMES: dict[str, str] = {
    "AgentResult": "agent_loop",
    "AgentStep": "agent_loop",
    "run_agent_loop": "agent_loop",
    "Tool": "native_tools",
    "tool_specs": "native_tools",
    "validate_native_tools": "native_tools",
    "Action": "pending",
    "ActionStore": "pending",
    "MemoryActionStore": "pending",
    "PendingActions": "pending",
    "ToolRegistry": "tool_registry",
    "ToolLoopResult": "tool_loop",
    "ToolOutcome": "tool_loop",
    "run_tool_loop": "tool_loop",
    "tool_caller": "tool_loop",
}

__all__ = [
    "Action",
    "ActionStore",
    "AgentResult",
    "AgentStep",
    "MemoryActionStore",
    "PendingActions",
    "Tool",
    "ToolLoopResult",
    "ToolOutcome",
    "ToolRegistry",
    "run_agent_loop",
    "run_tool_loop",
    "tool_caller",
    "tool_specs",
    "validate_native_tools",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
