"""`terminal` with approvals asked in the chat, through the real gateway (FakeAdapter, fake
model): a dangerous command waits; silence denies; only the user who asked or an admin may
decide (by `/approve`, `/deny` or a button); every request and decision is stored."""

from __future__ import annotations

import stat
from pathlib import Path

from adapters.fake import FakeAdapter
from gateway.events import Principal
from gateway.runner import GatewayRunner
from storage.types import ApprovalRecord
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import tool_results

CHMOD = {"command": "chmod 777 notes.txt && echo changed"}
ON = {"tools__terminal__enabled": True, "compression__enabled": False,
      "gateway__admins": {"fake": ["admin1"]}}


def _notes(runner: GatewayRunner, user: str = "u1") -> Path:
    assert runner.parts is not None
    workspace = runner.parts.agents.spaces.workspace(Principal("fake", user))
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / "notes.txt"
    path.write_text("hello")
    path.chmod(0o644)
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def _approvals(runner: GatewayRunner) -> list[ApprovalRecord]:
    assert runner.parts is not None
    return await runner.parts.store.list_approvals()


async def _asked(fake: FakeAdapter, chat: str) -> str:
    await fake.wait_for(lambda: any("Approval needed" in t for t in fake.messages(chat)))
    return next(m.message_id for m in fake.sent(chat) if "Approval needed" in m.text)


async def test_an_approval_nobody_answers_is_denied(tmp_path: Path,
                                                   model: FakeOpenAIServer) -> None:
    model.enqueue(tool_calls(call("terminal", CHMOD)), text("It was not run."))
    async with runner_for(tmp_path, model, tools__terminal__approval_timeout_s=0.5,
                          **ON) as (runner, fake):
        notes = _notes(runner)
        await fake.inject("open up notes.txt", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=15)
        chat = fake.messages("c1")
        rows = await _approvals(runner)
    asked = next(t for t in chat if "Approval needed" in t)
    assert "(a permission or ownership change)" in asked
    assert "chmod 777 notes.txt && echo changed" in asked
    assert any(t.startswith("⌛ Approval ") and "timed out" in t for t in chat)
    assert "It was not run." in chat
    result = tool_results(model.requests[1])[-1]
    assert "not approved (no answer within 0.5s)" in result
    assert "Do not retry it" in result
    assert _mode(notes) == 0o644
    assert [(r.status, r.decided_by, r.requester, r.tool) for r in rows] == [
        ("timeout", None, "u1", "terminal")]


async def test_another_user_cannot_approve_by_command_or_button(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    model.enqueue(tool_calls(call("terminal", CHMOD)), text("Denied, so nothing changed."))
    async with runner_for(tmp_path, model, **ON) as (runner, fake):
        notes = _notes(runner)
        await fake.inject("open up notes.txt", chat_id="g1", user_id="u1", chat_type="group",
                          mentions_bot=True)
        asked_id = await _asked(fake, "g1")
        button = next(b for b in fake.message("g1", asked_id).buttons if b.label == "Approve")
        assert await fake.press(button, message_id=asked_id, chat_id="g1", user_id="u2",
                                chat_type="group")
        await fake.inject("/approve", chat_id="g1", user_id="u2", chat_type="group",
                          mentions_bot=True)
        await fake.wait_for(lambda: sum("🔒 Only the user who asked" in t
                                        for t in fake.messages("g1")) == 2)
        assert _mode(notes) == 0o644
        assert (await _approvals(runner))[0].status == "pending"
        await fake.inject("/deny", chat_id="g1", user_id="u1", chat_type="group",
                          mentions_bot=True)
        await fake.wait_turns(4, timeout_s=15)  # two commands, the press, the turn
        await fake.wait_for(lambda: "Denied, so nothing changed." in fake.messages("g1"))
        rows = await _approvals(runner)
    assert _mode(notes) == 0o644
    assert "not approved (denied by you)" in tool_results(model.requests[1])[-1]
    assert [(r.status, r.decided_by) for r in rows] == [("denied", "u1")]


async def test_the_requester_approves_with_the_button_and_it_runs(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    model.enqueue(tool_calls(call("terminal", CHMOD)), text("Done."))
    async with runner_for(tmp_path, model, **ON) as (runner, fake):
        notes = _notes(runner)
        await fake.inject("open up notes.txt", chat_id="c1", user_id="u1")
        asked_id = await _asked(fake, "c1")
        button = next(b for b in fake.message("c1", asked_id).buttons if b.label == "Approve")
        await fake.press(button, message_id=asked_id, chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: "Done." in fake.messages("c1"), timeout_s=15)
        rows = await _approvals(runner)
        chat = fake.messages("c1")
    assert any(t.startswith("✅ Approved: running it now") for t in chat)
    result = tool_results(model.requests[1])[-1]
    assert result.startswith("[terminal: exit code 0") and "changed" in result
    assert _mode(notes) == 0o777
    assert [(r.status, r.decided_by) for r in rows] == [("approved", "u1")]


async def test_an_admin_may_approve_for_another_user(tmp_path: Path,
                                                     model: FakeOpenAIServer) -> None:
    model.enqueue(tool_calls(call("terminal", CHMOD)), text("Done."))
    async with runner_for(tmp_path, model, **{**ON, "gateway__admins": {"fake": ["u2"]}}
                          ) as (runner, fake):
        notes = _notes(runner)
        await fake.inject("open up notes.txt", chat_id="g1", user_id="u1", chat_type="group",
                          mentions_bot=True)
        await _asked(fake, "g1")
        await fake.inject("/approve", chat_id="g1", user_id="u2", chat_type="group",
                          mentions_bot=True)
        await fake.wait_for(lambda: "Done." in fake.messages("g1"), timeout_s=15)
        rows = await _approvals(runner)
    assert _mode(notes) == 0o777
    assert [(r.status, r.decided_by) for r in rows] == [("approved", "u2")]
    assert tool_results(model.requests[1])[-1].startswith("[terminal: exit code 0")


async def test_a_safe_command_runs_without_asking_and_terminal_is_off_by_default(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    model.enqueue(tool_calls(call("terminal", {"command": "cat notes.txt; pwd"})),
                  text("Read it."))
    async with runner_for(tmp_path, model, **ON) as (runner, fake):
        notes = _notes(runner)
        await fake.inject("show notes", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=15)
        assert not any("Approval needed" in t for t in fake.messages("c1"))
    result = tool_results(model.requests[1])[-1]
    assert "hello" in result and str(notes.parent) in result
    model.enqueue(text("Hi."))
    async with runner_for(tmp_path / "off", model, compression__enabled=False) as (_, fake):
        await fake.inject("hi", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
    names = [t["function"]["name"] for t in model.requests[-1].body["tools"]]
    assert "terminal" not in names and "execute_code" in names
