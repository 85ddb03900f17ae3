"""Session commands with two gateway replicas in one process on one PostgreSQL database: a
command that lands on the replica that does not own the session is run by the owner (where
the turn runs), once, and a command waiting in the line of an owner that died is run by the
next owner.

The chat is the fake platform seen through the two replicas' adapters: what the user sees
is what both adapters sent."""

from __future__ import annotations

import time
from pathlib import Path

from adapters.fake import FakeAdapter
from storage.postgres import PostgresStore
from tests.fakes.openai_server import FakeOpenAIServer, hang
from tests.gateway.runtime_harness import KEY, runner_for
from tests.pg_support import reset

REPLICAS = {"storage__backend": "postgres", "gateway__replicas__lease_s": 3.0,
            "gateway__replicas__sweep_s": 0.2, "gateway__replicas__stale_handover_s": 1.0,
            "gateway__busy_mode": "queue"}


def _chat(*adapters: FakeAdapter) -> list[str]:
    return [t for a in adapters for t in a.messages("c1")]


def _one(chat: list[str], starts: str) -> str:
    found = [t for t in chat if t.startswith(starts)]
    assert len(found) == 1, chat
    return found[0]


async def _user_texts(store: PostgresStore, session_id: str) -> list[str]:
    return [m["content"] for m in await store.load_history(session_id) if m["role"] == "user"]


async def test_stop_and_status_through_the_other_replica_reach_the_running_turn(
        tmp_path: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    await reset(pg_dsn)
    model.enqueue(hang(60))
    fa, fb = FakeAdapter("fake"), FakeAdapter("fake")
    async with runner_for(tmp_path / "a", model, adapters={"fake": fa}, storage__dsn=pg_dsn,
                          **REPLICAS) as (ra, _), \
            runner_for(tmp_path / "b", model, adapters={"fake": fb},
                       storage__dsn=pg_dsn, **REPLICAS) as (rb, _):
        assert ra.replica is not None and rb.replica is not None
        await fa.inject("long job")
        await fa.wait_for(lambda: len(model.requests) == 1)
        assert ra.replica.sessions.owns(KEY)
        # the user asks how it goes, through the replica that does not run the turn
        await fb.inject("/status")
        await fa.wait_for(lambda: any(t.startswith("Model:") for t in _chat(fa, fb)))
        assert "State: working" in _one(_chat(fa, fb), "Model:")
        await fb.inject("/undo")  # refused: the owner knows the agent is busy
        await fa.wait_for(lambda: any("/stop first" in t for t in _chat(fa, fb)))
        await fb.inject("/stop")
        await fa.wait_for(lambda: any(t.startswith("⏹") for t in _chat(fa, fb)))
        await fa.wait_for(lambda: not ra.manager.is_busy(KEY))
        # the next message is answered (the stopped turn is not)
        await fb.inject("after")
        # (the model sees the stopped message too: it was stored, never answered)
        await fa.wait_for(lambda: "echo: long job\n\nafter" in _chat(fa, fb), timeout_s=15)
        await fa.wait_for(lambda: not ra.manager.is_busy(KEY))
        chat = _chat(fa, fb)
        assert _one(chat, "⏹") == "⏹ Stopped."
        assert "Nothing is running." not in chat
        assert [t for t in chat if t.startswith("echo:")] == ["echo: long job\n\nafter"]
        assert len(model.requests) == 2  # the stopped job, then "after": each once
        assert not rb.replica.sessions.owns(KEY)
    async with await PostgresStore.open(pg_dsn) as store:
        [session] = await store.list_sessions()
        assert await _user_texts(store, session.id) == ["long job", "after"]
        texts = [m["content"] for m in await store.load_history(session.id)]
        assert texts[-1] == "echo: long job\n\nafter"
        assert await store.inbound_held() == []


async def test_new_through_the_other_replica_stops_the_turn_and_starts_a_session(
        tmp_path: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    """/new on b while a runs a turn: the turn stops at once (not after its minute), the
    next message, sent right behind the command, goes to the new session."""
    await reset(pg_dsn)
    model.enqueue(hang(60))
    fa, fb = FakeAdapter("fake"), FakeAdapter("fake")
    async with runner_for(tmp_path / "a", model, adapters={"fake": fa}, storage__dsn=pg_dsn,
                          **REPLICAS) as (ra, _), \
            runner_for(tmp_path / "b", model, adapters={"fake": fb},
                       storage__dsn=pg_dsn, **REPLICAS) as (rb, _):
        assert ra.replica is not None and rb.replica is not None
        await fa.inject("old topic")
        await fa.wait_for(lambda: len(model.requests) == 1)
        await fb.inject("/new Fresh start")
        await fb.inject("new topic")
        await fa.wait_for(lambda: "echo: new topic" in _chat(fa, fb), timeout_s=15)
        await fa.wait_for(lambda: not ra.manager.is_busy(KEY))
        chat = _chat(fa, fb)
        assert _one(chat, "✨") == "✨ New session “Fresh start” started."
        assert [t for t in chat if t.startswith("echo:")] == ["echo: new topic"]
    async with await PostgresStore.open(pg_dsn) as store:
        sessions = {s.title: s for s in await store.list_sessions()}
        old, new = sessions[None], sessions["Fresh start"]
        assert old.end_reason == "new_session" and new.ended_at is None
        assert await _user_texts(store, old.id) == ["old topic"]
        assert await _user_texts(store, new.id) == ["new topic"]
        assert await store.inbound_held() == []


async def test_a_command_in_the_line_of_an_owner_that_died_is_run_by_the_next_owner(
        tmp_path: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    """The session's owner is gone without a release (what `kill -9` leaves behind: its
    replica row and its lease, renewed by nobody). /new and a message land on the live
    replica meanwhile and wait in the session's line for the dead owner; when its lease runs
    out the live replica takes the session over and runs both, in order."""
    import asyncpg

    await reset(pg_dsn)
    fb = FakeAdapter("fake")
    async with runner_for(tmp_path / "b", model, adapters={"fake": fb},
                          storage__dsn=pg_dsn, **REPLICAS) as (rb, _):
        assert rb.replica is not None
        dies_at = time.time() + 2.0
        conn = await asyncpg.connect(pg_dsn)
        try:
            await conn.execute(
                "INSERT INTO replicas(id, host, home, pid, started_at, heartbeat_at,"
                " expires_at, sessions) VALUES ('gone:1', 'elsewhere', '/srv/gone', 1, $1,"
                " $1, $2, 1)", time.time() - 60, dies_at)
            await conn.execute(
                "INSERT INTO session_leases(session_key, holder, token, acquired_at,"
                " expires_at) VALUES ($1, 'gone:1', 7, $2, $3)", KEY, time.time() - 60,
                dies_at)
        finally:
            await conn.close()
        await fb.inject("/new After the crash")
        await fb.inject("hello again")
        assert not rb.replica.sessions.owns(KEY)
        assert _chat(fb) == []  # waiting for the owner, which never comes
        await fb.wait_for(lambda: "echo: hello again" in _chat(fb), timeout_s=15)
        assert time.time() >= dies_at
        assert _one(_chat(fb), "✨") == "✨ New session “After the crash” started."
        assert rb.replica.sessions.owns(KEY)
    async with await PostgresStore.open(pg_dsn) as store:
        [session] = await store.list_sessions()
        assert session.title == "After the crash"
        assert await _user_texts(store, session.id) == ["hello again"]
        assert await store.inbound_held() == []
        lease = await store.session_lease_of(KEY)
        assert lease is None or lease.token > 7
