"""`tools:`: which toolsets the agent gets (DESIGN.md §5).

`tools.toolsets` is the default for every chat; `platforms.<name>.toolsets` replaces it on one
platform and `tools.chats["<platform>:<chat id>"]` in one chat (the most specific list wins).
A toolset name is a family of tools (`files`, `memory`, `web`, …); `mcp` stands for every
configured MCP server and `mcp:<server>` for one. Sections of individual tool families
(`tools.web`, `tools.code`, …) live in their own modules and are added here as fields.
"""

from __future__ import annotations

from pydantic import Field

from gateway.config.base import ConfigModel

__all__ = ["DEFAULT_TOOLSETS", "ToolsConfig"]

#: The toolsets on when `tools.toolsets` is not set (`terminal` is off by default).
DEFAULT_TOOLSETS: tuple[str, ...] = (
    "files", "memory", "session_search", "todo", "clarify", "web", "code", "mcp", "skills",
    "delegation",
)


class ToolsConfig(ConfigModel):
    toolsets: list[str] | None = None
    """Toolsets on in every chat; None = `DEFAULT_TOOLSETS` (or the deprecated
    `agent.toolsets` when that is set)."""
    chats: dict[str, list[str]] = Field(default_factory=dict)
    """`"<platform>:<chat id>"` → the toolsets of that one chat (replaces the platform's and
    the default list there)."""
