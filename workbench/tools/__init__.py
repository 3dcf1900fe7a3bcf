"""Tools and agents: the registry and the text-protocol agent loop, native tools and
their loop, and pending actions — an agent proposes, a human decides."""

from workbench.tools.agent_loop import AgentResult, AgentStep, run_agent_loop
from workbench.tools.native import Tool, tool_specs, validate_native_tools
from workbench.tools.pending import Action, ActionStore, MemoryActionStore, PendingActions
from workbench.tools.registry import ToolRegistry
from workbench.tools.tool_loop import ToolLoopResult, ToolOutcome, run_tool_loop, tool_caller

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
