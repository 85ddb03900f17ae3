"""Leases with fencing tokens and fenced compression commits."""

from __future__ import annotations

import pytest
from _storage_testlib import FakeClock, turn

from storage import FenceRejected, StateStore


async def test_lease_exclusive_expiry_takeover_monotonic(
    store: StateStore, clock: FakeClock
) -> None:
    s = await store.create_session(source="cli")
    a = await store.acquire_lease(s.id, "proc1:job1", ttl=10)
    assert a is not None and a.token == 1
    assert await store.acquire_lease(s.id, "proc2:job9", ttl=10) is None
    assert await store.acquire_lease(s.id, "proc1:job1", ttl=10) is None
    cur = await store.current_lease(s.id)
    assert cur is not None and cur.holder == "proc1:job1"
    clock.advance(11)
    assert await store.current_lease(s.id) is None
    assert await store.renew_lease(a, ttl=10) is None  # nobody renews an expired lease
    b = await store.acquire_lease(s.id, "proc2:job9", ttl=10)
    assert b is not None and b.token > a.token
    assert await store.renew_lease(a, ttl=10) is None  # nor a foreign one
    assert await store.release_lease(a) is False  # stale holder cannot release
    renewed = await store.renew_lease(b, ttl=30)
    assert renewed is not None and renewed.expires_at == clock.now + 30
    assert await store.release_lease(b) is True
    c = await store.acquire_lease(s.id, "proc3:job1", ttl=10)
    assert c is not None and c.token > b.token  # never reused after release


async def _session_with_history(store: StateStore, n: int = 3) -> tuple[str, int]:
    s = await store.create_session(source="telegram", session_key="tg:1", chat_id="1",
                                   title="Fix CI", system_prompt="old prompt")
    for i in range(n):
        await store.append_messages(s.id, turn(f"q{i}", f"a{i}"))
    snap = await store.last_message_id(s.id)
    assert snap is not None
    return s.id, snap


SUMMARY = [{"role": "assistant", "content": "[CONTEXT COMPACTION] summary of q0..q2",
            "_compressed_summary": True}]


async def test_commit_rotation_carries_late_messages(store: StateStore) -> None:
    sid, snap = await _session_with_history(store)
    await store.update_guard(sid, fallback_streak=1, cooldown_error="x")
    lease = await store.acquire_lease(sid, "job", ttl=60)
    assert lease is not None
    await store.append_messages(sid, turn("late question", "late answer"))  # after snapshot
    child_id = await store.commit_rotation(
        lease, sid, snapshot_last_message_id=snap, compressed_messages=SUMMARY,
        system_prompt="new prompt",
    )
    parent = await store.get_session(sid)
    child = await store.get_session(child_id)
    assert parent is not None and child is not None
    assert parent.end_reason == "compression" and parent.ended_at is not None
    assert child.parent_session_id == sid and child.lineage_kind == "compression"
    assert child.title == "Fix CI #2" and child.system_prompt == "new prompt"
    assert child.session_key == "tg:1" and child.chat_id == "1" and child.source == "telegram"
    assert child.fallback_streak == 1 and child.compression_count == 1
    hist = await store.load_history(child_id)
    assert [m["content"] for m in hist] == [SUMMARY[0]["content"], "late question", "late answer"]
    assert hist[0]["_compressed_summary"] is True
    assert len(await store.load_history(sid)) == 8  # parent history untouched
    assert await store.tip(sid) == child_id
    assert (await store.find_by_session_key("tg:1")).id == child_id  # type: ignore[union-attr]
    resolved = await store.resolve("Fix CI")
    assert resolved is not None and resolved.id == child_id
    assert [a.id for a in await store.ancestors(child_id)] == [sid]


async def test_lineage_titles_along_rotations(store: StateStore) -> None:
    sid, snap = await _session_with_history(store, 1)
    ids = [sid]
    for _ in range(2):
        lease = await store.acquire_lease(ids[-1], "job", ttl=60)
        assert lease is not None
        last = await store.last_message_id(ids[-1])
        ids.append(await store.commit_rotation(
            lease, ids[-1], snapshot_last_message_id=last or 0, compressed_messages=SUMMARY))
    titles = [(await store.get_session(i)).title for i in ids]  # type: ignore[union-attr]
    assert titles == ["Fix CI", "Fix CI #2", "Fix CI #3"]
    assert await store.tip(ids[0]) == ids[2]
    # moving a title along the compression lineage is allowed
    assert await store.set_title(ids[2], "Fix CI") == "Fix CI"
    assert (await store.get_session(ids[0])).title is None  # type: ignore[union-attr]


