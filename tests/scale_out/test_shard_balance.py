"""The rules that spread a sharded intake's leases over replicas (`ShardGates.balance`), round
by round against a real store (SQLite; the leases are rows keyed by replica id, so one store
stands for the shared database): a lone replica takes every shard, a newcomer gets its share
as the older one gives shards up, a dead replica's shards move, and a live replica that never
takes its share does not make a shard bounce."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.replicas.shards import ShardGates
from storage.opening import open_store
from storage.ports import ReplicaLedger

LEASE = 10.0
GRACE = 5.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[ReplicaLedger]:
    st = await open_store("sqlite", path=tmp_path / "state.db", clock=clock)
    try:
        yield st
    finally:
        await st.close()


async def _alive(store: ReplicaLedger, *ids: str) -> None:
    for rid in ids:
        await store.replica_heartbeat(rid, host="h", home=rid, pid=1, started_at=0.0, ttl=LEASE)


def _gates(store: ReplicaLedger, rid: str, clock: Clock, count: int = 4) -> ShardGates:
    return ShardGates("discord:abc", count, store, rid, lease_s=LEASE, retry_s=1.0,
                      grace_s=GRACE, clock=clock)


async def _rounds(*gates: ShardGates, n: int = 4) -> None:
    for _ in range(n):
        for g in gates:
            await g.balance()


async def test_a_newcomer_gets_its_share_and_a_dead_replicas_shards_move(
        store: ReplicaLedger, clock: Clock) -> None:
    a, b = _gates(store, "ra", clock), _gates(store, "rb", clock)
    await _alive(store, "ra")
    await a.balance()
    assert a.held() == {0, 1, 2, 3}  # alone: every shard
    assert a.roles()[0] == "discord:abc:shard:0/4"
    await _alive(store, "rb")
    await _rounds(a, b)
    assert a.held() == {0, 1} and b.held() == {2, 3}  # ceil(4 / 2) each
    assert b.changed.is_set()
    await _rounds(a, b)
    assert a.held() == {0, 1} and b.held() == {2, 3}  # stable
    clock.now += LEASE + 1  # rb dies: its replica row and leases run out
    await _alive(store, "ra")
    await a.balance()
    assert a.held() == {0, 1, 2, 3}


async def test_a_clean_stop_hands_the_shards_over_at_once(
        store: ReplicaLedger, clock: Clock) -> None:
    a, b = _gates(store, "ra", clock, 2), _gates(store, "rb", clock, 2)
    await _alive(store, "ra", "rb")
    await _rounds(a, b)
    assert len(a.held()) == 1 and len(b.held()) == 1
    await store.replica_stop("rb")
    await a.balance()
    assert a.held() == {0, 1}


async def test_a_live_replica_that_never_takes_its_share_makes_no_shard_bounce(
        store: ReplicaLedger, clock: Clock) -> None:
    a = _gates(store, "ra", clock, 2)
    await _alive(store, "ra")
    await a.balance()
    assert a.held() == {0, 1}
    await _alive(store, "rc")  # live, but it does not run this adapter
    await a.balance()
    assert a.held() == {0}  # gave shard 1 up for rc...
    for _ in range(3):
        await a.balance()
        assert a.held() == {0}  # ...and leaves it free while within the grace
    clock.now += GRACE  # nobody took it for the grace: taken back, above the share
    await a.balance()
    assert a.held() == {0, 1}
    for _ in range(5):  # and not given up again while the replica set stays the same
        await a.balance()
        assert a.held() == {0, 1}
