"""The SQLite search index kept a moment behind the messages (`storage.searchindex`, migration
12): a message is not indexed by its own insert, yet every search finds it; edits and deletes
of rows on either side of the mark keep both FTS5 indexes whole; what a crash left unindexed
is indexed at the next open; a closed store has indexed everything."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from _storage_testlib import turn

from storage import StateStore
from storage.db import prepare_database
from storage.migrations import STEPS, split_statements
from storage.searchindex import INDEX_DELAY_S
from storage.sqlconn import Conn


def _mark(path: Path) -> tuple[int, int]:
    """(indexed up to, highest message id), read as another process would."""
    with sqlite3.connect(path) as conn:
        upto = conn.execute("SELECT upto FROM search_index").fetchone()[0]
        top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
    return int(upto), int(top)


def _whole(path: Path) -> None:
    """FTS5's own checks (raise if corrupt): the word index against every message; the
    trigram index, which leaves tool results out, for its own consistency and term by term
    against one rebuilt from the messages that are not tool results."""
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
        conn.execute("INSERT INTO messages_trigram(messages_trigram) VALUES ('integrity-check')")
        conn.execute("CREATE TEMP TABLE spoken AS SELECT id, content FROM messages "
                     "WHERE role <> 'tool'")
        conn.execute("CREATE VIRTUAL TABLE temp.rebuilt USING fts5(content, content='spoken', "
                     "content_rowid='id', tokenize='trigram')")
        conn.execute("INSERT INTO rebuilt(rebuilt) VALUES ('rebuild')")
        conn.execute("CREATE VIRTUAL TABLE temp.kept_terms USING fts5vocab(main, "
                     "'messages_trigram', 'instance')")
        conn.execute("CREATE VIRTUAL TABLE temp.rebuilt_terms USING fts5vocab(temp, "
                     "'rebuilt', 'instance')")
        kept, rebuilt = (conn.execute(f"SELECT term, doc, offset FROM {t} ORDER BY 1, 2, 3")
                         .fetchall() for t in ("kept_terms", "rebuilt_terms"))
        assert kept == rebuilt


async def _words(store: StateStore, query: str) -> list[str]:
    return [h.snippet.replace("«", "").replace("»", "") for h in await store.search(query)]


async def test_a_message_waits_for_the_index_but_a_search_finds_it_at_once(
        tmp_path: Path) -> None:
    async with await StateStore.open(tmp_path / "state.db") as store:
        s = await store.create_session(source="cli")
        await store.append_messages(s.id, turn("where is the zeppelin hangar", "north field"))
        upto, top = _mark(store.path)
        assert upto < top  # stored, not yet indexed: the insert paid no indexing
        assert await _words(store, "zeppelin") == ["where is the zeppelin hangar"]
        assert await _words(store, "eppel") == ["where is the zeppelin hangar"]  # trigram
        assert _mark(store.path)[0] == top

        await store.append_messages(s.id, turn("and the dirigible mast?", "south field"))
        for _ in range(100):  # without a search: indexed a moment after the write
            upto, top = _mark(store.path)
            if upto == top:
                break
            await asyncio.sleep(INDEX_DELAY_S / 5)
        assert upto == top
    _whole(tmp_path / "state.db")


async def test_edits_and_deletes_on_both_sides_of_the_mark_keep_the_index_whole(
        tmp_path: Path) -> None:
    async with await StateStore.open(tmp_path / "state.db") as store:
        s = await store.create_session(source="cli")
        old_ids = await store.append_messages(s.id, [
            {"role": "user", "content": "alpha apricot"},
            {"role": "tool", "tool_call_id": "c1", "name": "t", "content": "tool tangerine"},
            {"role": "user", "content": "doomed durian"}])
        await store.search("alpha")  # indexed: these are below the mark now
        new_ids = await store.append_messages(s.id, [
            {"role": "user", "content": "beta blueberry"},
            {"role": "tool", "tool_call_id": "c2", "name": "t", "content": "tool tamarind"},
            {"role": "user", "content": "fleeting fig"}])
        assert _mark(store.path)[0] < new_ids[0]  # ... and these above it

        await store.revise_message(old_ids[0], "alpha avocado")  # indexed row: triggers
        await store.revise_message(new_ids[0], "beta banana")  # waiting row: indexed as is

        async def edit(conn: Conn) -> None:
            for i in (old_ids[1], new_ids[1]):  # a tool result becomes a user message
                await conn.execute("UPDATE messages SET role = 'user' WHERE id = ?", (i,))
            for i in (old_ids[2], new_ids[2]):
                await conn.execute("DELETE FROM messages WHERE id = ?", (i,))

        await store._write(edit)  # noqa: SLF001 - no API deletes history; the triggers can

        assert await _words(store, "avocado") == ["alpha avocado"]
        assert await _words(store, "apricot") == []
        assert await _words(store, "banana") == ["beta banana"]
        assert await _words(store, "blueberry") == []
        assert await _words(store, "durian") == [] and await _words(store, "fig") == []
        # trigram covers user and assistant rows: the former tool rows are in it now
        assert sorted(await _words(store, "ngerin")) == ["tool tangerine"]
        assert sorted(await _words(store, "amarin")) == ["tool tamarind"]
    _whole(tmp_path / "state.db")


async def test_what_a_crash_left_unindexed_is_indexed_at_the_next_open(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    async with await StateStore.open(db) as store:
        s = await store.create_session(source="cli")
        await store.append_messages(s.id, turn("first words", "reply"))
    with sqlite3.connect(db) as conn:  # stored by a process that died before indexing
        conn.execute("INSERT INTO messages (session_id, role, timestamp, content) "
                     "VALUES (?, 'user', 0, 'orphaned ocelot')", (s.id,))
    upto, top = _mark(db)
    assert upto < top
    async with await StateStore.open(db) as store:
        for _ in range(100):
            if _mark(db)[0] == top:
                break
            await asyncio.sleep(INDEX_DELAY_S / 5)
        assert _mark(db)[0] == top  # at open, without any search or write
        assert await _words(store, "ocelot") == ["orphaned ocelot"]
    _whole(db)


async def test_a_closed_store_has_indexed_everything(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = await StateStore.open(db)
    s = await store.create_session(source="cli")
    await store.append_messages(s.id, turn("last words before closing", "ok"))
    await store.close()
    upto, top = _mark(db)
    assert upto == top > 0
    _whole(db)


async def test_another_process_search_indexes_what_the_gateway_has_not_yet(
        tmp_path: Path) -> None:
    """The CLI's search runs in another process with its own writer: it indexes first."""
    db = tmp_path / "state.db"
    async with await StateStore.open(db) as gateway:
        s = await gateway.create_session(source="telegram")
        await gateway.append_messages(s.id, turn("quokka sightings today", "three"))
        assert _mark(db)[0] < _mark(db)[1]
        async with await StateStore.open(db) as cli:
            assert await _words(cli, "quokka") == ["quokka sightings today"]
    _whole(db)


