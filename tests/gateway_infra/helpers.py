"""Shared doubles for the supervision / health / watchdog tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.events import MessageEvent
from gateway.metrics import GatewayMetrics
from gateway.ports import BasePlatformAdapter
from gateway.supervisor import AdapterSupervisor, SupervisorSettings
from hermes_common.backoff import Backoff


class Inbound:
    """The gateway side of `emit`: records events, reports duplicates by event id."""

    def __init__(self) -> None:
        self.events: list[MessageEvent] = []
        self._seen: set[tuple[str, str]] = set()

    async def emit(self, event: MessageEvent) -> bool:
        key = (event.platform, event.event_id)
        new = key not in self._seen
        self._seen.add(key)
        if new:
            self.events.append(event)
        return new


class RecordingSleep:
    """Injected backoff sleep: records each delay and returns at once (or never, if held)."""

    def __init__(self, *, hold: bool = False) -> None:
        self.delays: list[float] = []
        self.hold = hold

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        if self.hold:
            await asyncio.Event().wait()
        await asyncio.sleep(0)


async def until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll `predicate` until it holds; fail the test after `timeout_s`."""
    async with asyncio.timeout(timeout_s):
        while True:
            if predicate():
                return
            await asyncio.sleep(0.005)


def make_supervisor(
    adapters: dict[str, BasePlatformAdapter],
    tmp_path: Path,
    *,
    inbound: Inbound | None = None,
    metrics: GatewayMetrics | None = None,
    sleep: RecordingSleep | None = None,
    **settings: Any,
) -> AdapterSupervisor:
    options: dict[str, Any] = {
        "check_interval_s": 0.01,
        "connect_timeout_s": 5.0,
        "stop_timeout_s": 1.0,
        "backoff": Backoff(base_s=1.0, cap_s=60.0, jitter=0.25),
    }
    options.update(settings)
    extra: dict[str, Any] = {}
    for key in ("random", "clock"):
        if key in options:
            extra[key] = options.pop(key)
    return AdapterSupervisor(
        adapters,
        emit=(inbound or Inbound()).emit,
        cache_dir=tmp_path,
        metrics=metrics,
        settings=SupervisorSettings(**options),
        sleep=sleep or RecordingSleep(),
        **extra,
    )
