"""Which tools a session is offered: toolsets, requirements and tools that come and go.

A tool belongs to one toolset (`files`, `memory`, `web`, `mcp:<server>`, …). The caller names
the toolsets that are on; `mcp` turns on every `mcp:<server>` toolset. A tool is offered when
its toolset is on and its requirements are met (`Tool.requirements`). Tools served from
outside the process (MCP servers) reach the agent only through a `ToolSource`, which the
gateway owns.

`select()` freezes the result in a `ToolSelection`: the tools, their schemas (the request's
`tools` parameter, byte-identical for as long as the selection is used) and, for `/tools`,
what is off and why. The gateway keeps one selection per session, so a tool that appears or
disappears mid-session changes the next session, never the running one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.registry import Tool, ToolRegistry

__all__ = [
    "MCP_TOOLSETS",
    "OffTool",
    "ToolSelection",
    "ToolSource",
    "select",
    "toolset_on",
]

#: The toolset name that stands for every `mcp:<server>` toolset.
MCP_TOOLSETS = "mcp"


class ToolSource(Protocol):
    """Tools that come and go while the process runs (an MCP server's). Implemented outside
    agent_core; both methods are cheap, non-blocking snapshots and must not raise."""

    def tools(self) -> Sequence[Tool]:
        """The tools available now."""
        ...

    def toolsets_down(self) -> Mapping[str, str]:
        """Toolsets of this source that have no tools now → why (e.g. "not connected:
        server exited"), for `/tools`."""
        ...


def toolset_on(toolset: str, enabled: Collection[str]) -> bool:
    """Whether `toolset` is on when the names `enabled` are."""
    if toolset in enabled:
        return True
    return toolset.startswith(MCP_TOOLSETS + ":") and MCP_TOOLSETS in enabled


@dataclass(frozen=True, slots=True)
class OffTool:
    """A tool (or a whole toolset, `name` = "") not offered, and why."""

    name: str
    toolset: str
    reason: str


@dataclass(frozen=True, slots=True)
class ToolSelection:
    """The tools one session is offered, frozen. Runs calls through the registry, limited to
    these tools (a call to any other name is an unknown tool). Implements the agent's
    `ToolExecutor`."""

    registry: ToolRegistry
    tools: tuple[Tool, ...]
    off: tuple[OffTool, ...] = ()
    enabled: tuple[str, ...] = ()
    _by_name: dict[str, Tool] = field(default_factory=dict, repr=False)
    _schemas: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({t.name: t for t in self.tools})
        self._schemas.extend(self.registry.schema_of(t) for t in self.tools)

    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def schemas(self, toolsets: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The request's `tools` parameter (the same list every time; do not mutate).
        `toolsets` is ignored: the selection already applied them."""
        return self._schemas

    async def execute(self, calls: Sequence[ToolCall], ctx: ToolContext) -> list[ToolOutcome]:
        return await self.registry.execute(calls, ctx, tools=self._by_name)


def select(
    registry: ToolRegistry,
    enabled: Iterable[str] | None,
    sources: Iterable[ToolSource] = (),
) -> ToolSelection:
    """The tools offered with the toolsets `enabled` on (None: all): the registry's tools,
    then each source's, in order. A source tool whose name is taken is left out. Never
    raises."""
    names = None if enabled is None else tuple(dict.fromkeys(enabled))
    offered: list[Tool] = []
    off: list[OffTool] = []
    taken: set[str] = set()
    seen: set[str] = {MCP_TOOLSETS}

    def consider(tool: Tool) -> None:
        seen.add(tool.toolset)
        if tool.name in taken:
            off.append(OffTool(tool.name, tool.toolset, "its name is taken by another tool"))
            return
        taken.add(tool.name)
        if names is not None and not toolset_on(tool.toolset, names):
            off.append(OffTool(tool.name, tool.toolset, f"toolset {tool.toolset} is off"))
            return
        reason = tool.unmet()
        if reason is not None:
            off.append(OffTool(tool.name, tool.toolset, reason))
            return
        offered.append(tool)

    for tool in registry.tools():
        consider(tool)
    for source in sources:
        for tool in source.tools():
            consider(tool)
        for toolset, reason in source.toolsets_down().items():
            seen.add(toolset)
            if names is None or toolset_on(toolset, names):
                off.append(OffTool("", toolset, reason))
            else:
                off.append(OffTool("", toolset, f"toolset {toolset} is off"))
    off += [OffTool("", name, "no tools of this name are installed") for name in names or ()
            if name not in seen]
    return ToolSelection(registry, tuple(offered), tuple(off), names or ())
