"""Sessions scoped to a principal or a chat (issue 14): the filter is applied by the store in
SQL, so a scope's own rows are never hidden behind other scopes' rows by a limit or a bound;
titles are unique per scope; schema v5 keeps every stored session and message."""

from __future__ import annotations

from pathlib import Path

from _storage_testlib import FakeClock, old_schema_db, turn

from storage import SessionScope, StateStore, TitleInUseError
from storage.db import prepare_database
from storage.search import CANDIDATES, PROBE

ALICE = SessionScope.direct("telegram", "42")
BOB = SessionScope.direct("telegram", "43")


async def _dm(store: StateStore, user: str, **kw: object):
    return await store.create_session(source="telegram", user_id=user, chat_id=user,
                                      chat_type="dm", **kw)  # type: ignore[arg-type]


async def _alice_said(store: StateStore, text: str):
    """Alice's session holding `text`, and a fresh session of Bob's."""
    mine = await _dm(store, "42")
    await store.append_messages(mine.id, turn(text, "Noted."))
    return mine, await _dm(store, "43")


async def test_scoped_search_finds_old_own_hits_behind_many_newer_foreign_ones(
    store: StateStore, clock: FakeClock
) -> None:
    mine, theirs = await _alice_said(store, "the invoice number is 8817")
    for i in range(max(CANDIDATES, 10) + 20):  # more newer matches than BM25's candidates
        clock.advance(1)
        await store.append_messages(theirs.id, turn(f"invoice draft {i}", "ok"))
    hits = await store.search("invoice", scope=ALICE, limit=5)
    assert [h.session_id for h in hits] == [mine.id]
    assert "8817" in hits[0].snippet
    assert all(h.session_id == theirs.id for h in await store.search("invoice", scope=BOB))


async def test_scoped_search_of_a_very_common_word_still_finds_own_hits(
    store: StateStore, clock: FakeClock
) -> None:
    mine, theirs = await _alice_said(store, "hello from alice")
    await store.append_messages(theirs.id, [
        {"role": "user", "content": f"hello number {i}"} for i in range(PROBE + 10)])
    hits = await store.search("hello", scope=ALICE)
    assert [h.session_id for h in hits] == [mine.id]
    assert await store.search("你好", scope=ALICE) == []


async def test_scoped_cjk_scan_looks_at_the_scopes_messages(store: StateStore) -> None:
    mine, theirs = await _alice_said(store, "密码")
    await store.append_messages(theirs.id, turn("密码", "好"))
    hits = await store.search("密码", scope=ALICE)
    assert [h.session_id for h in hits] == [mine.id]


async def test_list_sessions_and_resolve_by_scope(store: StateStore, clock: FakeClock) -> None:
    mine = await _dm(store, "42", title="Bank")
    for _ in range(30):
        clock.advance(1)
        await _dm(store, "43")
    group = await store.create_session(source="telegram", user_id="43", chat_id="-100",
                                       chat_type="group", title="Bank")
    assert [s.id for s in await store.list_sessions(scope=ALICE, limit=5)] == [mine.id]
    assert len(await store.list_sessions(scope=BOB, limit=100)) == 30
    assert [s.id for s in await store.list_sessions(
        scope=SessionScope.chat("telegram", "-100"))] == [group.id]
    assert len(await store.list_sessions(limit=100)) == 32  # the operator sees everything
    assert (await store.resolve("Bank", scope=ALICE)).id == mine.id  # type: ignore[union-attr]
    assert await store.resolve(mine.id, scope=BOB) is None
    assert await store.resolve("Bank", scope=BOB) is None
    assert await store.resolve(mine.id) is not None


async def test_titles_are_unique_per_scope(store: StateStore) -> None:
    a1 = await _dm(store, "42", title="Plans")
    b1 = await _dm(store, "43", title="Plans")  # another scope: allowed
    assert b1.title == "Plans"
    a2 = await _dm(store, "42")
    try:
        await store.set_title(a2.id, "Plans")
    except TitleInUseError as exc:
        assert exc.other_session_id == a1.id
    else:
        raise AssertionError("a title taken in the same scope was accepted")
    assert await store.next_lineage_title("Plans", ALICE) == "Plans #2"
    assert await store.next_lineage_title("Other", ALICE) == "Other"
    try:
        await _dm(store, "42", title="Plans")
    except TitleInUseError:
        pass
    else:
        raise AssertionError("a title taken in the same scope was accepted")
    assert len(await store.list_sessions(scope=ALICE)) == 2  # the refused one was not kept


async def test_python_scope_keys_match_the_stored_column(store: StateStore) -> None:
    cases = [("telegram", "dm", "42", "42"), ("slack", "group", "C1", "U1"),
             ("api", "dm", "key:abc:notes", "key:abc"), ("a:b", "dm", "c", "d"),
             ("a", "dm", "x", "b:d"), ("discord", "thread", "T9", "7")]
    for source, chat_type, chat_id, user_id in cases:
        s = await store.create_session(source=source, user_id=user_id, chat_id=chat_id,
                                       chat_type=chat_type)
        scope = SessionScope.of(source, chat_type, chat_id, user_id)
        assert [x.id for x in await store.list_sessions(scope=scope)] == [s.id]
    assert SessionScope.direct("a:b", "c") != SessionScope.direct("a", "b:c")


async def test_schema_v5_keeps_history_and_scopes_old_sessions(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    sessions = [("s1", "42", "42", "dm", "Same"), ("s2", "43", "-100", "group", None),
                ("s3", None, None, None, "Cli")]  # a direct chat, a group, the CLI
    with old_schema_db(db, 4) as conn:  # a file written by schema v4
        conn.executemany("INSERT INTO sessions(id, source, user_id, chat_id, chat_type,"
                         " started_at, title) VALUES (?, 'telegram', ?, ?, ?, 1, ?)", sessions)
        conn.execute("INSERT INTO messages(session_id, role, timestamp, content)"
                     " VALUES ('s1', 'user', 1, 'the old secret')")
    assert prepare_database(db) == 4
    store = await StateStore.open(db)
    try:
        assert [s.id for s in await store.list_sessions(scope=ALICE)] == ["s1"]
        assert [s.id for s in await store.list_sessions(
            scope=SessionScope.chat("telegram", "-100"))] == ["s2"]
        assert len(await store.list_sessions()) == 3
        assert [h.session_id for h in await store.search("secret", scope=ALICE)] == ["s1"]
        assert await store.search("secret", scope=BOB) == []
        b = await _dm(store, "43", title="Same")  # no longer clashes with Alice's title
        assert b.title == "Same"
    finally:
        await store.close()
