"""`/tools`: the reply lists the session's tools by toolset, what is off and why, and what a
new session would change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool, ToolRegistry
from agent_core.tools.toolsets import select
from gateway.commands.tools import format_tools


class NoArgs(BaseModel):
    pass


def tool(name: str, toolset: str, **kw: object) -> Tool:
    async def run(args: BaseModel, ctx: ToolContext) -> str:
        return name

    return Tool(name, name, NoArgs, run, toolset=toolset, **kw)  # type: ignore[arg-type]


class Source:
    def __init__(self, tools: Sequence[Tool], down: Mapping[str, str]) -> None:
        self._tools, self._down = list(tools), dict(down)

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def toolsets_down(self) -> Mapping[str, str]:
        return self._down


def test_the_listing_says_what_is_on_and_why_the_rest_is_off() -> None:
    registry = ToolRegistry([
        tool("read_file", "files"), tool("write_file", "files"),
        tool("web_search", "web", requirements=lambda: "no search backend configured"),
        tool("terminal", "terminal"),
    ])
    mcp = Source([tool("mcp__notes__echo", "mcp:notes")], {"mcp:jira": "server down: timed out"})
    chosen = select(registry, ["files", "web", "mcp", "skills"], [mcp])
    text = format_tools(None, chosen)
    assert text.splitlines()[0] == "🧰 Tools of the next session (3):"
    assert "• files: read_file, write_file" in text
    assert "• mcp:notes: mcp__notes__echo" in text
    assert "• web: web_search — no search backend configured" in text
    assert "• terminal: terminal — toolset terminal is off" in text
    assert "• mcp:jira — server down: timed out" in text
    assert "• skills — no tools of this name are installed" in text


def test_a_running_session_is_told_what_a_new_one_would_change() -> None:
    registry = ToolRegistry([tool("read_file", "files")])
    before = select(registry, None, [Source([tool("mcp__n__a", "mcp:n")], {})])
    after = select(registry, None, [Source([tool("mcp__n__b", "mcp:n")], {})])
    text = format_tools(before, after)
    assert text.startswith("🧰 This session's tools (2):")
    assert "• mcp:n: mcp__n__a" in text
    assert "A new session (/new) would change this:\n• added: mcp__n__b\n• removed: mcp__n__a" \
        in text
    assert "would change" not in format_tools(before, before)
