"""The tool registry of the text-protocol agent loop (the seed's "Registre d'outils").

Empty by default — no tool is pre-registered. A tool says which roles may *see* it; the
agent loop asks the same question again before running a call, because a model can write a
call to a tool it was never shown (a name from an earlier conversation, a guess).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.errors import ConfigError
from workbench.providers.protocols import compact_json

__all__ = ["ALL_ROLES", "RegisteredTool", "ToolRegistry"]

ToolType = Literal["read", "write"]
Handler = Callable[[dict[str, Any], Any], Awaitable[Any] | Any]

# A tool registered with roles=None (or with "*" among its roles) is visible to every role.
ALL_ROLES = "*"
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(slots=True, frozen=True)
class RegisteredTool:
    name: str
    description: str
    type: ToolType
    roles: frozenset[str] | None  # None: every role
    params: dict[str, Any]  # {"name": "string", ...} or a JSON Schema
    handler: Handler = field(repr=False)
    external: bool = False  # leaves the machine: its parameters are masked when a masker is given

    def allows(self, role: str | None) -> bool:
        return self.roles is None or ALL_ROLES in self.roles or role in self.roles


def _invalid(name: Any, problem: str) -> ConfigError:
    return ConfigError(
        f"tool {name!r}: {problem}",
        code="TOOL_INVALID",
        details={"tool": name, "problem": problem},
    )


class ToolRegistry:
    """Tools an agent may call, each with the roles allowed to use it."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}

    def register(
        self,
        name: str,
        description: str,
        type: ToolType,
        roles: Iterable[str] | str | None,
        params: dict[str, Any] | None,
        handler: Handler,
        external: bool = False,
    ) -> RegisteredTool:
        """Add a tool; a bad or duplicate definition raises ConfigError code TOOL_INVALID."""
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise _invalid(name, "the name must match ^[a-zA-Z0-9_-]{1,64}$")
        if name in self._tools:
            raise _invalid(name, "a tool with this name is already registered")
        if type not in ("read", "write"):
            raise _invalid(name, f"type must be 'read' or 'write', not {type!r}")
        if not isinstance(description, str):
            raise _invalid(name, "the description must be a string")
        if not callable(handler):
            raise _invalid(name, "the handler must be callable")
        if params is not None and not isinstance(params, dict):
            raise _invalid(name, "params must be a {name: type} map or a JSON Schema object")
        if roles is None:
            role_set = None
        else:
            role_set = frozenset([roles] if isinstance(roles, str) else roles)
            if not all(isinstance(r, str) for r in role_set):
                raise _invalid(name, "roles must be strings")
        tool = RegisteredTool(
            name=name,
            description=description,
            type=type,
            roles=role_set,
            params=dict(params or {}),
            handler=handler,
            external=bool(external),
        )
        self._tools[name] = tool
        return tool

    # -- reading ------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every registered name, whatever the role: the parser reads calls to any of them, so
        that a call to a forbidden tool is refused out loud instead of passing as prose."""
        return list(self._tools)

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def allows(self, name: str, role: str | None) -> bool:
        tool = self._tools.get(name)
        return tool is not None and tool.allows(role)

    def visible(self, role: str | None) -> list[RegisteredTool]:
        """The tools `role` may see and use, in registration order."""
        return [t for t in self._tools.values() if t.allows(role)]

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def format_tools_for_prompt(self, role: str | None) -> str:
        """The system-prompt text: the tools `role` may use and the call protocol. Empty when
        the role sees no tool (a model offered nothing narrates no call)."""
        tools = self.visible(role)
        if not tools:
            return ""
        lines = ["You can use these tools:", ""]
        for t in tools:
            lines.append(f"- {t.name} ({t.type}): {t.description}".rstrip())
            lines.append(f"  parameters: {compact_json(t.params)}")
        lines += [
            "",
            "To call a tool, write exactly this block (one block per call):",
            '<tool_call name="TOOL_NAME">{"parameter": "value"}</tool_call>',
            "The arguments are one JSON object (write {} when the tool takes none). You may",
            "call several tools in one turn; then stop and wait for their results.",
            'Each result comes back as <tool_result name="TOOL_NAME">{json}</tool_result>.',
            "When you have what you need, answer the user without any <tool_call> block.",
        ]
        return "\n".join(lines)
