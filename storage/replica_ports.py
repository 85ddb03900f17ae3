"""The storage port of several gateways on one database (`storage.replicas`): heartbeats,
session leases and the handover queue, leader leases. Re-exported by `storage.ports` with
the others."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from storage.replicas import HandoverSubscription
from storage.types import Admission, Heartbeat, OutboxItem, ReplicaInfo, SessionLease, SweepItem

__all__ = ["ReplicaLedger"]


class ReplicaLedger(Protocol):
    """Several gateways on one database (`storage.replicas`): heartbeats, session leases and
    the handover queue, leader leases. `ttl` is the lease time in seconds."""

    async def replica_heartbeat(self, replica_id: str, *, host: str, home: str | None,
                                pid: int | None, started_at: float, ttl: float) -> Heartbeat:
        ...

    async def replicas_retire(self, replica_id: str, *, host: str, home: str) -> list[str]: ...

    async def replica_stop(self, replica_id: str, *,
                           unfinished: Iterable[str] = ()) -> None: ...

    async def replicas_list(self, *, include_stopped_since: float | None = None
                            ) -> list[ReplicaInfo]: ...

    async def session_admit(self, replica_id: str, session_key: str, platform: str,
                            event_id: str, payload: str, *, ttl: float,
                            take: bool = True) -> Admission: ...

    async def session_take(self, replica_id: str, session_key: str, *, ttl: float
                           ) -> Admission: ...

    async def session_release(self, replica_id: str, session_key: str, token: int) -> bool: ...

    async def session_sweep(self, replica_id: str, *, stale_after: float,
                            limit: int = 200) -> list[SweepItem]: ...

    async def handover_notify(self, wakes: Sequence[tuple[str, str]]) -> None: ...

    async def session_lease_of(self, session_key: str) -> SessionLease | None: ...

    async def outbox_claim_for_key(self, claimer: str, session_key: str
                                   ) -> list[OutboxItem]: ...

    async def leader_acquire(self, role: str, replica_id: str, *, ttl: float) -> int | None: ...

    async def leader_release(self, role: str, replica_id: str, token: int) -> bool: ...

    async def leader_of(self, role: str) -> str | None: ...

    def handover_listener(self, replica_id: str, on_key: Callable[[str | None], None], *,
                          on_error: Callable[[BaseException, int], None] | None = None
                          ) -> HandoverSubscription: ...