async def test_fence_refuses_after_expiry(store: StateStore, clock: FakeClock) -> None:
    sid, snap = await _session_with_history(store)
    lease = await store.acquire_lease(sid, "job", ttl=0.2)
    assert lease is not None
    clock.advance(0.3)
    with pytest.raises(FenceRejected) as err:
        await store.commit_rotation(lease, sid, snapshot_last_message_id=snap,
                                    compressed_messages=SUMMARY)
    assert err.value.outcome == "lease_lost"
    with pytest.raises(FenceRejected):
        await store.commit_in_place(lease, sid, snapshot_last_message_id=snap,
                                    compressed_messages=SUMMARY)
    await _assert_untouched(store, sid)


async def test_fence_refuses_after_takeover(store: StateStore, clock: FakeClock) -> None:
    sid, snap = await _session_with_history(store)
    stale = await store.acquire_lease(sid, "worker-a", ttl=1)
    assert stale is not None
    clock.advance(2)
    fresh = await store.acquire_lease(sid, "worker-b", ttl=60)
    assert fresh is not None and fresh.token > stale.token
    for commit in (store.commit_rotation, store.commit_in_place):
        with pytest.raises(FenceRejected) as err:
            await commit(stale, sid, snapshot_last_message_id=snap, compressed_messages=SUMMARY)
        assert err.value.outcome == "lease_lost"
    await _assert_untouched(store, sid)


async def test_fence_refuses_ended_session_and_deadline(
    store: StateStore, clock: FakeClock
) -> None:
    sid, snap = await _session_with_history(store)
    lease = await store.acquire_lease(sid, "job", ttl=60)
    assert lease is not None
    with pytest.raises(FenceRejected) as err:
        await store.commit_rotation(lease, sid, snapshot_last_message_id=snap,
                                    compressed_messages=SUMMARY, deadline=clock.now - 1)
    assert err.value.outcome == "timeout"
    await store.end_session(sid, "session_reset")
    with pytest.raises(FenceRejected) as err:
        await store.commit_rotation(lease, sid, snapshot_last_message_id=snap,
                                    compressed_messages=SUMMARY)
    assert err.value.outcome == "superseded"
    assert await store.children(sid) == []
    assert (await store.get_session(sid)).end_reason == "session_reset"  # type: ignore[union-attr]


async def test_second_rotation_of_same_parent_is_superseded(store: StateStore) -> None:
    sid, snap = await _session_with_history(store)
    lease = await store.acquire_lease(sid, "job", ttl=60)
    assert lease is not None
    await store.commit_rotation(lease, sid, snapshot_last_message_id=snap,
                                compressed_messages=SUMMARY)
    with pytest.raises(FenceRejected) as err:
        await store.commit_rotation(lease, sid, snapshot_last_message_id=snap,
                                    compressed_messages=SUMMARY)
    assert err.value.outcome == "superseded"
    assert len(await store.children(sid)) == 1


async def test_commit_in_place_keeps_order_and_archive(store: StateStore) -> None:
    sid, snap = await _session_with_history(store, 2)
    lease = await store.acquire_lease(sid, "job", ttl=60)
    assert lease is not None
    await store.append_messages(sid, turn("late q", "late a"))
    ids = await store.commit_in_place(lease, sid, snapshot_last_message_id=snap,
                                      compressed_messages=[{"role": "system", "content": "sys"},
                                                           *SUMMARY])
    hist = await store.load_history(sid)
    assert [m["_id"] for m in hist] == ids
    assert [m["content"] for m in hist] == ["sys", SUMMARY[0]["content"], "late q", "late a"]
    every = await store.load_all(sid)
    archived = [m for m in every if not m["_active"]]
    assert all(m["_compacted"] for m in archived) and len(archived) == 6
    s = await store.get_session(sid)
    assert s is not None and s.ended_at is None and s.message_count == 4
    assert s.compression_count == 1


async def _assert_untouched(store: StateStore, sid: str) -> None:
    s = await store.get_session(sid)
    assert s is not None and s.ended_at is None and s.end_reason is None
    assert await store.children(sid) == []
    hist = await store.load_history(sid)
    assert [m["content"] for m in hist] == ["q0", "a0", "q1", "a1", "q2", "a2"]
    assert all(m["_active"] for m in await store.load_all(sid))
