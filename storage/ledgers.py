"""Durable ledgers: inbound dedup, the outbox, cursors, unreachable chats."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any

from storage.base import StoreBase
from storage.codec import scrub
from storage.errors import EventPendingError
from storage.fencing import check_session_fence, current_fence
from storage.inbox import EventKey, first_hold_on, hold_on
from storage.replicas import LIVE_REPLICAS
from storage.sqlconn import Conn, Row
from storage.types import OutboxDraft, OutboxItem

__all__ = ["LedgersMixin"]

_OPEN_STATES = ("pending", "sent")


def _outbox(row: Row) -> OutboxItem:
    return OutboxItem(
        id=row["id"],
        session_id=row["session_id"],
        platform=row["platform"],
        chat_id=row["chat_id"],
        thread_id=row["thread_id"],
        reply_to=row["reply_to"],
        text=row["text"],
        state=row["state"],
        platform_message_ids=json.loads(row["platform_message_ids"] or "[]"),
        attempts=row["attempts"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        last_error=row["last_error"],
        chat_type=row["chat_type"],
        preview_message_id=row["preview_message_id"],
        attachments=json.loads(row["attachments"] or "[]"),
    )


async def _record_on(conn: Conn, platform: str, event_id: str, claimed_by: str | None,
                     reclaim_own: bool, pending_s: float, now: float) -> bool | None:
    """`record_if_new` inside the caller's transaction; None while another live replica's
    claim stands (`EventPendingError` for the caller)."""
    cur = await conn.execute(
        "INSERT INTO inbound_events(platform, event_id, recorded_at, claimed_by)"
        " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (platform, str(event_id), now, claimed_by),
    )
    if cur.rowcount == 1:
        return True
    if claimed_by is None:
        return False
    # A claim of a live replica (another gateway on the same database) is not a
    # dead boot's: that replica is still deciding the event's fate, for a while.
    cur = await conn.execute(
        "UPDATE inbound_events SET claimed_by = ?, recorded_at = ?"
        " WHERE platform = ? AND event_id = ? AND held IS NULL"
        " AND claimed_by IS NOT NULL AND ("
        f" (claimed_by != ? AND (claimed_by NOT IN ({LIVE_REPLICAS})"
        "  OR recorded_at < ?)) OR (claimed_by = ? AND ?))",
        (claimed_by, now, platform, str(event_id), claimed_by, now, now - pending_s,
         claimed_by, reclaim_own))
    if cur.rowcount == 1:
        return True
    rows = await conn.execute_fetchall(
        "SELECT claimed_by FROM inbound_events WHERE platform = ? AND event_id = ?"
        " AND held IS NULL AND claimed_by IS NOT NULL AND claimed_by != ?",
        (platform, str(event_id), claimed_by))
    return None if rows else False


def _pending_is_raised(new: bool | None, platform: str, event_id: str) -> bool:
    if new is None:
        raise EventPendingError(f"{platform} event {event_id} is being taken in by another"
                                " replica")
    return new


class LedgersMixin(StoreBase):
    """Inbound events, outbox, cursors and unreachable chats."""

    # -- inbound ---------------------------------------------------------------------------
    async def record_if_new(self, platform: str, event_id: str, *,
                            claimed_by: str | None = None, reclaim_own: bool = False,
                            pending_s: float = 30.0) -> bool:
        """Durably record an inbound event; True the first time, False for a repeat.

        With `claimed_by` (the recording process's boot id) the record stays claimed until
        the event's fate is stored: its hold (then its release), or `inbound_settle`. A record
        still claimed and not held was cut off between the record and its hold, and counts
        as new once more for `claimed_by` (the platform delivered it again because it was
        not acknowledged) when its claimer is a dead boot, when it is `claimed_by` itself and
        `reclaim_own` (this process's own attempt failed: a commit lost with the connection
        may have stored the record), or when a live replica claimed it more than `pending_s`
        seconds ago (its attempt failed the same way). Claimed by a live replica more
        recently: `EventPendingError` (that replica is still deciding; not acknowledged)."""

        async def op(conn: Conn) -> bool | None:
            return await _record_on(conn, platform, event_id, claimed_by, reclaim_own,
                                    pending_s, self._clock())

        return _pending_is_raised(await self._write(op), platform, event_id)

    async def record_and_hold(self, platform: str, event_id: str, session_key: str,
                              payload: str, *, claimed_by: str, reclaim_own: bool = False,
                              pending_s: float = 30.0) -> bool:
        """`record_if_new` and, when the event is new, `inbound_hold` for `session_key`, in
        one transaction: an event already known to go to a session's line costs one write,
        not two. True when it was new (recorded and now held), False for a repeat (nothing
        changed); raises `EventPendingError` as `record_if_new` does.

        `reclaim_own` also takes back an event this boot holds: its own attempt failed
        after the commit stored record and hold (the reply was lost with the connection),
        so no session of `claimed_by` has it, and start-up recovery of that boot never takes
        what the boot itself claimed; as a repeat it would wait for the next start."""

        async def op(conn: Conn) -> bool | None:
            now = self._clock()
            if await first_hold_on(conn, platform, event_id, session_key, payload, claimed_by,
                                   now):
                return True  # never seen: recorded and held by one statement
            new = await _record_on(conn, platform, event_id, claimed_by, reclaim_own,
                                   pending_s, now)
            if new:
                await hold_on(conn, platform, event_id, session_key, payload, claimed_by, now)
            elif new is False and reclaim_own:
                new = bool(await conn.execute_fetchall(
                    "SELECT 1 FROM inbound_events WHERE platform = ? AND event_id = ?"
                    " AND held IS NOT NULL AND claimed_by = ?",
                    (platform, str(event_id), claimed_by)))
            return new

        return _pending_is_raised(await self._write(op), platform, event_id)

    async def inbound_settle(self, keys: Iterable[EventKey]) -> None:
        """The fate of these recorded events is decided without a hold (dropped by policy, a
        command run): their records stop being claimed, so a redelivery is a repeat."""
        rows = [(p, str(e)) for p, e in keys]
        if not rows:
            return

        async def op(conn: Conn) -> None:
            await conn.executemany(
                "UPDATE inbound_events SET claimed_by = NULL"
                " WHERE platform = ? AND event_id = ? AND held IS NULL", rows)

        await self._write(op)

    async def prune_ledgers(self, older_than: float, *, batch: int = 5_000) -> dict[str, int]:
        """Delete bookkeeping rows last touched before `older_than` (epoch seconds): dedup
        records (never a held event), finished outbox rows (delivered / failed / expired) and
        pairing codes past their expiry. Sessions and messages are never touched. Deletes in
        batches, each its own write, so other writes are not held up. Returns counts."""
        statements = {
            "inbound_events": "DELETE FROM inbound_events WHERE (platform, event_id) IN ("
                              "SELECT platform, event_id FROM inbound_events"
                              " WHERE recorded_at < ? AND held IS NULL LIMIT ?)",
            "outbox": "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state IN"
                      " ('delivered', 'failed', 'expired') AND updated_at < ? LIMIT ?)",
            "pairing_codes": "DELETE FROM pairing_codes WHERE (platform, code_hash) IN ("
                             "SELECT platform, code_hash FROM pairing_codes"
                             " WHERE expires_at < ? LIMIT ?)",
        }
        counts: dict[str, int] = {}
        for table, sql in statements.items():
            counts[table] = 0
            while True:
                n = await self._write(_delete_batch(sql, older_than, batch))
                counts[table] += n
                if n < batch:
                    break
        return counts

    # -- outbox ----------------------------------------------------------------------------
    async def outbox_add(
        self,
        *,
        platform: str,
        chat_id: str,
        text: str,
        session_id: str | None = None,
        thread_id: str | None = None,
        reply_to: str | None = None,
        chat_type: str | None = None,
        preview_message_id: str | None = None,
        attachments: Sequence[dict[str, object]] = (),
        claimed_by: str | None = None,
    ) -> int:
        """Record a reply as `pending` before it is sent; returns its id. `attachments` are
        JSON-able dicts kept for a re-send after a crash. `claimed_by` names the boot that
        sends it (start-up recovery of that boot leaves it alone). Raises `FenceRejected`
        when the caller runs under a session fence (`storage.fencing`) that is no longer
        current: a replica that lost the session records no reply."""
        draft = OutboxDraft(platform=platform, chat_id=chat_id, text=text,
                            session_id=session_id, thread_id=thread_id, reply_to=reply_to,
                            chat_type=chat_type, preview_message_id=preview_message_id,
                            attachments=tuple(attachments), claimed_by=claimed_by)
        fence = current_fence()

        async def op(conn: Conn) -> int:
            now = self._clock()
            await check_session_fence(conn, fence, now)
            return await insert_outbox(conn, draft, now)

        return await self._write(op)

    async def _outbox_set(
        self,
        ids: Sequence[int],
        state: str,
        *,
        from_states: Sequence[str],
        platform_message_ids: Sequence[str] | None = None,
        error: str | None = None,
        attempt: bool = False,
    ) -> int:
        if not ids:
            return 0
        marks = ", ".join("?" * len(ids))
        states = ", ".join("?" * len(from_states))
        sets = ["state = ?", "updated_at = ?"]
        params: list[object] = [state, self._clock()]
        if platform_message_ids is not None:
            sets.append("platform_message_ids = ?")
            params.append(json.dumps([str(p) for p in platform_message_ids]))
        if error is not None:
            sets.append("last_error = ?")
            params.append(scrub(error[:500]))
        if attempt:
            sets.append("attempts = attempts + 1")

        async def op(conn: Conn) -> int:
            cur = await conn.execute(
                f"UPDATE outbox SET {', '.join(sets)} WHERE id IN ({marks})"
                f" AND state IN ({states})",
                (*params, *ids, *from_states),
            )
            return cur.rowcount

        return await self._write(op)

    async def outbox_mark_sent(self, outbox_id: int, platform_message_ids: Sequence[str]) -> bool:
        """pending → sent (the platform accepted it). Returns whether the row moved."""
        n = await self._outbox_set(
            [outbox_id],
            "sent",
            from_states=("pending",),
            platform_message_ids=platform_message_ids,
            attempt=True,
        )
        return n == 1

    async def outbox_mark_delivered(
        self, ids: Sequence[int], platform_message_ids: Sequence[str] | None = None
    ) -> int:
        """pending/sent → delivered (final), recording the platform message ids when given
        (one write instead of `outbox_mark_sent` + this). Returns how many rows moved."""
        return await self._outbox_set(ids, "delivered", from_states=_OPEN_STATES,
                                      platform_message_ids=platform_message_ids)

    async def outbox_mark_failed(self, outbox_id: int, error: str) -> bool:
        """pending/sent → failed, keeping the (redacted by caller) error text."""
        n = await self._outbox_set(
            [outbox_id], "failed", from_states=_OPEN_STATES, error=error, attempt=True
        )
        return n == 1

    async def outbox_mark_expired(self, ids: Sequence[int]) -> int:
        """pending/sent → expired (too old to send)."""
        return await self._outbox_set(ids, "expired", from_states=_OPEN_STATES)

    async def outbox_record_attempt(self, outbox_id: int, error: str) -> None:
        """A failed try that will be retried: attempts + 1, error kept, still pending."""
        await self._outbox_set(
            [outbox_id], "pending", from_states=("pending",), error=error, attempt=True
        )

    async def outbox_get(self, outbox_id: int) -> OutboxItem | None:
        row = await self._fetchone("SELECT * FROM outbox WHERE id = ?", (outbox_id,))
        return _outbox(row) if row else None

    async def outbox_reply_for(self, platform: str, chat_id: str, reply_to: str,
                               since: float) -> OutboxItem | None:
        """The newest final recorded since `since` (epoch seconds) that replies to message
        `reply_to` of a chat, in any state (another replica may have marked it delivered
        already); None when there is none yet."""
        row = await self._fetchone(
            "SELECT * FROM outbox WHERE reply_to = ? AND created_at >= ? AND platform = ?"
            " AND chat_id = ? ORDER BY created_at DESC, id DESC LIMIT 1",
            (reply_to, since, platform, chat_id))
        return _outbox(row) if row else None

    async def outbox_undelivered(self, max_age: float | None = None) -> list[OutboxItem]:
        """pending/sent entries (younger than `max_age` seconds when given), oldest first."""
        cutoff = self._clock() - max_age if max_age is not None else float("-inf")
        rows = await self._fetchall(
            "SELECT * FROM outbox WHERE state IN ('pending', 'sent') AND created_at >= ?"
            " ORDER BY created_at, id",
            (cutoff,),
        )
        return [_outbox(r) for r in rows]

    async def outbox_claim_undelivered(self, claimer: str) -> list[OutboxItem]:
        """Claim for `claimer`, in one transaction, every pending/sent entry it has not
        claimed (recorded by an earlier boot), and return them oldest first. Entries
        `claimer` recorded itself are never returned, and a second call returns none.
        Entries claimed by a live replica (another gateway on the same database, still
        sending them) are left alone."""

        async def op(conn: Conn) -> list[OutboxItem]:
            rows = await conn.execute_fetchall(
                "UPDATE outbox SET claimed_by = ? WHERE state IN ('pending', 'sent')"
                " AND claimed_by IS DISTINCT FROM ?"
                f" AND (claimed_by IS NULL OR claimed_by NOT IN ({LIVE_REPLICAS}))"
                " RETURNING *", (claimer, claimer, self._clock()))
            return sorted((_outbox(r) for r in rows), key=lambda o: (o.created_at, o.id))

        return await self._write(op)

    async def outbox_unclaim(self, outbox_id: int, claimer: str) -> bool:
        """Let go of `claimer`'s claim on a recorded final it will not send (its turn lost
        the session): whoever takes the session over sends it."""

        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE outbox SET claimed_by = NULL WHERE id = ? AND claimed_by = ?"
                " AND state IN ('pending', 'sent')", (outbox_id, claimer))
            return cur.rowcount == 1

        return await self._write(op)

    async def outbox_claim_for_key(self, claimer: str, session_key: str) -> list[OutboxItem]:
        """Claim for `claimer` the pending/sent entries of the sessions routed by
        `session_key` that another replica recorded (the session was taken over from it),
        oldest first. Only the session's new owner calls this, under its lease."""

        async def op(conn: Conn) -> list[OutboxItem]:
            rows = await conn.execute_fetchall(
                "UPDATE outbox SET claimed_by = ? WHERE state IN ('pending', 'sent')"
                " AND claimed_by IS DISTINCT FROM ?"
                " AND session_id IN (SELECT id FROM sessions WHERE session_key = ?)"
                " RETURNING *", (claimer, claimer, session_key))
            return sorted((_outbox(r) for r in rows), key=lambda o: (o.created_at, o.id))

        return await self._write(op)

    # -- cursors ---------------------------------------------------------------------------
    async def get_cursor(self, name: str) -> str | None:
        row = await self._fetchone("SELECT value FROM cursors WHERE name = ?", (name,))
        return None if row is None else str(row[0])

    async def set_cursor(self, name: str, value: str | int) -> None:
        async def op(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO cursors(name, value) VALUES (?, ?)"
                " ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                (name, str(value)),
            )

        await self._write(op)

    # -- unreachable chats -----------------------------------------------------------------
    async def mark_unreachable(self, platform: str, chat_id: str, reason: str) -> None:
        async def op(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO unreachable_chats(platform, chat_id, reason, since)"
                " VALUES (?, ?, ?, ?) ON CONFLICT(platform, chat_id)"
                " DO UPDATE SET reason = excluded.reason",
                (platform, str(chat_id), scrub(reason), self._clock()),
            )

        await self._write(op)

    async def clear_unreachable(self, platform: str, chat_id: str) -> bool:
        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "DELETE FROM unreachable_chats WHERE platform = ? AND chat_id = ?",
                (platform, str(chat_id)),
            )
            return cur.rowcount == 1

        return await self._write(op)

    async def is_unreachable(self, platform: str, chat_id: str) -> bool:
        row = await self._fetchone(
            "SELECT 1 FROM unreachable_chats WHERE platform = ? AND chat_id = ?",
            (platform, str(chat_id)),
        )
        return row is not None


def _delete_batch(sql: str, cutoff: float,
                  limit: int) -> Callable[[Conn], Coroutine[Any, Any, int]]:
    async def op(conn: Conn) -> int:
        cur = await conn.execute(sql, (cutoff, limit))
        return cur.rowcount

    return op


async def insert_outbox(conn: Conn, draft: OutboxDraft, now: float) -> int:
    """Insert `draft` as a `pending` outbox row inside the caller's transaction; its id."""
    cur = await conn.execute(
        "INSERT INTO outbox(session_id, platform, chat_id, thread_id, reply_to, text,"
        " created_at, updated_at, chat_type, preview_message_id, attachments,"
        " claimed_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (draft.session_id, draft.platform, str(draft.chat_id), draft.thread_id,
         draft.reply_to, scrub(draft.text), now, now, draft.chat_type,
         draft.preview_message_id, json.dumps(list(draft.attachments)), draft.claimed_by),
    )
    row = await cur.fetchone()
    return int(row[0]) if row is not None else 0
