"""`hermes storage migrate` round-trips a state.db written by a real gateway run:
SQLite → PostgreSQL → SQLite, verified by counts and checksums, resumable, and a copy that
does not match its source is reported (exit 1)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from typer.testing import CliRunner

from gateway.cli.storage_cmd import app
from gateway.paths import home, set_home
from storage.postgres import PostgresStore
from storage.postgres.schema import TABLES
from storage.types import ApprovalRecord
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.pg_support import reset
from tests.scale_out.support import api_gateway

runner = CliRunner()
# what the gateway itself wrote; generated columns are rebuilt by each backend
_SKIP = {"scope_key"}


def _dump(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    with sqlite3.connect(db) as conn:
        for table in TABLES:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_xinfo({table})")
                    if r[6] == 0 and r[1] not in _SKIP]
            rows = conn.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
            out[table] = sorted(rows, key=repr)
    return out


def _migrate(*args: str) -> tuple[int, dict[str, Any], str]:
    result = runner.invoke(app, ["migrate", *args, "--json"])
    payload = json.loads(result.stdout.strip().splitlines()[-1]) if result.stdout.strip() else {}
    return result.exit_code, payload, result.stderr


@pytest.fixture
def profile(tmp_path: Path) -> Any:
    before = home()
    set_home(tmp_path)
    try:
        yield tmp_path
    finally:
        set_home(before)


async def test_round_trip_of_a_real_gateway_state_db(
        profile: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    await reset(pg_dsn)
    async with api_gateway(profile, model) as gw:  # the default backend: SQLite
        for i in range(8):
            model.enqueue(text(f"Answer {i}: café ☕ and 数据库 ok"))
            await gw.ask(f"question {i} " + "detail " * 30, user="chat0" if i < 6 else "chat1")
        model.enqueue(text("## Goal\nSummary."))
        assert "Compressed" in await gw.ask("/compress", user="chat0")
        await gw.ask("/title Round trip", user="chat1")
        await gw.runner.store.record_if_new("telegram", "42")
        await gw.runner.store.set_cursor("poll", 17)
        await gw.runner.store.inbound_hold("telegram", "43", "tg:dm:1", '{"text": "held"}',
                                           claimed_by="boot-1")
        await gw.runner.store.record_if_new("telegram", "45", claimed_by="boot-1")
        await gw.runner.store.outbox_add(platform="telegram", chat_id="1", text="unsent",
                                         claimed_by="boot-1")
        await gw.runner.store.record_approval(ApprovalRecord(
            id="ap1", session_id=None, platform="telegram", chat_id="1", requester="7",
            tool="terminal", command="rm -rf /srv", reason="recursive delete"))
        await gw.runner.store.decide_approval("ap1", status="denied", decided_by="7")
    original = profile / "state.db"
    before = _dump(original)
    assert len(before["messages"]) > 20 and len(before["sessions"]) == 3
    assert len(before["approvals"]) == 1

    code, out, err = await asyncio.to_thread(_migrate, "--to", "postgres", "--dsn", pg_dsn)
    assert code == 0, err
    assert out["verified"] is True
    by_table = {t["table"]: t for t in out["tables"]}
    assert by_table["messages"]["destination_rows"] == len(before["messages"])

    # PostgreSQL serves what was copied: history, lineage, search, and new writes
    async with await PostgresStore.open(pg_dsn) as store:
        sessions = await store.list_sessions()
        child = next(s for s in sessions if s.lineage_kind == "compression")
        assert child.parent_session_id is not None
        assert await store.search("detail") != []
        assert await store.record_if_new("telegram", "42") is False
        assert await store.get_cursor("poll") == "17"
        assert [h.payload for h in await store.inbound_held()] == ['{"text": "held"}']
        # claims came along: boot-1's hold is not its to recover, a later boot's is
        assert await store.inbound_claim_held("boot-1") == []
        assert await store.record_if_new("telegram", "45", claimed_by="boot-1") is False
        (approval,) = await store.list_approvals()
        assert (approval.id, approval.status, approval.decided_by) == ("ap1", "denied", "7")

    back = profile / "back.db"
    code, out, err = await asyncio.to_thread(
        _migrate, "--to", "sqlite", "--dsn", pg_dsn, "--db", str(back))
    assert code == 0, err
    after = _dump(back)
    for table in TABLES:
        assert after[table] == before[table], table
    fts = "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'question'"
    with sqlite3.connect(back) as b, sqlite3.connect(original) as o:  # search index rebuilt
        assert b.execute(fts).fetchone()[0] == o.execute(fts).fetchone()[0] > 0

    async with await PostgresStore.open(pg_dsn) as store:  # new rows get new ids
        ids = await store.append_messages(child.id, [{"role": "user", "content": "after"}])
        assert ids[0] > max(r[0] for r in before["messages"])
        await store.inbound_hold("telegram", "44", "tg:dm:1", '{"text": "later"}')
        assert [h.event_id for h in await store.inbound_held()] == ["43", "44"]


async def test_an_interrupted_copy_resumes_and_a_wrong_copy_is_refused(
        profile: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    await reset(pg_dsn)
    async with api_gateway(profile, model) as gw:
        for i in range(4):
            model.enqueue(text(f"Answer {i}"))
            await gw.ask(f"question {i}")
    code, out, err = await asyncio.to_thread(_migrate, "--to", "postgres", "--dsn", pg_dsn)
    assert code == 0, err
    conn = await asyncpg.connect(pg_dsn)
    try:  # as if the copy had stopped half-way through the messages
        await conn.execute("DELETE FROM messages WHERE id > 3")
        code, out, err = await asyncio.to_thread(_migrate, "--to", "postgres", "--dsn", pg_dsn)
        assert code != 0 and "--resume" in err
        code, out, err = await asyncio.to_thread(
            _migrate, "--to", "postgres", "--dsn", pg_dsn, "--resume")
        assert code == 0 and out["verified"] is True, err
        copied = {t["table"]: t["copied"] for t in out["tables"]}
        assert copied["messages"] == 5  # only the missing ones
        # a row that differs from its source is caught by the checksum
        await conn.execute("UPDATE messages SET content = 'tampered' WHERE id = 2")
        code, out, err = await asyncio.to_thread(
            _migrate, "--to", "postgres", "--dsn", pg_dsn, "--resume")
        assert code == 1 and out["verified"] is False
        assert [t["table"] for t in out["tables"] if not t["matches"]] == ["messages"]
    finally:
        await conn.close()
