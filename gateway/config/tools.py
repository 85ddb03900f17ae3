"""`tools:`: which toolsets the agent gets, and the settings of tool families (DESIGN.md §5).

`tools.toolsets` is the default for every chat; `platforms.<name>.toolsets` replaces it on one
platform and `tools.chats["<platform>:<chat id>"]` in one chat (the most specific list wins).
A toolset name is a family of tools (`files`, `memory`, `web`, …); `mcp` stands for every
configured MCP server and `mcp:<server>` for one. Sections of individual tool families
(`tools.web`, `tools.code`, `tools.terminal`) live in their own modules.
"""

from __future__ import annotations

from pydantic import Field

from gateway.config.base import ConfigModel
from gateway.config.tools_code import CodeToolConfig, TerminalToolConfig
from gateway.config.tools_web import WebToolsConfig

__all__ = ["DEFAULT_TOOLSETS", "ToolsConfig"]

#: The toolsets on when `tools.toolsets` is not set. `vision` (vision_analyze) joins DESIGN's
#: list; `terminal` joins it when `tools.terminal.enabled` is true (`HermesConfig.toolsets`).
DEFAULT_TOOLSETS: tuple[str, ...] = (
    "files", "memory", "session_search", "todo", "clarify", "web", "vision", "code", "mcp",
    "skills", "delegation",
)


class ToolsConfig(ConfigModel):
    toolsets: list[str] | None = None
    """Toolsets on in every chat; None = `DEFAULT_TOOLSETS` (or the deprecated
    `agent.toolsets` when that is set)."""
    chats: dict[str, list[str]] = Field(default_factory=dict)
    """`"<platform>:<chat id>"` → the toolsets of that one chat (replaces the platform's and
    the default list there)."""
    web: WebToolsConfig = Field(default_factory=WebToolsConfig)
    code: CodeToolConfig = Field(default_factory=CodeToolConfig)
    terminal: TerminalToolConfig = Field(default_factory=TerminalToolConfig)
