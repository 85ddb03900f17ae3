"""Adapter supervision: one named task per adapter, restarts with backoff, liveness by progress.

Each adapter runs under a task named `adapter:<name>` that calls `adapter.start(ctx)` (as the
child task `adapter:<name>:run`) and watches it:

- `ctx.connected()` must be called within `connect_timeout_s`, otherwise the run is stopped and
  retried; adapters start concurrently, so a slow platform never blocks the others.
- Once connected, an adapter whose `capabilities.liveness_window_s` is positive must report
  `ctx.progress()` (or emit an event) at least that often, otherwise it is stopped and restarted.
  Status never says "connected" while nothing flows.
- A crash (an exception from `start()`, or `start()` returning while not asked to stop) restarts
  the adapter after an exponential backoff with jitter. `AdapterFatalError` (e.g. `AdapterAuthError`) is fatal for that
  adapter: it is never restarted.

The same adapter instance is restarted: `start()` may be called again after it raised, returned,
or after `stop()`, and must build a fresh transport each time.
"""

from __future__ import annotations

import asyncio
import random as _random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import structlog

from gateway.activity import AdapterActivity
from gateway.events import InteractionEvent, MessageEvent
from gateway.metrics import GatewayMetrics
from gateway.ports import (
    AdapterContext,
    AdapterFatalError,
    BasePlatformAdapter,
    CursorStore,
    IntakeShards,
)
from gateway.supervision_types import (
    AdapterState,
    AdapterStatus,
    InboundMediaLimits,
    MemoryCursorStore,
    SupervisorSettings,
)
from hermes_common.redact import redact
from hermes_common.waits import sleep_unless

__all__ = [
    "AdapterState",
    "AdapterStatus",
    "AdapterSupervisor",
    "MemoryCursorStore",
    "SupervisorSettings",
]

log = structlog.get_logger("gateway.supervisor")

_MAX_ERROR_CHARS = 200


class _Outcome(StrEnum):
    STOPPED = "stopped"
    FATAL = "fatal"
    FAILED = "failed"
    HANDOFF = "handoff"  # the leader role flipped: run again with or without intake


class IntakeGate(Protocol):
    """A leader lease deciding whether this process receives for an adapter
    (`gateway.replicas.leader.LeaderGate`)."""

    @property
    def leader(self) -> bool: ...

    @property
    def changed(self) -> asyncio.Event: ...

    @property
    def shards(self) -> IntakeShards | None:
        """A sharded intake's held shards (`AdapterContext.shards`); None: unsharded."""
        ...


@dataclass(slots=True, eq=False)
class _Slot:
    name: str
    adapter: BasePlatformAdapter
    state: AdapterState = AdapterState.STOPPED
    last_error: str | None = None
    restarts: int = 0
    attempt: int = 0
    generation: int = 0
    last_progress: float | None = None
    connected_since: float | None = None
    next_retry: float | None = None
    task: asyncio.Task[None] | None = None
    ctx: AdapterContext | None = None
    stop_requested: bool = False
    stop_error: BaseException | None = None
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    gate: IntakeGate | None = None
    standby: bool = False


