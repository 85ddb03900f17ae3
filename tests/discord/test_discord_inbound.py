"""Inbound normalization through the unmodified discord.py against the fake Discord."""

from __future__ import annotations

from pathlib import Path

from gateway.events import ChatType, OutboundMessage
from tests.adapters_contract.harness_discord import DiscordHarness
from tests.discord.fake_payloads import (
    ALICE,
    BOB_BOT,
    DM_ALICE,
    GENERAL,
    LATE_THREAD,
    THREAD,
)


async def test_dm_is_normalized(discord_h: DiscordHarness) -> None:
    msg = await discord_h.fake.user_says("hello there", channel=DM_ALICE)
    [ev] = await discord_h.wait_emitted(1)
    assert ev.platform == "discord"
    assert ev.chat_type is ChatType.DM
    assert ev.chat_id == str(DM_ALICE) and ev.thread_id is None
    assert ev.event_id == ev.message_id == str(msg.id)
    assert ev.user.id == str(ALICE) and ev.user.name == "alice"
    assert not ev.user.is_bot and not ev.user.is_self
    assert ev.text == "hello there"
    assert not ev.mentions_bot and ev.reply_to is None


async def test_guild_channel_sets_mentions_bot_and_strips_the_mention(
    discord_h: DiscordHarness,
) -> None:
    await discord_h.fake.user_says("just chatting", channel=GENERAL)
    await discord_h.fake.user_says("what time is it?", channel=GENERAL, mention_bot=True)
    plain, mentioned = await discord_h.wait_emitted(2)
    assert plain.chat_type is ChatType.GROUP and plain.chat_id == str(GENERAL)
    assert plain.mentions_bot is False  # gating is the gateway's job: still emitted
    assert mentioned.mentions_bot is True
    assert mentioned.text == "what time is it?"


async def test_thread_message_keeps_parent_as_chat_and_thread_id(
    discord_h: DiscordHarness,
) -> None:
    await discord_h.fake.user_says("in the thread", channel=THREAD, mention_bot=True)
    [ev] = await discord_h.wait_emitted(1)
    assert ev.chat_type is ChatType.THREAD
    assert ev.chat_id == str(GENERAL) and ev.thread_id == str(THREAD)


async def test_unannounced_thread_is_recognized_through_rest(discord_h: DiscordHarness) -> None:
    await discord_h.fake.user_says("late", channel=LATE_THREAD)
    [ev] = await discord_h.wait_emitted(1)
    assert ev.chat_type is ChatType.THREAD
    assert (ev.chat_id, ev.thread_id) == (str(GENERAL), str(LATE_THREAD))
    assert ("GET", f"/api/v10/channels/{LATE_THREAD}") in discord_h.fake.requests


async def test_reply_to_the_bot_is_flagged(discord_h: DiscordHarness) -> None:
    sent = await discord_h.adapter.send(OutboundMessage(chat_id=str(GENERAL), text="I am bot"))
    assert sent.ok
    bot_id = int(sent.message_ids[0])
    await discord_h.fake.user_says("answering you", channel=GENERAL, reply_to=bot_id)
    [ev] = await discord_h.wait_emitted(1)
    assert ev.reply_to == str(bot_id)
    assert ev.reply_to_bot is True


async def test_reply_to_another_user_is_not_a_reply_to_the_bot(
    discord_h: DiscordHarness,
) -> None:
    first = await discord_h.fake.user_says("first", channel=GENERAL)
    await discord_h.fake.user_says("second", channel=GENERAL, reply_to=first.id)
    _, ev = await discord_h.wait_emitted(2)
    assert ev.reply_to == str(first.id)
    assert ev.reply_to_bot is False and ev.mentions_bot is False


async def test_own_messages_are_not_emitted_and_other_bots_are_marked(
    discord_h: DiscordHarness,
) -> None:
    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="from me"))
    assert res.ok
    await discord_h.fake.user_says("beep", channel=GENERAL, author=BOB_BOT)
    await discord_h.fake.user_says("after", channel=DM_ALICE)
    events = await discord_h.wait_emitted(2)
    assert [e.text for e in events] == ["beep", "after"]
    assert events[0].user.is_bot is True
    assert all(e.user.id != "900000000000000001" for e in events)


async def test_attachment_is_downloaded_into_the_cache(
    discord_h: DiscordHarness, tmp_path: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"x" * 100
    await discord_h.fake.user_says("look", channel=DM_ALICE,
                                   attachment=("cat photo.png", png, "image/png"))
    [ev] = await discord_h.wait_emitted(1)
    [att] = ev.attachments
    assert att.kind == "image" and att.mime == "image/png" and att.name == "cat photo.png"
    path = Path(att.path)
    assert path.is_relative_to(tmp_path / "cache")
    assert path.read_bytes() == png and att.size == len(png)


async def test_attachment_over_the_size_cap_is_skipped(discord_h: DiscordHarness) -> None:
    big = b"0" * (1024 * 1024 + 1)  # the harness caps at 1 MiB
    await discord_h.fake.user_says("big file", channel=DM_ALICE,
                                   attachment=("big.bin", big, "application/octet-stream"))
    [ev] = await discord_h.wait_emitted(1)
    assert ev.text == "big file" and ev.attachments == ()
    assert not list((discord_h.tmp_path / "cache").rglob("*big.bin"))


async def test_redelivered_message_is_emitted_once(discord_h: DiscordHarness) -> None:
    msg = await discord_h.fake.user_says("once", channel=DM_ALICE)
    await discord_h.fake.redeliver(msg)
    await discord_h.fake.user_says("marker", channel=DM_ALICE)
    events = await discord_h.wait_emitted(2)
    assert [e.text for e in events] == ["once", "marker"]


async def test_progress_is_reported_and_message_content_intent_requested(
    discord_h: DiscordHarness,
) -> None:
    await discord_h.fake.user_says("ping", channel=DM_ALICE)
    await discord_h.wait_emitted(1)
    assert discord_h.progress_calls >= 3  # READY, GUILD_CREATE, MESSAGE_CREATE, ACKs...
    intents = int(discord_h.fake.gateway.identifies[0]["intents"])
    assert intents & (1 << 15)  # MESSAGE_CONTENT
    assert intents & (1 << 9) and intents & (1 << 12)  # GUILD_MESSAGES, DIRECT_MESSAGES
