"""Buttons on Discord through unmodified discord.py against the fake: a message with buttons
carries an action row; a press arrives as INTERACTION_CREATE, reaches the gateway as an
`InteractionEvent` and is acknowledged (deferred update); a replayed press is the same
event; a press in a DM is a DM event."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from gateway.events import Button, ChatType, OutboundMessage
from tests.adapters_contract.harness_discord import DiscordHarness
from tests.discord.fake_payloads import ALICE, CAROL, DM_ALICE, GENERAL

BUTTONS = (Button(label="Approve", action="approval:approve", value="ab12"),
           Button(label="Deny", action="approval:deny", value="ab12"))


async def _until(pred: Callable[[], bool], timeout_s: float = 5.0) -> None:
    for _ in range(int(timeout_s / 0.02)):
        if pred():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_buttons_are_sent_and_presses_come_back(discord_h: DiscordHarness) -> None:
    fake = discord_h.fake
    res = await discord_h.adapter.send(OutboundMessage(
        chat_id=str(GENERAL), text="⚠️ Approval needed: rm -rf /tmp/x", formatted=False,
        buttons=BUTTONS))
    assert res.ok
    [msg] = fake.bot_messages(GENERAL)
    assert [(b["label"], b["custom_id"]) for b in fake.buttons(msg)] == [
        ("Approve", "approval:approve|ab12"), ("Deny", "approval:deny|ab12")]

    payload = await fake.press(msg, "approval:deny|ab12", user=CAROL)
    await _until(lambda: len(fake.interaction_responses) == 1)
    await fake.press(msg, "approval:deny|ab12", again=payload)
    await _until(lambda: len(fake.interaction_responses) == 2)
    [press] = discord_h.interactions
    assert (press.chat_id, press.chat_type, press.user.id) == (
        str(GENERAL), ChatType.GROUP, str(CAROL))
    assert (press.action, press.value, press.message_id) == ("approval:deny", "ab12",
                                                              str(msg.id))
    assert press.event_id == payload["id"]
    assert fake.interaction_responses[0] == (int(payload["id"]), 6)  # deferred update
    assert discord_h.emitted == []

    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="ok?",
                                                       buttons=BUTTONS))
    [dm] = fake.bot_messages(DM_ALICE)
    await fake.press(dm, "approval:approve|ab12", user=ALICE)
    await _until(lambda: len(discord_h.interactions) == 2)
    last = discord_h.interactions[-1]
    assert (last.chat_type, last.chat_id, last.action) == (ChatType.DM, str(DM_ALICE),
                                                          "approval:approve")
