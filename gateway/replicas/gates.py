"""`LeaderGates`: every leader role of this replica's exclusive intakes (`leader`, `shards`),
one object for the heartbeat and the supervisor."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from gateway.ports import BasePlatformAdapter
from gateway.replicas.leader import LeaderGate, leader_role
from gateway.replicas.shards import ShardGates
from storage.ports import ReplicaLedger

__all__ = ["LeaderGates"]


class LeaderGates:
    """The gates of this replica's exclusive-intake adapters (`LeaderRoles` of the
    heartbeat), keyed by adapter name: a `LeaderGate` each, or `ShardGates` for an adapter
    whose intake is sharded (`Capabilities.intake_shards` > 1)."""

    def __init__(self, store: ReplicaLedger, replica_id: str,
                 adapters: Mapping[str, BasePlatformAdapter], *, lease_s: float) -> None:
        retry = min(1.0, lease_s / 3)
        self.gates: dict[str, LeaderGate | ShardGates] = {}
        for name, a in adapters.items():
            if not a.capabilities.exclusive_intake:
                continue
            role, count = leader_role(name, a), a.capabilities.intake_shards
            self.gates[name] = (
                ShardGates(role, count, store, replica_id, lease_s=lease_s, retry_s=retry)
                if count > 1 else
                LeaderGate(role, store, replica_id, lease_s=lease_s, retry_s=retry))
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(g.run(), name=f"leader:{name}")
                           for name, g in self.gates.items()]

    async def stop(self) -> None:
        """Stop trying; the leases are released with the replica (`replica_stop`)."""
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def roles(self) -> dict[str, list[str]]:
        """Adapter name → the roles this replica holds for it (one, or its shards')."""
        return {name: g.roles() for name, g in self.gates.items() if g.leader}

    # -- LeaderRoles -----------------------------------------------------------------------
    def renewed(self, roles: dict[str, int], at: float | None = None) -> None:
        """`at`: the monotonic time the heartbeat's transaction started (renewal counts from
        then, not from when its answer arrived)."""
        for g in self.gates.values():
            g.renewed(roles, at)

    def lose_all(self) -> None:
        for g in self.gates.values():
            g.lose()
