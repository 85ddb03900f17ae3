"""The turn's own storage calls: append to the live tip, read the live session with history.

A compression that commits while a turn runs rotates the session into a child; the turn's
messages belong at the tip of that lineage. These calls follow the rotation inside the same
hand-off as the write or read, so a turn needs no separate "where do I write now" reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from storage.base import StoreBase, fetch_session
from storage.codec import message_to_row
from storage.errors import SessionNotFoundError, is_missing_parent
from storage.fencing import check_session_fence, current_fence
from storage.inbox import release_on
from storage.lineage import _tip_on
from storage.messages import history_on, insert_rows
from storage.sqlconn import Conn
from storage.types import Session

__all__ = ["LiveMixin"]


class LiveMixin(StoreBase):
    async def append_live(
        self, session_id: str, messages: list[dict[str, Any]],
        *, release: Iterable[tuple[str, str]] = (),
    ) -> tuple[str, list[int]]:
        """Append `messages` (in order) to `session_id`, or to the newest continuation of its
        compression lineage when it was rotated. Returns (the session written to, the ids).
        The held inbound events `release` ((platform, event id) pairs) are let go in the same
        transaction: a held event is released exactly when its message is stored.

        Durable when this returns. Raises `ValueError` for a message without a role,
        `SessionNotFoundError` when the session does not exist and `FenceRejected` when the
        caller runs under a session fence (`storage.fencing`) that is no longer current.
        """
        if not messages:
            return session_id, []
        now = self._clock()
        rows = [message_to_row(session_id, m, now) for m in messages]
        keys = list(release)
        fence = current_fence()

        async def op(conn: Conn) -> tuple[str, list[int]]:
            await check_session_fence(conn, fence, self._clock())
            sid = await _tip_on(conn, session_id)
            cur = await conn.execute(
                "UPDATE sessions SET message_count = message_count + ?, last_activity = ?"
                " WHERE id = ?", (len(rows), now, sid))
            if cur.rowcount == 0:
                raise SessionNotFoundError(session_id)
            moved = rows if sid == session_id else [(sid, *r[1:]) for r in rows]
            ids = await insert_rows(conn, moved)
            await release_on(conn, keys)
            return sid, ids

        try:
            result: tuple[str, list[int]] = await self._write(op)
        except Exception as exc:
            if is_missing_parent(exc):
                raise SessionNotFoundError(session_id) from None
            raise
        return result

    async def live_history(self, session_id: str) -> tuple[Session, list[dict[str, Any]]]:
        """The live tip of `session_id`'s compression lineage and its active transcript, read
        together. Raises `SessionNotFoundError`."""

        async def fn(conn: Conn) -> tuple[Session, list[dict[str, Any]]]:
            # one snapshot for the three statements (PostgreSQL's default isolation takes a
            # new snapshot per statement)
            await conn.execute("BEGIN" if conn.dialect == "sqlite"
                               else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                session = await fetch_session(conn, await _tip_on(conn, session_id))
                return session, await history_on(conn, session.id)
            finally:
                await conn.execute("COMMIT")

        return await self._read(fn)
