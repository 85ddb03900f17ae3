"""Slash commands end to end through FakeAdapter: what the user sees and what is in state.db."""

from __future__ import annotations

import asyncio

from tests.fakes.openai_server import hang, text
from tests.gateway.runtime_harness import KEY, runner_for, user_texts


async def _cmd(fake, command: str, expect: str, *, chat_id: str = "c1",
               user_id: str = "u1") -> str:
    """Send `command`; return the first new bot message containing `expect`."""
    before = len(fake.messages(chat_id))
    await fake.inject(command, chat_id=chat_id, user_id=user_id)
    await fake.wait_for(lambda: any(expect in m for m in fake.messages(chat_id)[before:]), 10)
    return next(m for m in fake.messages(chat_id)[before:] if expect in m)


async def _turn(fake, msg: str, _n: int = 0, *, chat_id: str = "c1",
                user_id: str = "u1") -> None:
    """Send a message and wait until the gateway finished answering it."""
    ev, _ = await fake.inject(msg, chat_id=chat_id, user_id=user_id)
    await fake.wait_for(lambda: any(t.reply_to == ev.message_id
                                    for t in fake.turns_completed), 10)


async def test_help_and_whoami(tmp_path, model):
    async with runner_for(tmp_path, model) as (_runner, fake):
        help_text = await _cmd(fake, "/help", "Commands:")
        for name in ("/new", "/stop", "/status", "/compress", "/undo", "/branch", "/title",
                     "/sessions", "/resume", "/whoami"):
            assert name in help_text
        who = await _cmd(fake, "/whoami", "You are")
        assert "id u1" in who and "fake" in who and "allow-list" in who
    assert model.requests == []  # commands never reach the model


async def test_title_set_show_and_duplicate_refused(tmp_path, model):
    async with runner_for(tmp_path, model) as (runner, fake):
        await _turn(fake, "hello", 1)
        assert "Title set: Trip plans" in await _cmd(fake, "/title Trip plans", "Title")
        assert await _cmd(fake, "/title", "Title:") == "Title: Trip plans"
        s1 = await runner.store.find_by_session_key(KEY)
        assert s1.title == "Trip plans"
        # Titles are unique among a user's own sessions: a new session of u1 cannot take it,
        # and the refusal names no session id.
        await _cmd(fake, "/new", "New session")
        await _turn(fake, "again")
        refused = await _cmd(fake, "/title Trip plans", "title")
        assert refused == ("Could not set the title: another session here is already called "
                           "“Trip plans”.")
        assert (await runner.store.find_by_session_key(KEY)).title is None
        # Another user's sessions are another scope: the same name is free there.
        await _turn(fake, "hi", chat_id="c2", user_id="u2")
        assert "Title set" in await _cmd(fake, "/title Trip plans", "Title set", chat_id="c2",
                                         user_id="u2")
        s2 = await runner.store.find_by_session_key("fake:dm:c2")
        assert s2.title == "Trip plans"


async def test_title_as_the_first_message_names_the_session_that_follows(tmp_path, model):
    model.enqueue(text("Sure, let us plan."))
    async with runner_for(tmp_path, model) as (runner, fake):
        reply = await _cmd(fake, "/title Garden", "Title")
        assert reply.startswith("🏷 Title set: Garden")
        started = await runner.store.find_by_session_key(KEY)
        assert started is not None and started.title == "Garden"
        await _turn(fake, "plan the beds")
        s = await runner.store.find_by_session_key(KEY)
        assert s.id == started.id and s.title == "Garden"
        assert await user_texts(runner, s.id) == ["plan the beds"]


async def test_undo_marks_rows_inactive_and_hides_them_from_search(tmp_path, model):
    model.enqueue(text("Noted the zebra."), text("Noted the pelican."))
    async with runner_for(tmp_path, model) as (runner, fake):
        await _turn(fake, "remember zebra", 1)
        await _turn(fake, "remember pelican", 2)
        sid = (await runner.store.find_by_session_key(KEY)).id
        reply = await _cmd(fake, "/undo 1", "Removed")
        assert "remember pelican" in reply
        assert await user_texts(runner, sid) == ["remember zebra"]
        rows = await runner.store.load_all(sid)
        assert [(m["content"], m["_active"]) for m in rows] == [
            ("remember zebra", True), ("Noted the zebra.", True),
            ("remember pelican", False), ("Noted the pelican.", False)]
        assert await runner.store.search("pelican") == []
        assert await runner.store.search("zebra") != []
        # The next turn does not show the undone exchange to the model.
        await _turn(fake, "what do you remember?", 3)
        contents = [m.get("content") for m in model.requests[-1].body["messages"]]
        assert "remember pelican" not in contents and "remember zebra" in contents


