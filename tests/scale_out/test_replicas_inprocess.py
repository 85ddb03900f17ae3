"""Two gateway replicas in one process on one PostgreSQL database (each its own runner,
store and adapter): a session is worked by one replica, an event that lands on the other is
handed over and answered once by the owner, a replica's clean stop hands its sessions over
at once, and a replica that lost its lease cannot store or send a reply.

The chat is the fake platform seen through two adapters (one per replica): what the user
sees is what both adapters sent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from adapters.fake import FakeAdapter
from storage.postgres import PostgresStore
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text
from tests.gateway.runtime_harness import runner_for
from tests.pg_support import reset

REPLICAS = {"storage__backend": "postgres", "gateway__replicas__lease_s": 3.0,
            "gateway__replicas__sweep_s": 0.2, "gateway__replicas__stale_handover_s": 1.0}


def _answers(*adapters: FakeAdapter) -> list[str]:
    return [t for a in adapters for t in a.messages("c1") if t.startswith("echo:")]


async def test_an_event_on_the_other_replica_is_answered_once_by_the_owner(
        tmp_path: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    await reset(pg_dsn)
    fa, fb = FakeAdapter("fake"), FakeAdapter("fake")
    async with runner_for(tmp_path / "a", model, adapters={"fake": fa}, storage__dsn=pg_dsn,
                          dashboard__enabled=True, **REPLICAS) as (ra, _), \
            runner_for(tmp_path / "b", model, adapters={"fake": fb},
                       storage__dsn=pg_dsn, **REPLICAS) as (rb, _):
        assert ra.replica is not None and rb.replica is not None
        await fa.inject("one")
        await fa.wait_for(lambda: _answers(fa) == ["echo: one"])
        assert ra.replica.sessions.owns("fake:dm:c1")
        # the same chat's next message lands on replica b: a answers it, b never does
        got = await fb.inject("two")
        assert got.new
        await fa.wait_for(lambda: _answers(fa) == ["echo: one", "echo: two"], timeout_s=15)
        await fb.inject("three")
        await fa.wait_for(lambda: len(_answers(fa)) == 3, timeout_s=15)
        await asyncio.sleep(0.5)
        assert _answers(fb) == []
        assert _answers(fa) == ["echo: one", "echo: two", "echo: three"]
        assert not rb.replica.sessions.owns("fake:dm:c1")
        assert len([r for r in model.requests]) == 3  # each message reached the model once
        # /status and the dashboard show the replica set: both live, a owns the session
        assert ra.health is not None and ra.dashboard is not None
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{ra.health.port}/status") as resp:
                status = (await resp.json())["replicas"]
            async with http.get(ra.dashboard.url + "fragment/overview") as resp:
                overview = await resp.text()
        assert status["enabled"] and status["this"] == ra.replica.replica_id
        rows = {r["id"]: r for r in status["replicas"]}
        assert set(rows) == {ra.replica.replica_id, rb.replica.replica_id}
        assert rows[ra.replica.replica_id]["sessions"] == 1
        assert rows[rb.replica.replica_id]["sessions"] == 0
        assert all(r["live"] and r["heartbeat_age_s"] < 3 for r in rows.values())
        assert "Replicas" in overview and f"{ra.replica.replica_id} (this one)" in overview
        assert rb.replica.replica_id in overview
        # a stops cleanly: its lease is released, so b takes the next message at once
        await ra.shutdown()
        await fb.inject("four")
        await fb.wait_for(lambda: _answers(fb) == ["echo: four"], timeout_s=15)
        assert rb.replica.sessions.owns("fake:dm:c1")
    async with await PostgresStore.open(pg_dsn) as store:
        [session] = await store.list_sessions()
        texts = [m["content"] for m in await store.load_history(session.id)]
        assert texts == ["one", "echo: one", "two", "echo: two", "three", "echo: three",
                         "four", "echo: four"]
        assert await store.inbound_held() == []


async def test_a_replica_that_lost_its_lease_stores_and_sends_no_reply(
        tmp_path: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    """Replica a owns the session and is mid-turn when its lease runs out (as after a stall
    or a network cut): the session is taken over with a higher token (by whichever replica
    sweeps first, a itself included), the turn is run again under the new lease, and a's
    late reply from the old turn is fenced off: stored nowhere, sent nowhere."""
    import asyncpg

    await reset(pg_dsn)
    fa, fb = FakeAdapter("fake"), FakeAdapter("fake")
    async with runner_for(tmp_path / "a", model, adapters={"fake": fa},
                          storage__dsn=pg_dsn, **REPLICAS) as (ra, _), \
            runner_for(tmp_path / "b", model, adapters={"fake": fb},
                       storage__dsn=pg_dsn, **REPLICAS) as (rb, _):
        assert ra.replica is not None and rb.replica is not None
        model.enqueue(Reply(text="stale answer", delay_s=3.0), text("fresh answer"))
        await fa.inject("question")
        await fa.wait_for(lambda: len(model.requests) == 1)
        conn = await asyncpg.connect(pg_dsn)
        try:
            token = await conn.fetchval("SELECT token FROM session_leases")
            await conn.execute("UPDATE session_leases SET expires_at = 0")
        finally:
            await conn.close()
        both = (fa, fb)
        await fa.wait_for(lambda: any("fresh answer" in a.messages("c1") for a in both),
                          timeout_s=20)
        await asyncio.sleep(4.0)  # the stale reply has come back from the model by now
        assert [t for a in both for t in a.messages("c1")
                if t in ("stale answer", "fresh answer")] == ["fresh answer"]
    async with await PostgresStore.open(pg_dsn) as store:
        [session] = await store.list_sessions()
        texts = [m["content"] for m in await store.load_history(session.id)]
        assert texts == ["question", "fresh answer"]
        outbox = await store.outbox_latest_for_session(session.id)
        assert outbox is not None and outbox.text == "fresh answer"
        lease = await store.session_lease_of("fake:dm:c1")
        assert lease is None or lease.token > token


async def test_a_turn_cut_off_by_a_clean_stop_is_answered_by_the_other_replica(
        tmp_path: Path, model: FakeOpenAIServer, pg_dsn: str) -> None:
    """Replica a is mid-turn when it is stopped (SIGTERM) and its drain runs out: the user
    message is stored, unanswered. Its lease is not simply released (then nobody would run
    the turn again: no held event carries it any more) but left to expire, so b takes the
    session over and answers the message once."""
    await reset(pg_dsn)
    fa, fb = FakeAdapter("fake"), FakeAdapter("fake")
    async with runner_for(tmp_path / "a", model, adapters={"fake": fa}, storage__dsn=pg_dsn,
                          gateway__drain_timeout_s=0.2, **REPLICAS) as (ra, _), \
            runner_for(tmp_path / "b", model, adapters={"fake": fb},
                       storage__dsn=pg_dsn, **REPLICAS) as (rb, _):
        assert ra.replica is not None and rb.replica is not None
        model.enqueue(Reply(text="cut off", delay_s=30.0), text("fresh answer"))
        await fa.inject("question")
        await fa.wait_for(lambda: len(model.requests) == 1)
        await ra.shutdown()
        both = (fa, fb)
        await fb.wait_for(lambda: "fresh answer" in fb.messages("c1"), timeout_s=20)
        await asyncio.sleep(1.0)
        assert [t for a in both for t in a.messages("c1")
                if t in ("cut off", "fresh answer")] == ["fresh answer"]
        assert any(t.startswith("🔄 Another gateway replica") for t in fb.messages("c1"))
        assert rb.replica.sessions.owns("fake:dm:c1")
        assert len(model.requests) == 2
    async with await PostgresStore.open(pg_dsn) as store:
        [session] = await store.list_sessions()
        texts = [m["content"] for m in await store.load_history(session.id)]
        assert texts == ["question", "fresh answer"]
        assert await store.inbound_held() == []
