"""`delegate_task` seen from a chat: the user sees a progress line ("3 subtasks running")
in the streamed reply, never the subagents' text; stopping the turn stops the subagents."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.delegation.support import Children, delegate, is_child
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import tool_results, until
from tests.multiuser.telegram_harness import ADA, group_gateway

LONG = "streaming words " * 300  # 600 chunks at 50 ms: half a minute if nobody stops it


@pytest.mark.parametrize("how", ["/stop", "a new message"])
async def test_interrupting_the_parent_stops_its_subagents(tmp_path: Path,
                                                           model: FakeOpenAIServer,
                                                           how: str) -> None:
    fleet = Children(model, delegate("one", "two", "three"), text("Hi again."),
                     child=lambda req: Reply(LONG, delay_s=0.05))
    async with runner_for(tmp_path, model, compression__enabled=False,
                          gateway__busy_mode="interrupt",
                          gateway__burst_merge_s=0) as (_, fake):
        await fake.inject("do three things", chat_id="c1", user_id="u1")
        await until(lambda: len(fleet.requests) == 3, "three subagent requests")
        await asyncio.sleep(0.3)  # they are streaming
        await fake.inject("/stop" if how == "/stop" else "never mind, just say hi",
                          chat_id="c1", user_id="u1")
        # Each subagent's request was cut off: the fake model saw its client go away.
        await until(lambda: all(r.finished_at is not None for r in fleet.requests),
                    "the subagent requests to end", timeout_s=15)
        if how == "/stop":
            await fake.wait_for(lambda: any("Stopped" in m for m in fake.messages("c1")))
        else:
            await fake.wait_for(lambda: "Hi again." in fake.messages("c1"), 15)
        await asyncio.sleep(0.5)
    assert len(fleet.requests) == 3  # no subagent request after the interrupt
    for r in fleet.requests:
        assert r.finished_at is not None and r.finished_at - r.received_at < 20
    parents = [r for r in model.requests if not is_child(r)]
    assert len(parents) == (1 if how == "/stop" else 2)
    if how != "/stop":  # the next turn sees the call as interrupted, with no report
        result = tool_results(parents[1])[-1]
        assert result.startswith("[Tool interrupted: delegate_task was stopped")
    assert not any("streaming words" in m for m in fake.messages("c1"))


async def test_the_user_sees_the_subtasks_progress_in_the_chat(tmp_path: Path,
                                                              model: FakeOpenAIServer) -> None:
    fleet = Children(model, delegate("alpha", "beta", "gamma"), text("All three are done."),
                     child=lambda req: text("subagent text that never reaches the chat"))
    fleet.hold()
    async with group_gateway(tmp_path, model) as g:
        g.api.send_user(g.ada_dm, "do three things", user=ADA)

        def versions() -> list[str]:
            return [v for m in g.api.bot_messages(g.ada_dm) for v in m.versions]

        await until(lambda: any("3 subtasks running" in v for v in versions()),
                    "the progress line with 3 subtasks running")
        fleet.release("alpha")
        await until(lambda: any("2 subtasks running, 1 of 3 done" in v for v in versions()),
                    "the progress line after the first subtask finished")
        fleet.release_all()
        await until(lambda: any(m.text == "All three are done."
                                for m in g.api.bot_messages(g.ada_dm)), "the final reply")
        shown = versions()
    assert not any("subagent text" in v for v in shown)
    # The preview is plain text: the status line carries no markdown markers.
    assert any(line.startswith("🔀 3 subtasks running") for v in shown
               for line in v.splitlines())
    assert not any("_🔀" in v for v in shown)
    assert [m.text for m in g.api.bot_messages(g.ada_dm)] == ["All three are done."]
