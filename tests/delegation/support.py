"""Helpers of the delegation tests: the fake model answering a parent that delegates and its
subagents (told apart by the subagent system prompt), and children held until released."""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from agent_core.delegation import CHILD_SYSTEM_PROMPT
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Script, call, text
from tests.fakes.openai_server import tool_calls as calls_reply
from tests.gateway.runtime_harness import runner_for

__all__ = ["KEY", "Children", "api_client", "ask", "delegate", "is_child", "task_of",
           "tool_names"]

KEY = "sk-alice-0123456789abcdef"
ChildScript = Callable[[RecordedRequest], "Script | Awaitable[Script]"]


def is_child(req: RecordedRequest) -> bool:
    first = req.messages[0] if req.messages else {}
    return first.get("role") == "system" and first.get("content") == CHILD_SYSTEM_PROMPT


def task_of(req: RecordedRequest) -> str:
    """The task text a subagent was given (its one user message)."""
    return str(next(m["content"] for m in req.messages if m.get("role") == "user"))


def tool_names(req: RecordedRequest) -> set[str]:
    return {t["function"]["name"] for t in (req.body or {}).get("tools") or []}


def delegate(*goals: str, context: str | None = None) -> Script:
    """The parent's model asks for `delegate_task` with these goals (one: `goal`)."""
    if len(goals) == 1:
        args: dict[str, Any] = {"goal": goals[0]}
        if context is not None:
            args["context"] = context
    else:
        args = {"tasks": [{"goal": g, **({"context": context} if context else {})}
                          for g in goals]}
    return calls_reply(call("delegate_task", args))


class Children:
    """Installs a responder on `model`: parent requests take `parent` scripts in order,
    subagent requests go to `child(req)` (default: a report naming the task). `hold()`
    makes every subagent wait until `release(task)` or `release_all()`."""

    def __init__(self, model: FakeOpenAIServer, *parent: Script,
                 child: ChildScript | None = None) -> None:
        self.parent: deque[Script] = deque(parent)
        self.child = child or (lambda req: text(f"REPORT for {task_of(req)!r}"))
        self.requests: list[RecordedRequest] = []
        self._held = False
        self._gates: dict[str, asyncio.Event] = {}
        model.responder = self._respond

    def hold(self) -> None:
        self._held = True

    def _gate(self, task: str) -> asyncio.Event:
        return self._gates.setdefault(task, asyncio.Event())

    def release(self, needle: str) -> None:
        for task in [t for t in self._gates if needle in t]:
            self._gates[task].set()

    def release_all(self) -> None:
        self._held = False
        for gate in self._gates.values():
            gate.set()

    async def _respond(self, req: RecordedRequest) -> Script:
        if not is_child(req):
            return self.parent.popleft() if self.parent else text("(parent: no script left)")
        self.requests.append(req)
        if self._held:
            await self._gate(task_of(req)).wait()
        out = self.child(req)
        return await out if inspect.isawaitable(out) else out


@asynccontextmanager
async def api_client(home: Path, model: FakeOpenAIServer, **overrides: Any
                     ) -> AsyncIterator[tuple[GatewayRunner, AsyncOpenAI]]:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    async with runner_for(home, model, adapters={"api": adapter}, compression__enabled=False,
                          **overrides) as (runner, _):
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=30)
        try:
            yield runner, client
        finally:
            await client.close()


async def ask(client: AsyncOpenAI, text_: str, session: str = "s1") -> str:
    resp = await client.chat.completions.create(
        model="hermes-agent", user=session, messages=[{"role": "user", "content": text_}])
    return resp.choices[0].message.content or ""


async def eventually(pred: Callable[[], Awaitable[bool]], what: str,
                     timeout_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await pred():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
