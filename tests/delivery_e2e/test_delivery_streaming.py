"""Streaming through the real gateway: edit cadence, one final message, interrupts, retries,
typing. FakeAdapter time-stamps every platform call (see support.py)."""

from __future__ import annotations

import asyncio

import gateway.delivery.service as delivery_service
from tests.delivery_e2e.support import CURSOR_CHAR, TimedFakeAdapter
from tests.fakes.openai_server import text
from tests.integration.harness import gateway

INTERVAL = 0.2


def _reply(words: int) -> str:
    return " ".join(f"word{i}" for i in range(words)) + "."


async def test_delivery_edits_at_most_once_per_interval_and_final_is_exact(tmp_path, model):
    reply = _reply(120)  # ~1 KB streamed in 4-char chunks every 10 ms: ~2.5 s of streaming
    model.enqueue(text(reply, chunk_chars=4, delay_s=0.01))
    fake = TimedFakeAdapter()
    async with gateway(tmp_path, model, adapter=fake,
                       gateway__streaming__edit_interval_s=INTERVAL) as (_runner, fake):
        await fake.inject("stream please", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=20)
        messages = fake.messages("c1")
        assert messages == [reply]  # one message, exactly the reply: no cursor, no footer
        sends = fake.ops("send", "c1")
        edits = fake.ops("edit", "c1")
        assert len(sends) == 1
        previews = [e for e in edits if not e.formatted]
        finals = [e for e in edits if e.formatted]
        assert len(finals) == 1 and finals[0].text == reply
        assert len(previews) >= 3, "the reply should have been streamed in several edits"
        stream = [sends[0], *previews]
        for before, after in zip(stream, stream[1:], strict=False):
            assert after.at - before.at >= INTERVAL * 0.95, (before, after)
        span = stream[-1].at - stream[0].at
        assert len(previews) <= span / INTERVAL + 1
        # Only changed text is pushed, every preview shows the cursor and grows.
        texts = [s.text or "" for s in stream]
        assert all(t.endswith(CURSOR_CHAR) for t in texts)
        assert len(set(texts)) == len(texts)
        assert all(reply.startswith(t.rstrip(CURSOR_CHAR).rstrip()) for t in texts)


async def test_delivery_interrupt_mid_stream_leaves_one_message_per_turn(tmp_path, model):
    first = _reply(400)
    model.enqueue(text(first, chunk_chars=5, delay_s=0.02), text("Second answer."))
    fake = TimedFakeAdapter()
    async with gateway(tmp_path, model, adapter=fake,
                       gateway__streaming__edit_interval_s=INTERVAL) as (_runner, fake):
        await fake.inject("long question", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(fake.ops("edit", "c1")) >= 2, timeout_s=10)
        await asyncio.sleep(0.6)  # outside the burst-merge window
        await fake.inject("actually, another question", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: "Second answer." in fake.messages("c1"), timeout_s=15)
        await fake.wait_turns(2, timeout_s=10)
        await asyncio.sleep(0.3)  # a late edit or duplicate would show up here
        messages = [m for m in fake.messages("c1") if not m.startswith("⏳")]
        assert len(messages) == 2, messages  # besides the busy acknowledgement
        interrupted, second = messages
        assert second == "Second answer."
        assert interrupted.endswith("⏹ Interrupted.")
        assert CURSOR_CHAR not in interrupted
        assert first.startswith(interrupted.removesuffix("⏹ Interrupted.").strip())
        # Nothing touched the interrupted message once the second answer began.
        second_start = next(s.at for s in fake.stamps if s.text and "Second" in s.text)
        assert all(s.at < second_start for s in fake.stamps
                   if s.op in ("send", "edit") and s.text and "word0" in s.text)


async def test_delivery_final_rate_limited_is_retried_in_place_once(tmp_path, model):
    reply = _reply(60)
    model.enqueue(text(reply, chunk_chars=6, delay_s=0.01))
    fake = TimedFakeAdapter()
    # The final edit (the only formatted call) is refused once with a short retry_after.
    rule = fake.fail_when("rate_limited", op="edit", formatted=True, retry_after=0.3)
    async with gateway(tmp_path, model, adapter=fake,
                       gateway__streaming__edit_interval_s=INTERVAL) as (runner, fake):
        await fake.inject("hello", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: reply in fake.messages("c1"), timeout_s=15)
        await asyncio.sleep(0.5)
        assert rule.hits, "the final was never refused: the test did not exercise a retry"
        assert fake.messages("c1") == [reply]
        finals = [s for s in fake.stamps if s.formatted and s.ok]
        assert len(finals) == 1
        assert finals[0].at - rule.hits[0] >= 0.3 * 0.95
        rows = await runner.store.outbox_undelivered()
        assert rows == []


async def test_delivery_typing_refreshed_while_working_and_stopped_at_final(
        tmp_path, model, monkeypatch):
    monkeypatch.setattr(delivery_service, "TYPING_REFRESH_S", 0.1)
    reply = _reply(40)
    model.enqueue(text(reply, chunk_chars=4, delay_s=0.02))
    fake = TimedFakeAdapter()
    fake.slow_final_s = 0.5  # a slow final send: typing must not go on meanwhile
    async with gateway(tmp_path, model, adapter=fake,
                       gateway__streaming__edit_interval_s=INTERVAL) as (_runner, fake):
        await fake.inject("hello", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=15)
        await asyncio.sleep(0.4)
        typing = fake.ops("typing", "c1")
        final = next(s for s in fake.stamps if s.formatted and s.ok)
        assert len(typing) >= 3, "typing should be refreshed during a ~1 s turn"
        assert all(t.at < final.at for t in typing), "typing sent after the final began"
        assert fake.messages("c1") == [reply]


async def test_a_final_ready_while_the_first_preview_is_in_flight_edits_that_preview(tmp_path,
                                                                                     model):
    """The preview's send has reached the platform but its answer (the message id) is still on
    the way when the final is ready: the final waits for it and replaces that preview. Cutting
    the send short left the preview, cursor and all, next to a second message."""
    reply = _reply(12)
    model.enqueue(text(reply, chunk_chars=8, delay_s=0.005))
    fake = TimedFakeAdapter()
    fake.slow_preview_ack_s = 0.5
    async with gateway(tmp_path, model, adapter=fake,
                       gateway__streaming__edit_interval_s=INTERVAL) as (_runner, fake):
        await fake.inject("quick one", chat_id="c1", user_id="u1")
        await fake.wait_turns(1, timeout_s=10)
        assert fake.messages("c1") == [reply]
        assert len(fake.ops("send", "c1")) == 1
