"""Start-up recovery of a turn a restart interrupted (RELIABILITY.md item 8)."""

from __future__ import annotations

from gateway.recovery import LOST_NOTICE, RESUME_NOTICE
from storage import StateStore
from tests.fakes.openai_server import hang, text
from tests.gateway.runtime_harness import KEY, Clock, runner_for, user_texts


async def _leave_unanswered(tmp_path, model, question: str = "what is 6 x 7?") -> str:
    """Run a gateway whose model hangs, stop it mid-turn; returns the session id."""
    model.enqueue(hang(60))
    async with runner_for(tmp_path, model, gateway__drain_timeout_s=0.1) as (runner, fake):
        await fake.inject(question, chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        session = await runner.store.find_by_session_key(KEY)
    model.requests.clear()
    return str(session.id)


async def test_recent_unanswered_message_is_rerun_with_notice(tmp_path, model):
    sid = await _leave_unanswered(tmp_path, model)
    model.enqueue(text("It is 42."))
    async with runner_for(tmp_path, model) as (runner, fake):
        await fake.wait_for(lambda: "It is 42." in fake.messages("c1"), 10)
        shown = fake.messages("c1")
        assert shown == [RESUME_NOTICE, "It is 42."]
        assert len(model.requests) == 1
        asked = model.requests[0].body["messages"]
        assert asked[-1] == {"role": "user", "content": "what is 6 x 7?"}
        # The user message was stored once (before the first model call), not again.
        assert await user_texts(runner, sid) == ["what is 6 x 7?"]
        history = await runner.store.load_history(sid)
        assert (history[-1]["role"], history[-1]["content"]) == ("assistant", "It is 42.")
    # A further restart has nothing left to recover.
    model.requests.clear()
    async with runner_for(tmp_path, model) as (_runner, fake):
        assert fake.messages("c1") == []
    assert model.requests == []


async def test_old_unanswered_message_gets_notice_only_once(tmp_path, model):
    sid = await _leave_unanswered(tmp_path, model)
    clock = Clock()
    clock.advance(2 * 3600)
    async with runner_for(tmp_path, model, clock=clock) as (runner, fake):
        await fake.wait_for(lambda: LOST_NOTICE in fake.messages("c1"), 10)
        assert fake.messages("c1") == [LOST_NOTICE]
        history = await runner.store.load_history(sid)
        assert [m["role"] for m in history] == ["user", "assistant"]
    async with runner_for(tmp_path, model, clock=clock) as (_runner, fake):
        assert fake.messages("c1") == []
    assert model.requests == []


async def test_reply_already_in_outbox_is_not_answered_twice(tmp_path, model):
    sid = await _leave_unanswered(tmp_path, model)
    # A crash after the final reply was recorded in the outbox, before it was sent.
    store = await StateStore.open(tmp_path / "state.db")
    try:
        await store.outbox_add(platform="fake", chat_id="c1", text="Already answered: 42.",
                               session_id=sid)
    finally:
        await store.close()
    async with runner_for(tmp_path, model) as (_runner, fake):
        await fake.wait_for(lambda: any("Already answered: 42." in m
                                        for m in fake.messages("c1")), 10)
        shown = fake.messages("c1")
        assert sum("Already answered: 42." in m for m in shown) == 1
        assert RESUME_NOTICE not in shown
    assert model.requests == []
    async with runner_for(tmp_path, model) as (_runner, fake):
        assert fake.messages("c1") == []
