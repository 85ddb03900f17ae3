"""Replicas on one database (schema v9), on both backends: session leases with fencing
tokens and takeover, the handover queue (held events claimed in line by the owner), the
session fence on the turn's writes, heartbeats, retirement and leader leases.

Two store handles on one database stand for two replicas (each its own writer)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from _storage_testlib import FakeClock

from storage import EventPendingError, FenceRejected, StateStore
from storage.fencing import SessionFence, fenced
from storage.types import OutboxDraft, UsageDelta

TTL = 10.0


async def _session(store: StateStore, key: str = "k") -> str:
    return (await store.create_session(source="telegram", session_key=key)).id


async def test_one_owner_at_a_time_and_a_takeover_after_expiry(
        store: StateStore, reopen: Callable[[], Awaitable[StateStore]],
        clock: FakeClock) -> None:
    other = await reopen()
    try:
        a = await store.session_admit("ra", "k", "telegram", "1", "one", ttl=TTL)
        assert a.held and a.lease is not None and a.lease.fresh and not a.lease.takeover
        assert [c.held.payload for c in a.events] == ["one"]
        assert not a.events[0].recovered
        # replica b gets an event of the same session: it stays in line, a is named owner
        b = await other.session_admit("rb", "k", "telegram", "2", "two", ttl=TTL)
        assert b.held and b.lease is None and b.owner == "ra" and b.events == ()
        # the owner claims the line: only what it has not claimed yet, in order
        again = await store.session_take("ra", "k", ttl=TTL)
        assert again.lease is not None and again.lease.token == a.lease.token
        assert not again.lease.fresh
        assert [c.held.payload for c in again.events] == ["two"]
        clock.advance(TTL + 1)  # ra dies: its lease runs out unreleased
        taken = await other.session_take("rb", "k", ttl=TTL)
        assert taken.lease is not None and taken.lease.takeover
        assert taken.lease.prev_holder == "ra" and taken.lease.token > a.lease.token
        # both events were in ra's mailbox: the new owner takes them over, in line order
        assert [(c.held.payload, c.recovered) for c in taken.events] == [
            ("one", True), ("two", True)]
    finally:
        await other.close()


async def test_a_released_lease_is_free_at_once_and_no_takeover(store: StateStore) -> None:
    a = await store.session_take("ra", "k", ttl=TTL)
    assert a.lease is not None
    assert await store.session_release("ra", "k", a.lease.token)
    assert await store.session_lease_of("k") is None
    b = await store.session_take("rb", "k", ttl=TTL)
    assert b.lease is not None and b.lease.fresh and not b.lease.takeover
    assert b.lease.token > a.lease.token
    assert not await store.session_release("ra", "k", a.lease.token)  # never another's


async def test_the_fence_refuses_the_turn_writes_of_a_replica_that_lost_the_session(
        store: StateStore, clock: FakeClock, sql_rows: Callable[..., Awaitable[list]]) -> None:
    sid = await _session(store)
    a = await store.session_admit("ra", "k", "telegram", "1", "hello", ttl=TTL)
    assert a.lease is not None
    fence = SessionFence("k", "ra", a.lease.token)
    with fenced(fence):
        await store.append_live(sid, [{"role": "user", "content": "stored"}])
    clock.advance(TTL + 1)
    b = await store.session_take("rb", "k", ttl=TTL)
    assert b.lease is not None and b.lease.takeover
    with fenced(fence), pytest.raises(FenceRejected) as rejected:
        await store.append_live(sid, [{"role": "assistant", "content": "late"}],
                                release=[("telegram", "1")])
    assert rejected.value.outcome == "lease_lost"
    with fenced(fence), pytest.raises(FenceRejected):
        await store.outbox_add(platform="telegram", chat_id="1", text="late reply",
                               session_id=sid, claimed_by="ra")
    # nothing of the late turn is stored, and its event is still held for the new owner
    assert [m["content"] for m in await store.load_history(sid)] == ["stored"]
    assert await store.outbox_latest_for_session(sid) is None
    assert [h.event_id for h in await store.inbound_held()] == ["1"]
    with fenced(SessionFence("k", "rb", b.lease.token)):
        await store.append_live(sid, [{"role": "assistant", "content": "answer"}],
                                release=[("telegram", "1")])
    assert await store.inbound_held() == []
    assert (await sql_rows("SELECT COUNT(*) FROM messages"))[0][0] == 2


async def test_a_fenced_turn_records_its_reply_and_its_messages_together_or_neither(
        store: StateStore, clock: FakeClock) -> None:
    sid = await _session(store)
    a = await store.session_admit("ra", "k", "telegram", "1", "hello", ttl=TTL)
    assert a.lease is not None
    fence = SessionFence("k", "ra", a.lease.token)
    draft = OutboxDraft(platform="telegram", chat_id="1", text="late reply", session_id=sid,
                        claimed_by="ra")
    clock.advance(TTL + 1)
    b = await store.session_take("rb", "k", ttl=TTL)
    assert b.lease is not None and b.lease.takeover
    with fenced(fence), pytest.raises(FenceRejected):
        await store.append_with_final(sid, [{"role": "assistant", "content": "late"}], draft,
                                      release=[("telegram", "1")],
                                      usage=UsageDelta(input_tokens=50, output_tokens=5))
    assert await store.load_history(sid) == []
    assert (await store.get_session(sid)).input_tokens == 0  # its usage undone with it
    assert await store.outbox_latest_for_session(sid) is None
    assert [h.event_id for h in await store.inbound_held()] == ["1"]
    with fenced(SessionFence("k", "rb", b.lease.token)):
        _, ids, outbox_id, _ = await store.append_with_final(
            sid, [{"role": "assistant", "content": "answer"}],
            OutboxDraft(platform="telegram", chat_id="1", text="answer", session_id=sid,
                        claimed_by="rb"), release=[("telegram", "1")])
    assert len(ids) == 1 and (await store.outbox_get(outbox_id)).text == "answer"
    assert await store.inbound_held() == []


async def test_heartbeat_renews_what_is_held_and_retire_hands_it_over(
        store: StateStore, clock: FakeClock) -> None:
    start = clock()
    hb = await store.replica_heartbeat("ra", host="h", home="/p", pid=1, started_at=start,
                                       ttl=TTL)
    assert hb.alive and hb.sessions == {}
    a = await store.session_take("ra", "k", ttl=TTL)
    assert a.lease is not None
    assert await store.leader_acquire("telegram:x", "ra", ttl=TTL) == 1
    clock.advance(TTL - 1)
    hb = await store.replica_heartbeat("ra", host="h", home="/p", pid=1, started_at=start,
                                       ttl=TTL)
    assert hb.sessions == {"k": a.lease.token} and hb.roles == {"telegram:x": 1}
    clock.advance(TTL - 1)  # past the first expiry: still held, it was renewed
    assert await store.session_take("rb", "k", ttl=TTL) == type(a)(owner="ra")
    assert await store.leader_acquire("telegram:x", "rb", ttl=TTL) is None
    [info] = await store.replicas_list()
    assert (info.id, info.live, info.sessions, info.roles) == ("ra", True, 1, ("telegram:x",))
    # a successor on the same host and profile retires ra: its leases are taken over now
    assert await store.replicas_retire("rb", host="h", home="/p") == ["ra"]
    taken = await store.session_take("rb", "k", ttl=TTL)
    assert taken.lease is not None and taken.lease.takeover and taken.lease.prev_holder == "ra"
    assert await store.leader_acquire("telegram:x", "rb", ttl=TTL) == 2
    assert not (await store.replica_heartbeat("ra", host="h", home="/p", pid=1,
                                              started_at=start, ttl=TTL)).alive
    assert await store.replicas_list() == []


async def test_a_clean_stop_releases_everything(store: StateStore) -> None:
    await store.replica_heartbeat("ra", host="h", home="/p", pid=1, started_at=0.0, ttl=TTL)
    await store.session_take("ra", "k", ttl=TTL)
    await store.leader_acquire("slack:x", "ra", ttl=TTL)
    await store.replica_stop("ra")
    assert await store.session_lease_of("k") is None
    assert await store.leader_of("slack:x") is None
    taken = await store.session_take("rb", "k", ttl=TTL)
    assert taken.lease is not None and not taken.lease.takeover


async def test_a_clean_stop_leaves_a_cut_off_session_to_a_takeover(store: StateStore) -> None:
    await store.replica_heartbeat("ra", host="h", home="/p", pid=1, started_at=0.0, ttl=TTL)
    await store.session_take("ra", "cut", ttl=TTL)
    await store.session_take("ra", "idle", ttl=TTL)
    await store.replica_stop("ra", unfinished=["cut", "never-held"])
    assert await store.session_lease_of("idle") is None
    assert await store.session_lease_of("never-held") is None
    assert {i.session_key for i in await store.session_sweep("rb", stale_after=5)} == {"cut"}
    taken = await store.session_take("rb", "cut", ttl=TTL)
    assert taken.lease is not None and taken.lease.takeover and taken.lease.prev_holder == "ra"
    idle = await store.session_take("rb", "idle", ttl=TTL)
    assert idle.lease is not None and not idle.lease.takeover


async def test_sweep_finds_orphan_lines_expired_owners_and_missed_wakeups(
        store: StateStore, clock: FakeClock) -> None:
    # "free": an event held while nobody owns the session (take=False: intake not open)
    await store.session_admit("ra", "free", "telegram", "1", "x", ttl=TTL, take=False)
    await store.session_take("rb", "dead", ttl=TTL)
    await store.session_take("rb", "busy", ttl=TTL)
    await store.session_admit("ra", "busy", "telegram", "2", "y", ttl=TTL, take=True)
    assert {(i.session_key, i.owner) for i in
            await store.session_sweep("ra", stale_after=5)} == {("free", None)}
    clock.advance(6)  # busy's event waited unclaimed too long: its owner is woken again
    assert {(i.session_key, i.owner) for i in
            await store.session_sweep("ra", stale_after=5)} == {("free", None), ("busy", "rb")}
    clock.advance(TTL)  # rb died: both its sessions need a new owner
    assert {(i.session_key, i.owner) for i in
            await store.session_sweep("ra", stale_after=5)} == {
        ("free", None), ("busy", None), ("dead", None)}


async def test_dedup_leaves_a_live_replicas_claim_alone(store: StateStore,
                                                        clock: FakeClock) -> None:
    await store.replica_heartbeat("ra", host="h", home="/a", pid=1, started_at=0.0, ttl=TTL)
    assert await store.record_if_new("telegram", "9", claimed_by="ra")
    # rb gets the platform's retry of the same update while ra is still on it: not a repeat
    # yet (ra may still fail to hold it), so not to be acknowledged
    with pytest.raises(EventPendingError):
        await store.record_if_new("telegram", "9", claimed_by="rb")
    clock.advance(TTL + 1)  # ra died between the record and the hold: new once more
    assert await store.record_if_new("telegram", "9", claimed_by="rb")
    # once held (or settled), a retry is a repeat, wherever it lands
    await store.inbound_settle([("telegram", "9")])
    assert not await store.record_if_new("telegram", "9", claimed_by="ra")


async def test_dedup_reclaims_a_record_whose_attempt_failed(store: StateStore,
                                                            clock: FakeClock) -> None:
    """A commit lost with the connection may have stored the record while the recorder saw
    an error and did not acknowledge: the redelivery is new again, for the recorder itself
    (it knows its attempt failed) and, after the pending window, for another replica."""
    await store.replica_heartbeat("ra", host="h", home="/a", pid=1, started_at=0.0, ttl=60)
    await store.replica_heartbeat("rb", host="h", home="/b", pid=2, started_at=0.0, ttl=60)
    assert await store.record_if_new("slack", "e1", claimed_by="ra")
    assert not await store.record_if_new("slack", "e1", claimed_by="ra")
    assert await store.record_if_new("slack", "e1", claimed_by="ra", reclaim_own=True)
    assert await store.record_if_new("slack", "e2", claimed_by="ra")
    with pytest.raises(EventPendingError):
        await store.record_if_new("slack", "e2", claimed_by="rb", pending_s=5)
    clock.advance(6)
    assert await store.record_if_new("slack", "e2", claimed_by="rb", pending_s=5)
    with pytest.raises(EventPendingError):  # rb's claim is fresh now
        await store.record_if_new("slack", "e2", claimed_by="ra", pending_s=5)


async def test_outbox_recovery_leaves_a_live_replicas_finals_alone(
        store: StateStore, clock: FakeClock) -> None:
    await store.replica_heartbeat("ra", host="h", home="/a", pid=1, started_at=0.0, ttl=TTL)
    oid = await store.outbox_add(platform="telegram", chat_id="1", text="r", claimed_by="ra")
    assert await store.outbox_claim_undelivered("rb") == []
    clock.advance(TTL + 1)
    assert [o.id for o in await store.outbox_claim_undelivered("rb")] == [oid]


async def test_leader_lease_is_exclusive_and_taken_over_after_expiry(
        store: StateStore, clock: FakeClock) -> None:
    t1 = await store.leader_acquire("telegram:x", "ra", ttl=TTL)
    assert t1 == 1 and await store.leader_acquire("telegram:x", "ra", ttl=TTL) == 1
    assert await store.leader_acquire("telegram:x", "rb", ttl=TTL) is None
    clock.advance(TTL + 1)
    assert await store.leader_acquire("telegram:x", "rb", ttl=TTL) == 2
    assert await store.leader_of("telegram:x") == "rb"
    assert not await store.leader_release("telegram:x", "ra", 1)
    assert await store.leader_release("telegram:x", "rb", 2)
    assert await store.leader_of("telegram:x") is None


async def test_a_final_let_go_by_a_fenced_turn_is_taken_by_the_next_owner(
        store: StateStore) -> None:
    """A turn recorded its reply, then lost the session before storing its messages: it
    lets go of the final's claim, and whoever takes the session over (the same replica
    again included) claims it to send it; a final still claimed by its sender is not."""
    sid = await _session(store)
    kept = await store.outbox_add(platform="telegram", chat_id="1", text="being sent",
                                  session_id=sid, claimed_by="ra")
    let_go = await store.outbox_add(platform="telegram", chat_id="1", text="orphan",
                                    session_id=sid, claimed_by="ra")
    assert await store.outbox_unclaim(let_go, "ra")
    assert not await store.outbox_unclaim(let_go, "ra")
    assert [o.id for o in await store.outbox_claim_for_key("ra", "k")] == [let_go]
    assert [o.id for o in await store.outbox_claim_for_key("rb", "k")] == [kept, let_go]
    assert await store.outbox_claim_for_key("rb", "k") == []
