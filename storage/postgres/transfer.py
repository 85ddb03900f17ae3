"""Copying a store between backends: SQLite `state.db` ⇄ PostgreSQL (`hermes storage
migrate`).

Both sides are migrated to the current schema first. Tables are copied parents first in
chunks, each chunk its own transaction, with `ON CONFLICT DO NOTHING`, so an interrupted
copy is continued by running it again (`resume=True`): tables with an integer id continue
after the highest id already copied, the others skip the rows already there. Sessions are
inserted without their parent link and linked in a second pass (a child may sort before its
parent). Generated columns (`scope_key`, the search vector, the SQLite search tables) are
rebuilt by the destination. At the end every table's row count and an order-independent
checksum of its rows (the sum of each row's SHA-256, over values normalised the same way on
both sides) must match, or `TransferMismatch` is raised. History is only ever added to.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import asyncpg

from storage.codec import scrub
from storage.db import prepare_database
from storage.errors import StorageError
from storage.postgres.conn import to_postgres
from storage.postgres.db import connect
from storage.postgres.schema import TABLES, migrate
from storage.searchindex import index_all_sync

__all__ = ["TableReport", "TransferMismatch", "TransferNotEmpty", "transfer"]

CHUNK = 2_000
_MOD = 1 << 128
_INT_KEYED = {"messages": "id", "outbox": "id"}
_KEYS: dict[str, tuple[str, ...]] = {
    "sessions": ("id",), "messages": ("id",), "compression_leases": ("session_id",),
    "inbound_events": ("platform", "event_id"), "outbox": ("id",), "cursors": ("name",),
    "pairing_codes": ("platform", "code_hash"), "approved_users": ("platform", "user_id"),
    "unreachable_chats": ("platform", "chat_id"), "approvals": ("id",),
    "self_reviews": ("id",),
}
Direction = Literal["to_postgres", "to_sqlite"]
Progress = Callable[[str, int], None]


class TransferMismatch(StorageError):
    """The copy does not match its source (counts or checksums differ)."""

    def __init__(self, message: str, reports: list[TableReport]) -> None:
        super().__init__(message)
        self.reports = reports


class TransferNotEmpty(StorageError):
    """The destination already holds data and this is not a resumed copy."""


@dataclass(slots=True)
class TableReport:
    table: str
    source_rows: int = 0
    copied: int = 0
    destination_rows: int = 0
    checksum: str = ""
    matches: bool = False


@dataclass(slots=True)
class _Side:
    """One end of the copy: a sqlite3 connection or an asyncpg connection."""

    sqlite: sqlite3.Connection | None = None
    pg: asyncpg.Connection | None = None
    columns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # name, kind

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self.pg is not None:
            return [tuple(r) for r in await self.pg.fetch(to_postgres(sql), *params)]
        conn = self.sqlite
        assert conn is not None
        return await asyncio.to_thread(lambda: [tuple(r) for r in conn.execute(sql, params)])

    async def write_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        if self.pg is not None:
            async with self.pg.transaction():
                await self.pg.executemany(to_postgres(sql), rows)
            return
        conn = self.sqlite
        assert conn is not None

        def run() -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(sql, rows)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        await asyncio.to_thread(run)


async def _sqlite_columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    rows = await asyncio.to_thread(
        lambda: conn.execute(f"PRAGMA table_xinfo({table})").fetchall())
    # hidden: 0 = ordinary column, 2/3 = generated
    return [(r[1], _kind(str(r[2]))) for r in rows if r[6] == 0]


async def _pg_columns(conn: asyncpg.Connection, table: str) -> list[tuple[str, str]]:
    rows = await conn.fetch(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER'"
        " AND data_type <> 'tsvector' ORDER BY ordinal_position", table)
    return [(r[0], _kind(str(r[1]))) for r in rows]


def _kind(declared: str) -> str:
    d = declared.upper()
    if "INT" in d:
        return "int"
    if "REAL" in d or "DOUBLE" in d or "FLOAT" in d or "NUMERIC" in d:
        return "float"
    return "text"


def _value(v: Any, kind: str) -> Any:
    """A value as the other backend stores it (and as the checksum sees it)."""
    if v is None:
        return None
    if kind == "int":
        return int(v) if not isinstance(v, float) or v.is_integer() else v
    if kind == "float":
        return float(v)
    return scrub(v if isinstance(v, str) else str(v))


def _row_hash(row: Sequence[Any], kinds: Sequence[str]) -> int:
    norm = [_value(v, k) for v, k in zip(row, kinds, strict=True)]
    text = json.dumps(norm, ensure_ascii=False, separators=(",", ":"), default=str)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:16], "big")


async def _checksum(side: _Side, table: str, cols: list[tuple[str, str]]) -> tuple[int, str]:
    names = ", ".join(c for c, _ in cols)
    kinds = [k for _, k in cols]
    keys = _KEYS[table]
    total, count, after = 0, 0, None  # keyset pages over the primary key
    while True:
        where, params = _after(keys, after)
        rows = await side.fetch(
            f"SELECT {names} FROM {table}{where} ORDER BY {', '.join(keys)} LIMIT {CHUNK}",
            params)
        for r in rows:
            total = (total + _row_hash(r, kinds)) % _MOD
        count += len(rows)
        if len(rows) < CHUNK:
            return count, f"{total:032x}"
        after = _key_of(rows[-1], cols, keys)


def _after(keys: tuple[str, ...], after: tuple[Any, ...] | None) -> tuple[str, list[Any]]:
    if after is None:
        return "", []
    if len(keys) == 1:
        return f" WHERE {keys[0]} > ?", [after[0]]
    return f" WHERE ({', '.join(keys)}) > ({', '.join('?' * len(keys))})", list(after)


def _key_of(row: Sequence[Any], cols: list[tuple[str, str]],
            keys: tuple[str, ...]) -> tuple[Any, ...]:
    names = [c for c, _ in cols]
    return tuple(row[names.index(k)] for k in keys)


async def _copy_table(src: _Side, dst: _Side, table: str, cols: list[tuple[str, str]],
                      progress: Progress | None) -> int:
    names = [c for c, _ in cols]
    kinds = [k for _, k in cols]
    keys = _KEYS[table]
    parent = names.index("parent_session_id") if table == "sessions" else -1
    insert = (f"INSERT INTO {table} ({', '.join(names)}) VALUES"
              f" ({', '.join('?' * len(names))}) ON CONFLICT DO NOTHING")
    after: tuple[Any, ...] | None = None
    if table in _INT_KEYED:
        top = await dst.fetch(f"SELECT MAX({_INT_KEYED[table]}) FROM {table}")
        after = (top[0][0],) if top and top[0][0] is not None else None
    copied = 0
    links: list[tuple[Any, Any]] = []
    while True:
        where, params = _after(keys, after)
        rows = await src.fetch(
            f"SELECT {', '.join(names)} FROM {table}{where} ORDER BY {', '.join(keys)}"
            f" LIMIT {CHUNK}", params)
        if not rows:
            break
        out = []
        for r in rows:
            vals = [_value(v, k) for v, k in zip(r, kinds, strict=True)]
            if parent >= 0 and vals[parent] is not None:
                links.append((vals[parent], vals[0]))
                vals[parent] = None
            out.append(tuple(vals))
        await dst.write_many(insert, out)
        copied += len(rows)
        if progress is not None:
            progress(table, copied)
        if len(rows) < CHUNK:
            break
        after = _key_of(rows[-1], cols, keys)
    if links:
        for i in range(0, len(links), CHUNK):
            await dst.write_many("UPDATE sessions SET parent_session_id = ? WHERE id = ?",
                                 links[i:i + CHUNK])
    return copied


async def _open_sqlite(path: Path) -> _Side:
    await asyncio.to_thread(prepare_database, path)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA busy_timeout=30000")
    side = _Side(sqlite=conn)
    for t in TABLES:
        side.columns[t] = await _sqlite_columns(conn, t)
    return side


async def _open_pg(dsn: str) -> _Side:
    conn = await connect(dsn)
    await migrate(conn)
    side = _Side(pg=conn)
    for t in TABLES:
        side.columns[t] = await _pg_columns(conn, t)
    return side


async def transfer(direction: Direction, *, sqlite_path: Path, dsn: str, resume: bool = False,
                   progress: Progress | None = None) -> list[TableReport]:
    """Copy the store one way (`to_postgres`: state.db → database; `to_sqlite`: back) and
    verify it. Raises `TransferNotEmpty` when the destination has sessions and `resume` is
    False, `TransferMismatch` when the verification fails (the reports are on it)."""
    lite = await _open_sqlite(sqlite_path)
    pg = await _open_pg(dsn)
    src, dst = (lite, pg) if direction == "to_postgres" else (pg, lite)
    try:
        if not resume and (await dst.fetch("SELECT COUNT(*) FROM sessions"))[0][0]:
            raise TransferNotEmpty("the destination already holds sessions; pass --resume to "
                                   "continue an interrupted copy into it")
        reports = []
        for table in TABLES:
            dst_names = {c for c, _ in dst.columns[table]}
            cols = [c for c in src.columns[table] if c[0] in dst_names]
            report = TableReport(table)
            report.copied = await _copy_table(src, dst, table, cols, progress)
            reports.append(report)
        if pg.pg is not None:
            for table, col in _INT_KEYED.items():
                await pg.pg.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', '{col}'),"
                    f" GREATEST((SELECT MAX({col}) FROM {table}), 1))")
            await pg.pg.execute("SELECT setval('inbound_held_seq', GREATEST("
                                "(SELECT MAX(held_seq) FROM inbound_events), 1))")
        bad = []
        for report in reports:
            dst_names = {c for c, _ in dst.columns[report.table]}
            cols = [c for c in src.columns[report.table] if c[0] in dst_names]
            report.source_rows, want = await _checksum(src, report.table, cols)
            report.destination_rows, got = await _checksum(dst, report.table, cols)
            report.checksum = got
            report.matches = want == got and report.source_rows == report.destination_rows
            if not report.matches:
                bad.append(report.table)
        if bad:
            raise TransferMismatch(f"copy does not match its source: {', '.join(bad)}",
                                   reports)
        if lite.sqlite is not None and dst is lite:  # the search index follows the messages
            await asyncio.to_thread(index_all_sync, lite.sqlite)
        return reports
    finally:
        if lite.sqlite is not None:
            lite.sqlite.close()
        if pg.pg is not None:
            await pg.pg.close()
