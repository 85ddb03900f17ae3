"""Lineage: ancestors, children, the compression tip, resolving "title or id", branching."""

from __future__ import annotations

from storage.base import StoreBase, fetch_session, session_from_row
from storage.messages import insert_rows
from storage.sessions import ROUTING_COLUMNS, insert_session
from storage.sqlconn import Conn
from storage.titles import sanitize_title, scope_of
from storage.types import Session, SessionScope

__all__ = ["LineageMixin", "MAX_HOPS", "copy_active_rows"]

MAX_HOPS = 1000

_COPY_COLS = (
    "role, active, compacted, timestamp, tool_name, tool_call_id, finish_reason, token_count, "
    "platform_message_id, content_json, meta, reasoning, tool_calls, api_content, content"
)


async def copy_active_rows(
    conn: Conn,
    src_id: str,
    dst_id: str,
    *,
    after_id: int = 0,
    upto_id: int | None = None,
) -> list[int]:
    """Copy `src_id`'s active rows with `after_id` < id ≤ `upto_id` to the end of `dst_id`
    (in order), inside the caller's transaction; returns the new ids."""
    rows = list(
        await conn.execute_fetchall(
            f"SELECT {_COPY_COLS} FROM messages WHERE session_id = ? AND active = 1 AND id > ?"
            " AND id <= ? ORDER BY id",
            (src_id, after_id, upto_id if upto_id is not None else 2**62),
        )
    )
    return await insert_rows(conn, [(dst_id, *tuple(r)) for r in rows])


async def _tip_on(conn: Conn, session_id: str) -> str:
    current, seen = session_id, {session_id}
    for _ in range(MAX_HOPS):
        rows = list(
            await conn.execute_fetchall(
                "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
                " WHERE c.parent_session_id = ? AND c.lineage_kind = 'compression'"
                " AND p.end_reason = 'compression'"
                " ORDER BY (c.ended_at IS NULL) DESC, c.started_at DESC, c.id DESC LIMIT 1",
                (current,),
            )
        )
        if not rows or rows[0][0] in seen:
            return current
        current = rows[0][0]
        seen.add(current)
    return current


class LineageMixin(StoreBase):
    """Walks along `parent_session_id`; cycle-safe and bounded to `MAX_HOPS`."""

    async def ancestors(self, session_id: str) -> list[Session]:
        """Parent, grandparent, … (nearest first); empty for a root or unknown id."""

        async def fn(conn: Conn) -> list[Session]:
            out: list[Session] = []
            seen = {session_id}
            current = session_id
            for _ in range(MAX_HOPS):
                rows = list(
                    await conn.execute_fetchall(
                        "SELECT p.* FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
                        " WHERE c.id = ?",
                        (current,),
                    )
                )
                if not rows or rows[0]["id"] in seen:
                    break
                parent = session_from_row(rows[0])
                out.append(parent)
                seen.add(parent.id)
                current = parent.id
            return out

        return await self._read(fn)

    async def children(self, session_id: str) -> list[Session]:
        """Direct children (compression and branch), oldest first."""
        rows = await self._fetchall(
            "SELECT * FROM sessions WHERE parent_session_id = ? ORDER BY started_at, id",
            (session_id,),
        )
        return [session_from_row(r) for r in rows]

    async def tip(self, session_id: str) -> str:
        """Follow compression children to the newest continuation; the id itself when none.

        Branches are not followed."""

        async def fn(conn: Conn) -> str:
            return await _tip_on(conn, session_id)

        return await self._read(fn)

    async def resolve(
        self, title_or_id: str, scope: SessionScope | None = None
    ) -> Session | None:
        """A session id or exact title → the tip of its compression lineage (or None).

        With `scope`, only sessions of that scope are found (and the tip must be in it too).
        Without, a title several scopes use resolves to the newest such session."""
        where, extra = ("", ()) if scope is None else (" AND scope_key = ?", (scope.key,))

        async def fn(conn: Conn) -> Session | None:
            rows = list(
                await conn.execute_fetchall(
                    f"SELECT id FROM sessions WHERE id = ?{where}", (title_or_id.strip(), *extra)
                )
            )
            if not rows:
                title = sanitize_title(title_or_id.strip("'\"` "))
                if title is None:
                    return None
                rows = list(
                    await conn.execute_fetchall(
                        f"SELECT id FROM sessions WHERE title = ?{where}"
                        " ORDER BY started_at DESC, id DESC LIMIT 1",
                        (title, *extra),
                    )
                )
                if not rows:
                    return None
            tip = await fetch_session(conn, await _tip_on(conn, rows[0][0]))
            if scope is not None and await scope_of(conn, tip.id) != scope.key:
                return None
            return tip

        return await self._read(fn)

    async def branch(self, session_id: str, title: str | None = None) -> Session:
        """Fork: a new live session (`lineage_kind='branch'`, same routing and system prompt)
        holding a copy of the source's active messages. The source is left as it is.

        Raises `SessionNotFoundError`, `TitleInUseError`."""

        async def op(conn: Conn) -> Session:
            src = await fetch_session(conn, session_id)
            now = self._clock()
            values = {c: getattr(src, c) for c in ROUTING_COLUMNS}
            values.update(
                model=src.model,
                system_prompt=src.system_prompt,
                parent_session_id=src.id,
                lineage_kind="branch",
                profile_name=src.profile_name,
                title=title,
            )
            child = await insert_session(conn, values, now)
            ids = await copy_active_rows(conn, src.id, child)
            await conn.execute(
                "UPDATE sessions SET message_count = ? WHERE id = ?", (len(ids), child)
            )
            return await fetch_session(conn, child)

        return await self._write(op)
