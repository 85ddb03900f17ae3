"""Messages: append (group-committed), load, rewind, platform ids."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from storage.base import StoreBase
from storage.codec import MESSAGE_COLUMNS, message_to_row, row_to_message, scrub
from storage.errors import SessionNotFoundError, is_missing_parent
from storage.sqlconn import Conn, Row

__all__ = ["MessagesMixin", "APPEND_KEY", "append_merged", "history_on", "insert_rows"]

APPEND_KEY = "append"
_INSERT_SQL = (
    f"INSERT INTO messages (id, {MESSAGE_COLUMNS}) VALUES ({', '.join('?' * 17)})"
)
VISIBLE_COLS = f"id, {MESSAGE_COLUMNS}"


async def insert_rows(
    conn: Conn, rows: list[tuple[Any, ...]]
) -> list[int]:
    """Insert prepared rows (in order) inside the caller's transaction; returns their ids.

    SQLite: ids are taken above the highest ever used (the write lock is held, so no other
    writer can interleave). PostgreSQL: ids come from the table's sequence, in order.
    """
    if not rows:
        return []
    if conn.dialect == "postgres":
        taken = await conn.execute_fetchall(
            "SELECT nextval('messages_id_seq') FROM generate_series(1, ?)", (len(rows),))
        ids = sorted(int(r[0]) for r in taken)
        await conn.executemany(_INSERT_SQL, [(i, *r) for i, r in zip(ids, rows, strict=True)])
        return ids
    cur = await conn.execute(
        "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0),"
        " COALESCE((SELECT MAX(id) FROM messages), 0))"
    )
    row = await cur.fetchone()
    base = int(row[0]) if row is not None else 0
    ids = list(range(base + 1, base + 1 + len(rows)))
    await conn.executemany(_INSERT_SQL, [(i, *r) for i, r in zip(ids, rows, strict=True)])
    return ids


async def history_on(conn: Conn, session_id: str) -> list[dict[str, Any]]:
    """The active transcript of `session_id` in id order, read through `conn`."""
    rows = await conn.execute_fetchall(
        f"SELECT {VISIBLE_COLS} FROM messages WHERE session_id = ? AND active = 1 ORDER BY id",
        (session_id,))
    return [row_to_message(r) for r in rows]


async def append_merged(
    conn: Conn, payloads: list[tuple[str, list[tuple[Any, ...]], float]]
) -> list[list[int]]:
    """Run several queued appends as one insert; one id list per payload."""
    flat = [row for _, rows, _ in payloads for row in rows]
    ids = await insert_rows(conn, flat)
    counts: Counter[str] = Counter()
    last: dict[str, float] = {}
    out: list[list[int]] = []
    pos = 0
    for sid, rows, now in payloads:
        out.append(ids[pos : pos + len(rows)])
        pos += len(rows)
        counts[sid] += len(rows)
        last[sid] = now
    await conn.executemany(
        "UPDATE sessions SET message_count = message_count + ?, last_activity = ? WHERE id = ?",
        [(n, last[sid], sid) for sid, n in counts.items()],
    )
    return out


class MessagesMixin(StoreBase):
    """Message rows of a session, always ordered by id."""

    async def append_messages(self, session_id: str, messages: list[dict[str, Any]]) -> list[int]:
        """Append messages in order and return their ids (same order).

        Durable when this returns (committed). Raises `ValueError` for a message without a
        role, `SessionNotFoundError` when the session does not exist.
        """
        if not messages:
            return []
        now = self._clock()
        rows = [message_to_row(session_id, m, now) for m in messages]
        try:
            result: list[int] = await self._write_merged(
                APPEND_KEY, (session_id, rows, now)
            )
        except Exception as exc:
            if is_missing_parent(exc):
                raise SessionNotFoundError(session_id) from None
            raise
        return result

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        """The active transcript in id order (what the model should see)."""

        async def fn(conn: Conn) -> list[dict[str, Any]]:
            return await history_on(conn, session_id)

        return await self._read(fn)

    async def load_all(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[dict[str, Any]]:
        """Every row of the session in id order, with `_active`/`_compacted` flags."""
        cond = "" if include_inactive else " AND active = 1"
        rows = await self._fetchall(
            f"SELECT {VISIBLE_COLS} FROM messages WHERE session_id = ?{cond} ORDER BY id",
            (session_id,),
        )
        return [row_to_message(r, with_flags=True) for r in rows]

    async def load_tail(self, session_id: str, limit: int) -> tuple[list[dict[str, Any]], int]:
        """The session's last `limit` rows in id order (with `_active`/`_compacted` flags,
        inactive ones included) and how many rows it has in all."""

        async def fn(conn: Conn) -> tuple[list[Row], int]:
            rows = await conn.execute_fetchall(
                f"SELECT {VISIBLE_COLS} FROM messages WHERE session_id = ?"
                " ORDER BY id DESC LIMIT ?", (session_id, max(0, limit)))
            total = await conn.execute_fetchall(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,))
            return list(rows), int(total[0][0]) if total else 0

        rows, total = await self._read(fn)
        return [row_to_message(r, with_flags=True) for r in reversed(rows)], total

    async def get_message(self, message_id: int) -> dict[str, Any] | None:
        row = await self._fetchone(f"SELECT {VISIBLE_COLS} FROM messages WHERE id = ?", (message_id,))
        return row_to_message(row, with_flags=True) if row else None

    async def find_by_platform_message_id(
        self, session_id: str, platform_message_id: str
    ) -> dict[str, Any] | None:
        row = await self._fetchone(
            f"SELECT {VISIBLE_COLS} FROM messages WHERE session_id = ?"
            " AND platform_message_id = ? ORDER BY id DESC LIMIT 1",
            (session_id, platform_message_id),
        )
        return row_to_message(row, with_flags=True) if row else None

    async def set_platform_message_id(self, message_id: int, platform_message_id: str) -> bool:
        """Attach the platform's id to a stored message; returns whether the row exists."""

        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE messages SET platform_message_id = ? WHERE id = ?",
                (str(platform_message_id), message_id),
            )
            return cur.rowcount == 1

        return await self._write(op)

    async def revise_message(self, message_id: int, content: str,
                             meta: dict[str, Any] | None = None) -> bool:
        """Replace a stored message's text `content` and add `meta` to its other keys (the
        search indexes follow). Used when the gateway learns more about a message after it
        was stored (an image's description). Returns whether the row exists."""

        async def op(conn: Conn) -> bool:
            rows = list(await conn.execute_fetchall(
                "SELECT meta, session_id FROM messages WHERE id = ?", (message_id,)))
            if not rows:
                return False
            self._histories.forget(rows[0][1])  # its cached transcript holds the old text
            extra: dict[str, Any] = json.loads(rows[0][0]) if rows[0][0] else {}
            extra.update(meta or {})
            await conn.execute(
                "UPDATE messages SET content = ?, content_json = 0, meta = ? WHERE id = ?",
                (scrub(content), scrub(json.dumps(extra, ensure_ascii=False, default=str))
                 if extra else None, message_id))
            return True

        return await self._write(op)

    async def rewind(self, session_id: str, n_user_turns: int = 1) -> list[dict[str, Any]]:
        """Hide the last `n_user_turns` user turns: every active row from the Nth-last active
        user message on becomes `active=0, compacted=0` (out of history and search, never
        deleted). With fewer user turns than asked, rewinds to the first one. Returns the
        hidden messages in order (empty when there is nothing to rewind)."""
        n = max(1, int(n_user_turns))

        async def op(conn: Conn) -> list[dict[str, Any]]:
            users = list(
                await conn.execute_fetchall(
                    "SELECT id FROM messages WHERE session_id = ? AND active = 1"
                    " AND role = 'user' ORDER BY id DESC LIMIT ?",
                    (session_id, n),
                )
            )
            if not users:
                return []
            start = users[-1][0]
            rows = list(
                await conn.execute_fetchall(
                    f"SELECT {VISIBLE_COLS} FROM messages WHERE session_id = ? AND active = 1"
                    " AND id >= ? ORDER BY id",
                    (session_id, start),
                )
            )
            await conn.execute(
                "UPDATE messages SET active = 0, compacted = 0"
                " WHERE session_id = ? AND active = 1 AND id >= ?",
                (session_id, start),
            )
            await conn.execute(
                "UPDATE sessions SET message_count = CASE WHEN message_count > ?"
                " THEN message_count - ? ELSE 0 END WHERE id = ?",
                (len(rows), len(rows), session_id),
            )
            return [row_to_message(r) for r in rows]

        return await self._write(op)

    async def last_message_id(self, session_id: str) -> int | None:
        """Id of the newest active message (a compression job's snapshot point)."""
        row = await self._fetchone(
            "SELECT MAX(id) FROM messages WHERE session_id = ? AND active = 1", (session_id,)
        )
        return None if row is None or row[0] is None else int(row[0])
