"""Messages waiting in a session's mailbox survive a restart (RELIABILITY.md items 1 and 7)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time

from gateway.paths import ProfilePaths
from gateway.recovery import HELD_LOST_NOTICE, HELD_NOTICE
from tests.fakes.openai_server import hang, text
from tests.gateway.runtime_harness import KEY, Clock, runner_for

QUEUE = {"gateway__busy_mode": "queue", "gateway__burst_merge_s": 0,
         "gateway__drain_timeout_s": 0.1}


def _asked(model, question: str) -> int:
    """How many model requests ended with `question` as the user's turn."""
    return sum(1 for r in model.requests
               if r.messages and r.messages[-1].get("content") == question)


async def _held_texts(runner) -> list[str]:
    return [json.loads(h.payload)["text"] for h in await runner.store.inbound_held()]


async def _until_nothing_held(runner) -> None:
    for _ in range(200):
        if not await runner.store.inbound_held():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"still held: {await _held_texts(runner)}")


async def _queue_behind_a_hanging_turn(tmp_path, model, clock=None) -> None:
    """A gateway answers once, then hangs on "first", queues "second", and is shut down."""
    model.enqueue(text("hello back"), hang(60))
    async with runner_for(tmp_path, model, clock=clock, **QUEUE) as (runner, fake):
        await fake.inject("hello", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        assert await _held_texts(runner) == []  # an answered message holds nothing
        await fake.inject("first", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: _asked(model, "first") == 1)
        await fake.inject("second", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: runner.manager.queue_depths().get(KEY) == 1)
        assert await _held_texts(runner) == ["second"]
    model.requests.clear()


async def test_a_message_queued_behind_a_turn_is_answered_after_a_restart(tmp_path, model):
    await _queue_behind_a_hanging_turn(tmp_path, model)
    async with runner_for(tmp_path, model, **QUEUE) as (runner, fake):
        await fake.wait_for(lambda: _asked(model, "second") == 1, 10)
        await fake.wait_for(lambda: not runner.manager.is_busy(KEY) and
                            not runner.manager.queue_depths(), 10)
        assert HELD_NOTICE in fake.messages("c1")
        session = await runner.store.find_by_session_key(KEY)
        users = [m["content"] for m in await runner.store.load_history(session.id)
                 if m["role"] == "user"]
        assert users.count("second") == 1 and users.index("second") > users.index("first")
        await _until_nothing_held(runner)
    model.requests.clear()
    async with runner_for(tmp_path, model, **QUEUE) as (_runner, fake):
        await asyncio.sleep(0.2)
        assert _asked(model, "second") == 0, "answered twice"
        assert HELD_NOTICE not in fake.messages("c1")


async def test_messages_dropped_by_stop_do_not_come_back(tmp_path, model):
    model.enqueue(hang(60))
    async with runner_for(tmp_path, model, **QUEUE) as (runner, fake):
        await fake.inject("first", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: _asked(model, "first") == 1)
        await fake.inject("second", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: runner.manager.queue_depths().get(KEY) == 1)
        await fake.inject("/stop", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("Dropped 1 queued" in m for m in fake.messages("c1")))
        await _until_nothing_held(runner)
    model.requests.clear()
    async with runner_for(tmp_path, model, **QUEUE) as (_runner, fake):
        await asyncio.sleep(0.2)
        assert _asked(model, "second") == 0
        assert HELD_NOTICE not in fake.messages("c1")


async def test_a_held_message_older_than_an_hour_gets_a_notice_not_a_late_answer(
        tmp_path, model):
    clock = Clock()
    await _queue_behind_a_hanging_turn(tmp_path, model, clock=clock)
    clock.advance(2 * 3600)
    lost = HELD_LOST_NOTICE.format(preview="second")
    async with runner_for(tmp_path, model, clock=clock, **QUEUE) as (runner, fake):
        await fake.wait_for(lambda: lost in fake.messages("c1"), 10)
        await _until_nothing_held(runner)
        assert _asked(model, "second") == 0


async def test_a_message_arriving_during_shutdown_is_answered_after_the_restart(tmp_path, model):
    model.enqueue(hang(60))
    async with runner_for(tmp_path, model, gateway__burst_merge_s=0,
                          gateway__drain_timeout_s=1.0) as (runner, fake):
        await fake.inject("first", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: _asked(model, "first") == 1)
        stopping = asyncio.create_task(runner.shutdown())
        await fake.wait_for(lambda: runner.manager._closing)
        await fake.inject("late", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("answer this as soon as it is back" in m
                                        for m in fake.messages("c1")))
        await stopping
    model.requests.clear()
    async with runner_for(tmp_path, model) as (runner, fake):
        await fake.wait_for(lambda: _asked(model, "late") == 1, 10)
        await _until_nothing_held(runner)


async def test_request_response_adapters_do_not_get_late_answers(tmp_path, model):
    # Like the HTTP API: the client that asked is gone after a restart, so a queued request
    # is let go instead of costing a model call nobody receives.
    from adapters.fake import FakeAdapter

    await _queue_behind_a_hanging_turn(tmp_path, model)
    adapter = FakeAdapter("fake", push=False)
    async with runner_for(tmp_path, model, adapters={"fake": adapter}, **QUEUE) as (runner, _):
        await _until_nothing_held(runner)
        await asyncio.sleep(0.2)
        assert _asked(model, "second") == 0 and _asked(model, "first") == 0
        assert HELD_NOTICE not in adapter.messages("c1")


async def test_a_turn_that_crashed_is_not_rerun_after_a_restart(tmp_path, model):
    # Fault injection: building the session fails. The user is told to try again, so the
    # message must not come back as a surprise answer after the next restart.
    async with runner_for(tmp_path, model, **QUEUE) as (runner, fake):
        async def broken(*_a, **_k):
            raise RuntimeError("disk on fire")

        runner.turns.sessions.new_session = broken
        await fake.inject("doomed", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: any("something went wrong" in m
                                        for m in fake.messages("c1")))
        await _until_nothing_held(runner)
    async with runner_for(tmp_path, model, **QUEUE) as (_runner, fake):
        await asyncio.sleep(0.2)
        assert _asked(model, "doomed") == 0


async def test_text_with_broken_unicode_is_held_too(tmp_path, model):
    from gateway.events import MessageEvent, UserRef

    async with runner_for(tmp_path, model) as (runner, _fake):
        event = MessageEvent(platform="fake", event_id="e1", chat_id="c1",
                             user=UserRef(id="u1"), text="half \ud800 a pair")
        assert await runner.inbox.hold(KEY, event) is True
        ((key, back, _at),) = await runner.inbox.held()
        assert key == KEY and back.text.startswith("half ") and back.text.endswith(" a pair")
        assert "\ud800" not in back.text


async def test_a_held_event_that_no_longer_parses_is_let_go_and_the_rest_recovered(
        tmp_path, model):
    """A payload written by another version (or damaged) must not block recovery of the others
    or come back on every start."""
    await _queue_behind_a_hanging_turn(tmp_path, model)
    db = sqlite3.connect(ProfilePaths(tmp_path).state_db)
    with db:
        db.execute("INSERT INTO inbound_events (platform, event_id, recorded_at, session_key,"
                   " held, held_seq) VALUES ('fake', 'broken-1', ?, ?, '{\"not\": \"an event\"}',"
                   " -1)", (time.time(), KEY))
    db.close()
    async with runner_for(tmp_path, model, **QUEUE) as (runner, fake):
        await fake.wait_for(lambda: _asked(model, "second") == 1, 10)
        await _until_nothing_held(runner)
    with sqlite3.connect(ProfilePaths(tmp_path).state_db) as db:
        broken = db.execute("SELECT held FROM inbound_events WHERE event_id = 'broken-1'"
                            ).fetchone()
    assert broken == (None,)  # released, the dedup record itself stays
