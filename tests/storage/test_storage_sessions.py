"""Sessions, titles, lineage, messages, rewind, branch, guard state."""

from __future__ import annotations

import asyncio

import pytest
from _storage_testlib import FakeClock, turn

from storage import InvalidTitleError, StateStore, TitleInUseError


async def test_create_get_list_newest_first(store: StateStore, clock: FakeClock) -> None:
    a = await store.create_session(source="telegram", session_key="k1", chat_id="1")
    clock.advance(1)
    b = await store.create_session(source="slack", session_key="k2")
    clock.advance(1)
    c = await store.create_session(source="telegram", session_key="k1")
    assert a.id < b.id or a.started_at < b.started_at
    assert [s.id for s in await store.list_sessions()] == [c.id, b.id, a.id]
    assert [s.id for s in await store.list_sessions(source="telegram")] == [c.id, a.id]
    await store.end_session(c.id, "session_reset")
    assert [s.id for s in await store.list_sessions(live_only=True)] == [b.id, a.id]
    found = await store.find_by_session_key("k1")
    assert found is not None and found.id == a.id
    got = await store.get_session(a.id)
    assert got is not None and got.chat_id == "1" and got.source == "telegram"
    assert await store.get_session("missing") is None


async def test_generated_ids_sort_by_time(store: StateStore, clock: FakeClock) -> None:
    ids = []
    for _ in range(5):
        ids.append((await store.create_session(source="cli")).id)
        clock.advance(0.01)
    assert ids == sorted(ids) and len(set(ids)) == 5


async def test_first_end_reason_wins_and_reopen(store: StateStore) -> None:
    s = await store.create_session(source="cli")
    assert await store.end_session(s.id, "session_reset") is True
    assert await store.end_session(s.id, "compression") is False
    got = await store.get_session(s.id)
    assert got is not None and got.end_reason == "session_reset" and got.ended_at is not None
    assert await store.reopen_session(s.id) is True
    got = await store.get_session(s.id)
    assert got is not None and got.ended_at is None and got.end_reason is None


async def test_title_numbering_and_uniqueness(store: StateStore) -> None:
    a = await store.create_session(source="cli", title="  Fix\u200b   CI ")
    assert a.title == "Fix CI"
    assert await store.next_lineage_title("Fix CI") == "Fix CI #2"
    b = await store.create_session(source="cli", title="Fix CI #2")
    assert await store.next_lineage_title("Fix CI") == "Fix CI #3"
    assert await store.next_lineage_title("Fix CI #2") == "Fix CI #3"
    assert await store.next_lineage_title("Brand new") == "Brand new"
    with pytest.raises(TitleInUseError) as err:
        await store.set_title(b.id, "Fix CI")
    assert a.id in str(err.value)
    with pytest.raises(InvalidTitleError):
        await store.set_title(b.id, "x" * 101)
    assert await store.set_title(b.id, "   ") is None
    assert (await store.get_session(b.id)).title is None  # type: ignore[union-attr]
    # LIKE wildcards in titles are literal
    await store.create_session(source="cli", title="100% _done_")
    assert await store.next_lineage_title("100% _done_") == "100% _done_ #2"


async def test_messages_round_trip(store: StateStore) -> None:
    s = await store.create_session(source="cli")
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "look"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "terminal", "arguments": "{\"cmd\":\"ls\"}"}}],
            "reasoning": "think",
        },
        {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "a\nb"},
        {"role": "assistant", "content": "[CONTEXT COMPACTION] s", "_compressed_summary": True,
         "finish_reason": "stop", "_token_count": 7},
    ]
    ids = await store.append_messages(s.id, msgs)
    assert ids == sorted(ids) and len(ids) == 5
    loaded = await store.load_history(s.id)
    assert [m["_id"] for m in loaded] == ids
    assert loaded[1]["content"] == [{"type": "text", "text": "look"}]
    assert loaded[2]["tool_calls"][0]["function"]["name"] == "terminal"
    assert loaded[2]["reasoning"] == "think" and loaded[2]["content"] is None
    assert loaded[3]["tool_call_id"] == "c1" and loaded[3]["tool_name"] == "terminal"
    assert loaded[4]["_compressed_summary"] is True and loaded[4]["_token_count"] == 7
    assert all(isinstance(m["_ts"], float) for m in loaded)
    assert (await store.get_session(s.id)).message_count == 5  # type: ignore[union-attr]


