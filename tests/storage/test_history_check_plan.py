"""The history cache's per-turn check is answered from `idx_messages_active_len` (migration
11) without reading the messages themselves: with only the session index, SQLite read every
active row's content (overflow pages for long replies) on every turn of a long chat."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from storage import StateStore
from storage.live import HISTORY_CHECK_AFTER_SQL, HISTORY_CHECK_SQL


@pytest.mark.parametrize(("sql", "params"), [(HISTORY_CHECK_SQL, ("s",)),
                                             (HISTORY_CHECK_AFTER_SQL, ("s", 0))])
async def test_the_check_reads_the_length_index_only(tmp_path: Path, sql: str,
                                                     params: tuple[object, ...]) -> None:
    store = await StateStore.open(tmp_path / "state.db")
    await store.close()
    conn = sqlite3.connect(tmp_path / "state.db")
    try:
        plan = " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
        assert "idx_messages_active_len" in plan, plan
        # no column is read from the table itself (its cursor is only seeked lazily)
        [(root,)] = conn.execute("SELECT rootpage FROM sqlite_master WHERE type = 'table'"
                                 " AND name = 'messages'")
        ops = [(r[1], r[2], r[3]) for r in conn.execute(f"EXPLAIN {sql}", params)]
        table_cursors = {p1 for op, p1, p2 in ops if op == "OpenRead" and p2 == root}
        assert table_cursors, ops
        assert not [o for o in ops if o[0] == "Column" and o[1] in table_cursors], ops
        # and the figures it gives are the ones the table holds
        conn.execute("INSERT INTO sessions(id, source, started_at) VALUES ('s', 'x', 0)")
        conn.executemany(
            "INSERT INTO messages(session_id, role, active, timestamp, content)"
            " VALUES ('s', 'user', ?, 0, ?)",
            [(1, "hello"), (0, "hidden text"), (1, "é" * 3000)])
        got = conn.execute(sql, params).fetchone()
        assert got[0] == 2 and got[-1] == len("hello") + 3000
    finally:
        conn.close()
