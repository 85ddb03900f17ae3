"""Test helpers: an in-memory AdapterContext (dedup like the gateway) and a running adapter."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import structlog

from adapters.telegram.adapter import TelegramAdapter
from gateway.events import MessageEvent
from gateway.ports import AdapterContext
from gateway.supervision_types import MemoryCursorStore as MemoryCursors

__all__ = ["MemoryCursors", "Recorder", "running"]


class Recorder:
    """What the gateway side would see: `events` holds new events only (durable dedup by
    (platform, event_id)); `all_emits` every call. `fail` makes emit raise (storage down)."""

    def __init__(self, cache_dir: Path, cursors: MemoryCursors | None = None) -> None:
        self.cache_dir = cache_dir
        self.cursors = cursors or MemoryCursors()
        self.events: list[MessageEvent] = []
        self.all_emits: list[MessageEvent] = []
        self.seen: set[tuple[str, str]] = set()
        self.progress_calls = 0
        self.connected = asyncio.Event()
        self.fail = False
        self._changed = asyncio.Event()

    def context(self, name: str = "telegram", **kw: Any) -> AdapterContext:
        self.connected = asyncio.Event()
        return AdapterContext(
            name=name, emit=self._emit, progress=self._progress, stop_event=asyncio.Event(),
            cursors=self.cursors, cache_dir=self.cache_dir,
            logger=structlog.wrap_logger(logging.getLogger("test.telegram")),
            connected=self.connected.set, **kw)

    async def _emit(self, event: MessageEvent) -> bool:
        if self.fail:
            raise RuntimeError("storage unavailable")
        self.all_emits.append(event)
        key = (event.platform, event.event_id)
        new = key not in self.seen
        if new:
            self.seen.add(key)
            self.events.append(event)
        self._changed.set()
        return new

    def _progress(self) -> None:
        self.progress_calls += 1

    async def wait_for(self, n: int, timeout_s: float = 5.0, *, all_emits: bool = False
                       ) -> list[MessageEvent]:
        target = self.all_emits if all_emits else self.events
        async with asyncio.timeout(timeout_s):
            while len(target) < n:
                self._changed.clear()
                await self._changed.wait()
        return list(target)


@asynccontextmanager
async def running(adapter: TelegramAdapter, rec: Recorder, **ctx_kw: Any
                  ) -> AsyncIterator[tuple[AdapterContext, asyncio.Task[None]]]:
    """Start the adapter as a task, wait for ctx.connected(), stop it on exit."""
    ctx = rec.context(adapter.name, **ctx_kw)
    task = asyncio.create_task(adapter.start(ctx))
    waiter = asyncio.ensure_future(rec.connected.wait())
    done, _ = await asyncio.wait({task, waiter}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        waiter.cancel()
        task.result()  # raises the start error
        raise AssertionError("start() returned before connecting")
    assert waiter in done, "adapter did not connect"
    try:
        yield ctx, task
    finally:
        ctx.stop_event.set()
        await adapter.stop()
        await asyncio.wait({task}, timeout=5)
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()  # retrieved: tests assert on it through the task when they care
