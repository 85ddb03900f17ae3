"""The `web_search` tool: search the web through the configured backend
(`agent_core.web.search`: SearXNG, Brave Search or Tavily)."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool, ToolError
from agent_core.web.search import SearchBackend, SearchError

__all__ = ["WebSearchArgs", "web_search_tool"]


class WebSearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=400, description="What to search for.")
    limit: int = Field(5, ge=1, le=20, description="Maximum number of results.")


def web_search_tool(backend: SearchBackend) -> Tool:
    async def web_search(args: WebSearchArgs, ctx: ToolContext) -> str:
        try:
            hits = await backend.search(args.query.strip(), args.limit)
        except SearchError as exc:
            raise ToolError(f"web search failed: {exc}") from None
        payload: dict[str, object] = {
            "query": args.query,
            "results": [{"position": i, "title": h.title, "url": h.url, "snippet": h.snippet}
                        for i, h in enumerate(hits, 1)],
        }
        if not hits:
            payload["message"] = "No results."
        return json.dumps(payload, ensure_ascii=False)

    return Tool(
        "web_search",
        "Search the web. Returns titles, URLs and short snippets; read a page with "
        "web_extract when a snippet is not enough.",
        WebSearchArgs,
        web_search,
        toolset="web",
        parallel_safe=True,
        timeout_s=120.0,
    )
