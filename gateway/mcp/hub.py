"""`McpHub`: every configured MCP server, as a source of tools for the agent.

The gateway runtime owns the hub (started and stopped on the runner's exit stack); the agent
sees it only as an `agent_core.tools.toolsets.ToolSource`. Each server's tools are agent
tools named `mcp__<server>__<tool>` in the toolset `mcp:<server>`; a tool the server marks
read-only (`readOnlyHint`) may run in parallel with other read-only calls, any other runs
alone. Calls go to the server's current connection, so a session that still offers a tool
after its server restarted reaches the new process.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import mcp_types as mt
import structlog
from pydantic import BaseModel, ConfigDict

from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool, ToolError
from gateway.config.mcp import McpServerConfig
from gateway.mcp.connection import (
    KEEPALIVE_S,
    RECONNECT_BACKOFF,
    McpConnection,
    McpToolError,
)
from gateway.mcp.results import MAX_DESCRIPTION_CHARS, clean_schema, tool_name
from gateway.mcp.stdio import DEFAULT_MAX_MESSAGE_BYTES
from hermes_common.backoff import Backoff

__all__ = ["McpArgs", "McpHub", "mcp_tool"]

log = structlog.get_logger("gateway.mcp")

#: Longest start-up waits for the servers' first connection attempts (together).
STARTUP_WAIT_S = 10.0
#: Slack on top of a server's own call timeout before the registry's backstop fires.
_BACKSTOP_S = 5.0


class McpArgs(BaseModel):
    """Arguments of an MCP tool: any JSON object (the server validates them)."""

    model_config = ConfigDict(extra="allow")


def mcp_tool(conn: McpConnection, spec: mt.Tool) -> Tool:
    """The agent tool that calls `spec` on the server of `conn`."""
    remote = spec.name

    async def run(args: BaseModel, ctx: ToolContext) -> str:
        try:
            return await conn.call(remote, args.model_dump())
        except McpToolError as exc:
            raise ToolError(str(exc)) from None

    read_only = bool(spec.annotations is not None and spec.annotations.read_only_hint)
    about = (spec.description or spec.title or f"The {remote} tool").strip()
    if remote in conn.withheld:
        about = f"The {remote} tool (its description was withheld: it failed a safety check)"
    return Tool(
        name=tool_name(conn.name, remote),
        description=f"[MCP server {conn.name}] {about}"[:MAX_DESCRIPTION_CHARS],
        args_model=McpArgs,
        func=run,
        toolset=f"mcp:{conn.name}",
        parallel_safe=read_only,
        timeout_s=conn.cfg.timeout_s + _BACKSTOP_S,
        max_output_chars=conn.cfg.max_output_chars,
        parameters=clean_schema(spec.input_schema),
    )


class McpHub:
    """The enabled servers of `mcp_servers`. An async context manager: entering starts every
    connection and waits (at most `startup_wait_s`, all together) for their first attempt;
    leaving stops them. A server that cannot connect is retried in the background and never
    blocks start-up beyond that wait."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        home: Path | None = None,
        logs_dir: Path | None = None,
        startup_wait_s: float = STARTUP_WAIT_S,
        backoff: Backoff = RECONNECT_BACKOFF,
        keepalive_s: float = KEEPALIVE_S,
        mode: str = "auto",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        """`home`: each stdio server's default working directory is `home/<name>` (created
        when it starts). `backoff`, `keepalive_s`, `mode` and `max_message_bytes` are each
        connection's (`McpConnection`); tests shorten them."""
        self._startup_wait_s = startup_wait_s
        self._tools: dict[str, tuple[Tool, ...]] = {}
        self.connections: dict[str, McpConnection] = {}
        for name, cfg in servers.items():
            if not cfg.enabled:
                continue
            log_file = logs_dir / f"mcp-{name}.log" if logs_dir is not None else None
            self.connections[name] = McpConnection(
                name, cfg, cwd=home / name if home is not None else None, stderr_log=log_file,
                on_tools_changed=functools.partial(self._rebuild, name), backoff=backoff,
                keepalive_s=keepalive_s, mode=mode, max_message_bytes=max_message_bytes)

    async def __aenter__(self) -> McpHub:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        for conn in self.connections.values():
            conn.start()
        if self.connections:
            await asyncio.gather(*(c.wait_settled(self._startup_wait_s)
                                   for c in self.connections.values()))

    async def stop(self) -> None:
        """Stop every server. Must not raise."""
        await asyncio.gather(*(c.stop() for c in self.connections.values()),
                             return_exceptions=True)
        self._tools.clear()

    def _rebuild(self, name: str) -> None:
        conn = self.connections[name]
        tools: dict[str, Tool] = {}
        for spec in conn.tools:
            tool = mcp_tool(conn, spec)
            if tool.name in tools:
                log.warning("mcp_tool_name_clash", server=name, tool=spec.name)
                continue
            tools[tool.name] = tool
        self._tools[name] = tuple(tools.values())

    def status(self) -> dict[str, dict[str, Any]]:
        """Per server: state, tool count and connections made (for `/status`)."""
        return {name: {"state": c.state, "tools": len(self._tools.get(name, ())),
                       "connects": c.connects, "transport": c.cfg.transport}
                for name, c in self.connections.items()}

    # -- ToolSource ----------------------------------------------------------------------
    def tools(self) -> Sequence[Tool]:
        return [t for name in self.connections for t in self._tools.get(name, ())]

    def toolsets_down(self) -> Mapping[str, str]:
        out: dict[str, str] = {}
        for name, conn in self.connections.items():
            if conn.state == "connected" and not self._tools.get(name):
                out[f"mcp:{name}"] = "the server offers no tools (check include / exclude)"
            elif conn.state != "connected":
                why = f": {conn.last_error}" if conn.last_error else ""
                out[f"mcp:{name}"] = f"server {conn.state}{why}"
        return out
