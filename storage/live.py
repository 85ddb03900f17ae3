"""The turn's own storage calls: append to the live tip, read the live session with history.

A compression that commits while a turn runs rotates the session into a child; the turn's
messages belong at the tip of that lineage. These calls follow the rotation inside the same
hand-off as the write or read, so a turn needs no separate "where do I write now" reads.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

from storage.base import StoreBase, fetch_session
from storage.codec import message_to_row, row_to_message
from storage.errors import SessionMovedError, SessionNotFoundError, is_missing_parent
from storage.fencing import check_session_fence, current_fence
from storage.histcache import CachedHistory, HistoryCache
from storage.inbox import release_on
from storage.ledgers import insert_outbox
from storage.lineage import _tip_on
from storage.messages import VISIBLE_COLS, history_on, insert_rows
from storage.sessions import USAGE_SET, find_live_on, guard_on, usage_params
from storage.sqlconn import Conn
from storage.types import GuardState, LiveCheck, OutboxDraft, Session, StoredFinal, UsageDelta

__all__ = ["LiveMixin"]

T = TypeVar("T")
#: What an append did: the session written to, the new ids, the guard state from before
#: (when usage was added).
_Appended = tuple[str, list[int], GuardState | None]


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
        append = self._append_op(session_id, messages, release)

        async def op(conn: Conn) -> tuple[str, list[int]]:
            sid, ids, _ = await append(conn, None)
            return sid, ids

        result: tuple[str, list[int]] = await self._write_live(session_id, op)
        return result

    async def append_and_read(
        self, session_id: str, messages: list[dict[str, Any]],
        *, release: Iterable[tuple[str, str]] = (), check: LiveCheck | None = None,
    ) -> tuple[Session, list[dict[str, Any]], list[int]]:
        """`append_live`, then the live tip and its active transcript as `live_history` reads
        them, in the same transaction: a turn's start costs one hand-off, not two. Returns
        (the session written to, its transcript, the new message ids). Raises as
        `append_live` does.

        With `check` (the caller remembered `session_id` as the live session of a routing
        key instead of looking it up), nothing is written and `SessionMovedError` raised
        unless the session's compression tip is still that key's live session and
        `check.accept` takes it as stored now."""
        if not messages:
            session, history = await self.live_history(session_id)
            return session, history, []
        # A transcript this process has not cached (or has evicted) is decoded whole inside
        # the writer: a few ms for a long chat, while other chats' writes wait. Measured at
        # 1,000 chats with the 256-session cache, reading uncached ones on a reader after the
        # write instead cost a third of the throughput (166 against 257 events/s, one sitting).
        append = self._append_op(session_id, messages, release)
        cache = self._histories

        async def op(conn: Conn) -> tuple[Session, list[dict[str, Any]], list[int]]:
            tip = None
            if check is not None:
                live = await find_live_on(conn, check.session_key)
                tip = await _tip_on(conn, session_id)
                if live is None or live.id != tip or not check.accept(live):
                    raise SessionMovedError(check.session_key)
            sid, ids, _ = await append(conn, tip)  # the tip just read: not looked up twice
            session = await fetch_session(conn, sid)
            return session, await _cached_history(conn, cache, sid), ids

        result: tuple[Session, list[dict[str, Any]], list[int]] = await self._write_live(
            session_id, op)
        return result

    async def append_with_final(
        self, session_id: str, messages: list[dict[str, Any]], final: OutboxDraft,
        *, release: Iterable[tuple[str, str]] = (), usage: UsageDelta | None = None,
    ) -> StoredFinal:
        """Record the turn's reply `final` in the outbox (`pending`) and append the turn's
        `messages` as `append_live` does, in one transaction: a reply is recorded exactly
        when its messages are stored. The turn's `usage`, if given, is added to the session
        written to in the same transaction (`add_usage`; its guard state from before comes
        back in `StoredFinal.guard`): the turn's bookkeeping costs no write of its own.
        Raises as `append_live` does; on `FenceRejected` nothing is stored."""
        append = self._append_op(session_id, messages, release, usage)
        clock = self._clock

        async def op(conn: Conn) -> StoredFinal:
            outbox_id = await insert_outbox(conn, final, clock())
            # checks the fence (a rejection undoes both); the usage in the same UPDATE
            sid, ids, guard = await append(conn, None)
            return StoredFinal(sid, ids, outbox_id, guard)

        result: StoredFinal = await self._write_live(session_id, op)
        return result

    def _append_op(self, session_id: str, messages: list[dict[str, Any]],
                   release: Iterable[tuple[str, str]], usage: UsageDelta | None = None,
                   ) -> Callable[[Conn, str | None], Coroutine[Any, Any, _Appended]]:
        """The append as an operation on `conn`, given the lineage tip when the caller has
        just read it (None: looked up). With `usage`, the turn's usage is added in the same
        UPDATE (`add_usage`) and the guard state from before comes back."""
        now = self._clock()
        rows = [message_to_row(session_id, m, now) for m in messages]
        keys = list(release)
        fence = current_fence()
        sets, extra = ("", ()) if usage is None else (f", {USAGE_SET}", usage_params(usage))

        async def op(conn: Conn, tip: str | None) -> _Appended:
            await check_session_fence(conn, fence, self._clock())
            sid = tip if tip is not None else await _tip_on(conn, session_id)
            guard = None if usage is None else await guard_on(conn, sid)
            cur = await conn.execute(
                f"UPDATE sessions SET message_count = message_count + ?, last_activity = ?{sets}"
                " WHERE id = ?", (len(rows), now, *extra, sid))
            if cur.rowcount == 0:
                raise SessionNotFoundError(session_id)
            moved = rows if sid == session_id else [(sid, *r[1:]) for r in rows]
            ids = await insert_rows(conn, moved) if moved else []
            await release_on(conn, keys)
            return sid, ids, guard

        return op

    async def _write_live(self, session_id: str,
                          op: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        try:
            return await self._write(op)
        except Exception as exc:
            if is_missing_parent(exc):
                raise SessionNotFoundError(session_id) from None
            raise

    async def live_history(self, session_id: str) -> tuple[Session, list[dict[str, Any]]]:
        """The live tip of `session_id`'s compression lineage and its active transcript, read
        together (the caller may change the list and its dicts; nested values are shared with
        the cache and must not be changed in place). Raises `SessionNotFoundError`."""
        cache = self._histories

        async def fn(conn: Conn) -> tuple[Session, list[dict[str, Any]]]:
            # one snapshot for the statements (PostgreSQL's default isolation takes a new
            # snapshot per statement)
            await conn.execute("BEGIN" if conn.dialect == "sqlite"
                               else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                session = await fetch_session(conn, await _tip_on(conn, session_id))
                return session, await _cached_history(conn, cache, session.id)
            finally:
                await conn.execute("COMMIT")

        return await self._read(fn)


#: The history cache's check of a session's active transcript, and of the rows after the
#: cached ones. On SQLite both read only the entries of `idx_messages_active_len`
#: (migration 11), never the messages' content.
HISTORY_CHECK_SQL = ("SELECT count(*), coalesce(max(id), 0), coalesce(sum(length(content)), 0)"
                     " FROM messages WHERE session_id = ? AND active = 1")
HISTORY_CHECK_AFTER_SQL = ("SELECT count(*), coalesce(sum(length(content)), 0) FROM messages"
                           " WHERE session_id = ? AND active = 1 AND id > ?")


async def _cached_history(conn: Conn, cache: HistoryCache, session_id: str
                          ) -> list[dict[str, Any]]:
    """`history_on`, decoding only the rows the cache does not hold yet."""
    [(count, max_id, size)] = list(await conn.execute_fetchall(HISTORY_CHECK_SQL,
                                                               (session_id,)))
    entry = cache.get(session_id)
    if entry is not None and (entry.count, entry.max_id, entry.size) == (count, max_id, size):
        cache.hits += 1
        return [dict(m) for m in entry.rows]
    rows: tuple[dict[str, Any], ...] | None = None
    if entry is not None and max_id > entry.max_id:
        new = [row_to_message(r) for r in await conn.execute_fetchall(
            f"SELECT {VISIBLE_COLS} FROM messages WHERE session_id = ? AND active = 1"
            " AND id > ? ORDER BY id", (session_id, entry.max_id))]
        [(_, new_size)] = list(await conn.execute_fetchall(HISTORY_CHECK_AFTER_SQL,
                                                            (session_id, entry.max_id)))
        if entry.count + len(new) == count and entry.size + new_size == size:
            cache.extended += 1
            rows = (*entry.rows, *new)
    if rows is None:
        cache.misses += 1
        rows = tuple(await history_on(conn, session_id))
        count, max_id = len(rows), (rows[-1]["_id"] if rows else 0)
    cache.put(session_id, CachedHistory(count, max_id, size, rows))
    return [dict(m) for m in rows]

