"""Migrations, file modes, connection discipline."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from storage import SCHEMA_VERSION, StateStore
from storage.db import prepare_database
from storage.migrations import MIGRATIONS, STEPS


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_migrations_run_twice_and_on_existing_db(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    assert prepare_database(db) == 0
    assert prepare_database(db) == SCHEMA_VERSION
    with sqlite3.connect(db) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_version")]
        conn.execute("INSERT INTO sessions(id, source, started_at) VALUES ('keep', 'cli', 1)")
    assert versions == [step.version for step in STEPS]
    assert prepare_database(db) == SCHEMA_VERSION
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT id FROM sessions").fetchall() == [("keep",)]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    expected = {"sessions", "messages", "messages_fts", "messages_trigram", "compression_leases",
                "inbound_events", "outbox", "cursors", "pairing_codes", "approved_users",
                "unreachable_chats", "schema_version", "approvals", "self_reviews"}
    assert expected <= _tables(db)


async def test_concurrent_opens_migrate_once(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    stores = await asyncio.gather(*(StateStore.open(db) for _ in range(3)))
    for st in stores:
        await st.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == len(MIGRATIONS)


async def test_state_db_files_are_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "profile" / "state.db"
    old = os.umask(0o022)
    try:
        async with await StateStore.open(db) as st:
            s = await st.create_session(source="cli")
            await st.append_messages(s.id, [{"role": "user", "content": "hi"}])
            for name in ("state.db", "state.db-wal", "state.db-shm"):
                mode = stat.S_IMODE((db.parent / name).stat().st_mode)
                assert mode == 0o600, (name, oct(mode))
    finally:
        os.umask(old)


async def test_existing_world_readable_db_is_tightened(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    db.touch()
    db.chmod(0o644)
    async with await StateStore.open(db):
        pass
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


@pytest.mark.sqlite_only
async def test_pragmas_on_connections(store: StateStore) -> None:
    def check() -> tuple[str, int]:
        with sqlite3.connect(store.path) as conn:
            return conn.execute("PRAGMA journal_mode").fetchone()[0], 0

    mode, _ = await asyncio.to_thread(check)
    assert mode == "wal"
    s = await store.create_session(source="cli")
    # foreign keys are enforced: messages need an existing session
    from storage import SessionNotFoundError

    try:
        await store.append_messages("nope", [{"role": "user", "content": "x"}])
    except SessionNotFoundError:
        pass
    else:
        raise AssertionError("append to a missing session must fail")
    assert await store.load_history(s.id) == []


async def test_the_writer_and_the_readers_keep_pages_for_a_busy_profile(tmp_path: Path) -> None:
    """The writer reads in its transactions too (a turn's history, session rows, index
    entries): a page cache of SQLite's default 2 MB re-read pages at 1,000 chats."""
    from storage.db import READ_CACHE_KIB, WRITE_CACHE_KIB

    async with await StateStore.open(tmp_path / "state.db") as st:
        writer = st._writer._conn  # noqa: SLF001 - the connection's own settings
        async with writer.execute("PRAGMA cache_size") as cur:
            assert (await cur.fetchone())[0] == -WRITE_CACHE_KIB == -16 * 1024
        async with writer.execute("PRAGMA synchronous") as cur:
            assert (await cur.fetchone())[0] == 1  # NORMAL: durable across a process crash
        async with st._readers.conn() as reader:  # noqa: SLF001
            async with reader.execute("PRAGMA cache_size") as cur:
                assert (await cur.fetchone())[0] == -READ_CACHE_KIB
            async with reader.execute("PRAGMA query_only") as cur:
                assert (await cur.fetchone())[0] == 1


async def test_v2_guard_encodings_become_columns(tmp_path: Path) -> None:
    from _storage_testlib import old_schema_db

    db = tmp_path / "state.db"
    with old_schema_db(db, 2) as conn:  # a file written by schema v2
        conn.executemany(
            "INSERT INTO sessions(id, source, started_at, cooldown_error, last_prompt_tokens)"
            " VALUES (?, 'cli', 1, ?, ?)",
            [("compacted", None, -1), ("failing", "summarizer timed out [failures=3]", 900),
             ("bare", "summarizer failure [failures=1]", None), ("plain", "rate limited", 5)])
    assert prepare_database(db) == 2
    store = await StateStore.open(db)
    try:
        got = {sid: await store.get_guard(sid) for sid in ("compacted", "failing", "bare", "plain")}
    finally:
        await store.close()
    assert got["compacted"].verify_pending and got["compacted"].last_prompt_tokens is None
    assert (got["failing"].failure_streak, got["failing"].cooldown_error,
            got["failing"].last_prompt_tokens) == (3, "summarizer timed out", 900)
    assert (got["bare"].failure_streak, got["bare"].cooldown_error) == (1, "summarizer failure")
    assert (got["plain"].failure_streak, got["plain"].cooldown_error,
            got["plain"].verify_pending) == (0, "rate limited", False)


def test_a_missing_lower_migration_is_applied_after_a_higher_one(tmp_path: Path) -> None:
    """A file written by a build that had a higher version but not a lower one (branches
    took numbers and merged late) gets the lower one: every step whose row is missing."""
    db = tmp_path / "state.db"
    prepare_database(db)
    with sqlite3.connect(db) as conn:  # as the sandbox branch wrote it: v7 without v6
        conn.execute("ALTER TABLE inbound_events DROP COLUMN claimed_by")
        conn.execute("ALTER TABLE outbox DROP COLUMN claimed_by")
        conn.execute("DELETE FROM schema_version WHERE version = 6")
    assert prepare_database(db) == SCHEMA_VERSION  # the highest found
    with sqlite3.connect(db) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_version")]
        columns = {r[1] for r in conn.execute("PRAGMA table_info(outbox)")}
    assert sorted(versions) == [step.version for step in STEPS]
    assert "claimed_by" in columns
