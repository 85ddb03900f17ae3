"""The gateway end to end on `storage.backend: postgres`: the real runner, the `api` adapter
with the openai SDK as the client, the fake model; a turn, a /compress and a search, and
what PostgreSQL holds afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.fake import FakeAdapter
from gateway.paths import ProfilePaths, ensure_profile_dirs
from gateway.process import EXIT_STORAGE
from gateway.runner import GatewayRunner
from storage.postgres import PostgresStore
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.integration.harness import make_config
from tests.multiuser.support import tool_payload
from tests.pg_support import reset
from tests.scale_out.support import api_gateway


async def test_a_turn_a_compress_and_a_search_on_postgres(
        tmp_path: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    await reset(pg_dsn)
    async with api_gateway(tmp_path, model, storage__backend="postgres",
                           storage__dsn=pg_dsn) as gw:
        assert type(gw.runner.store).__name__ == "PostgresStore"
        for i in range(6):
            model.enqueue(text(f"Answer {i}: zebras sleep standing up."))
            extra = "and okapis " if i == 0 else ""
            reply = await gw.ask(f"question {i} about zebras {extra}" + "detail " * 30)
            assert reply == f"Answer {i}: zebras sleep standing up."
        model.enqueue(text("## Goal\nThe user studies zebras."))
        done = await gw.ask("/compress")
        assert "Compressed" in done, done
        model.enqueue(tool_calls(call("session_search", {"query": "okapis"})),
                      text("You asked about zebras."))
        assert await gw.ask("what did I ask before?") == "You asked about zebras."
        found = str(tool_payload(model.requests[-1]))
        assert "question 0 about zebras and «okapis»" in found, found

    assert not (tmp_path / "state.db").exists(), "nothing was written to SQLite"
    async with await PostgresStore.open(pg_dsn) as store:
        sessions = await store.list_sessions()
        assert len(sessions) == 2
        parent = next(s for s in sessions if s.end_reason == "compression")
        child = next(s for s in sessions if s.parent_session_id == parent.id)
        assert child.lineage_kind == "compression" and child.ended_at is None
        old = [m["content"] for m in await store.load_all(parent.id) if m["role"] == "user"]
        assert old[:2] == ["question 0 about zebras and okapis " + "detail " * 30,
                           "question 1 about zebras " + "detail " * 30]
        now = [m["content"] for m in await store.load_history(child.id) if m["role"] == "user"]
        assert now[-1] == "what did I ask before?"
        hits = await store.search("zebras standing")
        assert {h.session_id for h in hits} >= {parent.id}


async def test_an_unreachable_database_is_a_clean_exit_for_a_restart(
        tmp_path: Path, model: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    config = make_config(model, storage__backend="postgres",
                         storage__dsn="postgresql://hermes:pw-not-logged@127.0.0.1:9/hermes")
    runner = GatewayRunner(config, ensure_profile_dirs(ProfilePaths(tmp_path)),
                           adapters={"fake": FakeAdapter("fake")}, take_locks=False)
    assert await runner.run() == EXIT_STORAGE  # 74: the service manager tries again later
    out = capsys.readouterr()
    logged = out.out + out.err + caplog.text  # structlog prints, or hands to logging
    assert "storage_unavailable" in logged
    assert "pw-not-logged" not in logged
