"""Routes events to session workers and applies the busy policy."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import structlog

from agent_core.interrupt import InterruptSignal
from gateway.events import MessageEvent
from gateway.sessions.inbox import DurableInbox, EventNotHeldError
from gateway.sessions.ownership import Claimed, CommandSink, SessionOwnership
from gateway.sessions.worker import MERGE_REASON, BusyMode, SessionWorker, TurnRunner
from storage.fencing import fenced

__all__ = ["SessionManager", "TurnHandler"]

log = structlog.get_logger("gateway.sessions")

BUSY_ACK_COOLDOWN_S = 30.0


class TurnHandler(Protocol):
    """What the manager needs from the turn layer."""

    @property
    def run_turn(self) -> TurnRunner:
        """Runs one turn: `run_turn(key, events, interrupt)`."""

    async def notify(self, event: MessageEvent, text: str) -> None:
        """Send a short notice to the chat `event` came from. Must not raise."""

    async def steer(self, key: str, event: MessageEvent) -> bool:
        """Inject the event into the running turn; False when that is not possible."""


class SessionManager:
    """Owns one `SessionWorker` per active session key.

    `dispatch()` never blocks on a turn: it queues the event and, when the session is busy,
    applies `busy_mode` (interrupt the running turn, queue behind it, or steer it) and sends a
    busy acknowledgement at most once per `busy_ack_interval_s` (30 s) per session. A full
    mailbox is reported to the user; nothing is dropped silently.

    Created with `intake_open=False` (the runner does), live events are held durably and
    *parked* in arrival order until `open_intake()`: start-up recovery runs first, alone, so
    it never takes a message the live path has taken, and parked events are replayed after
    the recovered work, in order (the restart race, docs/reliability.md).

    With an `ownership` (replicas on one database, `gateway.sessions.ownership`) a live
    event goes into its session's durable line instead, and only the session's owner
    hands the line's events to a worker (`take_over` claims a line for a sweep or a
    wake-up); each turn runs under the owner's fence. Nothing is parked in memory then:
    until `open_intake()` events only wait in their line. Slash commands take the same line
    (`replicated`), and the owner runs each one it claims through the `CommandSink`
    (`route_commands`) at once, beside the session's worker; the command's hold is released
    once it ran and replied.
    """

    def __init__(
        self,
        handler: TurnHandler,
        *,
        busy_mode: BusyMode = "interrupt",
        mailbox_size: int = 64,
        idle_timeout_s: float = 300.0,
        merge_window_s: float = 0.5,
        busy_ack_interval_s: float = BUSY_ACK_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
        inbox: DurableInbox | None = None,
        intake_open: bool = True,
        ownership: SessionOwnership | None = None,
    ) -> None:
        self._handler = handler
        self._inbox = inbox
        self._ownership = ownership
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._sink: CommandSink | None = None
        self._commands: dict[str, str] = {}  # event id → session key of commands running
        # key → (the running command's event id, the claimed events in line behind it)
        self._deferred: dict[str, tuple[str, list[tuple[MessageEvent, bool]]]] = {}
        self.busy_mode: BusyMode = busy_mode
        self._mailbox_size = mailbox_size
        self._idle = idle_timeout_s
        self._merge = merge_window_s
        self._ack_interval = busy_ack_interval_s
        self._clock = clock
        self._workers: dict[str, SessionWorker] = {}
        self._closing = False
        self._unfinished: frozenset[str] = frozenset()
        self._parked: list[tuple[str, MessageEvent]] = []
        self._open = asyncio.Event()
        if intake_open:
            self._open.set()

    def route_commands(self, sink: CommandSink) -> None:
        """Run the command events claimed from a session's line through `sink` (replicas;
        the inbound router registers itself)."""
        self._sink = sink

    # -- queries -------------------------------------------------------------------------
    @property
    def replicated(self) -> bool:
        """Sessions are owned by one replica of several: a command of a session must be
        run by its owner, so it is dispatched like a message (it reaches `route_commands`'
        sink on the owner)."""
        return self._ownership is not None

    @property
    def holds_in_inbox(self) -> bool:
        """Live events are held in this process's durable inbox (one gateway, not replicas):
        the inbound path may record and hold an event in one write (`dispatch(held=True)`)."""
        return self._inbox is not None and self._ownership is None

    def taken_by_recovery(self, event: MessageEvent) -> bool:
        """Start-up recovery of this boot claimed and queued `event` (see `DurableInbox`)."""
        return self._inbox is not None and self._inbox.recovered(event.platform, event.event_id)

    def get(self, key: str) -> SessionWorker | None:
        return self._workers.get(key)

    def is_busy(self, key: str) -> bool:
        w = self._workers.get(key)
        return bool(w and w.busy)

    @property
    def active_count(self) -> int:
        return len(self._workers)

    def queue_depths(self) -> dict[str, int]:
        return {k: w.depth for k, w in self._workers.items() if w.depth}

    @property
    def intake_open(self) -> bool:
        return self._open.is_set()

    @property
    def parked_count(self) -> int:
        return len(self._parked)

    async def wait_open(self) -> None:
        """Until `open_intake()` ran (commands wait for it, so they see recovered state)."""
        await self._open.wait()

    async def open_intake(self) -> int:
        """Replay the parked events in arrival order, then let live events through. Events
        that arrive during the replay are parked behind it, so order holds. Returns how many
        were replayed."""
        replayed = 0
        while self._parked and not self._closing:
            key, event = self._parked.pop(0)
            await self._accept(key, event)
            replayed += 1
        self._parked.clear()
        self._open.set()
        if replayed:
            log.info("parked_events_replayed", count=replayed)
        return replayed

    # -- intake --------------------------------------------------------------------------
    async def dispatch(self, key: str, event: MessageEvent, *, recovered: bool = False,
                       held: bool = False) -> str:
        """Queue `event` for session `key`; returns "started", "queued", "merged" (a burst
        follow-up: the running turn restarts with it), "steered", "full", "closing",
        "parked" (intake not open yet: replayed by `open_intake`) or "taken" (recovery of this
        boot already queued this very event; nothing is done).

        With an inbox the event is held durably first, until its turn stores it (also while
        closing: it is answered after the restart); when that hold fails it raises
        `EventNotHeldError` and queues nothing (the platform delivers it again). `recovered`
        events (start-up recovery) are already accounted for: they are queued in order, with
        no busy handling. A `held` event was held for `key` by the inbound path with its
        dedup record, by this boot (only where `holds_in_inbox`)."""
        if self._ownership is not None and not recovered:
            return await self._dispatch_owned(key, event, self._ownership)
        if not held and not recovered and self._inbox is not None:
            took = await self._inbox.take(key, event)
            if took == "taken":  # start-up recovery of this boot already queued it
                log.info("inbound_already_taken", session_key=key)
                return "taken"
            if took == "volatile":  # not durable: not acknowledged, the platform resends it
                raise EventNotHeldError(f"{event.platform} event {event.event_id} not held")
            held = True
        if self._closing:
            await self._handler.notify(event, (
                "⏳ The gateway is restarting; I'll answer this as soon as it is back."
                if held else "The gateway is restarting; please resend in a moment."))
            return "closing"
        if recovered:
            worker = self._worker(key)
            outcome = worker.offer(event)
            if outcome == "full":
                await self._report_full(key, worker, event)
            return outcome
        if not self._open.is_set():
            self._parked.append((key, event))
            log.debug("inbound_parked", session_key=key, parked=len(self._parked))
            return "parked"
        return await self._accept(key, event)

    # -- replicas --------------------------------------------------------------------------
    async def _dispatch_owned(self, key: str, event: MessageEvent,
                              own: SessionOwnership) -> str:
        """A live event with replicas: "handed_over" (another replica owns the session; it
        was woken), "parked" (intake not open: it waits in its line), "closing", "taken"
        (already held) or what the worker did with it."""
        take = self._open.is_set() and not self._closing
        async with self._lock(key):
            try:
                got = await own.admit(key, event, take=take)
            except Exception as exc:
                # Not in any line: not acknowledged, so the platform delivers it again (to
                # whichever replica reads it then; the dedup record is reclaimed).
                log.warning("inbound_hold_failed", session_key=key, error=type(exc).__name__)
                raise EventNotHeldError(
                    f"{event.platform} event {event.event_id} not held") from exc
            if not got.held:
                log.info("inbound_already_taken", session_key=key)
                return "taken"
            if self._closing:
                await self._handler.notify(event, "⏳ The gateway is restarting; I'll answer "
                                                  "this as soon as it is back.")
                return "closing"
            if not got.owned:
                if take:
                    log.debug("inbound_handed_over", session_key=key, owner=got.owner)
                    return "handed_over"
                return "parked"
            return await self._deliver_claimed(key, got, own, event)

    async def take_over(self, key: str) -> int:
        """Claim session `key`'s line (when this replica owns or can take the session) and
        queue what it holds. Returns how many events were queued. Raises storage errors."""
        own = self._ownership
        if own is None or self._closing:
            return 0
        async with self._lock(key):
            got = await own.take(key)
            if not got.owned or self._closing:
                return 0
            await self._deliver_claimed(key, got, own, None)
            return len(got.events)

    async def _deliver_claimed(self, key: str, got: Claimed, own: SessionOwnership,
                               live: MessageEvent | None) -> str:
        stale = self._workers.get(key) if got.fresh else None
        if stale is not None:
            # Taken again after this replica had lost it: the line holds everything, so what
            # the worker still queued from before would run twice; a turn still running
            # under the old token is fenced off.
            stale.clear()
            stale.interrupt("the session's lease was taken again")
        if got.fresh:
            self._deferred.pop(key, None)  # claimed again with the rest of the line
        if got.takeover:
            await own.recover(key, self)
        waiting = self._deferred.get(key)
        if waiting is not None:  # a command of this session runs: the line waits behind it
            waiting[1].extend(got.events)
            return "queued"
        return await self._deliver(key, list(got.events), live)

    async def _deliver(self, key: str, events: list[tuple[MessageEvent, bool]],
                       live: MessageEvent | None) -> str:
        """Queue claimed events in line order. A command starts at once, and what is
        behind it waits until it ran (a message after /new belongs to the new session, one
        after /stop is not dropped by it)."""
        outcome = "queued"
        for i, (ev, recovered) in enumerate(events):
            out: str
            if self._is_command(ev):
                out = self._start_command(key, ev, held=True)
                if out == "command":
                    self._deferred[key] = (ev.event_id, events[i + 1:])
                    return out if live is not None and ev.event_id == live.event_id \
                        else outcome
            elif recovered:
                worker = self._worker(key)
                out = worker.offer(ev)
                if out == "full":
                    await self._report_full(key, worker, ev)
            else:
                out = await self._accept(key, ev)
            if live is not None and ev.event_id == live.event_id:
                outcome = out
        return outcome

    def _is_command(self, event: MessageEvent) -> bool:
        return self._sink is not None and self._sink.is_command(event)

    def _start_command(self, key: str, event: MessageEvent, *, held: bool) -> str:
        """Run a claimed command event in a task of its own (a /stop must not wait for the
        turn it stops): "command", or "taken" when this very command is running already
        (claimed again with a lease taken anew)."""
        if event.event_id in self._commands:
            return "taken"
        self._commands[event.event_id] = key
        self._track(self._command(key, event, held=held), f"session-command:{key}")
        return "command"

    async def _command(self, key: str, event: MessageEvent, *, held: bool) -> None:
        assert self._sink is not None
        try:
            await self._sink.run_command(key, event)
        finally:
            del self._commands[event.event_id]
            if held and self._inbox is not None:
                # Ran and replied: settled. (A crash before this line runs it once more on
                # the next owner; released before the reply, it could be lost.)
                await self._inbox.release([event])
            async with self._lock(key):
                waiting = self._deferred.get(key)
                if waiting is not None and waiting[0] == event.event_id:
                    del self._deferred[key]
                    if not self._closing and self.owns(key):
                        await self._deliver(key, waiting[1], None)
            await self._release_idle(key)  # a command alone takes no worker to release it

    def relinquish(self, key: str) -> int:
        """The session's lease was lost (another replica owns it now): stop its turn and
        drop its queue without letting go of the events' holds (the new owner claims them).
        Returns how many queued events were dropped here."""
        if self._ownership is not None:
            self._ownership.drop(key)
        self._deferred.pop(key, None)  # still held: the new owner claims them
        w = self._workers.get(key)
        if w is None:
            return 0
        dropped = w.clear()
        w.interrupt("the session moved to another replica")
        log.warning("session_lease_lost", session_key=key, dropped=len(dropped))
        return len(dropped)

    def owns(self, key: str) -> bool:
        return self._ownership is None or self._ownership.owns(key)

    def owned_keys(self) -> list[str]:
        return [k for k in self._workers if self._ownership is None
                or self._ownership.owns(k)]

    def _lock(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def _unlock_idle(self, key: str) -> None:
        lock = self._locks.get(key)
        if lock is not None and not lock.locked() and key not in self._workers:
            del self._locks[key]

    async def _fenced_turn(self, key: str, events: list[MessageEvent],
                           interrupt: InterruptSignal) -> list[MessageEvent]:
        """A turn under the session's lease: not run at all when the lease is gone (the
        events stay held; the new owner claims them)."""
        assert self._ownership is not None
        fence = self._ownership.fence_for(key)
        if fence is None:
            log.warning("turn_skipped_not_owner", session_key=key, events=len(events))
            return []
        with fenced(fence):
            return await self._handler.run_turn(key, events, interrupt)

    async def _release_idle(self, key: str) -> None:
        own = self._ownership
        if own is None:
            return
        async with self._lock(key):
            if (key not in self._workers and key not in self._commands.values()
                    and not self._closing):
                await own.release(key)
        self._unlock_idle(key)

    async def _accept(self, key: str, event: MessageEvent) -> str:
        """A live event, held already: the busy policy and the worker's mailbox."""
        worker = self._worker(key)
        busy = worker.busy
        if busy and self.busy_mode == "steer" and await self._handler.steer(key, event):
            return "steered"
        if busy and worker.is_burst(event):
            # A burst (~0.5 s) from the same sender: restart the turn with every part of it
            # (in any busy mode; steer absorbs it above when it can), with no busy notice.
            if worker.offer(event) != "full":
                worker.interrupt(MERGE_REASON)
                return "merged"
        outcome = worker.offer(event)
        if outcome == "full":
            await self._report_full(key, worker, event)
            return "full"
        if busy:
            if self.busy_mode == "interrupt":
                worker.interrupt("new message")
            now = self._clock()
            if now - worker.last_ack_at >= self._ack_interval:
                worker.last_ack_at = now
                text = (
                    "⏳ Interrupting the current answer; your new message comes next."
                    if self.busy_mode == "interrupt"
                    else f"⏳ Still working on the previous message; yours is queued "
                    f"(position {worker.depth})."
                )
                await self._handler.notify(event, text)
        return outcome

    async def _report_full(self, key: str, worker: SessionWorker, event: MessageEvent) -> None:
        log.warning("mailbox_full", session_key=key, depth=worker.depth)
        self._release([event])
        await self._handler.notify(
            event,
            "⚠️ Too many messages are waiting for this conversation; this one was not "
            "queued. Please wait for the current answer or send /stop.",
        )

    def _release(self, events: list[MessageEvent]) -> None:
        if self._inbox is not None:
            self._inbox.release_soon(events)

    def _worker(self, key: str) -> SessionWorker:
        worker = self._workers.get(key)
        if worker is None:
            worker = SessionWorker(
                key,
                self._fenced_turn if self._ownership is not None else self._handler.run_turn,
                mailbox_size=self._mailbox_size,
                idle_timeout_s=self._idle,
                merge_window_s=self._merge,
                on_exit=self._forget,
            )
            self._workers[key] = worker
        return worker

    # -- control -------------------------------------------------------------------------
    def stop(self, key: str, reason: str = "stopped by user") -> tuple[bool, int]:
        """Interrupt the running turn and drop queued events: (was_running, dropped)."""
        w = self._workers.get(key)
        if w is None:
            return False, 0
        dropped = w.clear()
        self._release(dropped)
        return w.interrupt(reason), len(dropped)

    async def wait_idle(self, key: str, within_s: float) -> bool:
        """Wait until the session runs no turn (used by /new after /stop)."""
        deadline = self._clock() + within_s
        while self.is_busy(key):
            if self._clock() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def close(self, *, drain_timeout_s: float) -> None:
        """Stop intake, give running turns `drain_timeout_s`, then interrupt them."""
        self._closing = True
        # Parked events stay held (claimed by this boot): the next start recovers them.
        self._parked.clear()
        self._open.set()
        workers = list(self._workers.values())
        self._unfinished = frozenset(w.key for w in workers if w.busy or w.depth)
        await asyncio.gather(
            *(w.close(drain_timeout_s=drain_timeout_s) for w in workers), return_exceptions=True
        )
        self._workers.clear()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._inbox is not None:
            await self._inbox.close()

    def unfinished_at_close(self) -> frozenset[str]:
        """The sessions that had a turn running or queued when `close()` began: a turn the
        drain cut off leaves its user message unanswered, and a queued re-run of one is held
        nowhere. A replica leaves their leases to be taken over (`ReplicaRuntime.stop`)."""
        return self._unfinished

    def _forget(self, worker: SessionWorker) -> None:
        if self._workers.get(worker.key) is worker and worker.depth == 0:
            del self._workers[worker.key]
            if self._ownership is not None and not self._closing:
                self._track(self._release_idle(worker.key), f"session-release:{worker.key}")

    def _track(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


