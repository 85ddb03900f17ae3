"""An HTTP API request that lands on a replica that does not own its session: the owner runs
the turn once, and the client that asked the other replica gets the answer (before, the
owner's reply had no request to go to and the client waited until its timeout).

Two replicas in one process on one PostgreSQL database, each with its own api adapter (its
own port); the client talks to one, then the other, in the same API session."""

from __future__ import annotations

from pathlib import Path

from storage.postgres import PostgresStore
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scale_out.support import api_gateway

REPLICAS = {"storage__backend": "postgres", "gateway__replicas__lease_s": 3.0,
            "gateway__replicas__sweep_s": 0.2, "gateway__replicas__stale_handover_s": 1.0}


async def test_a_request_on_the_replica_that_does_not_own_the_session_is_answered(
        tmp_path: Path, model: FakeOpenAIServer, replica_db: str) -> None:
    async with api_gateway(tmp_path / "a", model, storage__dsn=replica_db, **REPLICAS) as a, \
            api_gateway(tmp_path / "b", model, storage__dsn=replica_db, **REPLICAS) as b:
        assert a.runner.replica is not None and b.runner.replica is not None
        assert await a.ask("one") == "echo: one"
        [key] = a.runner.replica.sessions.held()
        # the same API session asked through replica b: a owns it and runs the turn
        assert await b.ask("two") == "echo: two"
        assert await b.ask("three") == "echo: three"
        assert a.runner.replica.sessions.owns(key)
        assert not b.runner.replica.sessions.owns(key)
        assert await a.ask("four") == "echo: four"
        assert len(model.requests) == 4  # each question reached the model once
    async with await PostgresStore.open(replica_db) as store:
        [session] = await store.list_sessions()
        texts = [m["content"] for m in await store.load_history(session.id)]
        assert texts == ["one", "echo: one", "two", "echo: two", "three", "echo: three",
                         "four", "echo: four"]
