"""Fenced publication of a compression result: rotation and in-place (DESIGN.md §4).

Both commits run as ONE write transaction that first checks the fence (`check_fence`); when
the fence fails they raise `FenceRejected` and nothing is written.
"""

from __future__ import annotations

from typing import Any

from storage.base import UNSET, StoreBase, fetch_session
from storage.codec import message_to_row
from storage.leases import check_fence
from storage.lineage import copy_active_rows
from storage.messages import insert_rows
from storage.sessions import ROUTING_COLUMNS, insert_session
from storage.sqlconn import Conn
from storage.titles import next_lineage_title_on, scope_of
from storage.types import Lease

__all__ = ["CompactionMixin"]

_CARRIED = (
    "model",
    "profile_name",
    "cooldown_until",
    "cooldown_error",
    "fallback_streak",
    "ineffective_count",
    "last_prompt_tokens",
    "failure_streak",
    "verify_pending",
)


class CompactionMixin(StoreBase):
    """Publishing compressed histories under a lease."""

    async def commit_rotation(
        self,
        lease: Lease,
        parent_id: str,
        *,
        snapshot_last_message_id: int,
        compressed_messages: list[dict[str, Any]],
        system_prompt: str | None = None,
        child_title: str | None = UNSET,
        deadline: float | None = None,
        **session_fields: Any,
    ) -> str:
        """End `parent_id` (end_reason `compression`) and create its child in one transaction.

        The child gets `parent_session_id`, `lineage_kind='compression'`, the parent's routing
        columns and guard state, `compression_count + 1`, the system prompt snapshot (the
        parent's when None), the title (default: the next lineage title when the parent has
        one; pass a string or None to choose), `compressed_messages`, then copies of every
        active parent message with id > `snapshot_last_message_id`. Returns the child id.

        Raises `FenceRejected` (`lease_lost`, `superseded`, `timeout`) and writes nothing when
        the fence fails; `TitleInUseError` for an explicit title that is taken.
        """
        now_rows = [message_to_row("", m, 0.0) for m in compressed_messages]

        async def op(conn: Conn) -> str:
            now = self._clock()
            await check_fence(conn, lease, parent_id, now, deadline)
            parent = await fetch_session(conn, parent_id)
            title = child_title
            if title is UNSET:
                family = await scope_of(conn, parent_id)
                title = (await next_lineage_title_on(conn, parent.title, family)
                         if parent.title else None)
            values: dict[str, Any] = {c: getattr(parent, c) for c in ROUTING_COLUMNS}
            values.update({c: getattr(parent, c) for c in _CARRIED})
            values.update(
                system_prompt=system_prompt if system_prompt is not None else parent.system_prompt,
                parent_session_id=parent.id,
                lineage_kind="compression",
                compression_count=parent.compression_count + 1,
                title=title,
            )
            values.update(session_fields)
            await conn.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = 'compression' WHERE id = ?",
                (now, parent_id),
            )
            child = await insert_session(conn, values, now)
            rows = [_with_session(r, child, now) for r in now_rows]
            ids = await insert_rows(conn, rows)
            ids += await copy_active_rows(conn, parent_id, child, after_id=snapshot_last_message_id)
            await conn.execute(
                "UPDATE sessions SET message_count = ? WHERE id = ?", (len(ids), child)
            )
            return child

        return await self._write(op)

    async def commit_in_place(
        self,
        lease: Lease,
        session_id: str,
        *,
        snapshot_last_message_id: int,
        compressed_messages: list[dict[str, Any]],
        deadline: float | None = None,
    ) -> list[int]:
        """Replace the session's history up to the snapshot, same session id, one transaction.

        Active rows with id ≤ snapshot become `active=0, compacted=1` (still searchable);
        `compressed_messages` are inserted; active rows appended after the snapshot are
        re-inserted after them and their originals marked compacted, so order is kept.
        Returns the ids of the new active rows. Raises `FenceRejected` as `commit_rotation`.
        """
        prepared = [message_to_row("", m, 0.0) for m in compressed_messages]

        async def op(conn: Conn) -> list[int]:
            now = self._clock()
            await check_fence(conn, lease, session_id, now, deadline)
            late = list(
                await conn.execute_fetchall(
                    "SELECT MAX(id) FROM messages WHERE session_id = ? AND active = 1 AND id > ?",
                    (session_id, snapshot_last_message_id),
                )
            )
            late_max = late[0][0] if late and late[0][0] is not None else None
            await conn.execute(
                "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ?"
                " AND active = 1 AND id <= ?",
                (session_id, snapshot_last_message_id),
            )
            ids = await insert_rows(conn, [_with_session(r, session_id, now) for r in prepared])
            if late_max is not None:
                ids += await copy_active_rows(
                    conn,
                    session_id,
                    session_id,
                    after_id=snapshot_last_message_id,
                    upto_id=late_max,
                )
                await conn.execute(
                    "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ?"
                    " AND active = 1 AND id > ? AND id <= ?",
                    (session_id, snapshot_last_message_id, late_max),
                )
            await conn.execute(
                "UPDATE sessions SET message_count = ?, compression_count = compression_count + 1"
                " WHERE id = ?",
                (len(ids), session_id),
            )
            return ids

        return await self._write(op)


def _with_session(row: tuple[Any, ...], session_id: str, now: float) -> tuple[Any, ...]:
    ts = row[4] if row[4] else now
    return (session_id, *row[1:4], ts, *row[5:])
