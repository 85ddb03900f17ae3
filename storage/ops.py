"""Small operational queries the daemon needs: health probe, ledger summaries."""

from __future__ import annotations

from storage.base import StoreBase
from storage.sqlconn import Conn
from storage.types import OutboxItem

__all__ = ["OpsMixin"]


class OpsMixin(StoreBase):
    async def writable(self) -> bool:
        """True when a write transaction commits (the `/readyz` storage probe). Never raises."""

        async def op(conn: Conn) -> bool:
            await conn.execute("UPDATE cursors SET value = value WHERE name = '__probe__'")
            return True

        try:
            return bool(await self._write(op))
        except Exception:
            return False

    async def optimize(self) -> None:
        """Routine maintenance: refresh the query planner's statistics where they drifted
        (`PRAGMA optimize`; cheap when nothing changed). The WAL is checkpointed by SQLite
        itself as it grows. Raises `StorageError` subclasses."""

        async def op(conn: Conn) -> None:
            await conn.execute("PRAGMA optimize")

        await self._write(op)

    async def unreachable_chats(self) -> list[tuple[str, str]]:
        """(platform, chat_id) of every chat marked unreachable."""
        rows = await self._fetchall("SELECT platform, chat_id FROM unreachable_chats")
        return [(str(r[0]), str(r[1])) for r in rows]

    async def outbox_latest_for_session(self, session_id: str) -> OutboxItem | None:
        """The newest outbox entry of a session in any state (a reply exists for a turn)."""
        from storage.ledgers import _outbox

        row = await self._fetchone(
            "SELECT * FROM outbox WHERE session_id = ? ORDER BY created_at DESC, id DESC LIMIT 1",
            (session_id,),
        )
        return _outbox(row) if row else None


