"""The `session_search` tool: full-text search over past sessions through the search port."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool, ToolError

__all__ = ["SessionSearchArgs", "session_search_tool"]


class SessionSearchArgs(BaseModel):
    query: str = Field(min_length=1, description="Words or a phrase to look for.")
    limit: int = Field(3, ge=1, le=10, description="Maximum number of hits.")


async def session_search(args: SessionSearchArgs, ctx: ToolContext) -> str:
    port = ctx.ports.search
    if port is None:
        raise ToolError("Session search is not available in this session.")
    hits = await port.search(args.query, limit=args.limit)
    hits = list(hits)[: args.limit]
    payload: dict[str, object] = {"query": args.query, "count": len(hits), "results": hits}
    if not hits:
        payload["message"] = "No matching past conversations found."
    return json.dumps(payload, ensure_ascii=False, default=str)


def session_search_tool() -> Tool:
    return Tool(
        "session_search",
        "Search past conversations with the user (full text, CJK included). Returns matching "
        "snippets with their session and time. Use it when the user refers to something "
        "discussed before.",
        SessionSearchArgs,
        session_search,
        toolset="session_search",
        parallel_safe=True,
    )
