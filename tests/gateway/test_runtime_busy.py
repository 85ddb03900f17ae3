"""A busy session: burst merge, the busy acknowledgement rate, a full mailbox."""

from __future__ import annotations

import asyncio

import pytest

from tests.fakes.openai_server import hang, text
from tests.gateway.runtime_harness import KEY, runner_for, user_texts

ACK = "⏳ Still working"


@pytest.mark.parametrize("mode", ["queue", "interrupt"])
async def test_burst_within_merge_window_is_one_turn(tmp_path, model, mode):
    async with runner_for(tmp_path, model, gateway__busy_mode=mode) as (runner, fake):
        await fake.inject("my flight is at 9", chat_id="c1", user_id="u1")
        await fake.inject("and I land in Oslo", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("Oslo" in m for m in fake.messages("c1")), 10)
        await asyncio.sleep(0.3)
        answered = [r for r in model.requests if r.finished_at is not None
                    and r.body["messages"][-1]["role"] == "user"]
        assert answered[-1].body["messages"][-1]["content"] == \
            "my flight is at 9\n\nand I land in Oslo"
        # One reply for the burst, no busy notice.
        assert fake.messages("c1") == ["echo: my flight is at 9\n\nand I land in Oslo"]
        sid = (await runner.store.find_by_session_key(KEY)).id
        assert await user_texts(runner, sid) == ["my flight is at 9", "and I land in Oslo"]


async def test_other_senders_are_not_merged(tmp_path, model):
    async with runner_for(tmp_path, model, gateway__busy_mode="queue") as (_runner, fake):
        await fake.inject("@bot from alice", chat_id="g1", user_id="u1", chat_type="group",
                          thread_id="t1", mentions_bot=True)
        await fake.inject("@bot from bob", chat_id="g1", user_id="u2", chat_type="group",
                          thread_id="t1", mentions_bot=True)
        await fake.wait_for(lambda: len([m for m in fake.messages("g1")
                                         if m.startswith("echo")]) == 2, 10)
        assert [r.body["messages"][-1]["content"] for r in model.requests] == [
            "@bot from alice", "@bot from bob"]


@pytest.mark.parametrize(("interval", "acks"), [(30.0, 1), (0.0, 3)])
async def test_busy_acknowledgement_at_most_once_per_interval(tmp_path, model, interval, acks):
    model.enqueue(hang(60))
    async with runner_for(tmp_path, model, gateway__busy_mode="queue",
                          gateway__burst_merge_s=0,
                          gateway__busy_ack_interval_s=interval) as (runner, fake):
        await fake.inject("slow one", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        for i in range(3):
            await fake.inject(f"more {i}", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len([m for m in fake.messages("c1") if ACK in m]) >= acks)
        await asyncio.sleep(0.2)
        assert len([m for m in fake.messages("c1") if ACK in m]) == acks
        assert runner.manager.queue_depths() == {KEY: 3}


async def test_full_mailbox_tells_the_user(tmp_path, model):
    model.enqueue(hang(60))
    async with runner_for(tmp_path, model, gateway__busy_mode="queue",
                          gateway__burst_merge_s=0, gateway__mailbox_size=2) as (runner, fake):
        await fake.inject("slow one", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        for i in range(3):
            await fake.inject(f"more {i}", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("not queued" in m for m in fake.messages("c1")))
        assert runner.manager.queue_depths() == {KEY: 2}
        # /stop drops the queue and the hanging turn; the next message is answered.
        await fake.inject("/stop", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("Dropped 2" in m for m in fake.messages("c1")))
        await fake.wait_for(lambda: not runner.manager.is_busy(KEY), 10)
        model.enqueue(text("Back."))
        await asyncio.sleep(0.6)
        await fake.inject("hello again", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: "Back." in fake.messages("c1"), 10)


async def test_burst_that_interrupts_a_streaming_answer_restarts_it_with_every_part(
        tmp_path, model):
    """Found by the chaos suite (seed 1515): the second part of a burst arrived while the
    first part's answer was streaming; the partial answer (never shown) was stored as the
    assistant's reply, so the merged turn answered only the second part."""
    model.enqueue(text("Your flight at nine is early, so plan to", chunk_chars=4, delay_s=0.1))
    async with runner_for(tmp_path, model, gateway__busy_mode="queue",
                          gateway__burst_merge_s=5) as (runner, fake):
        await fake.inject("my flight is at 9", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        await asyncio.sleep(0.35)  # a few chunks in
        await fake.inject("and I land in Oslo", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("Oslo" in m for m in fake.messages("c1")), 10)
        await asyncio.sleep(0.3)
        last = model.requests[-1].body["messages"]
        assert [m["role"] for m in last[1:]] == ["user"]  # no partial answer in between
        assert last[-1]["content"] == "my flight is at 9\n\nand I land in Oslo"
        shown = fake.messages("c1")
        assert shown[-1] == "echo: my flight is at 9\n\nand I land in Oslo"
        assert all(m.endswith("⏹ Interrupted.") for m in shown[:-1])  # a preview, if any
        sid = (await runner.store.find_by_session_key(KEY)).id
        assert await user_texts(runner, sid) == ["my flight is at 9", "and I land in Oslo"]
