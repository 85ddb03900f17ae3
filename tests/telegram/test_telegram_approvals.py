"""Approval buttons on Telegram: the request carries an inline keyboard; a press arrives as a
`callback_query` through the real python-telegram-bot against the fake Bot API, is
deduplicated and authorized like a message, and is answered. Bob's press on Ada's request
is refused and changes nothing; Ada's press runs the command."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.events import Principal
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.multiuser.support import until
from tests.multiuser.telegram_harness import ADA, BOB, group_gateway


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


async def test_a_press_by_another_user_is_refused_and_the_requesters_runs(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    model.enqueue(tool_calls(call("terminal", {"command": "chmod 777 notes.txt && echo ok"})),
                  text("Opened notes.txt."))
    async with group_gateway(tmp_path, model, tools__terminal__enabled=True,
                             gateway__admins={"telegram": ["1"]}) as g:
        assert g.runner.parts is not None
        workspace = g.runner.parts.agents.spaces.workspace(Principal("telegram",
                                                                     str(ADA["id"])))
        workspace.mkdir(parents=True, exist_ok=True)
        notes = workspace / "notes.txt"
        notes.write_text("hi")
        notes.chmod(0o644)
        g.api.send_user(g.group, "open up notes.txt", user=ADA)
        await until(lambda: any("Approval needed" in m.text
                                for m in g.api.bot_messages(g.group)), "the approval request")
        asked = next(m for m in g.api.bot_messages(g.group) if "Approval needed" in m.text)
        labels = [b["text"] for b in asked.buttons]
        assert labels == ["Approve", "Deny"]
        approve = asked.buttons[0]["callback_data"]

        bob_press = g.api.press(g.group, asked.message_id, approve, user=BOB)
        # A group's send budget spaces the bot's messages out (Telegram's limit per group).
        await until(lambda: any("🔒 Only the user who asked" in m.text
                                for m in g.api.bot_messages(g.group)), "the refusal", 30)
        assert stat.S_IMODE(notes.stat().st_mode) == 0o644
        g.api.redeliver(bob_press)  # the same press again (dedup by update_id)

        g.api.press(g.group, asked.message_id, approve, user=ADA)
        await until(lambda: any(m.text.startswith("✅ Approved")
                                for m in g.api.bot_messages(g.group)), "the approval", 30)
        await until(lambda: any(m.text == "Opened notes.txt."
                                for m in g.api.bot_messages(g.group)), "the final reply", 30)
        rows = await g.runner.parts.store.list_approvals()
        texts = [m.text for m in g.api.bot_messages(g.group)]
    assert stat.S_IMODE(notes.stat().st_mode) == 0o777
    assert sum("🔒 Only the user who asked" in t for t in texts) == 1
    assert any(t.startswith("✅ Approved: running it now") for t in texts)
    assert [(r.status, r.decided_by) for r in rows] == [("approved", str(ADA["id"]))]
    assert len(g.api.answered_callbacks) == 3