async def test_branch_then_resume_back(tmp_path, model):
    async with runner_for(tmp_path, model) as (runner, fake):
        await _turn(fake, "base question", 1)
        parent = await runner.store.find_by_session_key(KEY)
        reply = await _cmd(fake, "/branch Experiment", "Branched")
        child = await runner.store.find_by_session_key(KEY)
        assert child.id != parent.id and child.id in reply
        assert child.parent_session_id == parent.id and child.lineage_kind == "branch"
        assert child.title == "Experiment"
        ended = await runner.store.get_session(parent.id)
        assert ended.end_reason == "branched"
        # The branch carries the conversation so far.
        assert await user_texts(runner, child.id) == ["base question"]
        await _turn(fake, "branch only", 2)
        assert await user_texts(runner, parent.id) == ["base question"]

        listing = await _cmd(fake, "/sessions", "Recent sessions")
        assert parent.id in listing and child.id in listing and "Experiment" in listing

        await _cmd(fake, f"/resume {parent.id}", "Resumed")
        live = await runner.store.find_by_session_key(KEY)
        assert live.id == parent.id and live.ended_at is None
        assert (await runner.store.get_session(child.id)).end_reason == "switched"
        await _turn(fake, "back on main", 3)
        assert await user_texts(runner, parent.id) == ["base question", "back on main"]


async def test_compress_preview_writes_nothing_then_compress_rotates(tmp_path, model):
    async with runner_for(tmp_path, model) as (runner, fake):
        for i in range(4):
            await _turn(fake, f"question number {i} " + "detail " * 30, i + 1)
        await _cmd(fake, "/title Long talk", "Title set")
        before = await runner.store.find_by_session_key(KEY)
        rows_before = await runner.store.load_all(before.id)
        asked = len(model.requests)

        preview = await _cmd(fake, "/compress --preview", "Preview")
        assert preview.startswith("🔍")
        same = await runner.store.find_by_session_key(KEY)
        assert same.id == before.id and same.compression_count == before.compression_count
        assert await runner.store.load_all(before.id) == rows_before
        assert len(model.requests) == asked  # no summary was requested

        done = await _cmd(fake, "/compress", "Compress")
        assert done.startswith("🗜 Compressed"), done
        child = await runner.store.find_by_session_key(KEY)
        assert child.id != before.id and child.id in done
        assert child.parent_session_id == before.id and child.lineage_kind == "compression"
        assert (await runner.store.get_session(before.id)).end_reason == "compression"
        # History is kept: the parent's rows are all still there.
        assert len(await runner.store.load_all(before.id)) >= len(rows_before)

        # /resume by the lineage's title reaches the tip, even from another session.
        await _cmd(fake, "/new", "New session")
        await _cmd(fake, "/resume Long talk", "Resumed")
        assert (await runner.store.find_by_session_key(KEY)).id == child.id


async def test_busy_session_refuses_undo_but_status_and_stop_work(tmp_path, model):
    model.enqueue(hang(60))
    async with runner_for(tmp_path, model) as (runner, fake):
        await fake.inject("long job", chat_id="c1", user_id="u1")
        await fake.wait_for(lambda: len(model.requests) == 1)
        refused = await _cmd(fake, "/undo", "/stop first")
        assert refused.startswith("⏳")
        status = await _cmd(fake, "/status", "State:")
        assert "State: working" in status
        sid = (await runner.store.find_by_session_key(KEY)).id
        assert await user_texts(runner, sid) == ["long job"]  # /undo did nothing
        await _cmd(fake, "/stop", "Stopped")
        await fake.wait_for(lambda: not runner.manager.is_busy(KEY), 10)
        assert "State: idle" in await _cmd(fake, "/status", "State:")
        await asyncio.sleep(0)
        assert len(model.requests) == 1
