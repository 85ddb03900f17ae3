"""Read-only aggregates for the operator's dashboard (`gateway.dashboard`)."""

from __future__ import annotations

from storage.base import StoreBase
from storage.sqlconn import Conn, Row
from storage.types import DayUsage

__all__ = ["ReportsMixin"]


class ReportsMixin(StoreBase):
    async def usage_by_day(self, since: float) -> list[DayUsage]:
        """Tokens of the sessions started since `since` (epoch s), summed per UTC day of
        their start, oldest day first (a session's tokens count on the day it started)."""

        async def fn(conn: Conn) -> list[Row]:
            day = ("date(started_at, 'unixepoch')" if conn.dialect == "sqlite" else
                   "to_char(to_timestamp(started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD')")
            return await conn.execute_fetchall(
                f"SELECT {day} AS day, SUM(input_tokens), SUM(output_tokens), COUNT(*)"
                " FROM sessions WHERE started_at >= ? GROUP BY day ORDER BY day", (since,))

        rows = await self._read(fn)
        return [DayUsage(str(r[0]), int(r[1] or 0), int(r[2] or 0), int(r[3] or 0))
                for r in rows]

    async def session_count(self) -> int:
        """How many sessions are stored (live and ended)."""
        row = await self._fetchone("SELECT COUNT(*) FROM sessions", ())
        return int(row[0]) if row else 0