async def test_concurrent_appends_keep_per_call_order(store: StateStore) -> None:
    sessions = [await store.create_session(source="cli") for _ in range(5)]

    async def writer(sid: str, n: int) -> list[int]:
        out = []
        for i in range(n):
            out += await store.append_messages(sid, turn(f"u{i}", f"a{i}"))
        return out

    results = await asyncio.gather(*(writer(s.id, 20) for s in sessions))
    for s, ids in zip(sessions, results, strict=True):
        hist = await store.load_history(s.id)
        assert [m["_id"] for m in hist] == ids
        assert [m["content"] for m in hist[:4]] == ["u0", "a0", "u1", "a1"]
    batches, ops = store.write_stats
    assert batches < ops  # appends were group-committed


async def test_bad_text_is_stored_not_fatal(store: StateStore) -> None:
    s = await store.create_session(source="cli")
    await store.append_messages(s.id, [{"role": "user", "content": "a\ud800b\x00c"}])
    hist = await store.load_history(s.id)
    assert hist[0]["content"].startswith("a") and hist[0]["content"].endswith("c")
    with pytest.raises(ValueError):
        await store.append_messages(s.id, [{"content": "no role"}])


async def test_rewind_hides_last_user_turns(store: StateStore) -> None:
    s = await store.create_session(source="cli")
    for i in range(3):
        await store.append_messages(s.id, turn(f"question {i}", f"answer {i}"))
    hidden = await store.rewind(s.id, 2)
    assert [m["content"] for m in hidden] == ["question 1", "answer 1", "question 2", "answer 2"]
    assert [m["content"] for m in await store.load_history(s.id)] == ["question 0", "answer 0"]
    every = await store.load_all(s.id)
    assert len(every) == 6 and sum(not m["_active"] for m in every) == 4
    assert not any(m["_compacted"] for m in every)
    assert (await store.get_session(s.id)).message_count == 2  # type: ignore[union-attr]
    assert len(await store.rewind(s.id, 5)) == 2
    assert await store.rewind(s.id, 1) == []


async def test_load_tail_reads_the_newest_rows_in_order_and_the_count(
        store: StateStore) -> None:
    s = await store.create_session(source="telegram", session_key="k")
    for i in range(4):
        await store.append_messages(s.id, turn(f"question {i}", f"answer {i}"))
    await store.rewind(s.id, 1)
    tail, total = await store.load_tail(s.id, 3)
    assert total == 8
    assert [m["content"] for m in tail] == ["answer 2", "question 3", "answer 3"]
    assert [m["_active"] for m in tail] == [True, False, False]  # hidden rows included
    assert tail == (await store.load_all(s.id))[-3:]
    assert await store.load_tail(s.id, 50) == (await store.load_all(s.id), 8)
    assert await store.load_tail("no-such-session", 5) == ([], 0)


async def test_branch_copies_active_history(store: StateStore) -> None:
    s = await store.create_session(source="telegram", session_key="k", system_prompt="SP")
    await store.append_messages(s.id, turn("one", "two"))
    await store.append_messages(s.id, turn("three", "four"))
    await store.rewind(s.id, 1)
    b = await store.branch(s.id, "Side quest")
    assert b.parent_session_id == s.id and b.lineage_kind == "branch" and b.title == "Side quest"
    assert b.system_prompt == "SP" and b.session_key == "k"
    assert [m["content"] for m in await store.load_history(b.id)] == ["one", "two"]
    src = await store.get_session(s.id)
    assert src is not None and src.ended_at is None
    assert await store.tip(s.id) == s.id  # branches are not compression continuations
    assert [c.id for c in await store.children(s.id)] == [b.id]
    assert (await store.find_by_session_key("k")).id in (s.id, b.id)  # type: ignore[union-attr]


