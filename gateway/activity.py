"""`AdapterActivity`: when each adapter last brought an event in and took a message out.

Shared by the supervisor (status snapshots, `/status`) and delivery (which records every
successful send), so neither has to know the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.metrics import GatewayMetrics

__all__ = ["AdapterActivity"]


class AdapterActivity:
    """Per-adapter monotonic times of the last inbound event and the last outbound message,
    and the `events_in` / `events_out` metrics. Methods must not raise."""

    def __init__(self, metrics: GatewayMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._metrics = metrics
        self._clock = clock
        self.last_inbound: dict[str, float] = {}
        self.last_outbound: dict[str, float] = {}

    def note_inbound(self, name: str, *, new: bool = True) -> None:
        self.last_inbound[name] = self._clock()
        if self._metrics is not None:
            self._metrics.event_in(name, new=new)

    def note_outbound(self, name: str) -> None:
        self.last_outbound[name] = self._clock()
        if self._metrics is not None:
            self._metrics.event_out(name)
