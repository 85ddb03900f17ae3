"""Leader leases: the intakes that must run on one replica at a time.

Telegram long polling, Slack Socket Mode and the Discord gateway connection receive for a
bot credential over one connection (`Capabilities.exclusive_intake`). With several replicas
each of those adapters has a `LeaderGate` for the role `<adapter>:<hash of the credential>`:
the replica holding the role's lease (`leader_leases`) runs the adapter with intake; every
other replica runs it for sending only and keeps trying to take the lease, so when the leader
dies (its lease runs out, at most `gateway.replicas.lease_s`) or stops (it releases the lease
at once) another one takes over within about a second. The heartbeat renews the leases held
(`ReplicaRuntime`); a role it did not renew is lost and its intake stops here.

Telegram webhooks and Slack's HTTP Events API need none of this: every replica serves the
endpoint behind a load balancer and dedup is global.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Mapping

import structlog

from gateway.ports import BasePlatformAdapter
from storage.ports import ReplicaLedger

__all__ = ["LeaderGate", "LeaderGates", "leader_role"]

log = structlog.get_logger("gateway.replicas")


def leader_role(name: str, adapter: BasePlatformAdapter) -> str:
    """`<adapter name>:<sha256 of its credential, 16 hex>` (the credential never stored)."""
    credential = adapter.settings.credential() or ""
    return f"{name}:{hashlib.sha256(credential.encode('utf-8')).hexdigest()[:16]}"


class LeaderGate:
    """One role. `leader` says whether this replica runs the intake; `changed` is set (and
    must be cleared by the reader) when that flips."""

    def __init__(self, role: str, store: ReplicaLedger, replica_id: str, *, lease_s: float,
                 retry_s: float) -> None:
        self.role = role
        self._store = store
        self._me = replica_id
        self._ttl = lease_s
        self._retry = retry_s
        self.token: int | None = None
        self.changed = asyncio.Event()
        self.acquired = 0
        self._renewed = 0.0  # monotonic time the lease was last known to be held

    @property
    def leader(self) -> bool:
        return self.token is not None

    async def run(self) -> None:
        """Try to take the lease whenever this replica does not hold it; give the intake up
        on its own when the lease has not been renewed for 60 % of its time, so it has
        stopped before another replica can take the lease (two pollers at once otherwise,
        until the late heartbeat tells this one)."""
        while True:
            if self.token is not None and time.monotonic() - self._renewed > 0.6 * self._ttl:
                log.warning("leader_lease_unrenewed", role=self.role,
                            since_s=round(time.monotonic() - self._renewed, 1))
                self.lose()
            if self.token is None:
                try:
                    token = await self._store.leader_acquire(self.role, self._me, ttl=self._ttl)
                except Exception as exc:  # noqa: BLE001 - tried again
                    log.warning("leader_acquire_failed", role=self.role,
                                error=type(exc).__name__)
                    token = None
                if token is not None and self.token is None:
                    self.token = token
                    self._renewed = time.monotonic()
                    self.acquired += 1
                    log.info("leader_acquired", role=self.role, token=token)
                    self.changed.set()
            await asyncio.sleep(self._retry)

    def confirm(self, at: float) -> None:
        self._renewed = max(self._renewed, at)

    def lose(self) -> None:
        if self.token is not None:
            log.warning("leader_lost", role=self.role, token=self.token)
            self.token = None
            self.changed.set()

    async def release(self) -> None:
        token, self.token = self.token, None
        if token is not None:
            with contextlib.suppress(Exception):
                await self._store.leader_release(self.role, self._me, token)


class LeaderGates:
    """The gates of this replica's exclusive-intake adapters (`LeaderRoles` of the
    heartbeat), keyed by adapter name."""

    def __init__(self, store: ReplicaLedger, replica_id: str,
                 adapters: Mapping[str, BasePlatformAdapter], *, lease_s: float) -> None:
        retry = min(1.0, lease_s / 3)
        self.gates = {name: LeaderGate(leader_role(name, a), store, replica_id,
                                       lease_s=lease_s, retry_s=retry)
                      for name, a in adapters.items() if a.capabilities.exclusive_intake}
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

    def roles(self) -> dict[str, str]:
        """Adapter name → role held by this replica."""
        return {name: g.role for name, g in self.gates.items() if g.leader}

    # -- LeaderRoles -----------------------------------------------------------------------
    def renewed(self, roles: dict[str, int], at: float | None = None) -> None:
        """`at`: the monotonic time the heartbeat's transaction started (renewal counts from
        then, not from when its answer arrived)."""
        for g in self.gates.values():
            if g.token is None:
                continue
            if roles.get(g.role) != g.token:
                g.lose()
            elif at is not None:
                g.confirm(at)

    def lose_all(self) -> None:
        for g in self.gates.values():
            g.lose()