def test_migration_12_keeps_what_the_old_triggers_indexed(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with sqlite3.connect(db, isolation_level=None) as conn:  # a profile at version 11
        conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                     "applied_at REAL NOT NULL)")
        for step in STEPS[:11]:
            for stmt in split_statements(step.sqlite):
                conn.execute(stmt)
            conn.execute("INSERT INTO schema_version VALUES (?, 0)", (step.version,))
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('s', 'cli', 0)")
        conn.execute("INSERT INTO messages (session_id, role, timestamp, content) "
                     "VALUES ('s', 'user', 0, 'ancient aardvark')")
        conn.execute("INSERT INTO messages (session_id, role, timestamp, content) "
                     "VALUES ('s', 'user', 0, '[image]')")
        # the old update triggers indexed the new text, then removed the old one's trigrams,
        # shared ones included: "ima" of the description was lost
        conn.execute("UPDATE messages SET content = 'image of a mountain' WHERE id = 2")
        assert conn.execute("SELECT rowid FROM messages_trigram WHERE messages_trigram "
                            "MATCH 'image'").fetchall() == []
    assert prepare_database(db) == 11
    upto, top = _mark(db)
    assert upto == top == 2  # indexed by the old insert trigger: nothing to do again
    with sqlite3.connect(db) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                            "'trigger'")}
        hit = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH "
                           "'aardvark'").fetchall()
        repaired = conn.execute("SELECT rowid FROM messages_trigram WHERE messages_trigram "
                                "MATCH 'image'").fetchall()
    assert "messages_fts_ai" not in names and "messages_trigram_ai" not in names
    assert {"messages_fts_au", "messages_fts_ad", "messages_trigram_au"} <= names
    assert hit == [(1,)]
    assert repaired == [(2,)]  # the trigram index was rebuilt from the messages
    _whole(db)
