"""Another connection holding the write lock: writes wait and retry, callers never see "locked".

The busy timeout and the retry budget are shortened so the retry path (rollback, jittered
back-off, the whole batch again) runs within a second instead of after five.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import aiosqlite
import pytest

import storage.db
from storage import StateStore
from storage.errors import StorageBusyError, StoreClosedError


def _hold_write_lock(db: Path, seconds: float, taken: threading.Event) -> threading.Thread:
    """Another writer (as a second process would be): BEGIN IMMEDIATE, hold, commit."""

    def run() -> None:
        conn = sqlite3.connect(db, timeout=10, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO inbound_events (platform, event_id, recorded_at)"
                         " VALUES ('other', 'x', 0)")
            taken.set()
            time.sleep(seconds)
            conn.execute("COMMIT")
        finally:
            conn.close()

    thread = threading.Thread(target=run, name="test-lock-holder", daemon=True)
    thread.start()
    return thread


def _sqlite_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if isinstance(t, aiosqlite.Connection)}


@pytest.fixture
def short_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage.db, "BUSY_TIMEOUT_MS", 50)


async def _locked_for(db: Path, seconds: float) -> threading.Thread:
    taken = threading.Event()
    holder = _hold_write_lock(db, seconds, taken)
    assert await asyncio.to_thread(taken.wait, 5)
    return holder


@pytest.mark.usefixtures("short_busy")
async def test_a_write_waits_out_another_writer_and_lands(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    async with await StateStore.open(db) as store:
        sid = (await store.create_session(source="t")).id
        holder = await _locked_for(db, 0.6)
        ids = await store.append_messages(sid, [{"role": "user", "content": "kept"},
                                                {"role": "assistant", "content": "also kept"}])
        first = await store.record_if_new("telegram", "1")
        again = await store.record_if_new("telegram", "1")
        await asyncio.to_thread(holder.join, 5)
        # with a 50 ms busy timeout, only the retry of the whole batch gets through 600 ms
        assert len(ids) == 2 and first is True and again is False
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT content FROM messages WHERE session_id = ? ORDER BY id",
                            (sid,)).fetchall()
        other = conn.execute("SELECT COUNT(*) FROM inbound_events WHERE platform = 'other'"
                             ).fetchone()[0]
    assert [r[0] for r in rows] == ["kept", "also kept"] and other == 1


@pytest.mark.usefixtures("short_busy")
async def test_a_lock_held_past_the_budget_is_a_clear_error_and_the_store_recovers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage.db, "RETRY_BUDGET_S", 0.3)
    db = tmp_path / "state.db"
    async with await StateStore.open(db) as store:
        sid = (await store.create_session(source="t")).id
        holder = await _locked_for(db, 1.5)
        with pytest.raises(StorageBusyError) as err:
            await store.append_messages(sid, [{"role": "user", "content": "refused"}])
        assert "locked" not in str(err.value).lower()
        await asyncio.to_thread(holder.join, 5)
        await store.append_messages(sid, [{"role": "user", "content": "after"}])
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT content FROM messages WHERE session_id = ?", (sid,)
                            ).fetchall()
    assert [r[0] for r in rows] == ["after"]


async def test_a_writer_that_breaks_mid_batch_fails_its_callers_instead_of_hanging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken_rollback(self: storage.db.Writer) -> None:
        raise ValueError("no active connection")  # as aiosqlite says once its thread is gone

    monkeypatch.setattr(storage.db, "BUSY_TIMEOUT_MS", 50)
    db = tmp_path / "state.db"
    before = _sqlite_threads()
    store = await StateStore.open(db)
    try:
        sid = (await store.create_session(source="t")).id
        monkeypatch.setattr(storage.db.Writer, "_rollback", broken_rollback)
        holder = await _locked_for(db, 0.5)
        with pytest.raises(StoreClosedError):
            await asyncio.wait_for(
                store.append_messages(sid, [{"role": "user", "content": "x"}]), 5)
        with pytest.raises(StoreClosedError):
            await store.append_messages(sid, [{"role": "user", "content": "later"}])
        await asyncio.to_thread(holder.join, 5)
    finally:
        monkeypatch.undo()
        await store.close()
    left = [t for t in _sqlite_threads() - before if t.is_alive()]
    assert not left, "the broken writer's connection thread was never closed"
