"""`ReplicaSessions`: this replica's session leases, as the session manager's ownership.

The leases it holds live in the database (`storage.replicas`); here is this replica's view
of them (key → token), kept current by every admission and take and corrected by the
heartbeat (`ReplicaRuntime`), which renews them all and reports the ones lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

import structlog

from gateway.delivery.recovery import resend_claimed
from gateway.delivery.service import DeliveryService
from gateway.events import MessageEvent
from gateway.ports import BasePlatformAdapter
from gateway.recovery import TAKEOVER_NOTICE, recover_session_turn
from gateway.sessions.inbox import payload_of
from gateway.sessions.ownership import Claimed
from storage.fencing import SessionFence
from storage.ports import (
    HeldEvents,
    MessageLog,
    OutboxLedger,
    ReplicaLedger,
    SessionReader,
    SessionWriter,
)
from storage.types import Admission

if TYPE_CHECKING:
    from gateway.sessions.manager import SessionManager

__all__ = ["ReplicaSessions", "ReplicaSessionStore"]

log = structlog.get_logger("gateway.replicas")


class ReplicaSessionStore(ReplicaLedger, OutboxLedger, HeldEvents, SessionReader, SessionWriter,
                          MessageLog, Protocol):
    """What session ownership uses: the leases and queue, and for a takeover the outbox
    and the session's last messages."""


class ReplicaSessions:
    """`SessionOwnership` over the database's session leases for replica `replica_id`."""

    def __init__(self, store: ReplicaSessionStore, replica_id: str, *, lease_s: float,
                 delivery: DeliveryService, adapters: Mapping[str, BasePlatformAdapter],
                 clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self.replica_id = replica_id
        self._ttl = lease_s
        self._delivery = delivery
        self._adapters = adapters
        self._clock = clock
        self._tokens: dict[str, int] = {}
        self.takeovers = 0

    # -- SessionOwnership ----------------------------------------------------------------
    async def admit(self, key: str, event: MessageEvent, *, take: bool) -> Claimed:
        adm = await self._store.session_admit(self.replica_id, key, event.platform,
                                              event.event_id, payload_of(event),
                                              ttl=self._ttl, take=take)
        return await self._claimed(key, adm)

    async def take(self, key: str) -> Claimed:
        return await self._claimed(key, await self._store.session_take(
            self.replica_id, key, ttl=self._ttl))

    def fence_for(self, key: str) -> SessionFence | None:
        token = self._tokens.get(key)
        return None if token is None else SessionFence(key, self.replica_id, token)

    def owns(self, key: str) -> bool:
        return key in self._tokens

    def drop(self, key: str) -> None:
        self._tokens.pop(key, None)

    async def release(self, key: str) -> None:
        token = self._tokens.pop(key, None)
        if token is None:
            return
        try:
            await self._store.session_release(self.replica_id, key, token)
        except Exception as exc:  # noqa: BLE001 - it expires by itself
            log.warning("session_release_failed", session_key=key, error=type(exc).__name__)

    async def recover(self, key: str, manager: SessionManager) -> None:
        """The previous owner died (or was cut off) holding `key`: its undelivered finals
        first, then a turn it was running (its user message stored, no reply), before the
        line's events."""
        self.takeovers += 1
        try:
            items = await self._store.outbox_claim_for_key(self.replica_id, key)
            if items:
                await resend_claimed(self._delivery, items)
            session = await self._store.find_by_session_key(key)
            rerun = False
            if session is not None:
                rerun = await recover_session_turn(self._store, manager, self._delivery,
                                                   session, adapters=self._adapters,
                                                   now=self._clock(), notice=TAKEOVER_NOTICE)
            log.info("session_taken_over", session_key=key, finals=len(items), rerun=rerun)
        except Exception as exc:  # noqa: BLE001 - the line's events still run
            log.warning("session_takeover_recovery_failed", session_key=key,
                        error=type(exc).__name__)

    # -- the heartbeat's view ------------------------------------------------------------
    def held(self) -> dict[str, int]:
        return dict(self._tokens)

    def renewed(self, held: Mapping[str, int]) -> list[str]:
        """The heartbeat renewed `held` (key → token): returns the keys this replica thought
        it held that are gone (or held with another token), forgetting them."""
        lost = [k for k, t in self._tokens.items() if held.get(k) != t]
        for k in lost:
            self._tokens.pop(k, None)
        return lost

    async def _claimed(self, key: str, adm: Admission) -> Claimed:
        if adm.lease is None:
            if self._tokens.get(key) is not None:
                self._tokens.pop(key, None)  # someone else holds it now
            return Claimed(held=adm.held, owner=adm.owner)
        self._tokens[key] = adm.lease.token
        events: list[tuple[MessageEvent, bool]] = []
        bad: list[tuple[str, str]] = []
        for c in adm.events:
            try:
                events.append((MessageEvent.model_validate_json(c.held.payload), c.recovered))
            except ValueError:
                bad.append((c.held.platform, c.held.event_id))
        if bad:
            log.warning("held_events_unreadable", count=len(bad))
            await self._store.inbound_release(bad)
        return Claimed(held=adm.held, owned=True, fresh=adm.lease.fresh,
                       takeover=adm.lease.takeover, owner=self.replica_id, events=events)
