"""Sending, editing, typing, uploads and error mapping against the fake Discord."""

from __future__ import annotations

from pathlib import Path

from gateway.events import ErrorKind, OutboundAttachment, OutboundMessage
from tests.adapters_contract.harness_discord import DiscordHarness
from tests.discord.fake_payloads import DM_ALICE, DM_BLOCKED, GENERAL, THREAD


async def test_reply_in_thread_lands_in_the_thread_with_a_reference(
    discord_h: DiscordHarness,
) -> None:
    user_msg = await discord_h.fake.user_says("help?", channel=THREAD, mention_bot=True)
    [ev] = await discord_h.wait_emitted(1)
    res = await discord_h.adapter.send(OutboundMessage(
        chat_id=ev.chat_id, thread_id=ev.thread_id, reply_to=ev.message_id,
        text="**Sure** @everyone",
    ))
    assert res.ok
    [bot] = discord_h.fake.bot_messages(THREAD)
    assert discord_h.fake.bot_messages(GENERAL) == []
    assert bot.content == "**Sure** @everyone" and bot.reference == user_msg.id
    assert str(bot.id) == res.message_ids[0]
    _, channel, payload = discord_h.fake.payloads[-1]
    assert channel == THREAD
    assert payload["allowed_mentions"]["parse"] == []  # never pings @everyone or roles
    assert payload["allowed_mentions"]["replied_user"] is True  # the asker is notified


async def test_edit_of_a_thread_message_given_the_parent_chat(discord_h: DiscordHarness) -> None:
    res = await discord_h.adapter.send(
        OutboundMessage(chat_id=str(GENERAL), thread_id=str(THREAD), text="draft")
    )
    edited = await discord_h.adapter.edit(str(GENERAL), res.message_ids[0], "final text",
                                          formatted=False)
    assert edited.ok
    [bot] = discord_h.fake.bot_messages(THREAD)
    assert (bot.content, bot.edits) == ("final text", 1)


async def test_delete(discord_h: DiscordHarness) -> None:
    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="oops"))
    assert (await discord_h.adapter.delete(str(DM_ALICE), res.message_ids[0])).ok
    assert discord_h.fake.bot_messages(DM_ALICE) == []


async def test_typing_goes_to_the_thread_channel(discord_h: DiscordHarness) -> None:
    assert (await discord_h.adapter.typing(str(GENERAL), str(THREAD))).ok
    assert (await discord_h.adapter.typing(str(DM_ALICE))).ok
    assert discord_h.fake.typing[THREAD] == 1 and discord_h.fake.typing[DM_ALICE] == 1
    assert discord_h.fake.typing[GENERAL] == 0


async def test_send_media_uploads_the_file(discord_h: DiscordHarness, tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_bytes(b"quarterly numbers\n")
    res = await discord_h.adapter.send_media(
        str(GENERAL), OutboundAttachment(path=str(report)), thread_id=str(THREAD),
        caption="here it is",
    )
    assert res.ok
    [bot] = discord_h.fake.bot_messages(THREAD)
    assert bot.content == "here it is"
    [att] = bot.attachments
    assert att["filename"] == "report.txt"
    assert discord_h.fake.files[int(att["id"])][1] == b"quarterly numbers\n"


async def test_send_media_of_a_missing_file_fails_without_raising(
    discord_h: DiscordHarness, tmp_path: Path
) -> None:
    res = await discord_h.adapter.send_media(
        str(DM_ALICE), OutboundAttachment(path=str(tmp_path / "nope.png"))
    )
    assert not res.ok and res.error_kind is ErrorKind.UNKNOWN
    assert discord_h.fake.bot_messages(DM_ALICE) == []


async def test_short_429_is_retried_by_discord_py(discord_h: DiscordHarness) -> None:
    discord_h.fake.rate_limit_next(0.05)
    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="patient"))
    assert res.ok
    assert discord_h.fake.rate_limited_hits == 1
    assert [m.content for m in discord_h.fake.bot_messages(DM_ALICE)] == ["patient"]


async def test_long_429_maps_to_rate_limited_with_retry_after(discord_h: DiscordHarness) -> None:
    discord_h.fake.rate_limit_next(45.0)
    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="later"))
    assert not res.ok and res.error_kind is ErrorKind.RATE_LIMITED
    assert res.retry_after == 45.0
    assert discord_h.fake.bot_messages(DM_ALICE) == []


async def test_rate_limited_edit_maps_too(discord_h: DiscordHarness) -> None:
    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="v1"))
    discord_h.fake.rate_limit_next(60.0)
    edited = await discord_h.adapter.edit(str(DM_ALICE), res.message_ids[0], "v2")
    assert edited.error_kind is ErrorKind.RATE_LIMITED and edited.retry_after == 60.0
    assert discord_h.fake.bot_messages(DM_ALICE)[0].content == "v1"


async def test_blocked_user_is_forbidden(discord_h: DiscordHarness) -> None:
    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_BLOCKED), text="hi"))
    assert res.error_kind is ErrorKind.FORBIDDEN
    assert "50007" in (res.error or "")


async def test_unknown_channel_and_message_are_not_found(discord_h: DiscordHarness) -> None:
    res = await discord_h.adapter.send(OutboundMessage(chat_id="123456789", text="hi"))
    assert res.error_kind is ErrorKind.NOT_FOUND
    edit = await discord_h.adapter.edit(str(DM_ALICE), "424242424242", "x")
    assert edit.error_kind is ErrorKind.NOT_FOUND


async def test_too_long_text_is_refused(discord_h: DiscordHarness) -> None:
    res = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="a" * 2001))
    assert res.error_kind is ErrorKind.TOO_LONG
    ok = await discord_h.adapter.send(OutboundMessage(chat_id=str(DM_ALICE), text="é" * 2000))
    assert ok.ok  # measured in characters, not bytes
    assert discord_h.fake.bot_messages(DM_ALICE)[0].content == "é" * 2000


async def test_reply_to_a_deleted_message_is_sent_without_reference(
    discord_h: DiscordHarness,
) -> None:
    res = await discord_h.adapter.send(
        OutboundMessage(chat_id=str(DM_ALICE), text="still answered", reply_to="4242424242")
    )
    assert res.ok
    [bot] = discord_h.fake.bot_messages(DM_ALICE)
    assert bot.content == "still answered" and bot.reference is None


async def test_outbound_message_attachments_are_uploaded_with_the_text(
    discord_h: DiscordHarness, tmp_path: Path
) -> None:
    pic = tmp_path / "pic.png"
    pic.write_bytes(b"\x89PNG")
    res = await discord_h.adapter.send(OutboundMessage(
        chat_id=str(DM_ALICE), text="with file",
        attachments=(OutboundAttachment(path=str(pic)),),
    ))
    assert res.ok
    [bot] = discord_h.fake.bot_messages(DM_ALICE)
    assert bot.content == "with file" and [a["filename"] for a in bot.attachments] == ["pic.png"]
