"""Compression leases with fencing tokens, and the commit fence (DESIGN.md §4).

A lease row is never deleted: release only clears the holder, so the token counter of a
session keeps rising for ever and a token is never handed out twice.
"""

from __future__ import annotations

from storage.base import StoreBase
from storage.errors import FenceRejected
from storage.sqlconn import Conn
from storage.types import Lease

__all__ = ["LeasesMixin", "check_fence"]


async def check_fence(
    conn: Conn,
    lease: Lease,
    session_id: str,
    now: float,
    deadline: float | None,
) -> None:
    """Inside the caller's write transaction: raise `FenceRejected` unless `lease` is still
    current (same holder and token, unexpired), the deadline has not passed, and `session_id`
    is live."""
    if deadline is not None and now > deadline:
        raise FenceRejected("timeout", "job deadline passed")
    # PostgreSQL: lock the lease row, so a takeover waits until this transaction ends (the
    # SQLite transaction already holds the database's write lock).
    lock = " FOR UPDATE" if conn.dialect == "postgres" else ""
    rows = list(
        await conn.execute_fetchall(
            "SELECT holder, token, expires_at FROM compression_leases WHERE session_id = ?"
            + lock,
            (lease.session_id,),
        )
    )
    if (
        not rows
        or rows[0]["holder"] != lease.holder
        or rows[0]["token"] != lease.token
        or rows[0]["expires_at"] <= now
    ):
        raise FenceRejected("lease_lost", f"lease token {lease.token} is no longer current")
    live = list(
        await conn.execute_fetchall(
            "SELECT ended_at FROM sessions WHERE id = ?", (session_id,)
        )
    )
    if not live or live[0][0] is not None:
        raise FenceRejected("superseded", "session is no longer the live head of its lineage")


class LeasesMixin(StoreBase):
    """Durable per-session leases. Times come from the store's clock."""

    async def acquire_lease(self, session_id: str, holder: str, ttl: float) -> Lease | None:
        """Take the session's lease for `ttl` seconds, or None while someone (anyone,
        including this holder) holds it unexpired. A free or expired lease is taken with a
        token strictly higher than any before."""

        async def op(conn: Conn) -> Lease | None:
            # One statement: the row is taken (or found held) atomically, also between
            # processes on PostgreSQL, where the conflicting row is locked and re-checked.
            now = self._clock()
            cur = await conn.execute(
                "INSERT INTO compression_leases(session_id, holder, token, acquired_at,"
                " expires_at) VALUES (?, ?, 1, ?, ?) ON CONFLICT(session_id) DO UPDATE SET"
                " holder = excluded.holder, token = compression_leases.token + 1,"
                " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at"
                " WHERE compression_leases.holder IS NULL"
                " OR compression_leases.expires_at <= excluded.acquired_at"
                " RETURNING token",
                (session_id, holder, now, now + ttl),
            )
            row = await cur.fetchone()
            if row is None:
                return None
            return Lease(session_id, holder, int(row[0]), now, now + ttl)

        return await self._write(op)

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease | None:
        """Extend a lease that is still this holder's and unexpired; None otherwise."""

        async def op(conn: Conn) -> Lease | None:
            now = self._clock()
            cur = await conn.execute(
                "UPDATE compression_leases SET expires_at = ? WHERE session_id = ?"
                " AND holder = ? AND token = ? AND expires_at > ?",
                (now + ttl, lease.session_id, lease.holder, lease.token, now),
            )
            if cur.rowcount != 1:
                return None
            return Lease(lease.session_id, lease.holder, lease.token, lease.acquired_at, now + ttl)

        return await self._write(op)

    async def release_lease(self, lease: Lease) -> bool:
        """Give the lease up if it is still this one (never another holder's)."""

        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE compression_leases SET holder = NULL, expires_at = 0"
                " WHERE session_id = ? AND holder = ? AND token = ?",
                (lease.session_id, lease.holder, lease.token),
            )
            return cur.rowcount == 1

        return await self._write(op)

    async def current_lease(self, session_id: str) -> Lease | None:
        """The unexpired lease on the session, or None."""
        row = await self._fetchone(
            "SELECT session_id, holder, token, acquired_at, expires_at FROM compression_leases"
            " WHERE session_id = ? AND holder IS NOT NULL AND expires_at > ?",
            (session_id, self._clock()),
        )
        if row is None:
            return None
        return Lease(row[0], row[1], row[2], row[3], row[4])
