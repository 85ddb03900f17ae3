"""`delegate_task` end to end through the api adapter, the real gateway and the fake model:
subagents run side by side with their own context and without the blocked tools, the
parent gets their reports (not their transcripts), a slot limit holds the 4th task back,
a hung subagent times out, a blocked call is refused, and their tokens count."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_core.delegation import BLOCKED_TOOLS
from tests.delegation.support import (
    Children,
    api_client,
    ask,
    delegate,
    eventually,
    is_child,
    task_of,
    tool_names,
)
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    Hang,
    RecordedRequest,
    Reply,
    Script,
    call,
    text,
    tool_calls,
)
from tests.multiuser.support import tool_results, until

GOALS = ("Summarise the release notes of v1", "List the open bugs about login",
         "Count the TODO markers in src/")


async def test_three_tasks_make_three_overlapping_child_requests_and_the_parent_gets_the_reports(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    fleet = Children(model, delegate(*GOALS, context="the repo is checked out in the workspace"),
                     text("All three are done."))
    fleet.hold()  # no subagent is answered before all three asked
    async with api_client(tmp_path, model) as (_, client):
        reply = asyncio.create_task(ask(client, "please do these three things (secret word: "
                                            "PARENT-ONLY)"))
        await until(lambda: len(fleet.requests) == 3, "three subagent requests")
        fleet.release_all()
        assert await reply == "All three are done."

    children = [r for r in model.requests if is_child(r)]
    parents = [r for r in model.requests if not is_child(r)]
    assert len(children) == 3 and len(parents) == 2
    # Side by side: every subagent request arrived before any of them was answered.
    assert max(r.received_at for r in children) < min(r.finished_at or 0 for r in children)
    assert sorted(task_of(r).splitlines()[1] for r in children) == sorted(GOALS)
    # Their tools: the parent's, less the blocked ones (which the parent was offered).
    assert BLOCKED_TOOLS - {"send_message"} <= tool_names(parents[0])
    for r in children:
        assert not tool_names(r) & BLOCKED_TOOLS
        assert {"read_file", "write_file", "web_extract"} <= tool_names(r)
        # Their own context: a system prompt and the task, nothing of the parent's chat.
        assert [m["role"] for m in r.messages] == ["system", "user"]
        assert "the repo is checked out in the workspace" in task_of(r)
        assert "PARENT-ONLY" not in str(r.messages)
    result = tool_results(parents[1])[-1]
    assert result.startswith("delegate_task: 3 subtasks (3 completed).")
    for i, goal in enumerate(GOALS, start=1):
        assert f"## Subtask {i} of 3: completed" in result
        assert f"REPORT for 'Your task:\\n{goal}" in result


async def test_a_fourth_task_waits_for_a_free_slot(tmp_path: Path,
                                                   model: FakeOpenAIServer) -> None:
    goals = [f"task number {i}" for i in range(1, 5)]
    fleet = Children(model, delegate(*goals), text("Four done."))
    fleet.hold()
    async with api_client(tmp_path, model) as (_, client):
        reply = asyncio.create_task(ask(client, "four things"))
        await until(lambda: len(fleet.requests) >= 3, "three subagent requests")
        await asyncio.sleep(0.5)
        assert len(fleet.requests) == 3  # the 4th waits: 3 run at once
        first = fleet.requests[0]
        fleet.release(task_of(first))
        await until(lambda: len(fleet.requests) == 4, "the fourth subagent request")
        assert first.finished_at is not None
        assert fleet.requests[3].received_at >= first.finished_at
        fleet.release_all()
        assert await reply == "Four done."
    result = tool_results(model.requests[-1])[-1]
    assert result.startswith("delegate_task: 4 subtasks (4 completed).")


async def test_a_hung_subagent_times_out_with_a_clear_result(tmp_path: Path,
                                                             model: FakeOpenAIServer) -> None:
    def child(req: RecordedRequest) -> Script:
        return Hang(60) if "hangs" in task_of(req) else text("quick report")

    fleet = Children(model, delegate("answer quickly", "this one hangs"),
                     text("One answered, one timed out."), child=child)
    # 4 s: long enough for the quick one on a loaded machine, short enough to wait for.
    async with api_client(tmp_path, model, delegation__timeout_s=4) as (_, client):
        assert await ask(client, "two things") == "One answered, one timed out."
    assert len(fleet.requests) == 2
    result = tool_results(model.requests[-1])[-1]
    assert result.startswith("delegate_task: 2 subtasks (1 completed, 1 timed out).")
    assert "## Subtask 1 of 2: completed" in result and "quick report" in result
    assert "## Subtask 2 of 2: timed out after 4 s" in result
    assert "it did not finish within 4 s and was stopped, so there is no report" in result


async def test_a_subagent_calling_a_blocked_tool_is_refused(tmp_path: Path,
                                                            model: FakeOpenAIServer) -> None:
    def child(req: RecordedRequest) -> Script:
        if req.messages[-1]["role"] == "user":
            return tool_calls(call("memory", {"action": "add", "target": "memory",
                                              "content": "the user likes subagents"}),
                              call("delegate_task", {"goal": "go deeper"}))
        return text("I could not write memory.")

    fleet = Children(model, delegate("remember something"), text("Done."), child=child)
    async with api_client(tmp_path, model) as (_, client):
        assert await ask(client, "delegate it") == "Done."
    assert len(fleet.requests) == 2  # no grandchild was started
    refusals = tool_results(fleet.requests[1])
    assert len(refusals) == 2
    assert all(r.startswith("Refused: ") and "not available to a subagent" in r
               for r in refusals)
    assert not any("likes subagents" in p.read_text() for p in tmp_path.rglob("*.md"))
    assert "I could not write memory." in tool_results(model.requests[-1])[-1]


async def test_subagents_tokens_are_added_to_the_sessions_usage(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    parent_usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
    child_usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    Children(model, Reply(calls=delegate(*GOALS).calls, usage=parent_usage),
             Reply("Done.", usage=parent_usage),
             child=lambda req: Reply("a report", usage=child_usage))
    async with api_client(tmp_path, model) as (runner, client):
        assert await ask(client, "three things") == "Done."

        async def counted() -> bool:
            sessions = await runner.store.list_sessions()
            return bool(sessions) and sessions[0].api_call_count == 5

        await eventually(counted, "the usage of 2 parent and 3 subagent calls")
        [session] = await runner.store.list_sessions()
    assert (session.input_tokens, session.output_tokens) == (2 * 10 + 3 * 1000, 2 * 1 + 3 * 100)
    assert session.last_prompt_tokens == 10  # the context size is the parent's own


async def test_a_subagent_acts_in_the_workspace_of_the_user_it_works_for(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    def child(req: RecordedRequest) -> Script:
        if req.messages[-1]["role"] == "user":
            return tool_calls(call("write_file", {"path": "child.txt", "content": "by child"}))
        return text("wrote child.txt")

    Children(model, tool_calls(call("write_file", {"path": "parent.txt", "content": "p"})),
             delegate("write a file"), text("Both written."), child=child)
    async with api_client(tmp_path, model) as (_, client):
        assert await ask(client, "write files") == "Both written."
    [parent_file] = list(tmp_path.rglob("parent.txt"))
    [child_file] = list(tmp_path.rglob("child.txt"))
    assert child_file.parent == parent_file.parent
    assert child_file.read_text() == "by child"
