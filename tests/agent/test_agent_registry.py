"""The loop with the real `ToolRegistry`: parallel and path-conflicting batches, tool errors."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from pydantic import BaseModel

from agent_core.agent import Agent, AgentConfig
from agent_core.events import Final, ToolFinished
from agent_core.messages import validate
from agent_core.provider import ProviderRouter
from agent_core.tools.base import ToolContext
from agent_core.tools.registry import Tool, ToolRegistry
from tests.agent.doubles import FAST, collect, settings, terminal
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls


class PathArgs(BaseModel):
    path: str


def _registry(spans: dict[str, tuple[float, float]]) -> ToolRegistry:
    def timed(kind: str):
        async def run(args: PathArgs, ctx: ToolContext) -> str:
            start = time.monotonic()
            await asyncio.sleep(0.05)
            spans[f"{kind}:{args.path}"] = (start, time.monotonic())
            return f"{kind} {args.path} ok"
        return run

    async def broken(args: PathArgs, ctx: ToolContext) -> str:
        raise RuntimeError("disk on fire")

    return ToolRegistry([
        Tool("read_file", "read", PathArgs, timed("read"), parallel_safe=True, path_arg="path"),
        Tool("write_file", "write", PathArgs, timed("write"), path_arg="path"),
        Tool("broken", "always fails", PathArgs, broken),
    ])


async def test_parallel_and_conflicting_batches_through_the_loop(
    fake_openai: FakeOpenAIServer, tmp_path: Path
):
    spans: dict[str, tuple[float, float]] = {}
    fake_openai.enqueue(
        tool_calls(call("read_file", {"path": "a.txt"}, id="r_a"),
                   call("read_file", {"path": "b.txt"}, id="r_b"),
                   call("write_file", {"path": "a.txt"}, id="w_a"),
                   call("read_file", {"path": "sub/c.txt"}, id="r_c"),
                   call("broken", {"path": "x"}, id="bad")),
        text("all files handled"),
    )
    agent = Agent(ProviderRouter([settings(fake_openai)]), _registry(spans), "sys",
                  config=AgentConfig(**FAST),
                  context_factory=lambda: ToolContext(workspace=tmp_path))
    events = await collect(agent.run_turn([], "work on files"))
    final = terminal(events)
    assert isinstance(final, Final) and final.text == "all files handled"

    def overlap(x: str, y: str) -> bool:
        return spans[x][0] < spans[y][1] and spans[y][0] < spans[x][1]

    assert overlap("read:a.txt", "read:b.txt")            # independent reads ran together
    assert spans["write:a.txt"][0] >= spans["read:a.txt"][1]  # same path waited its turn
    assert overlap("write:a.txt", "read:sub/c.txt")

    sent = fake_openai.requests[1].body["messages"]
    assert validate(sent) == []
    results = [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"]
    assert [r[0] for r in results] == ["r_a", "r_b", "w_a", "r_c", "bad"]  # call order
    assert results[0][1] == "read a.txt ok"
    assert "disk on fire" in results[4][1] or "RuntimeError" in results[4][1]
    finished = {e.call_id: e.ok for e in events if isinstance(e, ToolFinished)}
    assert finished == {"r_a": True, "r_b": True, "w_a": True, "r_c": True, "bad": False}
