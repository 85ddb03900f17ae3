"""Sending, editing, deleting, uploading and error mapping against the fake Web API."""

from __future__ import annotations

from pathlib import Path

from adapters.slack.adapter import SlackAdapter
from gateway.events import ErrorKind, OutboundAttachment, OutboundMessage
from tests.slack.conftest import Recorder, Running, adapter_settings
from tests.slack.fake_slack import FakeSlack


async def test_send_into_thread_and_top_level_mention_starts_a_thread(running: Running) -> None:
    a = running.adapter
    res = await a.send(OutboundMessage(chat_id="C0001", text="*in thread*", thread_id="1.000100"))
    assert res.ok
    res2 = await a.send(OutboundMessage(chat_id="C0001", text="answer", reply_to="1.000200"))
    res3 = await a.send(OutboundMessage(chat_id="D0001", text="dm answer", reply_to="1.000300"))
    assert res2.ok and res3.ok
    [m1, m2] = running.fake.bot_messages("C0001")
    assert (m1.text, m1.thread_ts, m1.ts) == ("*in thread*", "1.000100", res.message_ids[0])
    assert m2.thread_ts == "1.000200"
    [dm] = running.fake.bot_messages("D0001")
    assert dm.thread_ts is None and dm.text == "dm answer"


async def test_plain_text_is_escaped_and_sent_without_mrkdwn(running: Running) -> None:
    await running.adapter.send(OutboundMessage(chat_id="D0001", text="a < b & *c*",
                                               formatted=False))
    [m] = running.fake.bot_messages("D0001")
    assert m.text == "a &lt; b &amp; *c*" and m.mrkdwn is False


async def test_streaming_edits_update_the_message_in_place(running: Running) -> None:
    a = running.adapter
    res = await a.send(OutboundMessage(chat_id="D0001", text="Hel", formatted=False))
    mid = res.message_ids[0]
    assert (await a.edit("D0001", mid, "Hello wor", formatted=False)).ok
    assert (await a.edit("D0001", mid, "*Hello world*")).ok
    [m] = running.fake.bot_messages("D0001")
    assert m.text == "*Hello world*" and m.history == ["Hel", "Hello wor", "*Hello world*"]
    missing = await a.edit("D0001", "9.999999", "x")
    assert missing.error_kind is ErrorKind.NOT_FOUND


async def test_delete_removes_the_message(running: Running) -> None:
    res = await running.adapter.send(OutboundMessage(chat_id="D0001", text="tmp"))
    assert (await running.adapter.delete("D0001", res.message_ids[0])).ok
    assert running.fake.bot_messages("D0001") == []


async def test_media_goes_through_the_v2_upload_flow(running: Running, tmp_path: Path) -> None:
    path = tmp_path / "report.csv"
    path.write_bytes(b"a,b\n1,2\n")
    res = await running.adapter.send_media("C0001", OutboundAttachment(path=str(path)),
                                           thread_id="1.000500", caption="here you go")
    assert res.ok and res.message_ids[0].startswith("F")
    fake = running.fake
    assert [m for m, _ in fake.calls if m.startswith("files.")] == [
        "files.getUploadURLExternal", "files.completeUploadExternal"]
    assert fake.uploads[res.message_ids[0]]["data"] == b"a,b\n1,2\n"
    [m] = fake.bot_messages("C0001")
    assert m.files == ["report.csv"] and m.thread_ts == "1.000500" and m.text == "here you go"


async def test_missing_media_file_is_not_blamed_on_the_chat(running: Running) -> None:
    res = await running.adapter.send_media("C0001", OutboundAttachment(path="/nope/x.png"))
    assert not res.ok and res.error_kind is ErrorKind.UNKNOWN


async def test_429_maps_to_rate_limited_with_retry_after(running: Running) -> None:
    running.fake.rate_limit_next(7)
    res = await running.adapter.send(OutboundMessage(chat_id="D0001", text="x"))
    assert res.error_kind is ErrorKind.RATE_LIMITED and res.retry_after == 7
    assert (await running.adapter.send(OutboundMessage(chat_id="D0001", text="x"))).ok


async def test_platform_errors_map_to_kinds(running: Running) -> None:
    fake, a = running.fake, running.adapter
    fake.add_channel("C0002", "channel", archived=True)
    fake.add_channel("C0003", "channel", member=False)
    cases = {"C9999": ErrorKind.NOT_FOUND, "C0002": ErrorKind.FORBIDDEN,
             "C0003": ErrorKind.FORBIDDEN}
    for chat, kind in cases.items():
        res = await a.send(OutboundMessage(chat_id=chat, text="x"))
        assert not res.ok and res.error_kind is kind, chat
    long = await a.send(OutboundMessage(chat_id="D0001", text="x" * 3901))
    assert long.error_kind is ErrorKind.TOO_LONG  # the declared limit, before Slack's 40,000
    assert (await a.send(OutboundMessage(chat_id="D0001", text="x" * 3900))).ok
    fake.fail_next("chat.postMessage", "msg_too_long")
    assert (await a.send(OutboundMessage(chat_id="D0001", text="x"))).error_kind is (
        ErrorKind.TOO_LONG)
    fake.fail_next("chat.postMessage", "internal_error")
    assert (await a.send(OutboundMessage(chat_id="D0001", text="x"))).error_kind is (
        ErrorKind.TRANSIENT)


async def test_a_slack_outage_is_transient_and_the_next_send_goes_through(
        running: Running) -> None:
    running.fake.outages.append((503, "upstream connect error or disconnect/reset"))
    res = await running.adapter.send(OutboundMessage(chat_id="D0001", text="first try"))
    assert not res.ok and res.error_kind is ErrorKind.TRANSIENT
    assert (await running.adapter.send(OutboundMessage(chat_id="D0001", text="again"))).ok
    assert [m.text for m in running.fake.bot_messages("D0001")] == ["again"]


async def test_a_hung_call_times_out_and_the_adapter_keeps_working(
        fake: FakeSlack, tmp_path: Path) -> None:
    run = Running(fake, SlackAdapter("slack", adapter_settings(fake, timeout_s=0.5)),
                  Recorder(tmp_path))
    await run.start()
    try:
        fake.stall_next_s = 3.0
        res = await run.adapter.send(OutboundMessage(chat_id="D0001", text="slow"))
        assert not res.ok and res.error_kind is ErrorKind.TIMEOUT
        assert (await run.adapter.send(OutboundMessage(chat_id="D0001", text="fast"))).ok
    finally:
        await run.close()


async def test_typing_is_declared_unsupported(running: Running) -> None:
    assert running.adapter.capabilities.typing is False
    assert not (await running.adapter.typing("D0001")).ok


async def test_sending_before_start_fails_cleanly() -> None:
    res = await SlackAdapter("slack", {"bot_token": "x", "app_token": "y"}).send(
        OutboundMessage(chat_id="D1", text="x"))
    assert not res.ok and res.error_kind is ErrorKind.TRANSIENT
