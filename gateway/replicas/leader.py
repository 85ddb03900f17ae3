"""Leader leases: the intakes that must run on one replica at a time.

Telegram long polling, Slack Socket Mode and the Discord gateway connection receive for a
bot credential over one connection (`Capabilities.exclusive_intake`). With several replicas
each of those adapters has a `LeaderGate` for the role `<adapter>:<hash of the credential>`:
the replica holding the role's lease (`leader_leases`) runs the adapter with intake; every
other replica runs it for sending only and keeps trying to take the lease, so when the leader
dies (its lease runs out, at most `gateway.replicas.lease_s`) or stops (it releases the lease
at once) another one takes over within about a second. The heartbeat renews the leases held
(`ReplicaRuntime`); a role it did not renew is lost and its intake stops here. A sharded
intake (Discord's gateway shards) has a role per shard, spread over the replicas
(`gateway.replicas.shards`).

Telegram webhooks and Slack's HTTP Events API need none of this: every replica serves the
endpoint behind a load balancer and dedup is global.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Callable

import structlog

from gateway.ports import BasePlatformAdapter, IntakeShards
from storage.ports import ReplicaLedger

__all__ = ["LeaderGate", "leader_role"]

log = structlog.get_logger("gateway.replicas")


def leader_role(name: str, adapter: BasePlatformAdapter) -> str:
    """`<adapter name>:<sha256 of its credential, 16 hex>` (the credential never stored)."""
    credential = adapter.settings.credential() or ""
    return f"{name}:{hashlib.sha256(credential.encode('utf-8')).hexdigest()[:16]}"


class LeaderGate:
    """One role. `leader` says whether this replica runs the intake; `changed` is set (and
    must be cleared by the reader) when that flips."""

    def __init__(self, role: str, store: ReplicaLedger, replica_id: str, *, lease_s: float,
                 retry_s: float, on_change: Callable[[], None] | None = None) -> None:
        """`on_change()` is called (on the loop) whenever `leader` flips."""
        self.role = role
        self._on_change = on_change
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

    @property
    def shards(self) -> IntakeShards | None:
        """An unsharded intake: runs whole or not at all."""
        return None

    async def run(self) -> None:
        """Try to take the lease whenever this replica does not hold it; give the intake up
        on its own when the lease has not been renewed for 60 % of its time, so it has
        stopped before another replica can take the lease (two pollers at once otherwise,
        until the late heartbeat tells this one)."""
        while True:
            self.check_renewal()
            if self.token is None:
                await self.try_acquire()
            await asyncio.sleep(self._retry)

    def check_renewal(self) -> None:
        """Lose the lease locally when it has not been renewed for 60 % of its time."""
        if self.token is not None and time.monotonic() - self._renewed > 0.6 * self._ttl:
            log.warning("leader_lease_unrenewed", role=self.role,
                        since_s=round(time.monotonic() - self._renewed, 1))
            self.lose()

    async def try_acquire(self) -> bool:
        """One attempt to take the lease; True when this replica holds it now. Must not
        raise (a storage error is logged: tried again)."""
        if self.token is not None:
            return True
        try:
            token = await self._store.leader_acquire(self.role, self._me, ttl=self._ttl)
        except Exception as exc:  # noqa: BLE001 - tried again
            log.warning("leader_acquire_failed", role=self.role, error=type(exc).__name__)
            token = None
        if token is not None and self.token is None:
            self.token = token
            self._renewed = time.monotonic()
            self.acquired += 1
            log.info("leader_acquired", role=self.role, token=token)
            self._flipped()
        return self.token is not None

    def _flipped(self) -> None:
        self.changed.set()
        if self._on_change is not None:
            self._on_change()

    def confirm(self, at: float) -> None:
        self._renewed = max(self._renewed, at)

    def lose(self) -> None:
        if self.token is not None:
            log.warning("leader_lost", role=self.role, token=self.token)
            self.token = None
            self._flipped()

    def give_up(self) -> int | None:
        """Stop leading here at once (the lease itself stays until released); its token."""
        token, self.token = self.token, None
        if token is not None:
            self._flipped()
        return token

    async def release(self) -> None:
        token, self.token = self.token, None
        if token is not None:
            self._flipped()
            with contextlib.suppress(Exception):
                await self._store.leader_release(self.role, self._me, token)

    def roles(self) -> list[str]:
        return [self.role] if self.leader else []

    def renewed(self, roles: dict[str, int], at: float | None) -> None:
        """The heartbeat renewed `roles`: keep this lease if it is among them, else lose it."""
        if self.token is None:
            return
        if roles.get(self.role) != self.token:
            self.lose()
        elif at is not None:
            self.confirm(at)
