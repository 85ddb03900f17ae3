"""A recording AdapterContext for Slack tests and the contract harness."""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog

from gateway.events import InteractionEvent, MessageEvent
from gateway.ports import AdapterContext
from gateway.supervision_types import MemoryCursorStore as MemoryCursors

__all__ = ["MemoryCursors", "Recorder"]


class Recorder:
    """An AdapterContext whose emit dedups in memory like the gateway's durable ledger."""

    def __init__(self, cache_dir: Path) -> None:
        self.emitted: list[MessageEvent] = []
        self.interactions: list[InteractionEvent] = []
        self.seen: set[tuple[str, str]] = set()
        self.emit_calls = 0
        self.progress_count = 0
        self.connects = 0
        self.stop_event = asyncio.Event()
        self.cursors = MemoryCursors()
        self.cache_dir = cache_dir
        self._changed = asyncio.Condition()

    def context(self, name: str = "slack") -> AdapterContext:
        return AdapterContext(name=name, emit=self.emit, progress=self.progress,
                              stop_event=self.stop_event, cursors=self.cursors,
                              cache_dir=self.cache_dir, logger=structlog.get_logger("test"),
                              connected=self.connected, interact=self.interact)

    async def interact(self, event: InteractionEvent) -> bool:
        key = (event.platform, f"interaction:{event.event_id}")
        if key in self.seen:
            return False
        self.seen.add(key)
        self.interactions.append(event)
        async with self._changed:
            self._changed.notify_all()
        return True

    async def emit(self, event: MessageEvent) -> bool:
        self.emit_calls += 1
        key = (event.platform, event.event_id)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.emitted.append(event)
        async with self._changed:
            self._changed.notify_all()
        return True

    def progress(self) -> None:
        self.progress_count += 1

    def connected(self) -> None:
        self.connects += 1

    async def wait_emitted(self, n: int, timeout_s: float = 5.0) -> list[MessageEvent]:
        async def _wait() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.emitted) >= n)
        await asyncio.wait_for(_wait(), timeout_s)
        return list(self.emitted)
