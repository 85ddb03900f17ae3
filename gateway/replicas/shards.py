"""Shard leases: a sharded exclusive intake (Discord's gateway shards) spread over replicas.

An adapter declaring `Capabilities.intake_shards` N > 1 gets one leader role per shard,
`<adapter>:<hash of the credential>:shard:<i>/<N>`, held in `leader_leases` like any other
role (renewed by the heartbeat, released on a clean stop, run out after a crash). A replica
runs the connection of every shard whose lease it holds; holding none, it is on standby
(sending only).

Spreading, every `retry_s` (one read of the replica set):

- the fair share is `ceil(N / live replicas)`;
- a replica below its share takes shards no live replica holds (the lowest first);
- a shard nobody has held for `grace_s` (a lease time) is taken even above the share, so a
  shard is never left unreceived because the view of the replica set was stale;
- a replica above its share while another live replica is below it gives one shard up per
  round: it stops receiving for it first and releases the lease in the next round, so the
  other replica's connection does not overlap with this one. A new replica therefore gets
  its share within a few seconds of starting, and a rolling restart ends balanced.
- shedding is suspended while taking shards above the share was needed (a live replica
  that does not run this adapter never takes its share): until the replica set changes,
  nothing is given up again, so no shard bounces between unheld and held.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Callable

import structlog

from gateway.ports import IntakeShards
from gateway.replicas.leader import LeaderGate
from storage.ports import ReplicaLedger

__all__ = ["ShardGates", "shard_role"]

log = structlog.get_logger("gateway.replicas")


def shard_role(base: str, shard: int, count: int) -> str:
    """`<base role>:shard:<shard>/<count>`."""
    return f"{base}:shard:{shard}/{count}"


class ShardGates:
    """The N shard roles of one adapter. As the supervisor's `IntakeGate`: `leader` is True
    while any shard is held and `changed` is set whenever the held set changes; as
    `IntakeShards` it tells the adapter which shards to run."""

    def __init__(self, base_role: str, count: int, store: ReplicaLedger, replica_id: str, *,
                 lease_s: float, retry_s: float, grace_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.count = count
        self._store = store
        self._me = replica_id
        self._retry = retry_s
        self._grace = lease_s if grace_s is None else grace_s
        self._clock = clock
        self.gates = [LeaderGate(shard_role(base_role, i, count), store, replica_id,
                                 lease_s=lease_s, retry_s=retry_s, on_change=self._flipped)
                      for i in range(count)]
        self.changed = asyncio.Event()
        self._wake = asyncio.Event()
        self._unheld_since: dict[int, float] = {}
        self._to_release: list[tuple[str, int]] = []
        self._no_shedding_with: frozenset[str] | None = None

    # -- IntakeGate / IntakeShards -----------------------------------------------------------
    @property
    def leader(self) -> bool:
        return any(g.leader for g in self.gates)

    @property
    def shards(self) -> IntakeShards:
        return self

    def held(self) -> frozenset[int]:
        return frozenset(i for i, g in enumerate(self.gates) if g.leader)

    async def wait_change(self, seen: frozenset[int]) -> frozenset[int]:
        while True:
            wake = self._wake
            now = self.held()
            if now != seen:
                return now
            await wake.wait()

    def _flipped(self) -> None:
        self.changed.set()
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    # -- the heartbeat's side ----------------------------------------------------------------
    def renewed(self, roles: dict[str, int], at: float | None) -> None:
        for g in self.gates:
            g.renewed(roles, at)

    def lose(self) -> None:
        for g in self.gates:
            g.lose()

    def roles(self) -> list[str]:
        return [g.role for g in self.gates if g.leader]

    # -- spreading ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Balance every `retry_s` until cancelled. Must not raise otherwise."""
        while True:
            for g in self.gates:
                g.check_renewal()
            try:
                await self.balance()
            except Exception as exc:  # noqa: BLE001 - tried again next round
                log.warning("shard_balance_failed", role=self.gates[0].role,
                            error=type(exc).__name__)
            await asyncio.sleep(self._retry)

    async def balance(self) -> None:
        """One round of the rules in the module docstring."""
        for role, token in self._to_release:  # not received here since the last round
            await self._store.leader_release(role, self._me, token)
        self._to_release = []
        replicas = [r for r in await self._store.replicas_list() if r.live]
        live = frozenset({r.id for r in replicas} | {self._me})
        if self._no_shedding_with is not None and self._no_shedding_with != live:
            self._no_shedding_with = None
        mine = {g.role for g in self.gates}
        holder = {role: r.id for r in replicas for role in r.roles if role in mine}
        share = math.ceil(self.count / len(live))
        now = self._clock()
        for i, g in enumerate(self.gates):
            if g.leader or holder.get(g.role, self._me) != self._me:
                self._unheld_since.pop(i, None)
                continue
            since = self._unheld_since.setdefault(i, now)
            below = len(self.held()) < share
            if (below or now - since >= self._grace) and await g.try_acquire():
                self._unheld_since.pop(i, None)
                if not below:
                    self._no_shedding_with = live
        held = self.held()
        per_replica = Counter(holder[role] for role in holder if holder[role] != self._me)
        someone_below = any(per_replica[rid] < share for rid in live if rid != self._me)
        if len(held) > share and someone_below and self._no_shedding_with is None:
            gate = self.gates[max(held)]
            log.info("shard_given_up", role=gate.role, held=len(held), share=share,
                     replicas=len(live))
            given = gate.give_up()
            if given is not None:
                self._to_release.append((gate.role, given))
