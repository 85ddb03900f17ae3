"""The demo's local MCP server: today's headlines from a fixed offline list (stdio).

`python -m gateway.demo.mcp_server` speaks MCP over stdin/stdout, written with the official
SDK. The demo's gateway starts it from `mcp_servers.news`; the agent sees its tool as
`mcp__news__headlines`.
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

__all__ = ["HEADLINES", "server"]

HEADLINES = (
    {"title": "City council approves a night bus line", "source": "local-desk"},
    {"title": "Chip maker reports record quarterly revenue", "source": "markets-desk"},
    {"title": "Researchers map a new deep-sea coral reef", "source": "science-desk"},
)

server = MCPServer("hermes-demo-news")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def headlines(limit: int = 3) -> str:
    """Today's top headlines (title and source) as JSON."""
    return json.dumps(list(HEADLINES[: max(1, min(limit, len(HEADLINES)))]))


if __name__ == "__main__":
    server.run()
