"""The background self-reviews: one row per review, written when it ended (schema v8)."""

from __future__ import annotations

import json
from typing import Any

from storage.base import StoreBase
from storage.codec import scrub
from storage.sqlconn import Conn, Row
from storage.types import ReviewRecord

__all__ = ["ReviewsMixin"]


def _dump(items: tuple[dict[str, str], ...]) -> str:
    clean = [{k: scrub(str(v)) for k, v in i.items()} for i in items]
    return scrub(json.dumps(clean, ensure_ascii=False)) or "[]"


def _load(raw: Any) -> tuple[dict[str, str], ...]:
    try:
        items = json.loads(raw) if raw else []
    except ValueError:
        return ()
    return tuple({str(k): str(v) for k, v in i.items()} for i in items if isinstance(i, dict))


def _record(row: Row) -> ReviewRecord:
    return ReviewRecord(
        id=row["id"], session_id=row["session_id"], principal=row["principal"],
        trigger=row["trigger"], status=row["status"], reason=row["reason"],
        skills=_load(row["skills"]), memories=_load(row["memories"]), model=row["model"],
        input_tokens=int(row["input_tokens"]), output_tokens=int(row["output_tokens"]),
        model_calls=int(row["model_calls"]), requested_at=float(row["requested_at"]),
        finished_at=float(row["finished_at"]))


class ReviewsMixin(StoreBase):
    """The `self_reviews` table: inserted once per review, never updated."""

    async def record_review(self, record: ReviewRecord) -> None:
        finished = record.finished_at or self._clock()

        async def op(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO self_reviews(id, session_id, principal, trigger, status, reason,"
                " skills, memories, model, input_tokens, output_tokens, model_calls,"
                " requested_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.id, record.session_id, scrub(record.principal) or "",
                 record.trigger, record.status, scrub(record.reason), _dump(record.skills),
                 _dump(record.memories), record.model, max(0, record.input_tokens),
                 max(0, record.output_tokens), max(0, record.model_calls),
                 record.requested_at or finished, finished))

        await self._write(op)

    async def list_reviews(self, *, session_id: str | None = None,
                           limit: int = 50) -> list[ReviewRecord]:
        where = " WHERE session_id = ?" if session_id is not None else ""
        params: tuple[object, ...] = ((session_id,) if session_id is not None else ()) + (
            max(1, limit),)

        async def fn(conn: Conn) -> list[Row]:
            tie = "rowid DESC" if conn.dialect == "sqlite" else "id DESC"
            return await conn.execute_fetchall(
                f"SELECT * FROM self_reviews{where} ORDER BY finished_at DESC, {tie} LIMIT ?",
                params)

        return [_record(r) for r in await self._read(fn)]

    async def review_tokens_since(self, since: float) -> int:
        async def fn(conn: Conn) -> list[Row]:
            return await conn.execute_fetchall(
                "SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS n FROM self_reviews"
                " WHERE finished_at >= ?", (since,))

        rows = await self._read(fn)
        return int(rows[0]["n"]) if rows else 0
