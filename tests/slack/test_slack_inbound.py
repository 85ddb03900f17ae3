"""Inbound normalization through the unmodified Bolt app over the fake's Socket Mode."""

from __future__ import annotations

import asyncio

from gateway.events import ChatType
from tests.slack.conftest import Running


async def _settle(run: Running) -> None:
    """Wait until the fake saw every envelope acked (echoes of bot posts included)."""
    await run.fake.wait_for(lambda: not run.fake.pending)


async def test_dm_becomes_unthreaded_dm_event_with_user_name(running: Running) -> None:
    ts = await running.fake.user_message("hello &lt;world&gt; see <https://x.io|the docs>")
    [ev] = await running.rec.wait_emitted(1)
    assert ev.chat_type is ChatType.DM and ev.chat_id == "D0001"
    assert ev.thread_id is None and ev.message_id == ts and ev.event_id == f"D0001:{ts}"
    assert ev.user.id == "U0001" and ev.user.name == "alice" and not ev.user.is_bot
    assert ev.text == "hello <world> see the docs (https://x.io)"
    assert not ev.mentions_bot and not ev.reply_to_bot


async def test_channel_mention_arrives_twice_but_is_emitted_once(running: Running) -> None:
    ts = await running.fake.user_message("what is up?", channel="C0001", mention=True)
    await _settle(running)
    assert len(running.fake.acked) >= 2  # both the message and the app_mention envelope
    [ev] = await running.rec.wait_emitted(1)
    await asyncio.sleep(0.1)
    assert len(running.rec.emitted) == 1
    assert ev.chat_type is ChatType.CHANNEL and ev.mentions_bot
    assert ev.text == "what is up?"  # the bot's own mention is stripped
    assert ev.thread_id == ts  # a top-level message starts its own thread


async def test_unmentioned_channel_message_is_emitted_unaddressed(running: Running) -> None:
    await running.fake.user_message("just chatting", channel="C0001")
    [ev] = await running.rec.wait_emitted(1)
    assert ev.is_group and not ev.mentions_bot and not ev.reply_to_bot


async def test_thread_reply_under_a_bot_reply_counts_as_addressed(running: Running) -> None:
    from gateway.events import OutboundMessage

    root = await running.fake.user_message("start", channel="C0001", mention=True)
    [first] = await running.rec.wait_emitted(1)
    res = await running.adapter.send(OutboundMessage(chat_id="C0001", text="hi",
                                                     thread_id=first.thread_id))
    assert res.ok
    reply = await running.fake.user_message("and more?", channel="C0001", thread_ts=root,
                                            parent_user_id="U0001")
    evs = await running.rec.wait_emitted(2)
    second = evs[1]
    assert second.message_id == reply and second.thread_id == root
    assert second.reply_to == root and second.reply_to_bot and not second.mentions_bot


async def test_thread_reply_in_a_stranger_thread_is_not_addressed(running: Running) -> None:
    root = await running.fake.user_message("no bot here", channel="C0001")
    await running.fake.user_message("reply", channel="C0001", thread_ts=root,
                                    parent_user_id="U0001")
    evs = await running.rec.wait_emitted(2)
    assert evs[1].thread_id == root and not evs[1].reply_to_bot


async def test_reply_in_thread_whose_root_the_bot_posted_is_addressed(running: Running) -> None:
    root = await running.fake.user_message("x", channel="C0001", thread_ts="1.000001",
                                           parent_user_id="UBOT")
    [ev] = await running.rec.wait_emitted(1)
    assert ev.message_id == root and ev.reply_to_bot


async def test_bot_echoes_edits_and_non_text_subtypes_are_ignored(running: Running) -> None:
    from gateway.events import OutboundMessage

    fake = running.fake
    res = await running.adapter.send(OutboundMessage(chat_id="D0001", text="bot says hi"))
    await running.adapter.edit("D0001", res.message_ids[0], "bot says hello")
    await fake.user_message("joined", channel="C0001", subtype="channel_join")
    await fake.user_message("", channel="C0001")
    await fake.user_message("other bot", channel="C0001", user="U0002", bot_id="B0002",
                            subtype="bot_message")
    await fake.user_message("real one", channel="C0001")
    await _settle(running)
    evs = await running.rec.wait_emitted(2)
    await asyncio.sleep(0.1)
    assert [e.text for e in running.rec.emitted] == ["other bot", "real one"]
    other = evs[0]
    assert other.user.is_bot and not other.user.is_self  # the gateway drops it


