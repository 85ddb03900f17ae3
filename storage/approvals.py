"""Approvals of dangerous tool calls: each request and its decision (schema v7)."""

from __future__ import annotations

from storage.base import StoreBase
from storage.codec import scrub
from storage.sqlconn import Conn, Row
from storage.types import ApprovalRecord, row_to

__all__ = ["ApprovalsMixin"]


class ApprovalsMixin(StoreBase):
    """The `approvals` table: written when a request is made and once when it is decided."""

    async def record_approval(self, record: ApprovalRecord) -> None:
        async def op(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO approvals(id, session_id, platform, chat_id, requester, tool,"
                " command, reason, status, decided_by, created_at, decided_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.id, record.session_id, record.platform, record.chat_id,
                 record.requester, record.tool, scrub(record.command) or "",
                 scrub(record.reason) or "", record.status, record.decided_by,
                 record.created_at or self._clock(), record.decided_at))

        await self._write(op)

    async def decide_approval(self, approval_id: str, *, status: str,
                              decided_by: str | None) -> bool:
        async def op(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?"
                " WHERE id = ? AND status = 'pending'",
                (status, decided_by, self._clock(), approval_id))
            return bool(cur.rowcount)

        return await self._write(op)

    async def list_approvals(self, *, session_id: str | None = None,
                             limit: int = 50) -> list[ApprovalRecord]:
        # Newest first; requests made in the same instant in the order they were made
        # (SQLite's rowid; PostgreSQL has no insertion order, the id breaks the tie).
        where = " WHERE session_id = ?" if session_id is not None else ""
        params: tuple[object, ...] = ((session_id,) if session_id is not None else ()) + (
            max(1, limit),)

        async def fn(conn: Conn) -> list[Row]:
            tie = "rowid DESC" if conn.dialect == "sqlite" else "id DESC"
            return await conn.execute_fetchall(
                f"SELECT * FROM approvals{where} ORDER BY created_at DESC, {tie} LIMIT ?",
                params)

        return [row_to(ApprovalRecord, r) for r in await self._read(fn)]

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        row = await self._fetchone("SELECT * FROM approvals WHERE id = ?", (approval_id,))
        return row_to(ApprovalRecord, row) if row else None

    async def approvals_pending_in(self, platform: str, chat_id: str) -> list[ApprovalRecord]:
        async def fn(conn: Conn) -> list[Row]:
            tie = "rowid" if conn.dialect == "sqlite" else "id"
            return await conn.execute_fetchall(
                "SELECT * FROM approvals WHERE platform = ? AND chat_id = ?"
                f" AND status = 'pending' ORDER BY created_at, {tie}", (platform, chat_id))

        return [row_to(ApprovalRecord, r) for r in await self._read(fn)]
