"""Outbound: sends, edits, typing, media and error mapping against the fake Bot API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from adapters.telegram.adapter import TelegramAdapter
from gateway.events import ErrorKind, OutboundAttachment, OutboundMessage
from tests.telegram.fake_bot_api import FakeBotApi


@pytest_asyncio.fixture
async def adapter(api: FakeBotApi) -> AsyncIterator[TelegramAdapter]:
    a = TelegramAdapter("telegram", api.settings())
    yield a
    await a.stop()


async def test_formatted_html_and_plain_text(api: FakeBotApi, adapter: TelegramAdapter) -> None:
    dm = api.private_chat()
    r1 = await adapter.send(OutboundMessage(chat_id=dm, text="<b>bold</b> &amp; more"))
    r2 = await adapter.send(OutboundMessage(chat_id=dm, text="<b>not html</b>", formatted=False))
    assert r1.ok and r2.ok
    first, second = api.bot_messages(dm)
    assert (first.text, first.parse_mode) == ("bold & more", "HTML")
    assert (second.text, second.parse_mode) == ("<b>not html</b>", None)


async def test_reply_and_thread_are_sent(api: FakeBotApi, adapter: TelegramAdapter) -> None:
    forum = api.forum_chat(topics=(9,))
    res = await adapter.send(OutboundMessage(chat_id=forum, text="hi", thread_id="9",
                                             reply_to="3"))
    assert res.ok
    (msg,) = api.bot_messages(forum)
    assert (msg.thread_id, msg.reply_to) == (9, 3)


async def test_edit_streaming_and_not_modified(api: FakeBotApi, adapter: TelegramAdapter) -> None:
    dm = api.private_chat()
    sent = await adapter.send(OutboundMessage(chat_id=dm, text="Hel", formatted=False))
    mid = sent.message_ids[0]
    assert (await adapter.edit(dm, mid, "Hello wor", formatted=False)).ok
    final = await adapter.edit(dm, mid, "<b>Hello world</b>")
    same = await adapter.edit(dm, mid, "<b>Hello world</b>")
    assert final.ok and final.message_ids == (mid,)
    assert same.error_kind is ErrorKind.NOT_MODIFIED
    (msg,) = api.bot_messages(dm)
    assert msg.versions == ["Hel", "Hello wor", "Hello world"] and msg.parse_mode == "HTML"
    missing = await adapter.edit(dm, "999", "x")
    assert missing.error_kind is ErrorKind.NOT_FOUND


async def test_typing_and_delete(api: FakeBotApi, adapter: TelegramAdapter) -> None:
    forum = api.forum_chat(topics=(5,))
    assert (await adapter.typing(forum, "5")).ok
    assert (await adapter.typing(forum)).ok
    assert api.typing_count(forum, 5) == 1 and api.typing_count(forum, None) == 1
    sent = await adapter.send(OutboundMessage(chat_id=forum, text="bye"))
    assert (await adapter.delete(forum, sent.message_ids[0])).ok
    assert api.bot_messages(forum) == []


@pytest.mark.parametrize(("name", "kw", "kind"), [
    ("chart.png", {}, "photo"),
    ("report.pdf", {}, "document"),
    ("chart.png", {"as_document": True}, "document"),
    ("note.ogg", {"as_voice": True}, "voice"),
])
async def test_send_media_picks_the_method(
    api: FakeBotApi, adapter: TelegramAdapter, tmp_path: Path, name: str, kw: dict, kind: str
) -> None:
    dm = api.private_chat()
    path = tmp_path / name
    path.write_bytes(b"payload-" + name.encode())
    res = await adapter.send_media(dm, OutboundAttachment(path=str(path), **kw),
                                   caption="here it is")
    assert res.ok
    (msg,) = api.bot_messages(dm)
    assert (msg.kind, msg.filename, msg.data, msg.text) == (kind, name, path.read_bytes(),
                                                            "here it is")


async def test_send_media_missing_file_is_a_failure_not_a_raise(
    api: FakeBotApi, adapter: TelegramAdapter, tmp_path: Path
) -> None:
    res = await adapter.send_media(api.private_chat(),
                                   OutboundAttachment(path=str(tmp_path / "nope.png")))
    assert not res.ok and res.error_kind is ErrorKind.UNKNOWN


async def test_error_mapping(api: FakeBotApi, adapter: TelegramAdapter) -> None:
    dm = api.private_chat()

    async def send(text: str, chat: str = dm, formatted: bool = True):
        return await adapter.send(OutboundMessage(chat_id=chat, text=text, formatted=formatted))

    api.rate_limit_next(7)
    limited = await send("x")
    assert limited.error_kind is ErrorKind.RATE_LIMITED and limited.retry_after == 7
    assert (await send("List<int> is generic")).error_kind is ErrorKind.BAD_FORMAT
    assert (await send("List<int> is generic", formatted=False)).ok
    assert (await send("a" * 4097, formatted=False)).error_kind is ErrorKind.TOO_LONG
    assert (await send("😀" * 2049, formatted=False)).error_kind is ErrorKind.TOO_LONG
    assert (await send("😀" * 2048, formatted=False)).ok  # exactly 4,096 UTF-16 units
    assert (await send("hi", chat="-100999")).error_kind is ErrorKind.NOT_FOUND
    api.blocked.add(dm)
    assert (await send("hi")).error_kind is ErrorKind.FORBIDDEN
    assert (await send("   ")).error_kind is ErrorKind.UNKNOWN


async def test_network_failure_is_transient_and_secret_free(tmp_path: Path) -> None:
    token = "4242:SECRET-token-value"
    adapter = TelegramAdapter("telegram", {"token": token,
                                           "base_url": "http://127.0.0.1:9/bot"})
    res = await adapter.send(OutboundMessage(chat_id="1", text="hi"))
    await adapter.stop()
    assert not res.ok and res.error_kind is ErrorKind.TRANSIENT
    assert token not in (res.error or "") and "SECRET" not in (res.error or "")
