"""Buttons on Slack through slack-bolt against the fake (Socket Mode): an outbound message
with buttons carries a Block Kit actions block; a press arrives as a `block_actions`
interactive envelope, reaches the gateway as an `InteractionEvent` (before it is acked) and
a redelivered press is the same event."""

from __future__ import annotations

import asyncio

from gateway.events import Button, ChatType, OutboundMessage
from tests.slack.conftest import Running


async def test_buttons_are_sent_and_a_press_comes_back(running: Running) -> None:
    fake, rec = running.fake, running.rec
    res = await running.adapter.send(OutboundMessage(
        chat_id="C0001", text="⚠️ Approval needed: rm -rf /tmp/x", formatted=False,
        buttons=(Button(label="Approve", action="approval:approve", value="ab12"),
                 Button(label="Deny", action="approval:deny", value="ab12"))))
    assert res.ok
    ts = res.message_ids[0]
    [posted] = fake.bot_messages("C0001")
    assert posted.text.startswith("⚠️ Approval needed")
    buttons = fake.buttons("C0001", ts)
    assert [(b["text"]["text"], b["action_id"], b["value"]) for b in buttons] == [
        ("Approve", "approval:approve", "ab12"), ("Deny", "approval:deny", "ab12")]

    payload = await fake.press("C0001", ts, "approval:deny", user="U0002")
    await fake.wait_for(lambda: not fake.pending)  # acked
    await fake.press("C0001", ts, "approval:deny", again=payload)  # delivered once more
    await fake.wait_for(lambda: not fake.pending)
    await asyncio.sleep(0.05)
    [press] = rec.interactions
    assert (press.platform, press.chat_id, press.user.id) == ("slack", "C0001", "U0002")
    assert (press.action, press.value, press.message_id) == ("approval:deny", "ab12", ts)
    assert press.chat_type is ChatType.CHANNEL  # as messages in C0001 are
    assert press.event_id == payload["trigger_id"]
    assert rec.emitted == []  # a press is not a message