class AdapterSupervisor:
    """Runs and supervises a set of adapters (in start order = mapping order).

    `emit` is the gateway's inbound entry point; the supervisor wraps it per adapter to record
    inbound time, progress and the `events_in` metric. Use as an async context manager, or call
    `start()` / `stop()`. `sleep`, `clock`, `wall_clock` and `random` are injectable for tests.
    """

    def __init__(
        self,
        adapters: Mapping[str, BasePlatformAdapter],
        *,
        emit: Callable[[MessageEvent], Awaitable[bool]],
        cache_dir: Path,
        interact: Callable[[InteractionEvent], Awaitable[bool]] | None = None,
        cursors_for: Callable[[str], CursorStore] | None = None,
        max_attachment_bytes: int = 25 * 1024 * 1024,
        media: InboundMediaLimits | None = None,
        metrics: GatewayMetrics | None = None,
        activity: AdapterActivity | None = None,
        settings: SupervisorSettings | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        random: Callable[[], float] = _random.random,
        gates: Mapping[str, IntakeGate] | None = None,
    ) -> None:
        """`gates`: adapters whose intake runs on one replica at a time; while the gate says
        this process is not the leader the adapter runs for sending only (`standby`)."""
        self._slots = {name: _Slot(name, adapter, gate=(gates or {}).get(name))
                       for name, adapter in adapters.items()}
        self._emit = emit
        self._interact = interact
        self._cache_dir = cache_dir
        self._max_attachment_bytes = max_attachment_bytes
        self._media = media or InboundMediaLimits()
        self._cursors_for = cursors_for or (lambda _name: MemoryCursorStore())
        self._metrics = metrics
        #: Last inbound/outbound per adapter; delivery records sends into the same object.
        self.activity = activity or AdapterActivity(metrics, clock)
        self.settings = settings or SupervisorSettings()
        self._sleep = sleep
        self._clock = clock
        self._wall = wall_clock
        self._random = random
        self._stopping = asyncio.Event()
        self._started = False
        self._stopped = False

    async def __aenter__(self) -> AdapterSupervisor:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def adapters(self) -> Mapping[str, BasePlatformAdapter]:
        return {name: slot.adapter for name, slot in self._slots.items()}

    async def start(self) -> None:
        """Launch every adapter concurrently and return at once. Idempotent."""
        if self._started:
            return
        self._started = True
        for slot in self._slots.values():
            self._set_state(slot, AdapterState.STARTING)
            slot.task = asyncio.create_task(self._supervise(slot), name=f"adapter:{slot.name}")

    async def wait_started(self, timeout_s: float | None = None) -> bool:
        """Wait until each adapter has connected, failed (fatally or not), timed out connecting,
        or stopped. Returns False when `timeout_s` elapsed first. Must not raise."""
        waits = [asyncio.ensure_future(s.settled.wait()) for s in self._slots.values()]
        if not waits:
            return True
        _, pending = await asyncio.wait(waits, timeout=timeout_s)
        for w in pending:
            w.cancel()
        return not pending

    def all_fatal(self) -> bool:
        """True when there is at least one adapter and every one failed fatally."""
        return bool(self._slots) and all(
            s.state is AdapterState.FAILED_FATAL for s in self._slots.values()
        )

    def snapshot(self) -> list[AdapterStatus]:
        """Status of every adapter, in start order. Must not raise."""
        return [self._status(slot) for slot in self._slots.values()]

    def status(self, name: str) -> AdapterStatus:
        """Status of adapter `name`; raises `KeyError` for an unknown name."""
        return self._status(self._slots[name])

    def readiness(self) -> tuple[bool, list[str]]:
        """(every adapter connected and live, reasons for the ones that are not)."""
        reasons = [
            f"adapter {st.name} is {st.state.value}"
            + (f" ({st.last_error})" if st.last_error else "")
            for st in self.snapshot()
            if not st.serving
        ]
        return not reasons, reasons

    async def stop(self) -> list[tuple[str, BaseException]]:
        """Stop every adapter in reverse start order, each bounded by `stop_timeout_s`.

        Returns the errors met on the way (an adapter's `stop()` raising or timing out, a
        `start()` that raised while stopping), which are also logged. Idempotent; must not raise.
        """
        if self._stopped:
            return []
        self._stopped = True
        self._stopping.set()
        errors: list[tuple[str, BaseException]] = []
        for slot in reversed(list(self._slots.values())):
            errors.extend((slot.name, e) for e in await self._stop_slot(slot))
        for name, err in errors:
            log.warning("adapter_stop_failed", adapter=name, error=self._short(err))
        return errors

    # -- internals ---------------------------------------------------------------------------

    def _status(self, slot: _Slot) -> AdapterStatus:
        now_mono, now_wall = self._clock(), self._wall()

        def wall(t: float | None) -> float | None:
            return None if t is None else now_wall - (now_mono - t)

        state = slot.state
        if state is AdapterState.CONNECTED and self._stale(slot, now_mono):
            state = AdapterState.STALLED
        elif state is AdapterState.CONNECTED and slot.standby:
            state = AdapterState.STANDBY
        return AdapterStatus(
            name=slot.name,
            state=state,
            last_error=slot.last_error,
            restarts=slot.restarts,
            last_inbound_at=wall(self.activity.last_inbound.get(slot.name)),
            last_outbound_at=wall(self.activity.last_outbound.get(slot.name)),
            last_progress_at=wall(slot.last_progress),
            connected_since=wall(slot.connected_since),
            next_retry_at=wall(slot.next_retry) if state is AdapterState.BACKOFF else None,
        )

    def _stale(self, slot: _Slot, now: float) -> bool:
        if slot.standby:
            return False  # receives nothing by design
        window = slot.adapter.capabilities.liveness_window_s
        last = slot.last_progress if slot.last_progress is not None else slot.connected_since
        return window > 0 and last is not None and now - last > window

    def _set_state(self, slot: _Slot, state: AdapterState) -> None:
        slot.state = state
        if self._metrics is not None:
            self._metrics.set_adapter_state(slot.name, state.value)

    def _short(self, exc: BaseException) -> str:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        out = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        out = redact(out)
        return out if len(out) <= _MAX_ERROR_CHARS else out[: _MAX_ERROR_CHARS - 1] + "…"

    def _context(self, slot: _Slot, gen: int) -> AdapterContext:
        def progress() -> None:
            if slot.generation == gen:
                slot.last_progress = self._clock()

        def connected() -> None:
            if slot.generation != gen or slot.state is not AdapterState.STARTING:
                return
            now = self._clock()
            slot.connected_since = slot.last_progress = now
            self._set_state(slot, AdapterState.CONNECTED)
            slot.settled.set()
            log.info("adapter_connected", adapter=slot.name, restarts=slot.restarts)

        async def emit(event: MessageEvent) -> bool:
            progress()
            new = await self._emit(event)
            self.activity.note_inbound(slot.name, new=new)
            return new

        async def interact(event: InteractionEvent) -> bool:
            progress()
            if self._interact is None:
                return False
            new = await self._interact(event)
            self.activity.note_inbound(slot.name, new=new)
            return new

        return AdapterContext(
            name=slot.name,
            emit=emit,
            interact=interact,
            progress=progress,
            stop_event=asyncio.Event(),
            cursors=self._cursors_for(slot.name),
            cache_dir=self._cache_dir,
            logger=log.bind(adapter=slot.name),
            connected=connected,
            max_attachment_bytes=self._max_attachment_bytes,
            intake=not slot.standby,
            shards=slot.gate.shards if slot.gate is not None else None,
            max_message_bytes=self._media.max_message_bytes,
            max_images=self._media.max_images,
            download_timeout_s=self._media.download_timeout_s,
        )

    async def _supervise(self, slot: _Slot) -> None:
        try:
            while not self._stopping.is_set():
                if slot.gate is not None:
                    slot.gate.changed.clear()
                    slot.standby = not slot.gate.leader
                outcome = await self._run_once(slot)
                if outcome is _Outcome.HANDOFF:
                    log.info("adapter_intake_handoff", adapter=slot.name,
                             intake=not slot.standby)
                    continue
                if outcome is not _Outcome.FAILED or self._stopping.is_set():
                    break
                slot.settled.set()
                now = self._clock()
                if (
                    slot.connected_since is not None
                    and now - slot.connected_since >= self.settings.healthy_after_s
                ):
                    slot.attempt = 0
                slot.attempt += 1
                slot.restarts += 1
                if self._metrics is not None:
                    self._metrics.adapter_restarted(slot.name)
                delay = self.settings.backoff.delay(slot.attempt, self._random())
                slot.next_retry = now + delay
                slot.connected_since = None
                self._set_state(slot, AdapterState.BACKOFF)
                log.warning(
                    "adapter_restart_scheduled",
                    adapter=slot.name,
                    error=slot.last_error,
                    attempt=slot.attempt,
                    delay_s=round(delay, 3),
                )
                if not await self._backoff(delay):
                    break
        except Exception as exc:  # a supervisor bug must not take the others down
            slot.last_error = self._short(exc)
            log.exception("adapter_supervision_failed", adapter=slot.name)
            self._set_state(slot, AdapterState.FAILED_FATAL)
        finally:
            if slot.state is not AdapterState.FAILED_FATAL:
                self._set_state(slot, AdapterState.STOPPED)
            slot.next_retry = None
            slot.settled.set()

    async def _backoff(self, delay: float) -> bool:
        """Sleep `delay` (injected sleep) unless stopping first; True when it is time to retry."""
        return not await sleep_unless(delay, self._stopping, sleep=self._sleep)

    async def _run_once(self, slot: _Slot) -> _Outcome:
        slot.generation += 1
        ctx = slot.ctx = self._context(slot, slot.generation)
        slot.connected_since = slot.last_progress = None
        self._set_state(slot, AdapterState.STARTING)
        started = self._clock()
        run = asyncio.create_task(slot.adapter.start(ctx), name=f"adapter:{slot.name}:run")
        flip: asyncio.Task[Any] | None = None
        if slot.gate is not None:  # a lost leader lease stops the intake at once
            flip = asyncio.create_task(slot.gate.changed.wait(), name=f"adapter:{slot.name}:gate")
        try:
            while True:
                waits: set[asyncio.Future[Any]] = {run} if flip is None else {run, flip}
                done, _ = await asyncio.wait(waits, timeout=self.settings.check_interval_s,
                                             return_when=asyncio.FIRST_COMPLETED)
                if run in done:
                    break
                if slot.stop_requested or self._stopping.is_set():
                    if flip is not None and flip.done():
                        flip = None
                    continue
                gate = slot.gate
                if gate is not None and gate.changed.is_set() and gate.leader == slot.standby:
                    await self._halt(slot, ctx, run)
                    return _Outcome.HANDOFF
                if gate is not None and flip is not None and flip.done():
                    # flipped and back, or a shard moved (the adapter follows `ctx.shards`):
                    # this run is still right
                    gate.changed.clear()
                    flip = asyncio.create_task(gate.changed.wait(),
                                               name=f"adapter:{slot.name}:gate")
                reason = self._check_run(slot, started)
                if reason is not None:
                    slot.last_error = reason
                    log.warning("adapter_unhealthy", adapter=slot.name, reason=reason, action="restart")
                    await self._halt(slot, ctx, run)
                    return _Outcome.FAILED
            return self._judge(slot, run)
        finally:
            if flip is not None:
                flip.cancel()
            if not run.done():
                run.cancel()
                await asyncio.wait({run}, timeout=self.settings.stop_timeout_s)

    def _check_run(self, slot: _Slot, started: float) -> str | None:
        now = self._clock()
        if slot.connected_since is None:
            timeout = self.settings.connect_timeout_s
            if now - started >= timeout:
                return f"connect timeout: not connected after {timeout:g}s"
            return None
        if self._stale(slot, now):
            self._set_state(slot, AdapterState.STALLED)
            window = slot.adapter.capabilities.liveness_window_s
            return f"no progress for more than {window:g}s"
        return None

    def _judge(self, slot: _Slot, run: asyncio.Task[None]) -> _Outcome:
        exc: BaseException | None
        exc = asyncio.CancelledError() if run.cancelled() else run.exception()
        if slot.stop_requested or self._stopping.is_set():
            if exc is not None and not isinstance(exc, asyncio.CancelledError):
                slot.stop_error = exc
            return _Outcome.STOPPED
        if isinstance(exc, AdapterFatalError):
            slot.last_error = self._short(exc)
            self._set_state(slot, AdapterState.FAILED_FATAL)
            log.error(
                "adapter_failed_fatally",
                adapter=slot.name,
                error=slot.last_error,
            )
            return _Outcome.FATAL
        if exc is None:
            slot.last_error = "start() returned while not stopping"
        elif isinstance(exc, asyncio.CancelledError):
            slot.last_error = "start() was cancelled"
        else:
            slot.last_error = self._short(exc)
        return _Outcome.FAILED

    async def _halt(self, slot: _Slot, ctx: AdapterContext, run: asyncio.Task[None]) -> None:
        ctx.stop_event.set()
        err = await self._bounded_stop(slot)
        if err is not None:
            log.warning("adapter_stop_failed", adapter=slot.name, error=self._short(err))
        if not run.done():
            await asyncio.wait({run}, timeout=self.settings.stop_timeout_s)
        if not run.done():
            run.cancel()
            await asyncio.wait({run}, timeout=self.settings.stop_timeout_s)
        if run.done() and not run.cancelled():
            run.exception()  # retrieved: a failure while halting is expected

    async def _bounded_stop(self, slot: _Slot) -> BaseException | None:
        task = asyncio.create_task(slot.adapter.stop(), name=f"adapter:{slot.name}:stop")
        done, _ = await asyncio.wait({task}, timeout=self.settings.stop_timeout_s)
        if not done:
            task.cancel()
            return TimeoutError(f"stop() did not finish in {self.settings.stop_timeout_s:g}s")
        return None if task.cancelled() else task.exception()

    async def _stop_slot(self, slot: _Slot) -> list[BaseException]:
        slot.stop_requested = True
        errors: list[BaseException] = []
        if slot.ctx is not None:
            slot.ctx.stop_event.set()
            err = await self._bounded_stop(slot)
            if err is not None:
                errors.append(err)
        task = slot.task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=self.settings.stop_timeout_s)
            if not task.done():
                task.cancel()
                errors.append(TimeoutError("start() did not return after stop()"))
                await asyncio.wait({task}, timeout=self.settings.stop_timeout_s)
        if slot.stop_error is not None:
            errors.append(slot.stop_error)
        if slot.state is not AdapterState.FAILED_FATAL:
            self._set_state(slot, AdapterState.STOPPED)
        slot.settled.set()
        return errors
