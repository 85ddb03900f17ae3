"""The turn's transcript read (`live_history`) serves decoded rows from a per-process cache,
checked against the database on every read: whatever changed the transcript (this store,
another store on the same database, a rewind, an in-place compaction), the read is what a
fresh decode of the database gives."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from _storage_testlib import turn

from storage import StateStore
from storage.histcache import CachedHistory, HistoryCache


async def fresh(reopen: Callable[[], Awaitable[StateStore]], sid: str) -> list[dict]:
    other = await reopen()
    try:
        return (await other.live_history(sid))[1]
    finally:
        await other.close()


async def test_a_turns_new_messages_are_read_after_the_cached_ones(
    store: StateStore, reopen: Callable[[], Awaitable[StateStore]],
) -> None:
    s = await store.create_session(source="fake")
    await store.append_live(s.id, turn("q1", "a1"))
    _, first = await store.live_history(s.id)
    await store.append_live(s.id, turn("q2", "a2"))
    _, second = await store.live_history(s.id)
    assert [m["content"] for m in second] == ["q1", "a1", "q2", "a2"]
    assert second == await fresh(reopen, s.id)
    cache = store._histories
    assert (cache.misses, cache.extended) == (1, 1)
    _, third = await store.live_history(s.id)
    assert third == second and cache.hits == 1


async def test_a_write_by_another_process_is_seen(
    store: StateStore, reopen: Callable[[], Awaitable[StateStore]],
) -> None:
    s = await store.create_session(source="fake")
    await store.append_live(s.id, turn("q1", "a1"))
    await store.live_history(s.id)
    other = await reopen()
    try:
        await other.append_live(s.id, turn("q2 from elsewhere", "a2"))
        await other.rewind(s.id, 2)  # hides both turns
        await other.append_live(s.id, turn("q3", "a3"))
    finally:
        await other.close()
    _, history = await store.live_history(s.id)
    assert [m["content"] for m in history] == ["q3", "a3"]


async def test_a_rewind_and_an_in_place_compaction_are_seen(
    store: StateStore, reopen: Callable[[], Awaitable[StateStore]],
) -> None:
    s = await store.create_session(source="fake")
    await store.append_live(s.id, turn("q1", "a1") + turn("q2", "a2") + turn("q3", "a3"))
    _, before = await store.live_history(s.id)
    await store.rewind(s.id, 1)
    _, rewound = await store.live_history(s.id)
    assert [m["content"] for m in rewound] == ["q1", "a1", "q2", "a2"]
    # An in-place compaction hides two rows and inserts two: same count, other rows.
    lease = await store.acquire_lease(s.id, "test", 60)
    assert lease is not None
    await store.commit_in_place(
        lease, s.id, snapshot_last_message_id=before[1]["_id"],
        compressed_messages=[{"role": "user", "content": "[CONTEXT COMPACTION] summary"},
                             {"role": "assistant", "content": "ok"}])
    _, compacted = await store.live_history(s.id)
    assert [m["content"] for m in compacted] == [
        "[CONTEXT COMPACTION] summary", "ok", "q2", "a2"]
    assert compacted == await fresh(reopen, s.id)


async def test_a_revised_text_is_seen_here_and_from_another_process(
    store: StateStore, reopen: Callable[[], Awaitable[StateStore]],
) -> None:
    s = await store.create_session(source="fake")
    _, ids = await store.append_live(s.id, turn("[image: photo.jpg]", "a nice photo"))
    await store.live_history(s.id)
    assert await store.revise_message(ids[0], "[image: photo.jpg — a cat on a sofa]")
    _, here = await store.live_history(s.id)
    assert here[0]["content"] == "[image: photo.jpg — a cat on a sofa]"
    other = await reopen()
    try:
        await other.revise_message(ids[0], "[image: photo.jpg — a dog on a sofa!]")
    finally:
        await other.close()
    _, after = await store.live_history(s.id)
    assert after[0]["content"] == "[image: photo.jpg — a dog on a sofa!]"


async def test_callers_changing_what_they_got_do_not_change_the_cache(
    store: StateStore,
) -> None:
    s = await store.create_session(source="fake")
    await store.append_live(s.id, turn("q1", "a1"))
    _, got = await store.live_history(s.id)
    got[-1] = {**got[-1], "content": "changed"}
    got[0]["content"] = "changed too"
    got.append({"role": "user", "content": "extra"})
    _, again = await store.live_history(s.id)
    assert [m["content"] for m in again] == ["q1", "a1"]


def test_the_cache_is_bounded_by_sessions_and_rows() -> None:
    cache = HistoryCache(max_sessions=3, max_rows=10)
    row = {"role": "user", "content": "x"}
    for i in range(5):
        cache.put(f"s{i}", CachedHistory(2, i, 2, (row, row)))
    assert len(cache) == 3 and cache.get("s0") is None and cache.get("s4") is not None
    cache.put("big", CachedHistory(8, 9, 8, (row,) * 8))  # 8 + the newest 2 fit
    assert len(cache) == 2 and cache.get("s4") is not None
    cache.put("huge", CachedHistory(11, 9, 11, (row,) * 11))  # never kept
    assert cache.get("huge") is None


def test_the_cache_is_bounded_by_the_text_it_holds() -> None:
    """Rows alone do not bound memory when messages are long: the text does too."""
    cache = HistoryCache(max_sessions=100, max_rows=1000, max_chars=10_000)
    row = {"role": "assistant", "content": "y" * 3000}
    for i in range(4):
        cache.put(f"s{i}", CachedHistory(1, i, 3000, (row,)))
    assert len(cache) == 3 and cache.get("s0") is None  # 4 x 3,000 > 10,000: the oldest went
    cache.put("s9", CachedHistory(1, 9, 9000, (row,)))  # fits alone: the others make room
    assert len(cache) == 1 and cache.get("s9") is not None
    cache.put("s1", CachedHistory(1, 1, 3000, (row,)))
    assert len(cache) == 1 and cache.get("s9") is None  # 9,000 + 3,000 > 10,000
    cache.put("long", CachedHistory(1, 9, 10_001, (row,)))  # never kept
    assert cache.get("long") is None
    cache.forget("s1")
    cache.put("a", CachedHistory(1, 1, 5000, (row,)))
    cache.put("b", CachedHistory(1, 2, 5000, (row,)))
    assert len(cache) == 2  # the forgotten entry's text was given back

