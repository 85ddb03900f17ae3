"""The chaos suite's replica mode: N gateway processes on one PostgreSQL database (created by
the run, reached through `DbProxy` so the database can be cut off), and the state checks
of `tests.chaos.invariants` read from PostgreSQL.

`ReplicaGateways` looks like one `GatewayProcess` to the run: `signal`, `wait` and `start`
act on the replica chosen for the current kill point (`choose`): the owner of the busiest
sessions for a kill during a turn, the Telegram polling leader for every other one, a
random replica otherwise; `start` starts every replica that is not running."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from typing import Any

from tests.chaos.process import GatewayProcess

__all__ = ["ReplicaGateways", "pg_db_rows", "pg_expired_leases_free", "pg_replica_problems"]


class ReplicaGateways:
    def __init__(self, homes: list[Path], run_dir: Path, dsn: str, rng: random.Random) -> None:
        self.dsn = dsn
        self.members = []
        for i, home in enumerate(homes):
            d = run_dir / f"r{i}"
            d.mkdir(parents=True, exist_ok=True)
            self.members.append(GatewayProcess(home, d))
        self.current = self.members[0]
        self._rng = rng
        self.targets: dict[str, int] = {}
        self.log = run_dir / "r0" / "gateway.log"

    @property
    def running(self) -> bool:
        return all(m.running for m in self.members)

    @property
    def pid(self) -> int | None:
        return self.current.pid

    async def start(self) -> None:
        for m in self.members:
            if not m.running:
                await m.start()

    def signal(self, sig: signal.Signals) -> None:
        self.current.signal(sig)

    async def wait(self, timeout: float) -> int | None:
        return await self.current.wait(timeout)

    async def stop_all(self, timeout: float = 60) -> None:
        for m in self.members:
            m.signal(signal.SIGTERM)
        for m in self.members:
            if m.proc is not None and m.proc.returncode is None:
                await m.wait(timeout)

    def peak_rss_mb(self) -> float:
        return max(m.peak_rss_mb() for m in self.members)

    def rss_growth_problems(self, min_span_s: float = 120.0) -> list[str]:
        return [p for m in self.members for p in m.rss_growth_problems(min_span_s)]

    async def choose(self, mode: str) -> None:
        """Pick the replica this kill point hits (see the module docstring)."""
        by_pid = {m.pid: m for m in self.members if m.pid is not None}
        target = None
        kind = "random"
        try:
            if mode.endswith("_turn"):
                rows = await _query(self.dsn,
                    "SELECT r.pid, COUNT(*) AS n FROM session_leases l JOIN replicas r"
                    " ON r.id = l.holder WHERE l.expires_at > extract(epoch from now())"
                    " GROUP BY r.pid ORDER BY n DESC")
                target, kind = next(((by_pid[r["pid"]], "session_owner") for r in rows
                                     if r["pid"] in by_pid), (None, kind))
            elif self._rng.random() < 0.7:
                rows = await _query(self.dsn,
                    "SELECT r.pid FROM leader_leases l JOIN replicas r ON r.id = l.holder"
                    " WHERE l.role LIKE 'telegram:%' AND l.expires_at >"
                    " extract(epoch from now())")
                target, kind = next(((by_pid[r["pid"]], "polling_leader") for r in rows
                                     if r["pid"] in by_pid), (None, kind))
        except Exception:  # noqa: BLE001 - the database may be cut off right now
            target = None
        if target is None:
            running = [m for m in self.members if m.running] or self.members
            target, kind = self._rng.choice(running), "random"
        self.current = target
        self.targets[kind] = self.targets.get(kind, 0) + 1


async def _query(dsn: str, sql: str) -> list[Any]:
    import asyncpg

    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


async def pg_db_rows(dsn: str) -> tuple[list[tuple[int, str, str]], dict[str, str], str,
                                        list[tuple[str, str | None, float]], int]:
    """`invariants._db_rows` from PostgreSQL: user rows (compression copies left out),
    sessions' chats, "ok" (the server keeps its own integrity), leases, held events."""
    sessions = await _query(dsn, "SELECT id, chat_id, thread_id, parent_session_id,"
                                 " lineage_kind FROM sessions")
    chats = {r["id"]: f"{r['chat_id']}/{r['thread_id'] or '-'}" for r in sessions}
    parents = {r["id"]: r["parent_session_id"] for r in sessions
               if r["lineage_kind"] == "compression"}
    raw = [(r["id"], r["session_id"], str(r["content"] or "")) for r in await _query(
        dsn, "SELECT id, session_id, content FROM messages WHERE role = 'user' ORDER BY id")]
    by_session: dict[str, set[str]] = {}
    for _rid, sid, content in raw:
        by_session.setdefault(sid, set()).add(content)

    def copied(sid: str, content: str) -> bool:
        seen: set[str] = set()
        parent = parents.get(sid)
        while parent and parent not in seen:
            seen.add(parent)
            if content in by_session.get(parent, ()):
                return True
            parent = parents.get(parent)
        return False

    rows = [(rid, chats.get(sid, "?/-"), c) for rid, sid, c in raw if not copied(sid, c)]
    leases = [(str(r["session_id"]), r["holder"], float(r["expires_at"])) for r in
              await _query(dsn, "SELECT session_id, holder, expires_at FROM compression_leases")]
    held = int((await _query(dsn, "SELECT COUNT(*) AS n FROM inbound_events"
                                  " WHERE held IS NOT NULL"))[0]["n"])
    return rows, chats, "ok", leases, held


async def pg_replica_problems(dsn: str) -> list[str]:
    """After every replica stopped cleanly: no session or leader lease still held, every
    replica row marked stopped."""
    out = []
    for r in await _query(dsn, "SELECT session_key, holder FROM session_leases"
                               " WHERE holder IS NOT NULL"):
        out.append(f"session lease of {r['session_key']} still held by {r['holder']}")
    for r in await _query(dsn, "SELECT role, holder FROM leader_leases WHERE holder IS NOT NULL"):
        out.append(f"leader lease {r['role']} still held by {r['holder']}")
    for r in await _query(dsn, "SELECT id FROM replicas WHERE stopped_at IS NULL"
                               " AND expires_at > extract(epoch from now())"):
        out.append(f"replica {r['id']} still live after the final stop")
    return out


async def pg_expired_leases_free(dsn: str, wait_max_s: float) -> list[str]:
    """`invariants.expired_leases_free` on PostgreSQL."""
    import asyncio

    from storage.postgres import PostgresStore

    held = [(str(r["session_id"]), float(r["expires_at"])) for r in await _query(
        dsn, "SELECT session_id, expires_at FROM compression_leases WHERE holder IS NOT NULL")]
    if not held:
        return []
    wait = min(max(e for _, e in held) - time.time() + 0.2, wait_max_s)
    if wait > 0:
        await asyncio.sleep(wait)
    problems = []
    async with await PostgresStore.open(dsn) as store:
        for session_id, _ in held:
            lease = await store.acquire_lease(session_id, "chaos-check", 1.0)
            if lease is None:
                problems.append(f"lease of {session_id} cannot be taken after its expiry")
            else:
                await store.release_lease(lease)
    return problems
