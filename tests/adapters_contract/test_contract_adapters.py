"""The adapter contract, written once and run against every platform harness present.

Each `harness_<platform>.py` next to this file provides `make_harness(tmp_path)` returning a
`PlatformHarness` (protocol.py): a fake platform server on 127.0.0.1 and the real adapter with
its unmodified SDK pointed at it. A harness may declare `unsupported = {case: reason}` (the case
is skipped with that reason) and `sample_thread` (a thread id its fake accepts; default "4242").
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from gateway.events import ChatType, ErrorKind, OutboundAttachment, OutboundMessage
from gateway.ports import PlatformSettings, RateProfile
from gateway.registry import adapter_spec
from hermes_common.text import DIALECT_NAMES, split_message, text_length

HARNESSES = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                   if m.name.startswith("harness_"))


@pytest_asyncio.fixture(params=HARNESSES)
async def h(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    module = importlib.import_module(f"tests.adapters_contract.{request.param}")
    harness = await module.make_harness(tmp_path)
    async with harness:
        await harness.start()
        yield harness


def needs(h: Any, case: str) -> None:
    reason = (getattr(h, "unsupported", None) or {}).get(case)
    if reason:
        pytest.skip(f"{h.platform}: {reason}")


def _find(h: Any, text: str, *chats: str) -> list[Any]:
    return [m for c in dict.fromkeys(chats) for m in h.bot_messages(c) if m.text == text]


async def test_inbound_dm(h: Any) -> None:
    await h.user_says("hello from a DM")
    (ev,) = await h.wait_emitted(1)
    assert ev.platform == h.platform and ev.chat_id == h.dm_chat
    assert ev.chat_type is ChatType.DM and not ev.is_group
    assert "hello from a DM" in ev.text and ev.user.id and ev.message_id and ev.event_id


async def test_inbound_group_with_and_without_mention(h: Any) -> None:
    await h.user_says("just chatting", group=True)
    await h.user_says("please answer", group=True, mention=True)
    plain, addressed = await h.wait_emitted(2)
    assert plain.is_group and addressed.is_group
    assert plain.chat_id == h.group_chat and not plain.mentions_bot
    assert addressed.mentions_bot and "please answer" in addressed.text


async def test_inbound_thread_and_reply_lands_in_it(h: Any) -> None:
    needs(h, "thread")
    await h.user_says("in a thread", group=True, thread=getattr(h, "sample_thread", "4242"),
                      mention=True)
    (ev,) = await h.wait_emitted(1)
    assert ev.thread_id
    res = await h.adapter.send(OutboundMessage(chat_id=ev.chat_id, thread_id=ev.thread_id,
                                               text="thread answer", formatted=False))
    assert res.ok
    (msg,) = _find(h, "thread answer", ev.chat_id, h.group_chat)
    assert msg.thread_id == ev.thread_id


async def test_inbound_reply_to_bot(h: Any) -> None:
    needs(h, "reply")
    sent = await h.adapter.send(OutboundMessage(chat_id=h.group_chat, text="bot speaking",
                                                formatted=False))
    assert sent.ok
    mid = sent.message_ids[0]
    await h.user_says("replying", group=True, reply_to_bot_message=mid)
    (ev,) = await h.wait_emitted(1)
    assert ev.reply_to_bot and ev.reply_to == mid


async def test_inbound_attachment_is_downloaded(h: Any, tmp_path: Path) -> None:
    needs(h, "attachment")
    src = tmp_path / "notes.txt"
    src.write_bytes(b"attachment body \x00\x01")
    await h.user_says("see attached", attachment=src)
    (ev,) = await h.wait_emitted(1)
    (att,) = ev.attachments
    assert Path(att.path).read_bytes() == src.read_bytes() and att.size == src.stat().st_size


async def test_send_and_edit(h: Any) -> None:
    sent = await h.adapter.send(OutboundMessage(chat_id=h.dm_chat, text="draft", formatted=False))
    assert sent.ok and sent.message_ids
    if not h.adapter.capabilities.edit:
        pytest.skip(f"{h.platform}: no edit capability")
    edited = await h.adapter.edit(h.dm_chat, sent.message_ids[0], "final text", formatted=False)
    assert edited.ok
    msgs = h.bot_messages(h.dm_chat)
    assert [m.text for m in msgs] == ["final text"] and msgs[0].edits >= 1


async def test_split_parts_each_fit(h: Any) -> None:
    caps = h.adapter.capabilities
    long = " ".join(f"word{i}" for i in range(caps.max_length // 2))
    parts = split_message(long, limit=caps.max_length, measure=caps.length_measure)
    assert len(parts) >= 2
    for part in parts:
        assert (await h.adapter.send(OutboundMessage(chat_id=h.dm_chat, text=part,
                                                     formatted=False))).ok
    got = [m.text for m in h.bot_messages(h.dm_chat)]
    assert got == parts
    assert all(text_length(t, caps.length_measure) <= caps.max_length for t in got)


async def test_over_long_part_is_rejected_or_kept_whole(h: Any) -> None:
    """Past `max_length` a platform either refuses (TOO_LONG, so the gateway re-splits) or
    takes the text whole; it is never silently cut."""
    needs(h, "too_long")
    caps = h.adapter.capabilities
    body = "x" * (caps.max_length + 1)
    res = await h.adapter.send(OutboundMessage(chat_id=h.dm_chat, text=body, formatted=False))
    if res.ok:
        assert [m.text for m in h.bot_messages(h.dm_chat)] == [body]
    else:
        assert res.error_kind is ErrorKind.TOO_LONG and h.bot_messages(h.dm_chat) == []


async def test_media_upload(h: Any, tmp_path: Path) -> None:
    needs(h, "media")
    path = tmp_path / "chart.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n fake image")
    res = await h.adapter.send_media(h.dm_chat, OutboundAttachment(path=str(path)),
                                     caption="a chart")
    assert res.ok
    assert any("chart.png" in m.attachments for m in h.bot_messages(h.dm_chat))


async def test_typing(h: Any) -> None:
    needs(h, "typing")
    res = await h.adapter.typing(h.dm_chat)
    assert res.ok and h.typing_calls(h.dm_chat) >= 1


async def test_redelivery_makes_no_second_event(h: Any) -> None:
    await h.user_says("only once")
    await h.wait_emitted(1)
    await h.user_says("only once", redeliver=True)
    await h.user_says("the next one")
    evs = await h.wait_emitted(2)
    assert [("only once" in e.text, "the next one" in e.text) for e in evs] == [
        (True, False), (False, True)]
    assert len({e.event_id for e in evs}) == 2


async def test_rate_limit_is_honoured(h: Any) -> None:
    h.rate_limit_next_send(1.0)
    res = await h.adapter.send(OutboundMessage(chat_id=h.dm_chat, text="limited",
                                               formatted=False))
    if not res.ok:  # the gateway retries: it needs the kind and the server's hint
        assert res.error_kind is ErrorKind.RATE_LIMITED and (res.retry_after or 0) >= 1
        assert _find(h, "limited", h.dm_chat) == []
        res = await h.adapter.send(OutboundMessage(chat_id=h.dm_chat, text="limited",
                                                   formatted=False))
    assert res.ok  # or the SDK itself waited and retried once
    assert len(_find(h, "limited", h.dm_chat)) == 1


async def test_reconnect_after_drop(h: Any) -> None:
    await h.user_says("before the drop")
    await h.wait_emitted(1)
    await h.drop_connection()
    await h.user_says("after the drop")
    evs = await h.wait_emitted(2, timeout_s=15)
    assert "after the drop" in evs[1].text


async def test_declares_what_the_gateway_reads(h: Any) -> None:
    """What differs per platform is declared, never looked up by name in the gateway: the
    markup dialect (a name the text package knows), the rate profile, the settings model with
    the keys every platform shares, a format hint, and, once connected, the bot's identity."""
    adapter = h.adapter
    caps = adapter.capabilities
    assert caps.dialect in DIALECT_NAMES
    assert isinstance(caps.rate_profile, RateProfile) and caps.rate_profile.per_chat.windows
    assert isinstance(adapter.settings, PlatformSettings)
    assert isinstance(adapter.settings, adapter_spec(h.platform).settings)
    assert adapter.format_hint
    assert adapter.identity is not None and adapter.identity.id and adapter.identity.username
    assert adapter.bot_username == adapter.identity.username
