"""`ReplicaRuntime`: one gateway process as a replica of a set sharing one PostgreSQL database.

It gives the process an id (host and boot), and runs three duties:

- the heartbeat (every `gateway.replicas.heartbeat_s`): one transaction records this replica
  as alive until now + `lease_s` and renews every session and leader lease it holds. A lease
  that was not renewed (it ran out while this replica could not reach the database, and
  another replica took it) is dropped here: its session's turn is interrupted and its queue
  left to the new owner (`SessionManager.relinquish`); a lost leader role stops that intake.
  When the database cannot be reached for a whole lease time, the replica gives every lease
  up locally (the others may have taken them) and keeps trying. Retired by a successor on the
  same host and profile (it restarted after a crash): the process stops.
- the sweep (every `gateway.replicas.sweep_s`): sessions whose line has events but no live
  owner, or whose owner's lease ran out unreleased, are taken (`SessionManager.take_over`:
  the first replica to try gets the lease; it recovers the previous owner's work); an owner
  that did not claim a handed-over event in time is woken again.
- the wake-up listener (PostgreSQL `LISTEN`): another replica handed an event of a session
  this replica owns; its line is claimed at once.

Start-up: retire the earlier boots of this host and profile (the profile lock proves they
are gone), heartbeat, listen. Stop: release every lease and mark the replica stopped, so the
others take its sessions and intakes at once; the leases of sessions whose turn the stop cut
off expire instead, so their next owner recovers them as after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from gateway.config.models import ReplicasConfig
from gateway.replicas.gates import LeaderGates
from gateway.replicas.sessions import ReplicaSessions
from gateway.sessions import SessionManager
from storage.ports import ReplicaLedger
from storage.replicas import HandoverSubscription
from storage.types import ReplicaInfo

if TYPE_CHECKING:
    from gateway.wiring import GatewayParts

__all__ = ["LeaderRoles", "ReplicaRuntime", "new_replica_id", "replica_for"]

log = structlog.get_logger("gateway.replicas")


def new_replica_id() -> str:
    """`<host>:<boot>`: unique per process lifetime, readable in `/status`."""
    return f"{socket.gethostname()}:{uuid.uuid4().hex[:12]}"


class LeaderRoles(Protocol):
    """The leader leases' side of the heartbeat (`gateway.replicas.leader`)."""

    def renewed(self, roles: dict[str, int], at: float | None = None) -> None:
        """The heartbeat (begun at monotonic time `at`) renewed `roles` (role → token); any
        other role held is lost."""
        ...

    def lose_all(self) -> None: ...


