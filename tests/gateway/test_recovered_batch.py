"""A turn re-run after a restart can share its batch with a live message of the same sender
(a burst, or everything queued behind an interrupt). Found by the chaos suite (seed 1515):
the re-run message, already stored, was stored a second time joined with the live one, and
the model saw the user's question twice."""

from __future__ import annotations

import sqlite3

from agent_core.interrupt import InterruptSignal
from gateway.events import ChatType, MessageEvent, UserRef
from tests.gateway.runtime_harness import KEY, runner_for, user_texts


async def test_rerun_message_in_a_batch_is_not_stored_again(tmp_path, model):
    async with runner_for(tmp_path, model, gateway__busy_mode="queue") as (runner, fake):
        await fake.inject("hello", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: fake.messages("c1") == ["echo: hello"], 10)
        sid = (await runner.store.find_by_session_key(KEY)).id
        # the state a restart leaves: the user's message stored, its answer never produced
        await runner.store.append_messages(sid, [{"role": "user", "content": "cut off"}])
        last_id = await runner.store.last_message_id(sid)
        rerun = MessageEvent(platform="fake", event_id=f"recovery:{sid}:{last_id}",
                             chat_id="c1", chat_type=ChatType.DM, user=UserRef(id="u1"),
                             text="cut off", raw={"recovered_message_id": last_id})
        live = MessageEvent(platform="fake", event_id="live-1", chat_id="c1",
                            chat_type=ChatType.DM, user=UserRef(id="u1"), text="and this")
        await runner.parts.turns.run_turn(KEY, [rerun, live], InterruptSignal())
        assert await user_texts(runner, sid) == ["hello", "cut off", "and this"]
        asked = [m for m in model.requests[-1].body["messages"] if m["role"] == "user"]
        assert sum("cut off" in str(m["content"]) for m in asked) == 1


async def test_a_turn_that_crashes_after_its_preview_leaves_no_streaming_preview(
        tmp_path, model):
    """Found by the chaos suite (seed 1515, disk full): storing the answer failed after the
    preview was shown; the preview stayed with its streaming cursor above the failure
    notice, as if the answer were still coming."""
    from tests.fakes.openai_server import text

    model.enqueue(text("A long answer that streams for a while", chunk_chars=4, delay_s=0.08))
    async with runner_for(tmp_path, model, gateway__busy_mode="queue",
                          gateway__streaming__edit_interval_s=0.1) as (runner, fake):
        store = runner.parts.turns._store
        real = store.append_with_final

        async def full_disk(session_id, messages, final, **kw):
            if any(m.get("role") == "assistant" for m in messages):
                raise OSError("database or disk is full")
            return await real(session_id, messages, final, **kw)

        store.append_with_final = full_disk  # the answer and its reply are stored together
        await fake.inject("tell me", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("something went wrong" in m
                                        for m in fake.messages("c1")), 10)
        shown = fake.messages("c1")
        assert len(shown) == 2 and shown[0].startswith("A long")
        assert shown[0].endswith("⏹ Interrupted.") and not shown[0].endswith("▌")


async def test_the_outbox_row_names_a_preview_whose_send_was_still_on_its_way(
        tmp_path, model):
    """Found by the chaos suite's replica mode (seed 2020, Slack slow): the final was
    recorded while the first preview was still being posted, so the row named no preview;
    the final then replaced that preview in place, the replica was killed before marking it
    delivered, and the new owner posted the answer again beside it."""
    import asyncio

    from tests.fakes.openai_server import text

    model.enqueue(text("A short answer", chunk_chars=4, delay_s=0.05))
    async with runner_for(tmp_path, model, gateway__busy_mode="queue",
                          gateway__streaming__edit_interval_s=0.05) as (runner, fake):
        real = fake.send
        slow = [0.8]

        async def slow_first_send(message):
            if slow:
                await asyncio.sleep(slow.pop())  # the preview's post is slow to come back
            return await real(message)

        fake.send = slow_first_send
        await fake.inject("tell me", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: fake.messages("c1") == ["A short answer"], 10)
        await fake.wait_for(lambda: not runner.manager.is_busy(KEY), 10)
        [sent] = fake.sent("c1")
        with sqlite3.connect(runner.paths.state_db) as c:
            rows = c.execute("SELECT preview_message_id, state FROM outbox").fetchall()
        assert rows == [(sent.message_id, "delivered")]
