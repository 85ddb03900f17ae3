"""The last resort when no platform stays connected: exit so the service manager restarts
the whole process (RELIABILITY.md item 2: no silent zombie)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

from gateway.supervisor import AdapterSupervisor

__all__ = ["escalate_when_disconnected"]

log = structlog.get_logger("gateway.runner")


async def escalate_when_disconnected(supervisor: AdapterSupervisor, window: float,
                                     stop: Callable[[int], None]) -> None:
    """The supervisor restarts adapters in-process; if none has been connected for `window`
    seconds anyway, `stop(1)` (the runner drains and exits 1) and return."""
    last_ok = time.monotonic()
    while True:
        await asyncio.sleep(min(10.0, max(window / 10, 0.05)))
        if any(st.serving for st in supervisor.snapshot()):
            last_ok = time.monotonic()
        elif time.monotonic() - last_ok >= window:
            log.error("no_adapter_connected", seconds=round(window),
                      action="exiting 1 so the service manager restarts the gateway")
            stop(1)
            return
