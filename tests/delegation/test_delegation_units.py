"""The agent side of delegation without the gateway: the depth guard, the narrowed child
context, bounded reports, the argument forms, and tool events reaching the turn's stream."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from agent_core.agent import Agent, AgentConfig, ToolExecutor
from agent_core.delegation import (
    CHILD_SYSTEM_PROMPT,
    MAX_TASKS,
    DelegationLimits,
    Delegator,
    Subtask,
    bound_summary,
)
from agent_core.events import SubagentUsage, SubtaskProgress, ToolFinished, ToolStarted
from agent_core.ports import AgentPorts, ApprovalDecision, ApprovalRequest
from agent_core.provider import ProviderClient, ProviderRouter, ProviderSettings
from agent_core.tools.base import ToolCall, ToolContext
from agent_core.tools.builtin.delegate import DelegateArgs, delegate_tool
from agent_core.tools.registry import Tool, ToolError, ToolRegistry, default_registry
from agent_core.tools.toolsets import select
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls


class _Asker:
    async def ask(self, question: str, choices: list[str] | None = None) -> str:
        return "yes"


class _Sender:
    async def send(self, text: str) -> None:
        return None


class _Approver:
    async def request(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(True, "approved")


class _Search:
    async def search(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        return []


class _Factory:
    """Builds real child agents against the fake model and keeps the contexts it was given."""

    def __init__(self, router: ProviderRouter) -> None:
        self.router = router
        self.contexts: list[ToolContext] = []

    def build_child(self, system_prompt: str, tools: ToolExecutor, context: ToolContext, *,
                    max_iterations: int) -> Agent:
        self.contexts.append(context)
        return Agent(self.router, tools, system_prompt,
                     config=AgentConfig(max_iterations=max_iterations),
                     context_factory=lambda: context)


def _router(model: FakeOpenAIServer) -> ProviderRouter:
    return ProviderRouter([ProviderClient(ProviderSettings(
        name="main", base_url=model.base_url, api_keys=["sk-test"], model="fake-model",
        timeout_s=10, max_retries=0))])


def _parent(tmp_path: Path, delegator: Delegator | None, **kw: Any) -> ToolContext:
    return ToolContext(
        workspace=tmp_path / "ws", memory_dir=tmp_path / "mem", user_dir=tmp_path / "user",
        ports=AgentPorts(search=_Search(), ask_user=_Asker(), send_message=_Sender(),
                         approval=_Approver()),
        session_id="s1", principal="api:alice", subagents=delegator, **kw)


def _registry() -> ToolRegistry:
    registry = default_registry()
    registry.register(delegate_tool())
    return registry


async def test_delegate_task_refuses_to_run_in_a_subagent(tmp_path: Path,
                                                          model: FakeOpenAIServer) -> None:
    registry = _registry()
    factory = _Factory(_router(model))
    delegator = Delegator(factory, select(registry, None))
    args = json.dumps({"goal": "go deeper"})
    [out] = await registry.execute([ToolCall("c1", "delegate_task", args)],
                                   _parent(tmp_path, delegator, depth=1))
    assert not out.ok
    assert out.content == ("Error: delegate_task is not available to a subagent: only the "
                           "main assistant may delegate (depth limit 1).")
    with pytest.raises(ToolError):  # the delegator's own guard, behind the tool's
        await delegator.run([Subtask("go deeper")], _parent(tmp_path, delegator, depth=1))
    assert model.requests == [] and factory.contexts == []


async def test_a_child_acts_for_the_same_user_with_less(tmp_path: Path,
                                                        model: FakeOpenAIServer) -> None:
    model.enqueue(text("child report"))
    factory = _Factory(_router(model))
    delegator = Delegator(factory, select(_registry(), None), DelegationLimits(max_iterations=7))
    seen: list[object] = []
    parent = _parent(tmp_path, delegator, emit=seen.append, extra={"todos": ["parent's"]},
                     attachments_dir=tmp_path / "chat", skills_dir=tmp_path / "skills")
    [result] = await delegator.run([Subtask("look around", "in the docs folder")], parent)
    assert (result.status, result.summary, result.model_calls) == ("completed", "child report", 1)
    [child] = factory.contexts
    assert (child.workspace, child.principal, child.session_id, child.output_dir,
            child.skills_dir, child.attachments_dir) == (
        parent.workspace, parent.principal, parent.session_id, parent.output_dir,
        parent.skills_dir, parent.attachments_dir)
    assert child.extra == {}  # the parent session's tool state (its todo list) stays home
    assert child.ports.search is parent.ports.search
    assert (child.memory_dir, child.user_dir, child.subagents, child.depth) == (None, None,
                                                                                None, 1)
    assert (child.ports.ask_user, child.ports.send_message, child.ports.approval) == (
        None, None, None)
    [req] = model.requests
    assert [m["role"] for m in req.messages] == ["system", "user"]
    assert req.messages[0]["content"] == CHILD_SYSTEM_PROMPT
    assert req.messages[1]["content"] == ("Your task:\nlook around\n\nContext from the "
                                          "assistant who delegated it:\nin the docs folder")
    assert [type(e).__name__ for e in seen] == ["SubtaskProgress", "SubagentUsage",
                                                "SubtaskProgress"]
    assert seen[0] == SubtaskProgress(running=1, waiting=0, done=0, total=1)
    assert isinstance(seen[1], SubagentUsage) and seen[1].usage.prompt_tokens > 0
    assert seen[2] == SubtaskProgress(running=0, waiting=0, done=1, total=1)


async def test_a_child_that_runs_out_of_budget_still_reports(tmp_path: Path,
                                                             model: FakeOpenAIServer) -> None:
    model.enqueue(tool_calls(call("todo", {})), tool_calls(call("todo", {})),
                  text("got half way"))
    delegator = Delegator(_Factory(_router(model)), select(_registry(), None),
                          DelegationLimits(max_iterations=2))
    [result] = await delegator.run([Subtask("a long job")], _parent(tmp_path, delegator))
    assert (result.status, result.summary) == ("incomplete", "got half way")
    assert result.note == "its budget of 2 model calls ran out"
    assert "tools" not in model.requests[-1].body  # the summary request offers no tools


def test_a_long_report_keeps_its_head_and_tail() -> None:
    report = "HEAD " + "x" * 10_000 + " TAIL"
    cut, dropped = bound_summary(report, 1000)
    assert cut.startswith("HEAD ") and cut.endswith(" TAIL")
    assert dropped == len(report) - 1000
    assert f"[… {dropped} characters of the subagent's report cut …]" in cut
    assert len(cut) < 1100
    assert bound_summary("  short  ", 1000) == ("short", 0)


@pytest.mark.parametrize("args", [
    {}, {"goal": "a", "tasks": [{"goal": "b"}]}, {"tasks": []},
    {"tasks": [{"goal": "b"}], "context": "shared"},
    {"tasks": [{"goal": f"t{i}"} for i in range(MAX_TASKS + 1)]},
])
def test_the_arguments_take_one_task_or_a_list(args: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DelegateArgs.model_validate(args)


def test_the_arguments_become_subtasks() -> None:
    one = DelegateArgs.model_validate({"goal": "a", "context": "c"})
    many = DelegateArgs.model_validate({"tasks": [{"goal": "a"}, {"goal": "b", "context": "c"}]})
    assert one.subtasks() == [Subtask("a", "c")]
    assert many.subtasks() == [Subtask("a"), Subtask("b", "c")]


class _NoArgs(BaseModel):
    pass


async def test_events_a_tool_reports_reach_the_turn_while_it_runs(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    release = asyncio.Event()
    progress = SubtaskProgress(running=2, waiting=1, done=0, total=3)

    async def busy(args: _NoArgs, ctx: ToolContext) -> str:
        ctx.emit(progress)
        try:  # released once the turn's consumer saw the event
            await asyncio.wait_for(release.wait(), 5)
        except TimeoutError:
            return "nobody saw the progress event"
        return "done"

    registry = ToolRegistry([Tool("busy", "reports progress", _NoArgs, busy)])
    model.enqueue(tool_calls(call("busy", {})), text("finished"))
    agent = Agent(_router(model), select(registry, None), "test",
                  context_factory=lambda: ToolContext(workspace=tmp_path))
    seen: list[object] = []
    async for ev in agent.run_turn([], "go"):
        seen.append(ev)
        if ev == progress:
            assert not any(isinstance(e, ToolFinished) for e in seen)  # still running
            release.set()
    kinds = [type(e) for e in seen if isinstance(e, ToolStarted | SubtaskProgress | ToolFinished)]
    assert kinds == [ToolStarted, SubtaskProgress, ToolFinished]
