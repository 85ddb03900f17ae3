"""Session rows: create, read, list, end/reopen, titles, usage, guard state."""

from __future__ import annotations

from typing import Any

from storage.base import UNSET, StoreBase, fetch_session, session_from_row
from storage.codec import new_session_id, scrub
from storage.errors import SessionNotFoundError, TitleInUseError
from storage.sqlconn import Conn
from storage.titles import next_lineage_title_on, sanitize_title
from storage.types import GuardState, Session, SessionScope, UsageDelta

__all__ = ["SessionsMixin", "ROUTING_COLUMNS", "EDITABLE_COLUMNS", "USAGE_SET", "add_usage_on",
           "find_live_on", "guard_on", "usage_params"]

ROUTING_COLUMNS = ("source", "user_id", "session_key", "chat_id", "chat_type", "thread_id")
EDITABLE_COLUMNS = frozenset(
    {
        "model",
        "user_id",
        "session_key",
        "chat_id",
        "chat_type",
        "thread_id",
        "estimated_cost_usd",
        "actual_cost_usd",
        "cost_status",
        "archived",
        "pinned",
        "profile_name",
        "last_prompt_tokens",
        "compression_count",
    }
)
_GUARD_COLUMNS = (
    "cooldown_until",
    "cooldown_error",
    "fallback_streak",
    "ineffective_count",
    "last_prompt_tokens",
    "compression_count",
    "failure_streak",
    "verify_pending",
)
_GUARD_SQL = f"SELECT id, {', '.join(_GUARD_COLUMNS)} FROM sessions WHERE id = ?"


async def insert_session(
    conn: Conn, values: dict[str, Any], now: float
) -> str:
    """Insert a session row through `conn` (inside the caller's transaction); returns the id.

    Raises `TitleInUseError` when another session of the same scope has the title.
    """
    sid = values.get("id") or new_session_id(now)
    row = {k: v for k, v in values.items() if v is not None and k != "id"}
    row.setdefault("started_at", now)
    row.setdefault("last_activity", row["started_at"])
    title = sanitize_title(row.pop("title", None))
    cols = ["id", *row]
    params = [sid, *(scrub(v) if isinstance(v, str) else v for v in row.values())]
    cur = await conn.execute(
        f"INSERT INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        " ON CONFLICT(id) DO NOTHING",
        params,
    )
    if title is not None and cur.rowcount == 1:
        # Claimed once the row (and so its scope) exists; a conflict undoes the insert.
        await _claim_title(conn, sid, title, allow_ancestor=False)
        await conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, sid))
    return sid


async def _is_compression_ancestor(
    conn: Conn, ancestor_id: str, session_id: str
) -> bool:
    seen: set[str] = set()
    current = session_id
    for _ in range(1000):
        rows = list(
            await conn.execute_fetchall(
                "SELECT parent_session_id, lineage_kind FROM sessions WHERE id = ?", (current,)
            )
        )
        if not rows or rows[0][0] is None or rows[0][1] != "compression":
            return False
        current = rows[0][0]
        if current == ancestor_id:
            return True
        if current in seen:
            return False
        seen.add(current)
    return False


async def _claim_title(
    conn: Conn, session_id: str, title: str, *, allow_ancestor: bool
) -> None:
    rows = list(
        await conn.execute_fetchall(
            "SELECT id FROM sessions WHERE title = ? AND id <> ? AND COALESCE(scope_key, '')"
            " = (SELECT COALESCE(scope_key, '') FROM sessions WHERE id = ?)",
            (title, session_id, session_id),
        )
    )
    if not rows:
        return
    other = rows[0][0]
    if allow_ancestor and await _is_compression_ancestor(conn, other, session_id):
        await conn.execute("UPDATE sessions SET title = NULL WHERE id = ?", (other,))
        return
    raise TitleInUseError(title, other)


