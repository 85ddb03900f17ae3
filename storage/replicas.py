"""Replicas on one database: heartbeats, session leases, the handover queue, leader leases.

Several `hermes gateway run` processes (replicas) share one PostgreSQL database. Each has an
id (host and boot) and a heartbeat row in `replicas`; each session (by routing key) is
worked by the one replica that holds its row in `session_leases`, with a fencing token that
only rises (`storage.fencing` checks the turn's writes against it).

The handover queue is the held events themselves (`inbound_events` rows with `held` set,
in line by `held_seq`, a sequence): an event that lands on any replica is held *unclaimed*
in its session's line (`session_admit`); the owner claims the line in order
(`claimed_by` = its id) under its lease, in the same transaction that checks the lease, and
hands the events to its session worker. An event that lands on a replica that does not own
the session stays in line and the owner is woken (PostgreSQL `NOTIFY`, channel
`HANDOVER_CHANNEL`); if the owner dies the line survives it, and the replica that takes the
expired lease over claims it. Order per session is the line's order; an event is claimed
by one owner at a time and released when its user message is stored (as before).

Leader leases (`leader_leases`) have the same shape, one per intake that must run on one
replica only (long polling, Socket Mode, the Discord gateway).

Every method takes the lease time `ttl` in seconds and decides with the store's clock. On
SQLite the gateway never calls these (one process owns everything); they work there too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from storage.base import StoreBase
from storage.inbox import next_held_place
from storage.sqlconn import Conn, Row
from storage.types import (
    Admission,
    ClaimedEvent,
    Heartbeat,
    HeldEvent,
    ReplicaInfo,
    SessionLease,
    SweepItem,
)

__all__ = ["HANDOVER_CHANNEL", "LIVE_REPLICAS", "HandoverSubscription", "ReplicasMixin"]

#: The PostgreSQL notification channel that wakes a session's owner; payload
#: "<owner replica id> <session key>".
HANDOVER_CHANNEL = "hermes_handover"

#: A subquery of the ids of live replicas; one `?` parameter: now.
LIVE_REPLICAS = "SELECT id FROM replicas WHERE stopped_at IS NULL AND expires_at > ?"

_TAKE_LEASE = (
    "INSERT INTO session_leases(session_key, holder, token, prev_holder, acquired_at,"
    " expires_at) VALUES (?, ?, 1, NULL, ?, ?) ON CONFLICT(session_key) DO UPDATE SET"
    " prev_holder = CASE WHEN session_leases.holder = excluded.holder"
    "  AND session_leases.expires_at > excluded.acquired_at THEN session_leases.prev_holder"
    "  ELSE session_leases.holder END,"
    " token = CASE WHEN session_leases.holder = excluded.holder"
    "  AND session_leases.expires_at > excluded.acquired_at THEN session_leases.token"
    "  ELSE session_leases.token + 1 END,"
    " acquired_at = CASE WHEN session_leases.holder = excluded.holder"
    "  AND session_leases.expires_at > excluded.acquired_at THEN session_leases.acquired_at"
    "  ELSE excluded.acquired_at END,"
    " holder = excluded.holder, expires_at = excluded.expires_at"
    " WHERE session_leases.holder IS NULL OR session_leases.expires_at <= excluded.acquired_at"
    " OR session_leases.holder = excluded.holder"
    " RETURNING token, prev_holder, acquired_at"
)


def _held(r: Row) -> HeldEvent:
    return HeldEvent(platform=r["platform"], event_id=r["event_id"],
                     session_key=r["session_key"] or "", payload=r["held"],
                     recorded_at=r["recorded_at"])


async def _take_lease(conn: Conn, key: str, me: str, now: float, ttl: float
                      ) -> SessionLease | None:
    lock = " FOR UPDATE" if conn.dialect == "postgres" else ""
    old = await conn.execute_fetchall(
        "SELECT holder, expires_at FROM session_leases WHERE session_key = ?" + lock, (key,))
    cur = await conn.execute(_TAKE_LEASE, (key, me, now, now + ttl))
    row = await cur.fetchone()
    if row is None:
        return None
    fresh = not old or old[0]["holder"] != me or float(old[0]["expires_at"]) <= now
    prev = row["prev_holder"]
    return SessionLease(key, me, int(row["token"]), float(row["acquired_at"]), now + ttl,
                        fresh=fresh, takeover=fresh and prev is not None, prev_holder=prev)


async def _claim(conn: Conn, key: str, me: str, *, include_own: bool) -> list[ClaimedEvent]:
    """Claim the session's held events for `me` (the caller holds its lease, checked in this
    transaction), in line order. `include_own`: also those `me` claimed before (a fresh
    lease: no worker of `me` has them any more)."""
    own = "" if include_own else " AND claimed_by IS DISTINCT FROM ?"
    params: tuple[str, ...] = (key,) if include_own else (key, me)
    lock = " FOR UPDATE" if conn.dialect == "postgres" else ""
    before = {(r["platform"], r["event_id"]): r["claimed_by"] for r in await conn.execute_fetchall(
        "SELECT platform, event_id, claimed_by FROM inbound_events"
        " WHERE held IS NOT NULL AND session_key = ?" + own + lock, params)}
    if not before:
        return []
    rows = await conn.execute_fetchall(
        "UPDATE inbound_events SET claimed_by = ? WHERE held IS NOT NULL AND session_key = ?"
        + own + " RETURNING platform, event_id, session_key, held, recorded_at, held_seq",
        (me, *params))
    out = []
    for r in sorted(rows, key=lambda r: int(r["held_seq"] or 0)):
        prev = before.get((r["platform"], r["event_id"]))
        out.append(ClaimedEvent(_held(r), int(r["held_seq"] or 0),
                                recovered=prev is not None and prev != me))
    return out


async def _owner(conn: Conn, key: str, now: float) -> str | None:
    rows = await conn.execute_fetchall(
        "SELECT holder FROM session_leases WHERE session_key = ? AND holder IS NOT NULL"
        " AND expires_at > ?", (key, now))
    return str(rows[0]["holder"]) if rows else None


async def _notify(conn: Conn, owner: str, key: str) -> None:
    if conn.dialect == "postgres":
        await conn.execute("SELECT pg_notify(?, ?)", (HANDOVER_CHANNEL, f"{owner} {key}"))


class HandoverSubscription(Protocol):
    """A running wake-up listener (`ReplicasMixin.handover_listener`)."""

    def start(self) -> None: ...

    async def close(self) -> None: ...


class _NoWakeups:
    """SQLite: no notifications (one process; the sweep would find every line anyway)."""

    def start(self) -> None:
        return None

    async def close(self) -> None:
        return None


class ReplicasMixin(StoreBase):
    """The replica runtime's storage (see the module docstring)."""

    def handover_listener(self, replica_id: str, on_key: Callable[[str | None], None], *,
                          on_error: Callable[[BaseException, int], None] | None = None
                          ) -> HandoverSubscription:
        """A listener calling `on_key(session key)` when another replica hands a session's
        event to `replica_id`, and `on_key(None)` when wake-ups may have been missed. Not
        started yet. On SQLite it never calls."""
        return _NoWakeups()

    # -- the replica row ---------------------------------------------------------------------
    async def replica_heartbeat(self, replica_id: str, *, host: str, home: str | None,
                                pid: int | None, started_at: float, ttl: float) -> Heartbeat:
        """Record that `replica_id` is alive until now + `ttl`, and renew every session and
        leader lease it still holds unexpired (one transaction). Returns `alive=False`,
        renewing nothing, when the replica was retired (`replicas_retire`)."""

        async def op(conn: Conn) -> Heartbeat:
            now = self._clock()
            rows = await conn.execute_fetchall(
                "SELECT stopped_at FROM replicas WHERE id = ?", (replica_id,))
            if rows and rows[0]["stopped_at"] is not None:
                return Heartbeat(alive=False)
            sessions = {str(r[0]): int(r[1]) for r in await conn.execute_fetchall(
                "UPDATE session_leases SET expires_at = ? WHERE holder = ? AND expires_at > ?"
                " RETURNING session_key, token", (now + ttl, replica_id, now))}
            roles = {str(r[0]): int(r[1]) for r in await conn.execute_fetchall(
                "UPDATE leader_leases SET expires_at = ? WHERE holder = ? AND expires_at > ?"
                " RETURNING role, token", (now + ttl, replica_id, now))}
            await conn.execute(
                "INSERT INTO replicas(id, host, home, pid, started_at, heartbeat_at, expires_at,"
                " roles, sessions) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE"
                " SET heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at,"
                " roles = excluded.roles, sessions = excluded.sessions",
                (replica_id, host, home, pid, started_at, now, now + ttl,
                 json.dumps(sorted(roles)), len(sessions)))
            return Heartbeat(alive=True, sessions=sessions, roles=roles)

        return await self._write(op)

    async def replicas_retire(self, replica_id: str, *, host: str, home: str) -> list[str]:
        """Declare dead every other replica of this host and profile home that has not
        stopped (the caller holds the profile's single-instance lock, so they are gone):
        their leases expire now and remain theirs, so the next taker recovers their work
        (a takeover), without waiting for the leases to run out. Returns their ids."""

        async def op(conn: Conn) -> list[str]:
            now = self._clock()
            ids = [str(r[0]) for r in await conn.execute_fetchall(
                "UPDATE replicas SET stopped_at = ?, expires_at = ? WHERE host = ? AND home = ?"
                " AND id != ? AND stopped_at IS NULL RETURNING id",
                (now, now, host, home, replica_id))]
            for rid in ids:
                await conn.execute("UPDATE session_leases SET expires_at = ? WHERE holder = ?"
                                   " AND expires_at > ?", (now, rid, now))
                await conn.execute("UPDATE leader_leases SET expires_at = ? WHERE holder = ?"
                                   " AND expires_at > ?", (now, rid, now))
            return ids

        return await self._write(op)

    async def replica_stop(self, replica_id: str, *, unfinished: Iterable[str] = ()) -> None:
        """A clean stop: release every lease `replica_id` holds (its sessions' queues are
        free for the others at once) and mark it stopped. The sessions `unfinished` (a turn
        the stop cut off, or work queued that no held event carries, such as a turn being
        re-run) are not released but expire now, still theirs: the next taker recovers them
        as after a crash (their unanswered turn is run again, their unsent finals sent)."""
        left = sorted(set(unfinished))

        async def op(conn: Conn) -> None:
            now = self._clock()
            kept: set[str] = set()
            for key in left:
                cur = await conn.execute(
                    "UPDATE session_leases SET expires_at = ? WHERE holder = ?"
                    " AND session_key = ? AND expires_at > ?", (now, replica_id, key, now))
                if cur.rowcount == 1:
                    kept.add(key)
            keep = (" AND session_key NOT IN (" + ", ".join("?" * len(kept)) + ")"
                    if kept else "")
            await conn.execute("UPDATE session_leases SET holder = NULL, expires_at = 0"
                               " WHERE holder = ?" + keep, (replica_id, *sorted(kept)))
            await conn.execute("UPDATE leader_leases SET holder = NULL, expires_at = 0"
                               " WHERE holder = ?", (replica_id,))
            await conn.execute("UPDATE replicas SET stopped_at = ?, expires_at = ?, roles = '[]',"
                               " sessions = 0 WHERE id = ?", (now, now, replica_id))

        await self._write(op)

    async def replicas_list(self, *, include_stopped_since: float | None = None
                            ) -> list[ReplicaInfo]:
        """Every live replica (and those that stopped or expired since
        `include_stopped_since`), oldest first, with the sessions and leader roles they
        hold now."""
        now = self._clock()
        since = now + 1 if include_stopped_since is None else include_stopped_since
        rows = await self._fetchall(
            "SELECT id, host, home, pid, started_at, heartbeat_at, expires_at, stopped_at"
            " FROM replicas WHERE (stopped_at IS NULL AND expires_at > ?)"
            " OR COALESCE(stopped_at, expires_at) >= ? ORDER BY started_at, id", (now, since))
        owned: dict[str, int] = {}
        for r in await self._fetchall(
                "SELECT holder, COUNT(*) AS n FROM session_leases WHERE holder IS NOT NULL"
                " AND expires_at > ? GROUP BY holder", (now,)):
            owned[str(r["holder"])] = int(r["n"])
        roles: dict[str, list[str]] = {}
        for r in await self._fetchall(
                "SELECT role, holder FROM leader_leases WHERE holder IS NOT NULL"
                " AND expires_at > ? ORDER BY role", (now,)):
            roles.setdefault(str(r["holder"]), []).append(str(r["role"]))
        return [ReplicaInfo(
            id=r["id"], host=r["host"], home=r["home"], pid=r["pid"],
            started_at=r["started_at"], heartbeat_at=r["heartbeat_at"],
            expires_at=r["expires_at"], stopped_at=r["stopped_at"],
            live=r["stopped_at"] is None and r["expires_at"] > now,
            sessions=owned.get(r["id"], 0), roles=tuple(roles.get(r["id"], ())))
            for r in rows]

    # -- session leases and the handover queue ----------------------------------------------
    async def session_admit(self, replica_id: str, session_key: str, platform: str,
                            event_id: str, payload: str, *, ttl: float,
                            take: bool = True) -> Admission:
        """Put an event at the end of its session's line (unclaimed), then, with `take`,
        take or keep the session's lease and claim the line for `replica_id`, all in one
        transaction. When another live replica holds the lease (or `take` is False and one
        does), that owner is notified and named in the result. An event already held
        changes nothing (`held=False`)."""

        async def op(conn: Conn) -> Admission:
            now = self._clock()
            place = next_held_place(conn.dialect)
            cur = await conn.execute(
                "INSERT INTO inbound_events(platform, event_id, recorded_at, session_key,"
                f" held, held_seq, claimed_by) VALUES (?, ?, ?, ?, ?, {place}, NULL)"
                " ON CONFLICT(platform, event_id) DO UPDATE SET"
                " session_key = excluded.session_key, held = excluded.held,"
                " held_seq = excluded.held_seq, claimed_by = NULL"
                " WHERE inbound_events.held IS NULL",
                (platform, str(event_id), now, session_key, payload))
            if cur.rowcount != 1:
                return Admission(held=False)
            return await self._take_on(conn, replica_id, session_key, now, ttl, take=take)

        return await self._write(op)

    async def session_take(self, replica_id: str, session_key: str, *, ttl: float
                           ) -> Admission:
        """Take or keep the session's lease and claim its line (see `session_admit`)."""

        async def op(conn: Conn) -> Admission:
            return await self._take_on(conn, replica_id, session_key, self._clock(), ttl,
                                       take=True)

        return await self._write(op)

    async def _take_on(self, conn: Conn, me: str, key: str, now: float, ttl: float, *,
                       take: bool) -> Admission:
        lease = await _take_lease(conn, key, me, now, ttl) if take else None
        if lease is None:
            owner = await _owner(conn, key, now)
            if owner is not None and owner != me:
                await _notify(conn, owner, key)
            return Admission(owner=owner)
        events = await _claim(conn, key, me, include_own=lease.fresh)
        return Admission(lease=lease, owner=me, events=tuple(events))

    async def session_release(self, replica_id: str, session_key: str, token: int) -> bool:
        """Give a session's lease up if it is still this one (its worker went idle)."""

        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE session_leases SET holder = NULL, expires_at = 0"
                " WHERE session_key = ? AND holder = ? AND token = ?",
                (session_key, replica_id, token))
            return cur.rowcount == 1

        return await self._write(op)

    async def session_sweep(self, replica_id: str, *, stale_after: float,
                            limit: int = 200) -> list[SweepItem]:
        """Sessions whose line or lease needs a hand: held events with no live owner, leases
        that expired without a release (the holder died: its work must be recovered), and
        lines with events unclaimed for more than `stale_after` seconds while a live owner
        holds the lease (its wake-up may have been missed)."""
        now = self._clock()
        rows = await self._fetchall(
            "SELECT e.session_key AS session_key, l.holder AS holder, l.expires_at AS exp"
            " FROM inbound_events e LEFT JOIN session_leases l ON l.session_key = e.session_key"
            " WHERE e.held IS NOT NULL AND e.session_key IS NOT NULL"
            " AND (l.session_key IS NULL OR l.holder IS NULL OR l.expires_at <= ?"
            "  OR (e.claimed_by IS NULL AND e.recorded_at < ?))"
            " UNION SELECT session_key, NULL, NULL FROM session_leases"
            " WHERE holder IS NOT NULL AND expires_at <= ? LIMIT ?",
            (now, now - stale_after, now, limit))
        out: dict[str, SweepItem] = {}
        for r in rows:
            live = r["holder"] is not None and r["exp"] is not None and float(r["exp"]) > now
            key = str(r["session_key"])
            if key not in out or not live:
                out[key] = SweepItem(key, str(r["holder"]) if live else None)
        return list(out.values())

    async def handover_notify(self, wakes: Sequence[tuple[str, str]]) -> None:
        """Wake owners again: (owner replica id, session key) pairs. No-op on SQLite."""
        if not wakes:
            return

        async def fn(conn: Conn) -> None:
            if conn.dialect != "postgres":
                return
            for owner, key in wakes:
                await _notify(conn, owner, key)

        await self._read(fn)

    async def session_lease_of(self, session_key: str) -> SessionLease | None:
        """The session's live lease, or None."""
        row = await self._fetchone(
            "SELECT session_key, holder, token, acquired_at, expires_at FROM session_leases"
            " WHERE session_key = ? AND holder IS NOT NULL AND expires_at > ?",
            (session_key, self._clock()))
        if row is None:
            return None
        return SessionLease(row[0], row[1], int(row[2]), row[3], row[4])

    # -- leader leases ----------------------------------------------------------------------
    async def leader_acquire(self, role: str, replica_id: str, *, ttl: float) -> int | None:
        """Take (or keep) the leader lease of `role`; its token, or None while another
        live replica holds it. A taken lease gets a token above every earlier one."""

        async def op(conn: Conn) -> int | None:
            now = self._clock()
            cur = await conn.execute(
                "INSERT INTO leader_leases(role, holder, token, acquired_at, expires_at)"
                " VALUES (?, ?, 1, ?, ?) ON CONFLICT(role) DO UPDATE SET"
                " token = CASE WHEN leader_leases.holder = excluded.holder"
                "  AND leader_leases.expires_at > excluded.acquired_at THEN leader_leases.token"
                "  ELSE leader_leases.token + 1 END,"
                " acquired_at = CASE WHEN leader_leases.holder = excluded.holder"
                "  AND leader_leases.expires_at > excluded.acquired_at"
                "  THEN leader_leases.acquired_at ELSE excluded.acquired_at END,"
                " holder = excluded.holder, expires_at = excluded.expires_at"
                " WHERE leader_leases.holder IS NULL"
                " OR leader_leases.expires_at <= excluded.acquired_at"
                " OR leader_leases.holder = excluded.holder RETURNING token",
                (role, replica_id, now, now + ttl))
            row = await cur.fetchone()
            return None if row is None else int(row[0])

        return await self._write(op)

    async def leader_release(self, role: str, replica_id: str, token: int) -> bool:
        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE leader_leases SET holder = NULL, expires_at = 0 WHERE role = ?"
                " AND holder = ? AND token = ?", (role, replica_id, token))
            return cur.rowcount == 1

        return await self._write(op)

    async def leader_of(self, role: str) -> str | None:
        """The live holder of `role`, or None."""
        row = await self._fetchone(
            "SELECT holder FROM leader_leases WHERE role = ? AND holder IS NOT NULL"
            " AND expires_at > ?", (role, self._clock()))
        return None if row is None else str(row[0])
