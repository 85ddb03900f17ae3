"""Separate OS processes on one store, both backends: two writers racing for leases, and a
process killed with SIGKILL while it holds a write transaction (and the lease row)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _storage_testlib import turn

from storage import StateStore
from tests.pg_support import Target

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

RACER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from tests.pg_support import open_store

    async def main(backend, where, name, start, ids):
        store = await open_store((backend, where))
        won = {}
        try:
            while time.time() < start:
                await asyncio.sleep(0.001)
            leases = await asyncio.gather(*(store.acquire_lease(s, name, 60) for s in ids))
            won = {s: l.token for s, l in zip(ids, leases) if l is not None}
        finally:
            await store.close()
        print(json.dumps(won))

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]),
                     sys.argv[5].split(",")))
    """
)

APPENDER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from tests.pg_support import open_store

    async def main(backend, where, name, seconds):
        store = await open_store((backend, where))
        acked, errors = 0, []
        try:
            sessions = [(await store.create_session(source=name)).id for _ in range(4)]

            async def pump(sid):
                nonlocal acked
                end, i = time.monotonic() + seconds, 0
                while time.monotonic() < end:
                    try:
                        ids = await store.append_messages(sid, [
                            {"role": "user", "content": f"{name} question {i}"},
                            {"role": "assistant", "content": f"{name} answer {i}"}])
                        acked += len(ids)
                        await store.record_if_new(name, f"{sid}:{i}")
                    except Exception as exc:
                        errors.append(repr(exc))
                    i += 1

            await asyncio.gather(*(pump(s) for s in sessions))
        finally:
            await store.close()
        print(json.dumps({"acked": acked, "errors": errors[:5]}))

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
    """
)

HOLDER = textwrap.dedent(
    """
    import asyncio, sqlite3, sys, time

    SQL_MSG = ("INSERT INTO messages (session_id, role, timestamp, content)"
               " VALUES ('{sid}', 'user', 0, 'never committed')")
    SQL_LEASE = "UPDATE compression_leases SET expires_at = expires_at WHERE session_id = '{sid}'"

    async def hold_pg(dsn, sid):
        import asyncpg
        conn = await asyncpg.connect(dsn)
        await conn.execute("BEGIN")
        await conn.execute(SQL_MSG.format(sid=sid))
        await conn.execute(SQL_LEASE.format(sid=sid))
        print("holding", flush=True)
        await asyncio.sleep(300)

    def hold_sqlite(path, sid):
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(SQL_MSG.format(sid=sid))
        conn.execute(SQL_LEASE.format(sid=sid))
        print("holding", flush=True)
        time.sleep(300)

    backend, where, sid = sys.argv[1:4]
    if backend == "postgres":
        asyncio.run(hold_pg(where, sid))
    else:
        hold_sqlite(where, sid)
    """
)


async def _python(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", *args, cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def test_two_processes_racing_for_leases_get_one_winner_each(
        store: StateStore, store_target: Target) -> None:
    ids = [(await store.create_session(source="cli")).id for _ in range(40)]
    loop = asyncio.get_running_loop()
    start = loop.time()
    at = str(time.time() + 2.0)  # both start together, after their imports
    procs = [await _python(RACER, store_target[0], store_target[1], f"proc{i}", at,
                           ",".join(ids)) for i in range(2)]
    outs = []
    for p in procs:
        out, err = await asyncio.wait_for(p.communicate(), 60)
        assert p.returncode == 0, err.decode()
        outs.append(json.loads(out.decode().strip().splitlines()[-1]))
    assert loop.time() - start < 60
    winners = [sid for won in outs for sid in won]
    assert sorted(winners) == sorted(ids), "every lease went to exactly one process"
    assert all(t == 1 for won in outs for t in won.values())
    for sid in ids:
        lease = await store.current_lease(sid)
        holder = "proc0" if sid in outs[0] else "proc1"
        assert lease is not None and lease.holder == holder and lease.token == 1


async def test_two_processes_appending_lose_nothing(
        store: StateStore, store_target: Target) -> None:
    procs = [await _python(APPENDER, store_target[0], store_target[1], f"proc{i}", "3")
             for i in range(2)]
    results = []
    for p in procs:
        out, err = await asyncio.wait_for(p.communicate(), 90)
        assert p.returncode == 0, err.decode()
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    assert all(r["errors"] == [] and r["acked"] > 0 for r in results), results
    for i, r in enumerate(results):
        sessions = await store.list_sessions(source=f"proc{i}")
        stored = [m for s in sessions for m in await store.load_all(s.id)]
        assert len(stored) == r["acked"]
        for s in sessions:  # in order within each session
            texts = [m["content"] for m in await store.load_history(s.id)]
            n = [int(t.rsplit(" ", 1)[1]) for t in texts]
            assert n == sorted(n) and texts[:2] == [f"proc{i} question 0", f"proc{i} answer 0"]
    questions = sum(r["acked"] for r in results) // 2
    assert len(await store.search("question", limit=200)) == min(200, questions)


async def test_kill_9_while_holding_a_transaction_loses_only_that_transaction(
        store: StateStore, store_target: Target) -> None:
    s = await store.create_session(source="cli")
    await store.append_messages(s.id, turn("q0", "a0"))
    snap = await store.last_message_id(s.id)
    assert snap is not None
    lease = await store.acquire_lease(s.id, "survivor", ttl=300)
    assert lease is not None
    proc = await _python(HOLDER, store_target[0], store_target[1], s.id)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line.strip() == b"holding", (await proc.stderr.read()).decode()  # type: ignore[union-attr]
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert proc.returncode == -signal.SIGKILL

    # The dead transaction is gone: its message never appears, the lease row is free again,
    # and the fenced commit of the lease holder goes through.
    child = await asyncio.wait_for(store.commit_rotation(
        lease, s.id, snapshot_last_message_id=snap,
        compressed_messages=[{"role": "assistant", "content": "summary"}]), 30)
    assert [m["content"] for m in await store.load_all(s.id)] == ["q0", "a0"]
    assert [m["content"] for m in await store.load_history(child)] == ["summary"]
    assert await store.search("committed") == []
    await store.append_messages(child, turn("after", "crash"))
    assert [m["content"] for m in await store.load_history(child)] == [
        "summary", "after", "crash"]
