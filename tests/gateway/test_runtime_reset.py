"""Session reset policies (idle / daily / both) with a controllable clock, full stack."""

from __future__ import annotations

import datetime as dt

import pytest

from gateway.turns import QUIET_MEMORY_PROMPT
from tests.fakes.openai_server import text
from tests.gateway.runtime_harness import KEY, Clock, runner_for, user_texts


def _daily_hour_crossed_within(hours: float) -> int:
    """A local hour whose boundary lies between now and now + `hours` (> 1)."""
    return (dt.datetime.now() + dt.timedelta(hours=1)).hour


CASES = [
    # (mode, jump seconds, why the reset happens)
    ("idle", 25 * 3600, "idle for more than"),
    ("both", 25 * 3600, "idle for more than"),
    ("daily", 2 * 3600, "daily reset at"),
    ("both", 2 * 3600, "daily reset at"),
]


@pytest.mark.parametrize(("mode", "jump", "why"), CASES)
async def test_reset_policy_starts_new_session_after_quiet_memory_turn(
        tmp_path, model, mode, jump, why):
    clock = Clock()
    model.enqueue(text("First answer."), text("QUIET-MEMORY-OK"), text("Fresh answer."))
    async with runner_for(tmp_path, model, clock=clock, gateway__session_reset={
            "mode": mode, "idle_minutes": 1440,
            "daily_hour": _daily_hour_crossed_within(2)}) as (runner, fake):
        await fake.inject("remember I like tea", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        old = await runner.store.find_by_session_key(KEY)

        clock.advance(jump)
        await fake.inject("good morning", chat_id="c1", user_id="u1")
        await fake.wait_turns(2)
        await fake.wait_for(lambda: "Fresh answer." in fake.messages("c1"))

        shown = fake.messages("c1")
        # The user is told, before the answer; the quiet turn's output is never delivered.
        notices = [m for m in shown if m.startswith("♻️")]
        assert len(notices) == 1 and why in notices[0]
        assert shown.index(notices[0]) < shown.index("Fresh answer.")
        assert not any("QUIET-MEMORY-OK" in m for m in shown)

        # The model got the memory-save prompt on top of the old conversation.
        quiet = model.requests[1].body["messages"]
        assert quiet[-1] == {"role": "user", "content": QUIET_MEMORY_PROMPT}
        assert any(m.get("content") == "remember I like tea" for m in quiet)
        # The new session starts clean: the old conversation is not in its history.
        fresh = model.requests[2].body["messages"]
        assert [m["content"] for m in fresh if m["role"] == "user"] == ["good morning"]
        assert len(model.requests) == 3

        ended = await runner.store.get_session(old.id)
        assert ended.ended_at is not None and ended.end_reason == "session_reset"
        new = await runner.store.find_by_session_key(KEY)
        assert new.id != old.id and new.ended_at is None
        assert await user_texts(runner, new.id) == ["good morning"]
        # Exactly one new session was made (the reset is applied once per turn).
        sessions = [s for s in await runner.store.list_sessions(limit=10)
                    if s.session_key == KEY]
        assert len(sessions) == 2


async def test_no_reset_without_policy_or_inside_the_window(tmp_path, model):
    clock = Clock()
    async with runner_for(tmp_path, model, clock=clock, gateway__session_reset={
            "mode": "idle", "idle_minutes": 60}) as (runner, fake):
        await fake.inject("one", chat_id="c1", user_id="u1")
        await fake.wait_turns(1)
        first = await runner.store.find_by_session_key(KEY)
        clock.advance(30 * 60)
        await fake.inject("two", chat_id="c1", user_id="u1")
        await fake.wait_turns(2)
        same = await runner.store.find_by_session_key(KEY)
        assert same.id == first.id
        assert await user_texts(runner, same.id) == ["one", "two"]
        assert not any(m.startswith("♻️") for m in fake.messages("c1"))
        assert all(QUIET_MEMORY_PROMPT not in str(r.body) for r in model.requests)
