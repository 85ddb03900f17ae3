"""Inbound: updates from the fake Bot API through the unmodified PTB Bot → MessageEvents."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.telegram.adapter import TelegramAdapter
from gateway.events import ChatType, OutboundMessage
from gateway.ports import Identity
from tests.telegram.fake_bot_api import BOT_USER, USER, FakeBotApi
from tests.telegram.helpers import Recorder, running


def make(api: FakeBotApi, **extra: object) -> TelegramAdapter:
    return TelegramAdapter("telegram", api.settings(**extra))


async def test_dm_text_becomes_event_with_ids_and_user(api: FakeBotApi, rec: Recorder) -> None:
    adapter = make(api)
    async with running(adapter, rec):
        dm = api.private_chat()
        update = api.send_user(dm, "hello there")
        (ev,) = await rec.wait_for(1)
    assert ev.platform == "telegram"
    assert ev.event_id == str(update["update_id"])
    assert ev.chat_id == dm and ev.chat_type is ChatType.DM and not ev.is_group
    assert ev.user.id == str(USER["id"]) and ev.user.name == "ada" and not ev.user.is_bot
    assert ev.text == "hello there"
    assert ev.message_id == str(update["message"]["message_id"])
    assert ev.thread_id is None and ev.reply_to is None and not ev.mentions_bot


async def test_group_mentions_commands_and_text_mentions(api: FakeBotApi, rec: Recorder) -> None:
    adapter = make(api)
    async with running(adapter, rec):
        group = api.group_chat()
        api.send_user(group, "just chatting")
        api.send_user(group, "@hermes_test_bot what time is it?")
        api.send_user(group, "/help@hermes_test_bot")
        api.send_user(group, "/help@other_bot")
        api.send_user(group, "hey @someone_else")
        api.send_user(group, "Hermes, look", text_mention_bot=True)
        evs = await rec.wait_for(6)
    assert [e.chat_type for e in evs] == [ChatType.GROUP] * 6
    assert [e.mentions_bot for e in evs] == [False, True, True, False, False, True]
    assert evs[3].text == "/help@other_bot"  # left as sent; not addressed to us
    assert evs[2].text == "/help@hermes_test_bot"


async def test_forum_topic_message_and_reply_land_in_topic(api: FakeBotApi, rec: Recorder) -> None:
    adapter = make(api)
    async with running(adapter, rec):
        forum = api.forum_chat()
        api.send_user(forum, "@hermes_test_bot in the topic", thread_id=55)
        api.send_user(forum, "@hermes_test_bot in General")
        topic_ev, general_ev = await rec.wait_for(2)
        res = await adapter.send(OutboundMessage(chat_id=forum, thread_id=topic_ev.thread_id,
                                                 reply_to=topic_ev.message_id, text="answer"))
        res_general = await adapter.send(OutboundMessage(chat_id=forum, thread_id="1",
                                                         text="general answer"))
    assert topic_ev.thread_id == "55"
    assert topic_ev.reply_to is None and not topic_ev.reply_to_bot  # topic-creation quirk
    assert general_ev.thread_id is None
    assert res.ok and res_general.ok
    sent, general = api.bot_messages(forum)
    assert (sent.text, sent.thread_id, sent.reply_to) == ("answer", 55,
                                                          int(topic_ev.message_id or 0))
    assert (general.text, general.thread_id) == ("general answer", None)
    assert "message_thread_id" not in api.calls_of("sendMessage")[-1]


async def test_reply_to_bot_and_reply_to_user(api: FakeBotApi, rec: Recorder) -> None:
    adapter = make(api)
    async with running(adapter, rec):
        group = api.group_chat()
        sent = await adapter.send(OutboundMessage(chat_id=group, text="I am the bot"))
        bot_mid = int(sent.message_ids[0])
        api.send_user(group, "replying to you", reply_to=bot_mid)
        first = api.send_user(group, "a user message")
        api.send_user(group, "replying to a human", reply_to=first["message"]["message_id"])
        evs = await rec.wait_for(3)
    assert evs[0].reply_to == str(bot_mid) and evs[0].reply_to_bot
    assert evs[2].reply_to == str(first["message"]["message_id"]) and not evs[2].reply_to_bot


async def test_photo_document_voice_are_downloaded_with_captions(
    api: FakeBotApi, rec: Recorder, tmp_path: Path
) -> None:
    adapter = make(api)
    photo, doc, voice = b"\x89PNG fake image bytes", b"%PDF-1.4 report", b"OggS voice"
    async with running(adapter, rec):
        dm = api.private_chat()
        api.send_user(dm, "look at this", photo=photo)
        api.send_user(dm, "", document=("report.pdf", doc))
        api.send_user(dm, "", voice=voice)
        evs = await rec.wait_for(3)
    assert evs[0].text == "look at this"
    got = [(a.kind, Path(a.path).read_bytes(), a.size) for e in evs for a in e.attachments]
    assert got == [("image", photo, len(photo)), ("document", doc, len(doc)),
                   ("voice", voice, len(voice))]
    assert evs[1].attachments[0].name == "report.pdf"
    assert all(Path(e.attachments[0].path).parent == tmp_path / "cache" / "telegram"
               for e in evs)


async def test_oversize_attachment_becomes_a_note_not_a_download(
    api: FakeBotApi, rec: Recorder
) -> None:
    adapter = make(api, max_download_bytes=1000)
    async with running(adapter, rec):
        dm = api.private_chat()
        api.send_user(dm, "big one", document=("huge.bin", b"x" * 10), file_size=50_000_000)
        (ev,) = await rec.wait_for(1)
    assert ev.attachments == () and ev.text == "big one"
    [skipped] = ev.skipped
    assert skipped.name == "huge.bin" and "over the" in skipped.reason
    assert api.downloads == [] and api.calls_of("getFile") == []


async def test_offset_is_persisted_and_resumed_without_duplicates(
    api: FakeBotApi, rec: Recorder
) -> None:
    dm = api.private_chat()
    async with running(make(api), rec):
        api.send_user(dm, "one")
        last = api.send_user(dm, "two")
        await rec.wait_for(2)
    assert rec.cursors.values["update_offset"] == str(last["update_id"] + 1)
    api.send_user(dm, "three (while down)")
    async with running(make(api), rec):  # a fresh adapter, same cursor store
        await rec.wait_for(3, all_emits=True)
    assert [e.text for e in rec.all_emits] == ["one", "two", "three (while down)"]


async def test_failed_emit_does_not_confirm_and_update_comes_again(
    api: FakeBotApi, rec: Recorder
) -> None:
    dm = api.private_chat()
    adapter = make(api)
    rec.fail = True
    ctx = rec.context()
    api.send_user(dm, "must not be lost")
    try:
        await adapter.start(ctx)
    except Exception as exc:  # noqa: BLE001 - asserting the type below
        err = exc
    assert type(err).__name__ == "AdapterError" and "fetched again" in str(err)
    assert "update_offset" not in rec.cursors.values
    rec.fail = False
    async with running(adapter, rec):  # the supervisor restarts the same object
        (ev,) = await rec.wait_for(1)
    assert ev.text == "must not be lost"


async def test_duplicate_emit_still_advances_offset(api: FakeBotApi, rec: Recorder) -> None:
    dm = api.private_chat()
    async with running(make(api), rec):
        first = api.send_user(dm, "once")
        await rec.wait_for(1)
        api.redeliver(first)
        later = api.send_user(dm, "later")
        await rec.wait_for(3, all_emits=True)
    assert [e.text for e in rec.events] == ["once", "later"]
    assert [e.text for e in rec.all_emits] == ["once", "once", "later"]
    assert rec.cursors.values["update_offset"] == str(later["update_id"] + 1)


async def test_conflicts_escalate_to_adapter_error(api: FakeBotApi, rec: Recorder) -> None:
    api.conflicts_next = 1000
    adapter = make(api, conflict_retries=3)
    ctx = rec.context()
    try:
        await adapter.start(ctx)
    except Exception as exc:  # noqa: BLE001
        err = exc
    assert type(err).__name__ == "AdapterError"
    assert "409" in str(err) and "Another process is polling" in str(err)
    assert len(api.calls_of("getUpdates")) == 3


async def test_a_few_conflicts_recover_without_losing_messages(
    api: FakeBotApi, rec: Recorder
) -> None:
    api.conflicts_next = 2
    dm = api.private_chat()
    api.send_user(dm, "sent during the conflict")
    async with running(make(api, conflict_retries=3), rec):
        (ev,) = await rec.wait_for(1)
    assert ev.text == "sent during the conflict"


async def test_second_poller_on_same_token_ends_in_a_clear_error(
    api: FakeBotApi, rec: Recorder, tmp_path: Path
) -> None:
    other = Recorder(tmp_path / "other")
    a, b = make(api, conflict_retries=3), make(api, conflict_retries=3)
    async with running(a, rec) as (_, task_a), running(b, other) as (_, task_b):
        done, _ = await asyncio.wait({task_a, task_b}, timeout=15,
                                     return_when=asyncio.FIRST_COMPLETED)
        assert done, "neither poller escalated"
        exc = next(iter(done)).exception()
    assert type(exc).__name__ == "AdapterError" and "409" in str(exc)


async def test_invalid_token_is_an_auth_error(api: FakeBotApi, rec: Recorder) -> None:
    adapter = TelegramAdapter("telegram", {**api.settings(), "token": "999:wrong"})
    try:
        await adapter.start(rec.context())
    except Exception as exc:  # noqa: BLE001
        err = exc
    assert type(err).__name__ == "AdapterAuthError"
    assert "999:wrong" not in str(err)


async def test_schema_breaking_update_is_skipped_not_refetched(
    api: FakeBotApi, rec: Recorder
) -> None:
    dm = api.private_chat()
    async with running(make(api), rec):
        bad = api.enqueue({"message_id": 99, "date": 0, "chat": "not-an-object"})
        api.send_user(dm, "after the broken one")
        ev, = await rec.wait_for(1)
        api.send_user(dm, "and one more")
        await rec.wait_for(2)
    assert ev.text == "after the broken one"
    assert bad in api.delivered  # confirmed by the next offset: never fetched again
    assert len(api.calls_of("getUpdates")) < 10
    assert int(rec.cursors.values["update_offset"]) > bad["update_id"]


async def test_progress_reported_per_poll_and_drop_recovers(api: FakeBotApi, rec: Recorder) -> None:
    adapter = make(api, poll_timeout_s=1)
    assert adapter.capabilities.liveness_window_s > 1
    dm = api.private_chat()
    async with running(adapter, rec):
        api.send_user(dm, "before")
        await rec.wait_for(1)
        before = rec.progress_calls
        await api.drop_connections()
        api.send_user(dm, "after the drop")
        await rec.wait_for(2)
    assert before >= 1 and rec.progress_calls > before
    assert [e.text for e in rec.events] == ["before", "after the drop"]


async def test_command_menu_published_at_start(api: FakeBotApi, rec: Recorder) -> None:
    adapter = make(api)
    adapter.commands_menu([("help", "Show help"), ("Bad-Name", "x"), ("/new", "Start over"),
                           ("help", "dupe")])
    async with running(adapter, rec):
        pass
    assert api.commands == [{"command": "help", "description": "Show help"},
                            {"command": "new", "description": "Start over"}]
    assert adapter.me is not None and adapter.me.username == BOT_USER["username"]
    assert adapter.identity == Identity(id=str(BOT_USER["id"]), username=BOT_USER["username"])
    assert adapter.bot_username == BOT_USER["username"]


async def test_hidden_links_and_code_reach_the_agent_as_markdown(api: FakeBotApi,
                                                                 rec: Recorder) -> None:
    from tests.telegram.fake_updates import utf16_len

    text = "see the docs 👍 then run make test:\npytest -q\nthanks"

    def at(part: str) -> int:
        return utf16_len(text[: text.index(part)])

    entities = [
        {"type": "text_link", "offset": at("docs"), "length": 4, "url": "https://ex.org/docs"},
        {"type": "italic", "offset": at("docs"), "length": 4},
        {"type": "code", "offset": at("make test"), "length": utf16_len("make test")},
        {"type": "pre", "offset": at("pytest -q"), "length": utf16_len("pytest -q"),
         "language": "bash"},
    ]
    adapter = make(api)
    async with running(adapter, rec):
        dm = api.private_chat()
        api.send_user(dm, text, entities=entities)
        api.send_user(dm, "caption with a link", document=("a.txt", b"hi"), entities=[
            {"type": "text_link", "offset": 15, "length": 4, "url": "https://ex.org/a"}])
        plain, captioned = await rec.wait_for(2)
    assert plain.text == ("see the [docs](https://ex.org/docs) 👍 then run `make test`:\n"
                          "```bash\npytest -q\n```\nthanks")
    assert captioned.text.startswith("caption with a [link](https://ex.org/a)")


async def test_polling_waits_out_a_429_and_bad_gateways_and_loses_nothing(
    api: FakeBotApi, rec: Recorder
) -> None:
    dm = api.private_chat()
    api.send_user(dm, "queued while Telegram struggled")
    async with running(make(api, network_retries=5, network_backoff_s=0.05), rec):
        api.fail_next({"getUpdates"}, 429, "Too Many Requests: retry after 1", retry_after=1)
        api.fail_next({"getUpdates"}, 502, "Bad Gateway")
        api.fail_next({"getUpdates"}, 502, "Bad Gateway")
        await api.drop_connections()  # the poll in flight ends; the next ones hit the errors
        api.send_user(dm, "and after it")
        evs = await rec.wait_for(2)
    assert [e.text for e in evs] == ["queued while Telegram struggled", "and after it"]
    assert api.failures_left("getUpdates") == 0  # every scripted error was answered


async def test_polling_that_keeps_failing_escalates_to_an_adapter_error(
    api: FakeBotApi, rec: Recorder
) -> None:
    adapter = make(api, network_retries=3, network_backoff_s=0.05)
    for _ in range(3):
        api.fail_next({"getUpdates"}, 502, "Bad Gateway")
    err: BaseException | None = None
    try:
        await asyncio.wait_for(adapter.start(rec.context()), 10)
    except Exception as exc:  # noqa: BLE001
        err = exc
    assert type(err).__name__ == "AdapterError"
    assert "failed 3 times in a row" in str(err) and api.token not in str(err)


async def test_a_token_revoked_while_polling_is_an_auth_error(
    api: FakeBotApi, rec: Recorder
) -> None:
    async with running(make(api), rec) as (_, task):
        api.fail_next({"getUpdates"}, 401, "Unauthorized")
        await api.drop_connections()
        done, _ = await asyncio.wait({task}, timeout=10)
        assert done, "the adapter kept polling with a revoked token"
        err = task.exception()
    assert type(err).__name__ == "AdapterAuthError" and api.token not in str(err)
