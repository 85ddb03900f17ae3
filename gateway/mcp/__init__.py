"""MCP client: the configured servers' tools, for the agent (`McpHub`)."""

from gateway.mcp.hub import McpHub

__all__ = ["McpHub"]
