"""`mcp_servers:`: the MCP servers whose tools the agent may use (DESIGN.md §5).

One block per server name: `command`/`args`/`env` start a local server speaking MCP over
stdio; `url`/`headers` reach one over streamable HTTP. The server's tools appear as
`mcp__<server>__<tool>` in the toolset `mcp:<server>`.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, SecretStr, model_validator

from gateway.config.base import ConfigModel

__all__ = ["McpServerConfig", "valid_server_name"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}$")


def valid_server_name(name: str) -> bool:
    """A server name usable in tool names (`mcp__<name>__<tool>`): letters, digits, `_`, `-`
    (at most 48), and no `__` (the separator)."""
    return bool(_NAME.match(name)) and "__" not in name


def _http_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return value


class McpServerConfig(ConfigModel):
    enabled: bool = True
    command: str | None = None
    """Executable of a stdio server (found on `PATH` when not a path)."""
    args: list[str] = Field(default_factory=list)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    """Environment of a stdio server, added to a minimal one (`PATH`, `HOME`, `USER`,
    `LOGNAME`, `SHELL`, `TERM`). Nothing else of the gateway's environment (its tokens) is
    passed on; name a secret here (`${VAR}`) to give it to the server."""
    cwd: str | None = None
    """Working directory of a stdio server (default: `$HERMES_HOME/mcp/<name>/`)."""
    url: Annotated[str | None, AfterValidator(_http_url)] = None
    """Endpoint of a streamable HTTP server (e.g. `http://127.0.0.1:8000/mcp`)."""
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    """Headers sent to an HTTP server (e.g. `Authorization`)."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Longest a tool call may take; then it is abandoned and the model told so."""
    connect_timeout_s: float = Field(default=30.0, gt=0)
    """Longest a connection attempt (start, handshake, tool list) may take."""
    max_output_chars: int = Field(default=20_000, ge=1000)
    """Longest result the model sees; more is cut (head and tail kept, the rest saved to the
    user's tool output folder)."""
    include: list[str] = Field(default_factory=list)
    """Only these tools of the server (server-side names); empty = all."""
    exclude: list[str] = Field(default_factory=list)
    """Never these tools (applied after `include`)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("set either command (stdio) or url (streamable HTTP), not both")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def allows(self, tool: str) -> bool:
        """Whether the server's tool `tool` passes `include` / `exclude`."""
        if self.include and tool not in self.include:
            return False
        return tool not in self.exclude

    def secret_values(self) -> list[str]:
        return [v.get_secret_value() for v in (*self.env.values(), *self.headers.values())
                if v.get_secret_value()]