async def test_usage_and_guard_state(store: StateStore, clock: FakeClock) -> None:
    s = await store.create_session(source="cli")
    await store.add_usage(s.id, input_tokens=100, output_tokens=20, cache_read_tokens=5,
                          reasoning_tokens=3, last_prompt_tokens=100, cost_usd=0.01)
    await store.add_usage(s.id, input_tokens=50, output_tokens=5)
    got = await store.get_session(s.id)
    assert got is not None
    assert (got.input_tokens, got.output_tokens, got.api_call_count) == (150, 25, 2)
    assert got.last_prompt_tokens == 100 and got.estimated_cost_usd == pytest.approx(0.01)
    g = await store.update_guard(s.id, cooldown_until=clock.now + 60, cooldown_error="429",
                                 fallback_streak=1)
    assert g.cooldown_until == clock.now + 60 and g.fallback_streak == 1
    g = await store.update_guard(s.id, ineffective_count=2)
    fresh = await store.get_guard(s.id)
    assert fresh == g and fresh.cooldown_error == "429" and fresh.ineffective_count == 2
    await store.update_system_prompt(s.id, "new prompt")
    assert (await store.get_session(s.id)).system_prompt == "new prompt"  # type: ignore[union-attr]


async def test_platform_message_id(store: StateStore) -> None:
    s = await store.create_session(source="telegram")
    (mid,) = await store.append_messages(s.id, [{"role": "assistant", "content": "hi"}])
    assert await store.set_platform_message_id(mid, "555") is True
    found = await store.find_by_platform_message_id(s.id, "555")
    assert found is not None and found["_id"] == mid and found["_platform_message_id"] == "555"


async def test_a_message_is_revised_in_place_and_found_by_its_new_text(
        store: StateStore) -> None:
    """What the gateway learns after storing a message (an image's description) replaces
    its text, keeps its other keys, and the search indexes follow."""
    s = await store.create_session(source="telegram")
    (mid,) = await store.append_messages(s.id, [
        {"role": "user", "content": "[image 1 (a.png) is attached]", "_images": [{"n": 1}]}])
    assert await store.revise_message(mid, "a lighthouse on a cliff at dusk",
                                      {"_images_described": True}) is True
    got = await store.get_message(mid)
    assert got is not None and got["content"] == "a lighthouse on a cliff at dusk"
    assert got["_images"] == [{"n": 1}] and got["_images_described"] is True
    assert [h.message_id for h in await store.search("lighthouse")] == [mid]
    assert await store.search("attached") == []
    assert await store.revise_message(mid + 999, "nothing") is False


async def test_failed_op_in_a_batch_does_not_undo_others(store: StateStore) -> None:
    from storage import SessionNotFoundError

    s = await store.create_session(source="cli")
    results = await asyncio.gather(
        store.append_messages(s.id, turn("keep 1", "ok")),
        store.append_messages("missing-session", turn("lost", "lost")),
        store.append_messages(s.id, turn("keep 2", "ok")),
        store.set_title("missing-session", "x"),
        return_exceptions=True,
    )
    assert isinstance(results[1], SessionNotFoundError)
    assert isinstance(results[3], SessionNotFoundError)
    hist = await store.load_history(s.id)
    assert [m["content"] for m in hist] == ["keep 1", "ok", "keep 2", "ok"]
    assert [m["_id"] for m in hist] == [*results[0], *results[2]]


async def test_closed_store_refuses_work(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from storage import StoreClosedError

    st = await StateStore.open(tmp_path / "state.db")
    s = await st.create_session(source="cli")
    await st.close()
    await st.close()  # idempotent
    with pytest.raises(StoreClosedError):
        await st.append_messages(s.id, turn("a", "b"))
