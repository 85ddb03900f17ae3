"""Event-loop lag watchdog.

An asyncio task (`loop-watchdog`) wakes every `interval_s`, measures how late it woke (the loop
lag) and stamps a heartbeat. A helper thread checks that heartbeat: a blocked loop cannot log for
itself, so when the heartbeat is older than `threshold_s` the thread logs the stacks of every
thread, the loop's thread first (that stack names the function that blocks). One report per
stall; when the loop resumes, the task logs how long it was blocked.

`last_beat` / `healthy()` are what a systemd watchdog notifier should consult.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback
from collections.abc import Callable

import structlog

from gateway.metrics import GatewayMetrics
from gateway.ports import EventLogger

__all__ = ["LoopWatchdog", "thread_stacks"]

log = structlog.get_logger("gateway.watchdog")

_MAX_FRAMES = 40


def thread_stacks(first: int | None = None) -> dict[str, str]:
    """Formatted stacks of all live threads, keyed `name (ident)`; thread `first` comes first."""
    names = {t.ident: t.name for t in threading.enumerate()}
    frames = sys._current_frames()
    order = sorted(frames, key=lambda ident: ident != first)
    return {
        f"{names.get(ident, '?')} ({ident})": "".join(
            traceback.format_stack(frames[ident], limit=_MAX_FRAMES)
        )
        for ident in order
    }


class LoopWatchdog:
    """Watches the running event loop. Use as an async context manager or `start()`/`stop()`."""

    def __init__(
        self,
        *,
        interval_s: float = 0.25,
        threshold_s: float = 1.0,
        metrics: GatewayMetrics | None = None,
        logger: EventLogger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0 or threshold_s <= 0:
            raise ValueError("interval_s and threshold_s must be positive")
        self.interval_s = interval_s
        self.threshold_s = threshold_s
        self._metrics = metrics
        self._log: EventLogger = logger if logger is not None else log
        self._clock = clock
        self._beat = clock()
        self._loop_thread: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._reported_beat: float | None = None
        self.max_lag_s = 0.0
        self.last_lag_s = 0.0
        self.stalls = 0

    async def __aenter__(self) -> LoopWatchdog:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def last_beat(self) -> float:
        """Monotonic time the loop last proved responsive."""
        return self._beat

    def healthy(self, max_age_s: float | None = None) -> bool:
        """True when the loop ticked within `max_age_s` (default: the stall threshold)."""
        limit = self.threshold_s if max_age_s is None else max_age_s
        return self._clock() - self._beat <= limit

    def snapshot(self) -> dict[str, float | int]:
        return {
            "last_lag_s": round(self.last_lag_s, 4),
            "max_lag_s": round(self.max_lag_s, 4),
            "stalls": self.stalls,
            "beat_age_s": round(self._clock() - self._beat, 4),
        }

    async def start(self) -> None:
        """Start the ticking task and the helper thread. Idempotent."""
        if self._task is not None:
            return
        self._loop_thread = threading.get_ident()
        self._beat = self._clock()
        self._halt.clear()
        self._task = asyncio.create_task(self._tick(), name="loop-watchdog")
        self._thread = threading.Thread(
            target=self._watch, name="hermes-loop-watchdog", daemon=True
        )
        self._thread.start()

    async def stop(self) -> None:
        """Stop both; idempotent, must not raise."""
        self._halt.set()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        thread, self._thread = self._thread, None
        if thread is not None:
            await asyncio.to_thread(thread.join, max(1.0, self.interval_s * 4))

    async def _tick(self) -> None:
        while True:
            expected = self._clock() + self.interval_s
            await asyncio.sleep(self.interval_s)
            now = self._clock()
            lag = max(0.0, now - expected)
            stalled_for = now - self._beat - self.interval_s
            self._beat = now
            self.last_lag_s = lag
            self.max_lag_s = max(self.max_lag_s, lag)
            if self._metrics is not None:
                self._metrics.loop_lag.observe(lag)
            if self._reported_beat is not None:
                self._reported_beat = None
                self._log.warning("event_loop_resumed", blocked_s=round(stalled_for, 3))

    def _watch(self) -> None:
        period = min(self.interval_s, self.threshold_s / 4)
        while not self._halt.wait(period):
            beat = self._beat
            age = self._clock() - beat
            if age <= self.threshold_s or self._reported_beat == beat:
                continue
            self._reported_beat = beat
            self.stalls += 1
            if self._metrics is not None:
                self._metrics.loop_stalls.inc()
            try:
                stacks = thread_stacks(first=self._loop_thread)
            except Exception as exc:  # report the stall without the stacks
                stacks = {"unavailable": type(exc).__name__}
            loop_stack = next(iter(stacks.values()), "")
            try:
                self._log.error(
                    "event_loop_stalled",
                    stalled_s=round(age, 3),
                    threshold_s=self.threshold_s,
                    loop_stack=loop_stack,
                    threads=stacks,
                )
            except Exception:  # logging failed: nowhere left to report; never die of it
                continue
