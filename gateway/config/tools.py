"""`tools:` — settings of the agent's tools."""

from __future__ import annotations

from pydantic import Field

from gateway.config.base import ConfigModel
from gateway.config.tools_web import WebToolsConfig

__all__ = ["ToolsConfig"]


class ToolsConfig(ConfigModel):
    web: WebToolsConfig = Field(default_factory=WebToolsConfig)
