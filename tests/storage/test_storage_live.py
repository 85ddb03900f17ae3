"""The turn's storage calls (append to the live tip, session + history in one read), usage
returning the guard state, and operations that run whole in the connection's thread."""

from __future__ import annotations

import asyncio

import pytest
from _storage_testlib import turn

from storage import (
    LiveCheck,
    OutboxDraft,
    Session,
    SessionMovedError,
    SessionNotFoundError,
    StateStore,
    UsageDelta,
)
from storage.sqlconn import Conn
from storage.syncconn import SuspendedOperationError


async def _rotated(store: StateStore) -> tuple[str, str]:
    parent = await store.create_session(source="fake", session_key="fake:dm:c1")
    await store.append_messages(parent.id, turn("old question", "old answer"))
    child = await store.create_session(source="fake", session_key="fake:dm:c1",
                                       parent_session_id=parent.id, lineage_kind="compression")
    await store.append_messages(child.id, [{"role": "user", "content": "summary"}])
    await store.end_session(parent.id, "compression")
    return parent.id, child.id


async def test_append_live_follows_a_rotation_to_the_tip(store: StateStore) -> None:
    parent, child = await _rotated(store)
    sid, ids = await store.append_live(parent, turn("late question", "late answer"))
    assert sid == child and len(ids) == 2
    assert [m["content"] for m in await store.load_history(child)] == [
        "summary", "late question", "late answer"]
    assert [m["content"] for m in await store.load_history(parent)] == [
        "old question", "old answer"]
    assert (await store.get_session(child)).message_count == 3


async def test_append_live_on_a_live_session_writes_there(store: StateStore) -> None:
    s = await store.create_session(source="fake")
    sid, ids = await store.append_live(s.id, turn("q", "a"))
    assert sid == s.id
    assert [m["_id"] for m in await store.load_history(s.id)] == ids