async def test_socket_redelivery_makes_no_second_event(running: Running) -> None:
    await running.fake.user_message("once", channel="D0001")
    await running.rec.wait_emitted(1)
    await running.fake.redeliver_last()
    await _settle(running)
    await asyncio.sleep(0.1)
    assert len(running.rec.emitted) == 1


async def test_shared_file_is_downloaded_into_the_cache(running: Running) -> None:
    f = running.fake.add_file("notes.txt", b"remember the milk", "text/plain")
    await running.fake.user_message("see file", files=[f])
    [ev] = await running.rec.wait_emitted(1)
    [att] = ev.attachments
    assert att.name == "notes.txt" and att.kind == "document" and att.size == 17
    with open(att.path, "rb") as fh:
        assert fh.read() == b"remember the milk"
    assert att.path.startswith(str(running.rec.cache_dir))


async def test_oversized_file_is_skipped_but_text_kept(running: Running) -> None:
    running.rec.cache_dir.mkdir(exist_ok=True)
    big = running.fake.add_file("big.bin", b"x" * 2048, "application/octet-stream")
    running.adapter._ctx.max_attachment_bytes = 1024  # type: ignore[union-attr]
    await running.fake.user_message("big one", files=[big])
    [ev] = await running.rec.wait_emitted(1)
    assert ev.text == "big one" and ev.attachments == ()


async def test_bang_command_is_read_as_slash_command(running: Running) -> None:
    running.adapter.commands_menu([("new", "start over"), ("stop", "stop")])
    await running.fake.user_message("!new please")
    await running.fake.user_message("!unknown")
    evs = await running.rec.wait_emitted(2)
    assert [e.text for e in evs] == ["/new please", "!unknown"]


async def test_a_slow_message_is_not_overtaken_by_the_next_one_in_its_chat(
        running: Running) -> None:
    f = running.fake.add_file("slow.txt", b"takes a while", "text/plain")
    running.fake.download_delay_s[f["id"]] = 0.5
    await running.fake.user_message("first, with a file", files=[f])
    await running.fake.user_message("second")
    evs = await running.rec.wait_emitted(2)
    assert [e.text for e in evs] == ["first, with a file", "second"]
    assert [a.name for a in evs[0].attachments] == ["slow.txt"]


async def test_a_slow_message_does_not_hold_up_other_chats(running: Running) -> None:
    running.fake.add_channel("D0002", "im")
    f = running.fake.add_file("slow.txt", b"takes a while", "text/plain")
    running.fake.download_delay_s[f["id"]] = 0.5
    await running.fake.user_message("slow one", files=[f])
    await running.fake.user_message("other chat", channel="D0002")
    evs = await running.rec.wait_emitted(2)
    assert [(e.chat_id, e.text) for e in evs] == [("D0002", "other chat"), ("D0001", "slow one")]


async def test_failed_emit_leaves_envelope_unacked_for_redelivery(running: Running) -> None:
    rec = running.rec
    original = rec.emit
    calls = 0

    async def failing(event):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("database is locked")
        return await original(event)

    rec.emit = failing  # type: ignore[method-assign]
    running.adapter._ctx.emit = failing  # type: ignore[union-attr]
    await running.fake.user_message("keep me")
    for _ in range(100):
        if calls:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    assert len(running.fake.pending) == 1  # not acknowledged
    await running.fake.disconnect()  # the next connection gets the envelope again
    [ev] = await rec.wait_emitted(1)
    assert ev.text == "keep me"
    await _settle(running)


async def test_a_slack_outage_on_the_first_event_does_not_lose_it(running: Running) -> None:
    """Found by the chaos suite (seed 2025, Slack 5xx): bolt's own authorization called
    auth.test on the first event after a (re)connect; the 503 made bolt acknowledge the
    envelope with an error text, and the message never reached the gateway. The bot's
    identity from the adapter's auth.test at start is used instead: no call per event."""
    running.fake.outages.append((503, "upstream connect error or disconnect/reset"))
    await running.fake.user_message("are you there", channel="D0001")
    [ev] = await running.rec.wait_emitted(1)
    assert ev.text == "are you there"
    assert not [c for c in running.fake.calls if c[0] == "auth.test"][1:]  # only the start's
