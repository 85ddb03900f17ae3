"""Held inbound events: accepted for a session, not yet stored as its user message."""

from __future__ import annotations

from collections.abc import Iterable

from storage.base import StoreBase
from storage.sqlconn import Conn, Dialect
from storage.types import HeldEvent

__all__ = ["InboxMixin", "first_hold_on", "hold_on", "next_held_place", "release_on"]

EventKey = tuple[str, str]  # (platform, event id)


async def release_on(conn: Conn, keys: Iterable[EventKey]) -> None:
    """Clear the hold of `keys` inside the caller's transaction (unknown keys are ignored)."""
    rows = [(p, str(e)) for p, e in keys]
    if rows:
        await conn.executemany(
            "UPDATE inbound_events SET held = NULL, held_seq = NULL, claimed_by = NULL"
            " WHERE platform = ? AND event_id = ?"
            " AND (held IS NOT NULL OR claimed_by IS NOT NULL)", rows)


def next_held_place(dialect: Dialect) -> str:
    """SQL for the place in line of an event held now: after every event held so far."""
    return ("nextval('inbound_held_seq')" if dialect == "postgres" else
            "(SELECT COALESCE(MAX(held_seq), 0) + 1 FROM inbound_events WHERE held IS NOT NULL)")


def _insert_held(dialect: Dialect) -> str:
    """The INSERT of a held event at the end of the line (parameters: platform, event id,
    recorded at, session key, payload, claimed by); the caller adds its ON CONFLICT."""
    return ("INSERT INTO inbound_events(platform, event_id, recorded_at, session_key,"
            f" held, held_seq, claimed_by) VALUES (?, ?, ?, ?, ?, {next_held_place(dialect)}, ?)")


async def hold_on(conn: Conn, platform: str, event_id: str, session_key: str, payload: str,
                  claimed_by: str | None, now: float) -> bool:
    """`InboxMixin.inbound_hold` inside the caller's transaction."""
    cur = await conn.execute(
        _insert_held(conn.dialect) +
        " ON CONFLICT(platform, event_id) DO UPDATE SET session_key = excluded.session_key,"
        " held = excluded.held, held_seq = COALESCE(inbound_events.held_seq,"
        " excluded.held_seq), claimed_by = excluded.claimed_by"
        " WHERE inbound_events.held IS NULL OR excluded.claimed_by IS NULL"
        " OR inbound_events.claimed_by IS DISTINCT FROM excluded.claimed_by",
        (platform, str(event_id), now, session_key, payload, claimed_by))
    return cur.rowcount == 1


async def first_hold_on(conn: Conn, platform: str, event_id: str, session_key: str,
                        payload: str, claimed_by: str, now: float) -> bool:
    """Record and hold an event never seen before in one statement (what `_record_on` then
    `hold_on` leave for a new event); False, changing nothing, when it is known."""
    cur = await conn.execute(_insert_held(conn.dialect) + " ON CONFLICT DO NOTHING",
                             (platform, str(event_id), now, session_key, payload, claimed_by))
    return cur.rowcount == 1


class InboxMixin(StoreBase):
    async def inbound_hold(self, platform: str, event_id: str, session_key: str,
                           payload: str, *, claimed_by: str | None = None) -> bool:
        """Hold an event for `session_key` (durable when this returns), at the end of the
        line, claimed by `claimed_by` (the boot whose session takes it) in the same
        statement. Holding it again keeps its place and replaces the payload. Returns False,
        changing nothing, when the event is already held and claimed by `claimed_by`: a
        session of that boot has it (exactly one path takes an event)."""

        async def op(conn: Conn) -> bool:
            return await hold_on(conn, platform, event_id, session_key, payload, claimed_by,
                                 self._clock())

        return await self._write(op)

    async def inbound_release(self, keys: Iterable[EventKey]) -> None:
        """Clear the hold of events handled another way (dropped by /stop, refused...)."""
        wanted = list(keys)
        if not wanted:
            return

        async def op(conn: Conn) -> None:
            await release_on(conn, wanted)

        await self._write(op)

    async def inbound_held_count(self) -> int:
        """How many events are held (the partial index answers it; no payload is read)."""
        row = await self._fetchone("SELECT COUNT(*) FROM inbound_events WHERE held IS NOT NULL")
        return int(row[0]) if row is not None else 0

    async def inbound_held(self) -> list[HeldEvent]:
        """Every held event, in the order they were accepted."""
        rows = await self._fetchall(
            "SELECT platform, event_id, session_key, held, recorded_at FROM inbound_events"
            " WHERE held IS NOT NULL ORDER BY held_seq")
        return [HeldEvent(platform=r["platform"], event_id=r["event_id"],
                          session_key=r["session_key"] or "", payload=r["held"],
                          recorded_at=r["recorded_at"]) for r in rows]

    async def inbound_claim_held(self, claimer: str) -> list[HeldEvent]:
        """Claim, in one transaction, every held event no session of `claimer` has taken
        (held by an earlier boot, or by nobody), and return them in the order they were
        accepted. Events `claimer` already holds are not returned, so start-up recovery never
        takes what the live path of its own boot has taken, and a second call returns none."""

        async def op(conn: Conn) -> list[HeldEvent]:
            rows = sorted(await conn.execute_fetchall(
                "UPDATE inbound_events SET claimed_by = ? WHERE held IS NOT NULL"
                " AND claimed_by IS DISTINCT FROM ?"
                " RETURNING platform, event_id, session_key, held, recorded_at, held_seq",
                (claimer, claimer)), key=lambda r: r[5])
            return [HeldEvent(platform=r[0], event_id=r[1], session_key=r[2] or "",
                              payload=r[3], recorded_at=r[4]) for r in rows]

        return await self._write(op)