async def test_append_live_errors(store: StateStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.append_live("missing", turn("q", "a"))
    s = await store.create_session(source="fake")
    with pytest.raises(ValueError):
        await store.append_live(s.id, [{"content": "no role"}])
    assert await store.load_history(s.id) == []


async def test_live_history_reads_the_tip_and_its_transcript(store: StateStore) -> None:
    parent, child = await _rotated(store)
    session, history = await store.live_history(parent)
    assert session.id == child
    assert [m["content"] for m in history] == ["summary"]
    with pytest.raises(SessionNotFoundError):
        await store.live_history("missing")


async def test_append_and_read_stores_then_reads_the_tip_in_one_transaction(
        store: StateStore) -> None:
    parent, child = await _rotated(store)
    await store.inbound_hold("tg", "1", "fake:dm:c1", "{}")
    session, history, ids = await store.append_and_read(
        parent, [{"role": "user", "content": "late question"}], release=[("tg", "1")])
    assert session.id == child and len(ids) == 1
    assert [m["content"] for m in history] == ["summary", "late question"]
    assert history[-1]["_id"] == ids[0]
    assert await store.inbound_held() == []
    assert (await store.get_session(child)).message_count == 2
    # what a later read sees is the same transcript (the cache filled in the transaction)
    assert await store.live_history(parent) == (await store.get_session(child), history)
    history[-1]["content"] = "changed by the caller"
    _, again = await store.live_history(child)
    assert again[-1]["content"] == "late question"
    # cached now: stored and read inside the writer's transaction, the same result
    session, history, ids = await store.append_and_read(
        child, [{"role": "user", "content": "and another"}])
    assert session.id == child and history[-1]["_id"] == ids[0]
    assert [m["content"] for m in history] == ["summary", "late question", "and another"]
    assert await store.live_history(child) == (session, history)


async def test_append_and_read_errors_keep_the_hold(store: StateStore) -> None:
    await store.inbound_hold("tg", "1", "tg:dm:c1", "{}")
    with pytest.raises(SessionNotFoundError):
        await store.append_and_read("missing", [{"role": "user", "content": "q"}],
                                    release=[("tg", "1")])
    assert [h.event_id for h in await store.inbound_held()] == ["1"]
    s = await store.create_session(source="fake")
    with pytest.raises(ValueError):
        await store.append_and_read(s.id, [{"content": "no role"}])
    assert (await store.get_session(s.id)).message_count == 0
    assert (await store.append_and_read(s.id, []))[1:] == ([], [])


async def test_append_and_read_under_a_live_check_writes_only_to_the_keys_live_session(
        store: StateStore) -> None:
    parent, child = await _rotated(store)
    key = "fake:dm:c1"
    # the remembered session was rotated: its tip is the key's live session, written to
    session, history, ids = await store.append_and_read(
        parent, [{"role": "user", "content": "q1"}], check=LiveCheck(key))
    assert session.id == child and history[-1]["content"] == "q1" and len(ids) == 1
    # refused by the caller's own test of the row as stored now: nothing written
    seen: list[str] = []

    def refuse(s: Session) -> bool:
        seen.append(s.id)
        return False

    await store.inbound_hold("tg", "7", key, "{}")
    with pytest.raises(SessionMovedError):
        await store.append_and_read(child, [{"role": "user", "content": "q2"}],
                                    release=[("tg", "7")], check=LiveCheck(key, refuse))
    assert seen == [child]
    assert (await store.get_session(child)).message_count == 2
    assert [h.event_id for h in await store.inbound_held()] == ["7"]  # still held
    # ended behind the caller's back (another process): refused, nothing written
    await store.end_session(child, "archived")
    with pytest.raises(SessionMovedError):
        await store.append_and_read(child, [{"role": "user", "content": "q3"}],
                                    check=LiveCheck(key))
    # another session is the key's live one now: refused as well
    newer = await store.create_session(source="fake", session_key=key)
    with pytest.raises(SessionMovedError):
        await store.append_and_read(parent, [{"role": "user", "content": "q4"}],
                                    check=LiveCheck(key))
    assert [m["content"] for m in await store.load_history(child)] == ["summary", "q1"]
    assert await store.load_history(newer.id) == []


async def test_append_with_final_records_the_reply_and_the_messages_in_one_transaction(
        store: StateStore) -> None:
    parent, child = await _rotated(store)
    draft = OutboxDraft(platform="tg", chat_id="1", text="late answer", session_id=parent,
                        chat_type="dm", reply_to="m9", preview_message_id="p1",
                        attachments=({"path": "/x.png"},), claimed_by="boot")
    sid, ids, outbox_id, guard = await store.append_with_final(parent, turn("q", "late answer"),
                                                               draft)
    assert sid == child and len(ids) == 2 and guard is None
    row = await store.outbox_get(outbox_id)
    assert (row.state, row.text, row.session_id, row.reply_to, row.preview_message_id,
            row.chat_type, row.attachments) == (
        "pending", "late answer", parent, "m9", "p1", "dm", [{"path": "/x.png"}])
    assert [m["content"] for m in await store.load_history(child)][-2:] == ["q", "late answer"]
    # a message that cannot be stored: the reply is not recorded either
    with pytest.raises(ValueError):
        await store.append_with_final(child, [{"content": "no role"}], draft)
    assert await store.outbox_latest_for_session(parent) == row
    with pytest.raises(SessionNotFoundError):
        await store.append_with_final("missing", turn("q", "a"), draft)
    assert await store.outbox_latest_for_session("missing") is None


async def test_the_turns_usage_goes_with_its_reply_to_the_session_written_to(
        store: StateStore) -> None:
    parent, child = await _rotated(store)
    await store.update_guard(child, last_prompt_tokens=700)
    draft = OutboxDraft(platform="tg", chat_id="1", text="answer", session_id=parent)
    usage = UsageDelta(input_tokens=900, output_tokens=12, cache_read_tokens=100,
                       reasoning_tokens=4, api_calls=2, last_prompt_tokens=600)
    stored = await store.append_with_final(parent, turn("q", "answer"), draft, usage=usage)
    assert stored.session_id == child
    assert stored.guard is not None and stored.guard.last_prompt_tokens == 700  # before it
    row = await store.get_session(child)
    assert (row.input_tokens, row.output_tokens, row.cache_read_tokens, row.reasoning_tokens,
            row.api_call_count, row.message_count) == (900, 12, 100, 4, 2, 3)
    assert (await store.get_guard(child)).last_prompt_tokens == 600
    assert (await store.get_session(parent)).input_tokens == 0  # not the ended parent
    # a message that cannot be stored: neither the reply nor the usage is
    with pytest.raises(ValueError):
        await store.append_with_final(child, [{"content": "no role"}], draft, usage=usage)
    assert (await store.get_session(child)).input_tokens == 900
    assert (await store.outbox_get(stored.outbox_id)).text == "answer"


async def test_add_usage_returns_the_guard_state_from_before(store: StateStore) -> None:
    s = await store.create_session(source="fake")
    await store.update_guard(s.id, last_prompt_tokens=800, ineffective_count=1)
    before = await store.add_usage(s.id, input_tokens=5000, output_tokens=3,
                                   last_prompt_tokens=5000)
    assert before.last_prompt_tokens == 800 and before.ineffective_count == 1
    after = await store.get_guard(s.id)
    assert after.last_prompt_tokens == 5000
    assert (await store.get_session(s.id)).input_tokens == 5000
    with pytest.raises(SessionNotFoundError):
        await store.add_usage("missing", input_tokens=1)


@pytest.mark.sqlite_only
async def test_an_operation_that_suspends_fails_alone(store: StateStore) -> None:
    s = await store.create_session(source="fake")

    async def bad(conn: Conn) -> None:
        await conn.execute("UPDATE sessions SET title = 'half-done' WHERE id = ?", (s.id,))
        await asyncio.sleep(0)  # not a connection call: refused, and its write undone

    results = await asyncio.gather(
        store.append_messages(s.id, turn("keep 1", "ok")),
        store._write(bad),
        store.append_messages(s.id, turn("keep 2", "ok")),
        return_exceptions=True,
    )
    assert isinstance(results[1], SuspendedOperationError)
    assert [m["content"] for m in await store.load_history(s.id)] == [
        "keep 1", "ok", "keep 2", "ok"]
    assert (await store.get_session(s.id)).title is None



async def test_held_events_keep_their_order_and_are_released_with_their_message(
        store: StateStore) -> None:
    await store.record_if_new("tg", "1")
    await store.inbound_hold("tg", "1", "tg:dm:c1", '{"text": "one"}')
    await store.inbound_hold("tg", "2", "tg:dm:c1", '{"text": "two"}')  # not recorded before
    await store.inbound_hold("tg", "3", "tg:dm:c2", '{"text": "three"}')
    await store.inbound_hold("tg", "1", "tg:dm:c1", '{"text": "one again"}')  # keeps its place
    held = await store.inbound_held()
    assert [(h.event_id, h.session_key, h.payload) for h in held] == [
        ("1", "tg:dm:c1", '{"text": "one again"}'), ("2", "tg:dm:c1", '{"text": "two"}'),
        ("3", "tg:dm:c2", '{"text": "three"}')]
    assert await store.record_if_new("tg", "2") is False  # holding also records the event
    s = await store.create_session(source="tg")
    await store.append_live(s.id, turn("one", "ok"), release=[("tg", "1"), ("tg", "9")])
    assert [h.event_id for h in await store.inbound_held()] == ["2", "3"]
    await store.inbound_release([("tg", "3")])
    assert [h.event_id for h in await store.inbound_held()] == ["2"]


async def test_a_failed_append_keeps_the_hold(store: StateStore) -> None:
    await store.inbound_hold("tg", "1", "tg:dm:c1", "{}")
    with pytest.raises(SessionNotFoundError):
        await store.append_live("missing", turn("q", "a"), release=[("tg", "1")])
    assert [h.event_id for h in await store.inbound_held()] == ["1"]


async def test_a_held_event_is_claimed_by_one_boot_once(store: StateStore) -> None:
    """Issue 15: the live path holds and claims in one statement; recovery claims only what
    no session of its own boot took, once; the live path does not take what recovery of its
    boot took; a release clears the claim with the hold."""
    assert await store.inbound_hold("tg", "old", "tg:dm:c1", '{"t": "old"}',
                                    claimed_by="boot-1") is True
    assert await store.inbound_hold("tg", "new", "tg:dm:c1", '{"t": "new"}',
                                    claimed_by="boot-2") is True
    claimed = await store.inbound_claim_held("boot-2")
    assert [h.event_id for h in claimed] == ["old"]  # not "new": boot 2's live path has it
    assert await store.inbound_claim_held("boot-2") == []  # a second scan takes nothing
    assert await store.inbound_hold("tg", "old", "tg:dm:c1", '{"t": "old"}',
                                    claimed_by="boot-2") is False  # recovery of boot 2 has it
    assert [h.event_id for h in await store.inbound_held()] == ["old", "new"]
    await store.inbound_release([("tg", "old"), ("tg", "new")])
    assert await store.inbound_held() == []
    assert await store.inbound_hold("tg", "new", "tg:dm:c1", "{}", claimed_by="boot-2") is True
    assert [h.event_id for h in await store.inbound_claim_held("boot-3")] == ["new"]


async def test_a_dedup_record_cut_off_before_its_hold_counts_as_new_once(
        store: StateStore) -> None:
    assert await store.record_if_new("tg", "1", claimed_by="boot-1") is True
    assert await store.record_if_new("tg", "1", claimed_by="boot-1") is False  # same boot
    assert await store.record_if_new("tg", "1") is False  # no claimer: a plain repeat
    assert await store.record_if_new("tg", "1", claimed_by="boot-2") is True  # boot 1 died
    assert await store.record_if_new("tg", "1", claimed_by="boot-3") is True  # boot 2 too
    await store.inbound_settle([("tg", "1")])
    assert await store.record_if_new("tg", "1", claimed_by="boot-4") is False  # settled
    assert await store.record_if_new("tg", "2", claimed_by="boot-1") is True
    await store.inbound_hold("tg", "2", "tg:dm:c1", "{}", claimed_by="boot-1")
    assert await store.record_if_new("tg", "2", claimed_by="boot-2") is False  # held: recovery's
    s = await store.create_session(source="tg")
    await store.append_live(s.id, turn("two", "ok"), release=[("tg", "2")])
    assert await store.record_if_new("tg", "2", claimed_by="boot-2") is False  # stored
