"""One session's worker: a FIFO mailbox drained one turn at a time."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any, Literal, Protocol

import structlog

from agent_core.interrupt import InterruptSignal
from gateway.events import MessageEvent

__all__ = ["MERGE_REASON", "BusyMode", "SessionWorker", "TurnRunner"]

#: The interrupt reason of a turn restarted with a burst's follow-up: the turn answers again,
#: so the interrupted attempt's partial text is not part of the conversation.
MERGE_REASON = "merged with a follow-up message"

BusyMode = Literal["interrupt", "queue", "steer"]
Offer = Literal["started", "queued", "full"]

log = structlog.get_logger("gateway.sessions")


class TurnRunner(Protocol):
    async def __call__(
        self, key: str, events: list[MessageEvent], interrupt: InterruptSignal
    ) -> list[MessageEvent]:
        """Run one turn; returns events that must run next (before anything queued)."""
        ...


class SessionWorker:
    """Runs the turns of one session in arrival order.

    Events wait in a bounded FIFO. The worker task takes the oldest event, merges a burst of
    further events from the same sender that arrived within `merge_window_s` of each other,
    and runs one turn for them. After an interrupt, every queued event is merged into the next
    turn so the newest message is answered and nothing is lost. The task exits after
    `idle_timeout_s` without work (`on_exit` is then called) and is recreated on demand.
    """

    def __init__(
        self,
        key: str,
        run_turn: TurnRunner,
        *,
        mailbox_size: int = 64,
        idle_timeout_s: float = 300.0,
        merge_window_s: float = 0.5,
        interrupt_grace_s: float = 5.0,
        on_exit: Callable[[SessionWorker], None] | None = None,
    ) -> None:
        self.key = key
        self._run_turn = run_turn
        self._mailbox: deque[MessageEvent] = deque()
        self._size = mailbox_size
        self._idle = idle_timeout_s
        self._merge = merge_window_s
        self._grace = interrupt_grace_s
        self._on_exit = on_exit
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._turn: asyncio.Task[list[MessageEvent]] | None = None
        self._signal: InterruptSignal | None = None
        self._after_interrupt = False
        self._closing = False
        self._running_last: MessageEvent | None = None
        self.last_ack_at = float("-inf")
        self.turns_run = 0

    # -- state -------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._turn is not None and not self._turn.done()

    @property
    def depth(self) -> int:
        return len(self._mailbox)

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    # -- intake ------------------------------------------------------------------------
    def offer(self, event: MessageEvent) -> Offer:
        """Queue an event; never blocks. "full" means it was NOT queued (tell the user)."""
        if len(self._mailbox) >= self._size:
            return "full"
        was_busy = self.busy or bool(self._mailbox)
        self._mailbox.append(event)
        self._wake.set()
        if not self.alive and not self._closing:
            self._task = asyncio.create_task(self._loop(), name=f"session:{self.key}")
        return "queued" if was_busy else "started"

    def is_burst(self, event: MessageEvent) -> bool:
        """True when `event` continues the burst the running turn started with: same sender,
        within `merge_window_s` of the newest event of that turn."""
        last = self._running_last
        return (self.busy and last is not None and self._merge > 0
                and event.user.id == last.user.id
                and 0 <= event.timestamp - last.timestamp <= self._merge)

    def interrupt(self, reason: str) -> bool:
        """Ask the running turn to stop; the queued events become the next turn."""
        if not self.busy or self._signal is None:
            return False
        self._after_interrupt = True
        self._signal.set(reason)
        return True

    def clear(self) -> list[MessageEvent]:
        """Drop queued events (used by /stop and /new); returns them."""
        dropped = list(self._mailbox)
        self._mailbox.clear()
        return dropped

    async def close(self, *, drain_timeout_s: float = 0.0) -> None:
        """Stop intake; let the running turn finish up to the timeout, then interrupt it."""
        self._closing = True
        self._mailbox.clear()
        self._wake.set()
        turn = self._turn
        if turn is not None and not turn.done():
            done, _ = await asyncio.wait({turn}, timeout=max(drain_timeout_s, 0.0))
            if not done and self._signal is not None:
                self._signal.set("shutdown")
                await asyncio.wait({turn}, timeout=self._grace)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    # -- loop --------------------------------------------------------------------------
    def _take_batch(self) -> list[MessageEvent]:
        first = self._mailbox.popleft()
        batch = [first]
        if self._after_interrupt:
            self._after_interrupt = False
            batch.extend(self._mailbox)
            self._mailbox.clear()
            return batch
        while self._mailbox:
            nxt = self._mailbox[0]
            prev = batch[-1]
            if nxt.user.id != prev.user.id or nxt.timestamp - prev.timestamp > self._merge:
                break
            batch.append(self._mailbox.popleft())
        return batch

    async def _loop(self) -> None:
        try:
            while not self._closing:
                if not self._mailbox:
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), self._idle)
                    except TimeoutError:
                        if not self._mailbox:
                            return
                    continue
                batch = self._take_batch()
                await self._run(batch)
        finally:
            if self._on_exit is not None:
                self._on_exit(self)

    async def _run(self, batch: list[MessageEvent]) -> None:
        self._signal = signal = InterruptSignal()
        self._running_last = batch[-1]
        self._turn = turn = asyncio.create_task(
            self._guarded(batch, signal), name=f"turn:{self.key}"
        )
        stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not stop.done():
                stop.set_result(None)

        unwatch = signal.on_set(wake)
        try:
            waiters: set[asyncio.Future[Any]] = {turn, stop}
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if turn not in done:
                # Interrupt requested: the agent honours it cooperatively; cancel as a backstop.
                finished, _ = await asyncio.wait({turn}, timeout=self._grace)
                if not finished:
                    log.warning("turn_cancelled_after_grace", session_key=self.key)
                    turn.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await turn
        finally:
            unwatch()
            if turn.done() and not turn.cancelled() and turn.result():
                # Steered texts the turn never used: next, ahead of what queued meanwhile.
                self._mailbox.extendleft(reversed(turn.result()))
            self.turns_run += 1
            self._turn = None
            self._signal = None
            self._running_last = None

    async def _guarded(self, batch: list[MessageEvent],
                       signal: InterruptSignal) -> list[MessageEvent]:
        try:
            return await self._run_turn(self.key, batch, signal)
        except asyncio.CancelledError:
            raise
        except Exception:  # one failing turn never takes the session down
            log.exception("turn_failed", session_key=self.key)
            return []


