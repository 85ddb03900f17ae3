"""`tools:`: settings of the agent's tools (DESIGN.md §5). Sections live in their own modules."""

from __future__ import annotations

from pydantic import Field

from gateway.config.base import ConfigModel
from gateway.config.tools_code import CodeToolConfig, TerminalToolConfig
from gateway.config.tools_web import WebToolsConfig

__all__ = ["ToolsConfig"]


class ToolsConfig(ConfigModel):
    web: WebToolsConfig = Field(default_factory=WebToolsConfig)
    code: CodeToolConfig = Field(default_factory=CodeToolConfig)
    terminal: TerminalToolConfig = Field(default_factory=TerminalToolConfig)