class ReplicaRuntime:
    """The duties above. `start()` / `stop()`; `stop()` is idempotent and must not raise."""

    def __init__(self, store: ReplicaLedger, sessions: ReplicaSessions,
                 manager: SessionManager, settings: ReplicasConfig, *, home: str,
                 retire_same_home: bool, on_retired: Callable[[], None],
                 leaders: LeaderGates | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        """`retire_same_home`: this process holds the profile's single-instance lock, so
        other replica rows of this host and profile are dead boots. `on_retired()` is called
        when a successor retired this replica (the process should stop)."""
        self._store = store
        self.sessions = sessions
        self.replica_id = sessions.replica_id
        self._manager = manager
        self._s = settings
        self._home = home
        self._retire = retire_same_home
        self._on_retired = on_retired
        self._clock = clock
        self.host = socket.gethostname()
        self.started_at = clock()
        self.leaders = leaders
        self.roles: LeaderRoles | None = leaders
        self._tasks: list[asyncio.Task[None]] = []
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._listener: HandoverSubscription | None = None
        self._last_beat = time.monotonic()
        self._cut_off = False
        self._stopped = False
        self._sweep_now = asyncio.Event()
        self.heartbeats = 0

    @property
    def lease_s(self) -> float:
        return self._s.lease_s

    async def start(self) -> None:
        """Retire dead boots of this profile, first heartbeat, start the listener. The
        duties start with `run_duties()` (after start-up recovery). Raises storage errors."""
        if self._retire:
            retired = await self._store.replicas_retire(self.replica_id, host=self.host,
                                                        home=self._home)
            if retired:
                log.info("replicas_retired", replicas=retired, reason="same host and profile")
        await self._beat()
        self._listener = self._store.handover_listener(
            self.replica_id, self._woken, on_error=_listener_error)
        self._listener.start()
        if self.leaders is not None:
            self.leaders.start()
        log.info("replica_started", replica_id=self.replica_id, lease_s=self._s.lease_s)

    def run_duties(self) -> None:
        """Start the heartbeat and sweep loops (idempotent); the first sweep runs at once
        (events that waited in their lines while intake was closed)."""
        self._sweep_now.set()
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._loop(self._s.heartbeat_interval(), self._heartbeat),
                                name="replica-heartbeat"),
            asyncio.create_task(self._sweeper(), name="replica-sweep"),
        ]

    async def recover(self) -> int:
        """One sweep now (start-up recovery: the sessions nobody live owns). Returns how
        many sessions were taken."""
        return await self._sweep()

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        for t in [*self._tasks, *self._pending.values()]:
            t.cancel()
        await asyncio.gather(*self._tasks, *self._pending.values(), return_exceptions=True)
        if self.leaders is not None:
            await self.leaders.stop()
        if self._listener is not None:
            await self._listener.close()
        # A session whose turn the stop cut off (or whose re-run was queued) is left to a
        # takeover, which runs it again; the others are released for the next event.
        unfinished = [k for k in self._manager.unfinished_at_close() if self.sessions.owns(k)]
        try:
            await self._store.replica_stop(self.replica_id, unfinished=unfinished)
            if unfinished:
                log.info("sessions_left_for_takeover", count=len(unfinished))
        except Exception as exc:  # noqa: BLE001 - the leases expire by themselves
            log.warning("replica_stop_failed", error=type(exc).__name__)
        log.info("replica_stopped", replica_id=self.replica_id)

    async def replica_set(self) -> list[ReplicaInfo]:
        """The live replicas (and those gone in the last lease time), for `/status`."""
        return await self._store.replicas_list(
            include_stopped_since=self._clock() - self._s.lease_s)

    # -- duties ------------------------------------------------------------------------------
    async def _loop(self, every: float, duty: Callable[[], Coroutine[Any, Any, None]]) -> None:
        while True:
            await asyncio.sleep(every)
            await duty()

    async def _beat(self) -> None:
        began = time.monotonic()
        hb = await self._store.replica_heartbeat(
            self.replica_id, host=self.host, home=self._home, pid=os.getpid(),
            started_at=self.started_at, ttl=self._s.lease_s)
        self.heartbeats += 1
        if not hb.alive:
            log.error("replica_retired", replica_id=self.replica_id,
                      action="stopping: a newer gateway of this profile runs on this host")
            self._drop_everything()
            self._on_retired()
            return
        self._last_beat = time.monotonic()
        if self._cut_off:
            self._cut_off = False
            log.info("replica_reconnected", replica_id=self.replica_id)
        for key in self.sessions.renewed(hb.sessions):
            self._manager.relinquish(key)
        if self.roles is not None:
            self.roles.renewed(hb.roles, began)

    async def _heartbeat(self) -> None:
        try:
            await self._beat()
        except Exception as exc:  # noqa: BLE001 - retried next beat
            gap = time.monotonic() - self._last_beat
            log.warning("replica_heartbeat_failed", error=type(exc).__name__,
                        since_s=round(gap, 1))
            if gap >= self._s.lease_s and not self._cut_off:
                # Every lease may have been taken by now: stop acting on any of them.
                self._cut_off = True
                log.error("replica_cut_off", replica_id=self.replica_id, since_s=round(gap, 1))
                self._drop_everything()

    def _drop_everything(self) -> None:
        for key in list(self.sessions.held()):
            self._manager.relinquish(key)
        if self.roles is not None:
            self.roles.lose_all()

    async def _sweeper(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._sweep_now.wait(), self._s.sweep_s)
            self._sweep_now.clear()
            if self._cut_off:
                continue
            try:
                await self._sweep()
            except Exception as exc:  # noqa: BLE001 - retried next sweep
                log.warning("replica_sweep_failed", error=type(exc).__name__)

    async def _sweep(self) -> int:
        items = await self._store.session_sweep(self.replica_id,
                                                stale_after=self._s.stale_handover_s)
        wakes = [(i.owner, i.session_key) for i in items
                 if i.owner is not None and i.owner != self.replica_id]
        taken = 0
        for item in items:
            if item.owner is None or item.owner == self.replica_id:
                taken += await self._take(item.session_key)
        if wakes:
            await self._store.handover_notify(wakes)
        return taken

    async def _take(self, key: str) -> int:
        try:
            return await self._manager.take_over(key)
        except Exception as exc:  # noqa: BLE001 - the next sweep tries again
            log.warning("session_take_failed", session_key=key, error=type(exc).__name__)
            return 0

    def _woken(self, key: str | None) -> None:
        """A wake-up (on the event loop): claim the session's line soon, once."""
        if key is None:
            self._sweep_now.set()
            return
        if self._stopped:
            return
        if key in self._pending:
            self._again.add(key)  # the running take may have read the line already
            return
        task = asyncio.get_running_loop().create_task(self._take_woken(key),
                                                      name=f"replica-wake:{key}")
        self._pending[key] = task

    async def _take_woken(self, key: str) -> None:
        try:
            await self._take(key)
            while key in self._again:
                self._again.discard(key)
                await self._take(key)
        finally:
            self._pending.pop(key, None)


def replica_for(parts: GatewayParts, sessions: ReplicaSessions, settings: ReplicasConfig, *,
                home: str, locked: bool, on_retired: Callable[[], None],
                clock: Callable[[], float] = time.time) -> ReplicaRuntime:
    """The runtime of a gateway whose parts were wired as a replica (`parts.replicas`, given
    as `sessions`). `locked`: the process holds its profile's single-instance lock."""
    return ReplicaRuntime(parts.store, sessions, parts.manager, settings, home=home,
                          retire_same_home=locked, leaders=parts.leaders,
                          on_retired=on_retired, clock=clock)


def _listener_error(exc: BaseException, attempt: int) -> None:
    log.warning("handover_listener_lost", error=type(exc).__name__, attempt=attempt)