class SessionsMixin(StoreBase):
    """Session lifecycle and per-session counters."""

    async def create_session(
        self,
        *,
        source: str,
        id: str | None = None,
        user_id: str | None = None,
        session_key: str | None = None,
        chat_id: str | None = None,
        chat_type: str | None = None,
        thread_id: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        parent_session_id: str | None = None,
        lineage_kind: str | None = None,
        title: str | None = None,
        profile_name: str | None = None,
        started_at: float | None = None,
    ) -> Session:
        """Create a session (id generated, time-sortable, when absent) and return it.

        Creating an id that exists returns the existing row unchanged. Raises
        `TitleInUseError` / `InvalidTitleError` for a bad title.
        """
        values = {k: v for k, v in locals().items() if k not in ("self", "__class__")}

        async def op(conn: Conn) -> Session:
            sid = await insert_session(conn, values, self._clock())
            return await fetch_session(conn, sid)

        return await self._write(op)

    async def get_session(self, session_id: str) -> Session | None:
        row = await self._fetchone("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return session_from_row(row) if row else None

    async def require_session(self, session_id: str) -> Session:
        """Like `get_session`; raises `SessionNotFoundError` when missing."""
        s = await self.get_session(session_id)
        if s is None:
            raise SessionNotFoundError(session_id)
        return s

    async def list_sessions(
        self,
        *,
        source: str | None = None,
        live_only: bool = False,
        include_archived: bool = True,
        limit: int = 50,
        scope: SessionScope | None = None,
    ) -> list[Session]:
        """Sessions newest first (by `started_at`); only those of `scope` when given."""
        where: list[str] = ["1=1"]
        params: list[Any] = []
        if scope is not None:
            where.append("scope_key = ?")
            params.append(scope.key)
        if source is not None:
            where.append("source = ?")
            params.append(source)
        if live_only:
            where.append("ended_at IS NULL")
        if not include_archived:
            where.append("archived = 0")
        rows = await self._fetchall(
            f"SELECT * FROM sessions WHERE {' AND '.join(where)}"
            " ORDER BY started_at DESC, id DESC LIMIT ?",
            (*params, max(0, int(limit))),
        )
        return [session_from_row(r) for r in rows]

    async def find_by_session_key(self, session_key: str) -> Session | None:
        """The most recently started live session for a routing key, or None."""
        row = await self._fetchone(_LIVE_BY_KEY_SQL, (session_key,))
        return session_from_row(row) if row else None

    async def end_session(self, session_id: str, reason: str) -> bool:
        """End a live session; the first end_reason wins. Returns whether this call ended it."""

        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ?"
                " WHERE id = ? AND ended_at IS NULL",
                (self._clock(), reason, session_id),
            )
            return cur.rowcount == 1

        return await self._write(op)

    async def reopen_session(self, session_id: str) -> bool:
        """Clear ended_at/end_reason. Returns whether the session was ended before."""

        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE sessions SET ended_at = NULL, end_reason = NULL"
                " WHERE id = ? AND ended_at IS NOT NULL",
                (session_id,),
            )
            return cur.rowcount == 1

        return await self._write(op)

    async def set_title(self, session_id: str, title: str | None) -> str | None:
        """Set (or clear, with None/blank) a session's title; returns the stored title.

        Titles are unique within a scope (`SessionScope`). Raises `TitleInUseError` naming
        the other session of the same scope, unless that session is a compression ancestor
        (then the title moves here); `InvalidTitleError` above 100 characters;
        `SessionNotFoundError`.
        """
        clean = sanitize_title(title)

        async def op(conn: Conn) -> str | None:
            await fetch_session(conn, session_id)
            if clean is not None:
                await _claim_title(conn, session_id, clean, allow_ancestor=True)
            await conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (clean, session_id))
            return clean

        return await self._write(op)

    async def next_lineage_title(self, title: str, scope: SessionScope | None = None) -> str:
        """"Fix CI" → "Fix CI #2" → "Fix CI #3" (next free number of the family within
        `scope`; None = sessions that have no scope)."""
        clean = sanitize_title(title) or ""

        async def fn(conn: Conn) -> str:
            return await next_lineage_title_on(conn, clean, scope.key if scope else None)

        return await self._read(fn)

    async def update_system_prompt(self, session_id: str, system_prompt: str) -> None:
        await self._update(session_id, {"system_prompt": scrub(system_prompt)})

    async def update_session(self, session_id: str, **fields: Any) -> None:
        """Set plain columns (`EDITABLE_COLUMNS`); raises `ValueError` for other names."""
        bad = set(fields) - EDITABLE_COLUMNS
        if bad:
            raise ValueError(f"not editable: {', '.join(sorted(bad))}")
        await self._update(session_id, fields)

    async def touch(self, session_id: str, at: float | None = None) -> None:
        await self._update(session_id, {"last_activity": self._clock() if at is None else at})

    async def _update(self, session_id: str, fields: dict[str, Any]) -> None:
        if not fields:
            return
        sets = ", ".join(f"{k} = ?" for k in fields)

        async def op(conn: Conn) -> None:
            cur = await conn.execute(
                f"UPDATE sessions SET {sets} WHERE id = ?", (*fields.values(), session_id)
            )
            if cur.rowcount == 0:
                raise SessionNotFoundError(session_id)

        await self._write(op)

    async def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        api_calls: int = 1,
        last_prompt_tokens: int | None = None,
        cost_usd: float | None = None,
    ) -> GuardState:
        """Add one turn's usage to the counters and stamp last_activity. Returns the
        compression guard state as it was just before this update (read in the same
        transaction). Raises `SessionNotFoundError`."""
        delta = UsageDelta(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                           reasoning_tokens, api_calls, last_prompt_tokens, cost_usd)
        now = self._clock()

        async def op(conn: Conn) -> GuardState:
            return await add_usage_on(conn, session_id, delta, now)

        return await self._write(op)

    async def get_guard(self, session_id: str) -> GuardState:
        """The compression guard state, read fresh. Raises `SessionNotFoundError`."""
        async def fn(conn: Conn) -> GuardState:
            return await guard_on(conn, session_id)

        return await self._read(fn)

    async def update_guard(
        self,
        session_id: str,
        *,
        cooldown_until: float | None = UNSET,
        cooldown_error: str | None = UNSET,
        fallback_streak: int = UNSET,
        ineffective_count: int = UNSET,
        last_prompt_tokens: int | None = UNSET,
        compression_count: int = UNSET,
        failure_streak: int = UNSET,
        verify_pending: bool = UNSET,
    ) -> GuardState:
        """Write the given guard fields (others unchanged) and return the stored state."""
        given = {
            k: v
            for k, v in {
                "cooldown_until": cooldown_until,
                "cooldown_error": cooldown_error,
                "fallback_streak": fallback_streak,
                "ineffective_count": ineffective_count,
                "last_prompt_tokens": last_prompt_tokens,
                "compression_count": compression_count,
                "failure_streak": failure_streak,
                "verify_pending": verify_pending if verify_pending is UNSET
                else int(bool(verify_pending)),
            }.items()
            if v is not UNSET
        }

        async def op(conn: Conn) -> GuardState:
            if given:
                sets = ", ".join(f"{k} = ?" for k in given)
                await conn.execute(
                    f"UPDATE sessions SET {sets} WHERE id = ?", (*given.values(), session_id)
                )
            return await guard_on(conn, session_id)

        return await self._write(op)


