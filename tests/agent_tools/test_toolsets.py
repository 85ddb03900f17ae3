"""Toolsets: what a session is offered, what is off and why, and that nothing else runs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from agent_core.tools.base import ToolCall, ToolContext
from agent_core.tools.registry import Tool, ToolRegistry, default_registry
from agent_core.tools.toolsets import select, toolset_on


class Free(BaseModel):
    model_config = ConfigDict(extra="allow")


def tool(name: str, toolset: str, **kw: object) -> Tool:
    async def run(args: BaseModel, ctx: ToolContext) -> str:
        return f"{name} ran with {json.dumps(args.model_dump())}"

    return Tool(name, f"the {name} tool", Free, run, toolset=toolset, **kw)  # type: ignore[arg-type]


class Source:
    def __init__(self, tools: Sequence[Tool], down: Mapping[str, str] | None = None) -> None:
        self._tools = list(tools)
        self._down = dict(down or {})

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def toolsets_down(self) -> Mapping[str, str]:
        return self._down


def test_mcp_stands_for_every_server_toolset() -> None:
    assert toolset_on("mcp:notes", ["mcp"])
    assert toolset_on("mcp:notes", ["mcp:notes"])
    assert not toolset_on("mcp:notes", ["mcp:other", "files"])
    assert not toolset_on("web", ["mcp"])


def test_only_enabled_toolsets_with_met_requirements_are_offered() -> None:
    registry = ToolRegistry([
        tool("search", "web", requirements=lambda: "no API key configured (tools.web)"),
        tool("fetch", "web"),
        tool("run", "terminal"),
    ])
    chosen = select(registry, ["web", "files"])
    assert chosen.names() == ["fetch"]
    assert [s["function"]["name"] for s in chosen.schemas()] == ["fetch"]
    why = {(o.name, o.reason) for o in chosen.off}
    assert ("search", "no API key configured (tools.web)") in why
    assert ("run", "toolset terminal is off") in why


def test_a_raising_requirement_check_turns_the_tool_off() -> None:
    def broken() -> str | None:
        raise RuntimeError("boom")

    chosen = select(ToolRegistry([tool("x", "web", requirements=broken)]), None)
    assert chosen.names() == []
    assert "requirement check failed" in chosen.off[0].reason


def test_source_tools_join_and_a_taken_name_is_left_out() -> None:
    registry = ToolRegistry([tool("fetch", "web")])
    src = Source([tool("mcp__a__x", "mcp:a"), tool("fetch", "mcp:a")], {"mcp:b": "not connected"})
    chosen = select(registry, ["web", "mcp"], [src])
    assert chosen.names() == ["fetch", "mcp__a__x"]
    off = {(o.name, o.toolset): o.reason for o in chosen.off}
    assert off[("fetch", "mcp:a")] == "its name is taken by another tool"
    assert off[("", "mcp:b")] == "not connected"


def test_raw_json_schema_parameters_are_offered_as_given() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    t = Tool("mcp__s__find", "find", Free, tool("x", "y").func, parameters=schema)
    assert t.schema()["function"]["parameters"] == schema


async def test_a_tool_not_in_the_selection_is_unknown_even_when_registered(
    ctx: ToolContext,
) -> None:
    registry = ToolRegistry([tool("fetch", "web"), tool("run", "terminal")])
    chosen = select(registry, ["web"])
    [out] = await chosen.execute([ToolCall("c1", "run", "{}")], ctx)
    assert not out.ok
    assert "Unknown tool 'run'" in out.content
    assert "Available tools: fetch." in out.content
    [ok] = await chosen.execute([ToolCall("c2", "fetch", '{"a": 1}')], ctx)
    assert ok.ok and ok.content == 'fetch ran with {"a": 1}'


def test_the_selection_schemas_are_the_same_list_every_time() -> None:
    chosen = select(default_registry(), None)
    assert chosen.schemas() is chosen.schemas()
    assert "memory" in chosen.names() and "read_file" in chosen.names()


def test_ready_made_requirement_checks_say_what_is_missing() -> None:
    from agent_core.tools.requirements import all_of, binary, setting

    assert binary("sh")() is None
    assert binary("no-such-program-xyz")() == "the program 'no-such-program-xyz' is not installed"
    assert setting("k", "tools.web.search.api_key")() is None
    assert setting("", "tools.web.search.api_key")() == "tools.web.search.api_key is not set"
    assert setting(None, "x.y")() == "x.y is not set"
    both = all_of(setting("k", "a"), binary("no-such-program-xyz"))
    assert both() == "the program 'no-such-program-xyz' is not installed"
    registry = ToolRegistry([tool("run", "terminal", requirements=both)])
    assert select(registry, ["terminal"]).off[0].reason == both()
