"""Inbound dedup, outbox, cursors, unreachable chats, pairing."""

from __future__ import annotations

from _storage_testlib import FakeClock

from storage import StateStore


async def test_record_if_new_is_durable(store: StateStore, clock: FakeClock, reopen) -> None:  # type: ignore[no-untyped-def]
    assert await store.record_if_new("telegram", "100") is True
    assert await store.record_if_new("telegram", "100") is False
    assert await store.record_if_new("slack", "100") is True
    await store.close()
    reopened = await reopen()
    try:
        assert await reopened.record_if_new("telegram", "100") is False
        clock.advance(8 * 86400)
        assert await reopened.record_if_new("telegram", "101") is True
        counts = await reopened.prune_ledgers(clock() - 7 * 86400)
        assert counts["inbound_events"] == 2
        assert await reopened.record_if_new("telegram", "101") is False
    finally:
        await reopened.close()


async def test_outbox_transitions(store: StateStore, clock: FakeClock) -> None:
    a = await store.outbox_add(platform="telegram", chat_id="1", text="hello", thread_id="7",
                               reply_to="55")
    b = await store.outbox_add(platform="telegram", chat_id="1", text="second")
    assert [i.id for i in await store.outbox_undelivered()] == [a, b]
    assert await store.outbox_mark_sent(a, ["900", "901"]) is True
    item = await store.outbox_get(a)
    assert item is not None and item.state == "sent" and item.platform_message_ids == ["900", "901"]
    assert item.attempts == 1 and item.thread_id == "7" and item.reply_to == "55"
    assert await store.outbox_mark_delivered([a]) == 1
    assert await store.outbox_mark_delivered([a]) == 0  # delivered is final
    assert await store.outbox_mark_sent(a, ["x"]) is False
    await store.outbox_record_attempt(b, "timeout")
    assert (await store.outbox_get(b)).attempts == 1  # type: ignore[union-attr]
    clock.advance(3600)
    assert await store.outbox_undelivered(max_age=60) == []
    assert [i.id for i in await store.outbox_undelivered()] == [b]
    assert await store.outbox_mark_expired([b]) == 1
    c = await store.outbox_add(platform="slack", chat_id="C1", text="x")
    assert await store.outbox_mark_failed(c, "forbidden") is True
    failed = await store.outbox_get(c)
    assert failed is not None and failed.state == "failed" and failed.last_error == "forbidden"
    assert await store.outbox_undelivered() == []


async def test_cursors_and_unreachable(store: StateStore) -> None:
    assert await store.get_cursor("telegram:offset") is None
    await store.set_cursor("telegram:offset", 41)
    await store.set_cursor("telegram:offset", 42)
    assert await store.get_cursor("telegram:offset") == "42"
    assert await store.is_unreachable("telegram", "1") is False
    await store.mark_unreachable("telegram", "1", "bot was blocked")
    assert await store.is_unreachable("telegram", "1") is True
    assert await store.clear_unreachable("telegram", "1") is True
    assert await store.is_unreachable("telegram", "1") is False


async def test_pairing_codes_hashed_expire_and_approve(
    store: StateStore, clock: FakeClock, sql_rows  # type: ignore[no-untyped-def]
) -> None:
    code = await store.create_pairing_code("telegram", "u1", display="Ann", ttl=3600)
    assert len(code) == 8
    stored = [r[0] for r in await sql_rows("SELECT code_hash FROM pairing_codes")]
    assert stored and code not in stored[0]
    pending = await store.pending_pairing_codes("telegram")
    assert [p.user_id for p in pending] == ["u1"]
    assert await store.count_pairing_codes_since("telegram", "u1", clock.now - 3600) == 1
    assert await store.approve_pairing_code("slack", code) is None  # other platform
    approved = await store.approve_pairing_code("telegram", code.lower())
    assert approved is not None and approved.user_id == "u1" and approved.display == "Ann"
    assert await store.is_approved("telegram", "u1") is True
    assert await store.approve_pairing_code("telegram", code) is None  # single use
    assert await store.pending_pairing_codes() == []
    late = await store.create_pairing_code("telegram", "u2", ttl=60)
    clock.advance(61)
    assert await store.approve_pairing_code("telegram", late) is None
    assert await store.is_approved("telegram", "u2") is False
    assert await store.revoke_user("telegram", "u1") is True
    assert await store.is_approved("telegram", "u1") is False


async def test_prune_ledgers_keeps_what_is_still_needed(store: StateStore,
                                                        clock: FakeClock) -> None:
    done = await store.outbox_add(platform="telegram", chat_id="1", text="old reply")
    await store.outbox_mark_delivered([done])
    waiting = await store.outbox_add(platform="telegram", chat_id="1", text="never sent")
    for i in range(7):
        await store.record_if_new("telegram", str(i))
    await store.inbound_hold("telegram", "held", "telegram:dm:1", "{}")
    await store.create_pairing_code("telegram", "u9", ttl=3600)
    clock.advance(10 * 86400)
    fresh = await store.outbox_add(platform="telegram", chat_id="1", text="new reply")
    await store.outbox_mark_delivered([fresh])
    await store.record_if_new("telegram", "new")
    counts = await store.prune_ledgers(clock() - 7 * 86400, batch=3)
    assert counts == {"inbound_events": 7, "outbox": 1, "pairing_codes": 1}
    assert await store.outbox_get(done) is None
    assert (await store.outbox_get(waiting)).state == "pending"  # still owed to the chat
    assert (await store.outbox_get(fresh)).state == "delivered"
    assert [h.event_id for h in await store.inbound_held()] == ["held"]
    assert await store.record_if_new("telegram", "new") is False
    assert await store.record_if_new("telegram", "0") is True  # forgotten after the window
