"""FakeAdapter: inbox, transcript, platform rules and scripted failures behave as documented."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from adapters.fake import SPEC, FakeAdapter
from gateway.events import ChatType, ErrorKind, OutboundAttachment, OutboundMessage
from gateway.ports import AdapterContext
from gateway.supervisor import MemoryCursorStore
from tests.gateway_infra.helpers import Inbound

Factory = Callable[..., Any]


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[Factory]:
    """Start FakeAdapters against a bare context; returns (adapter, inbound)."""
    tasks: list[tuple[FakeAdapter, asyncio.Task[None]]] = []

    async def start(**options: Any) -> tuple[FakeAdapter, Inbound]:
        fake, inbound = FakeAdapter("fake", **options), Inbound()
        ctx = AdapterContext(
            name="fake",
            emit=inbound.emit,
            progress=lambda: None,
            stop_event=asyncio.Event(),
            cursors=MemoryCursorStore(),
            cache_dir=tmp_path,
            logger=None,
        )
        tasks.append((fake, asyncio.create_task(fake.start(ctx))))
        await fake.wait_connected()
        return fake, inbound

    yield start
    for fake, task in tasks:
        await fake.stop()
        await asyncio.wait_for(task, 2.0)


def _msg(text: str, chat_id: str = "c1", *, formatted: bool = True) -> OutboundMessage:
    return OutboundMessage(chat_id=chat_id, text=text, formatted=formatted)


async def test_inject_emits_a_normalized_event_and_reports_duplicates(running: Factory) -> None:
    fake, inbound = await running()
    first = await fake.inject(
        "hello",
        chat_id="g1",
        user_id="42",
        chat_type="group",
        mentions_bot=True,
        thread_id="t9",
        event_id="e-1",
    )
    again = await fake.inject("hello", chat_id="g1", user_id="42", event_id="e-1")
    other = await fake.inject("second")
    assert first.new and not again.new and other.new
    event = first.event
    assert (event.platform, event.chat_id, event.chat_type, event.thread_id) == (
        "fake",
        "g1",
        ChatType.GROUP,
        "t9",
    )
    assert event.user.id == "42" and event.mentions_bot
    assert other.event.event_id != first.event.event_id
    assert [e.text for e in inbound.events] == ["hello", "second"]


async def test_inject_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        await FakeAdapter().inject("too early")


async def test_transcript_shows_final_text_and_edit_history(running: Factory) -> None:
    fake, _ = await running()
    sent = await fake.send(_msg("Hel"))
    mid = sent.message_ids[0]
    assert (await fake.edit("c1", mid, "Hello")).ok
    assert (await fake.edit("c1", mid, "Hello world")).ok
    await fake.send(_msg("other chat", "c2"))
    await fake.send(_msg("second"))
    assert fake.messages("c1") == ["Hello world", "second"]
    assert fake.messages("c2") == ["other chat"]
    assert fake.edits("c1", mid) == ["Hello", "Hello world"]
    assert fake.history("c1", mid) == ["Hel", "Hello", "Hello world"]


async def test_platform_rules_not_found_not_modified_and_too_long(running: Factory) -> None:
    fake, _ = await running(max_length=3, length_measure="utf16")
    mid = (await fake.send(_msg("ab"))).message_ids[0]
    assert (await fake.edit("c1", "nope", "x")).error_kind is ErrorKind.NOT_FOUND
    assert (await fake.edit("c1", mid, "ab")).error_kind is ErrorKind.NOT_MODIFIED
    assert (await fake.send(_msg("😀😀"))).error_kind is ErrorKind.TOO_LONG
    assert fake.messages("c1") == ["ab"]

    chars, _ = await running(max_length=3, length_measure="chars")
    assert (await chars.send(_msg("😀😀"))).ok


async def test_rate_limited_carries_retry_after_and_sends_nothing(running: Factory) -> None:
    fake, _ = await running()
    fake.fail_next("rate_limited", retry_after=3.5)
    result = await fake.send(_msg("hi"))
    assert (result.ok, result.error_kind, result.retry_after) == (
        False,
        ErrorKind.RATE_LIMITED,
        3.5,
    )
    assert fake.messages("c1") == []
    assert (await fake.send(_msg("hi"))).ok
    assert fake.messages("c1") == ["hi"]
    assert [c.result.ok for c in fake.calls] == [False, True]


async def test_bad_format_rejects_formatted_text_only(running: Factory) -> None:
    fake, _ = await running()
    fake.fail_next("bad_format")
    assert (await fake.send(_msg("plain", formatted=False))).ok
    rejected = await fake.send(_msg("*bold*"))
    assert rejected.error_kind is ErrorKind.BAD_FORMAT
    assert (await fake.send(_msg("bold", formatted=False))).ok
    assert (await fake.send(_msg("*bold*"))).ok
    assert fake.messages("c1") == ["plain", "bold", "*bold*"]
    assert [m.formatted for m in fake.sent("c1")] == [False, False, True]


async def test_timeout_delivers_but_reports_timeout(running: Factory) -> None:
    fake, _ = await running()
    fake.fail_next("timeout", count=2)
    result = await fake.send(_msg("maybe delivered"))
    assert result.error_kind is ErrorKind.TIMEOUT and not result.ok
    assert fake.messages("c1") == ["maybe delivered"]
    mid = fake.sent("c1")[0].message_id
    assert (await fake.edit("c1", mid, "edited anyway")).error_kind is ErrorKind.TIMEOUT
    assert fake.messages("c1") == ["edited anyway"]


async def test_failures_can_target_one_operation(running: Factory) -> None:
    fake, _ = await running()
    fake.fail_next("forbidden", op="typing")
    fake.fail_next("transient", count=2, op="edit")
    mid = (await fake.send(_msg("a"))).message_ids[0]
    assert (await fake.typing("c1")).error_kind is ErrorKind.FORBIDDEN
    assert (await fake.edit("c1", mid, "b")).error_kind is ErrorKind.TRANSIENT
    assert (await fake.edit("c1", mid, "b")).error_kind is ErrorKind.TRANSIENT
    assert (await fake.edit("c1", mid, "b")).ok
    assert (await fake.typing("c1")).ok
    assert fake.typing_count("c1") == 1
    assert fake.messages("c1") == ["b"]


async def test_capability_switches_disable_operations(running: Factory) -> None:
    fake, _ = await running(
        edit=False, typing=False, media=False, delete=False, dialect="plain", liveness_window_s=30.0
    )
    caps = fake.capabilities
    assert (caps.edit, caps.typing, caps.media, caps.dialect, caps.liveness_window_s) == (
        False,
        False,
        False,
        "plain",
        30.0,
    )
    mid = (await fake.send(_msg("x"))).message_ids[0]
    assert not (await fake.edit("c1", mid, "y")).ok
    assert not (await fake.typing("c1")).ok
    assert not (await fake.delete("c1", mid)).ok
    assert not (await fake.send_media("c1", OutboundAttachment(path="/tmp/a.png"))).ok
    assert fake.messages("c1") == ["x"] and fake.media("c1") == []


async def test_delete_media_and_turn_complete_are_recorded(running: Factory) -> None:
    fake, _ = await running()
    mid = (await fake.send(_msg("temporary"))).message_ids[0]
    await fake.send(_msg("kept"))
    assert (await fake.delete("c1", mid)).ok
    assert (await fake.delete("c1", mid)).error_kind is ErrorKind.NOT_FOUND
    assert (await fake.send_media("c1", OutboundAttachment(path="/tmp/p.png"), caption="pic")).ok
    await fake.turn_complete("c1", reply_to="in-1", ok=True)
    assert fake.messages("c1") == ["kept"]
    assert [(m.text, m.attachments[0].path) for m in fake.media("c1")] == [("pic", "/tmp/p.png")]
    turns = await fake.wait_turns(1)
    assert (turns[0].chat_id, turns[0].reply_to, turns[0].ok) == ("c1", "in-1", True)


async def test_wait_for_messages_sees_a_later_send(running: Factory) -> None:
    fake, _ = await running()

    async def reply_later() -> None:
        await asyncio.sleep(0.02)
        await fake.send(_msg("late reply"))

    task = asyncio.create_task(reply_later())
    assert await fake.wait_for_messages("c1", 1) == ["late reply"]
    await task


def test_create_reads_switches_from_settings() -> None:
    fake = SPEC.create("fake2", {"edit": False, "max_length": 10, "dialect": "slack_mrkdwn"})
    assert fake.name == "fake2"
    assert (fake.capabilities.edit, fake.capabilities.max_length) == (False, 10)
    assert fake.capabilities.dialect == "slack_mrkdwn"
    assert SPEC.create("plain", None).capabilities.edit is True
    with pytest.raises(ValidationError, match="unknown_key"):
        SPEC.create("fake3", {"edit": False, "unknown_key": 1})
    with pytest.raises(ValidationError, match="unknown dialect"):
        SPEC.create("fake4", {"dialect": "irc"})