_LIVE_BY_KEY_SQL = ("SELECT * FROM sessions WHERE session_key = ? AND ended_at IS NULL"
                    " ORDER BY started_at DESC, id DESC LIMIT 1")


async def find_live_on(conn: Conn, session_key: str) -> Session | None:
    """`find_by_session_key` inside the caller's transaction."""
    rows = await conn.execute_fetchall(_LIVE_BY_KEY_SQL, (session_key,))
    return session_from_row(rows[0]) if rows else None


#: The SET clause that adds a turn's usage (`usage_params` are its parameters, in order).
USAGE_SET = (
    "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,"
    " cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,"
    " reasoning_tokens = reasoning_tokens + ?, api_call_count = api_call_count + ?,"
    " last_prompt_tokens = COALESCE(?, last_prompt_tokens),"
    " estimated_cost_usd = CASE WHEN CAST(? AS DOUBLE PRECISION) IS NULL"
    "   THEN estimated_cost_usd"
    "   ELSE COALESCE(estimated_cost_usd, 0) + ? END"
)


def usage_params(delta: UsageDelta) -> tuple[Any, ...]:
    return (delta.input_tokens, delta.output_tokens, delta.cache_read_tokens,
            delta.cache_write_tokens, delta.reasoning_tokens, delta.api_calls,
            delta.last_prompt_tokens, delta.cost_usd, delta.cost_usd)


async def add_usage_on(conn: Conn, session_id: str, delta: UsageDelta, now: float
                       ) -> GuardState:
    """`add_usage` inside the caller's transaction; returns the guard state from before."""
    before = await guard_on(conn, session_id)
    await conn.execute(f"UPDATE sessions SET {USAGE_SET}, last_activity = ? WHERE id = ?",
                       (*usage_params(delta), now, session_id))
    return before


async def guard_on(conn: Conn, session_id: str) -> GuardState:
    """The session's guard state through `conn`; raises `SessionNotFoundError`."""
    rows = await conn.execute_fetchall(_GUARD_SQL, (session_id,))
    if not rows:
        raise SessionNotFoundError(session_id)
    return _guard(rows[0])


def _guard(row: Any) -> GuardState:
    return GuardState(
        session_id=row["id"],
        cooldown_until=row["cooldown_until"],
        cooldown_error=row["cooldown_error"],
        fallback_streak=int(row["fallback_streak"]),
        ineffective_count=int(row["ineffective_count"]),
        last_prompt_tokens=row["last_prompt_tokens"],
        compression_count=int(row["compression_count"]),
        failure_streak=int(row["failure_streak"]),
        verify_pending=bool(row["verify_pending"]),
    )
