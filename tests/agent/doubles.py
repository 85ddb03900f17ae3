"""Test doubles for the agent loop tests: a minimal tool registry (same two methods as the
real one) and helpers to build agents against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agent_core.agent import Agent, AgentConfig
from agent_core.events import TERMINAL_EVENTS, AgentEvent
from agent_core.provider import ProviderRouter, ProviderSettings
from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome

ToolFn = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


class MiniRegistry:
    """Runs calls one after another; stops starting calls once the interrupt is set."""

    def __init__(self, tools: dict[str, ToolFn]) -> None:
        self.tools = tools
        self.executed: list[str] = []

    def schemas(self, toolsets: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return [
            {"type": "function", "function": {"name": name, "description": f"the {name} tool",
                                              "parameters": {"type": "object", "properties": {}}}}
            for name in sorted(self.tools)
        ]

    async def execute(self, calls: Sequence[ToolCall], ctx: ToolContext) -> list[ToolOutcome]:
        out = []
        for c in calls:
            if ctx.interrupt.is_set:
                break
            start = time.monotonic()
            try:
                content = await self.tools[c.name](json.loads(c.arguments or "{}"), ctx)
                ok = True
            except Exception as exc:  # noqa: BLE001
                content, ok = f"error: {exc}", False
            self.executed.append(c.id)
            out.append(ToolOutcome(c.id, c.name, content, ok, started_at=start,
                                   finished_at=time.monotonic()))
        return out


async def echo_tool(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"result:{json.dumps(args, sort_keys=True)}"


async def wait_for_interrupt_tool(args: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.interrupt.wait()
    return "stopped early"


FAST = dict(backoff_base_s=0.001, backoff_max_s=0.005, retry_after_cap_s=0.01,
            tool_interrupt_grace_s=0.2)


def settings(server: Any, name: str = "main", keys: Sequence[str] = ("sk-test-one",),
             **kw: Any) -> ProviderSettings:
    fields: dict[str, Any] = {"model": "fake-model", "timeout_s": 10, **kw}
    return ProviderSettings(name=name, base_url=server.base_url, api_keys=list(keys), **fields)


def make_agent(providers: Sequence[ProviderSettings], tools: dict[str, ToolFn] | None = None,
               system_prompt: str = "You are a test agent.", **config: Any) -> tuple[Agent, MiniRegistry]:
    registry = MiniRegistry(tools if tools is not None else {"echo": echo_tool})
    cfg = AgentConfig(**{**FAST, **config})
    return Agent(ProviderRouter(providers), registry, system_prompt, config=cfg), registry


async def collect(agen: Any) -> list[AgentEvent]:
    return [ev async for ev in agen]


def terminal(events: list[AgentEvent]) -> AgentEvent:
    assert isinstance(events[-1], TERMINAL_EVENTS), events[-1]
    assert not any(isinstance(e, TERMINAL_EVENTS) for e in events[:-1])
    return events[-1]


async def until(predicate: Callable[[], bool], limit_s: float = 5.0) -> None:
    """Poll `predicate` (state of another task or of the fake server) until it holds."""
    async with asyncio.timeout(limit_s):
        while True:
            if predicate():
                return
            await asyncio.sleep(0.005)
