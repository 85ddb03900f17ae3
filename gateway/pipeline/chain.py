"""Middleware chain: each step calls `next()` to pass the event on, or returns to stop it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gateway.events import MessageEvent
from gateway.ports import Capabilities

__all__ = ["Inbound", "Middleware", "Next", "Pipeline"]


@dataclass(slots=True)
class Inbound:
    """One event on its way through the pipeline, with what earlier steps learned."""

    event: MessageEvent
    capabilities: Capabilities
    #: Set by the dedup step: True when this is the first time the event was seen.
    new: bool = False
    #: Set by the dedup step once the event is durably recorded (new or a repeat).
    recorded: bool = False
    #: Why the event stopped (for logs, metrics and tests); None when it was routed.
    dropped: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.dropped = reason


Next = Callable[[], Awaitable[None]]
Middleware = Callable[[Inbound, Next], Awaitable[None]]


class Pipeline:
    """Runs middlewares in order. A middleware that doesn't call `next()` ends the chain."""

    def __init__(self, steps: Sequence[Middleware]) -> None:
        self._steps = tuple(steps)

    async def run(self, item: Inbound) -> Inbound:
        await self._call(item, 0)
        return item

    async def _call(self, item: Inbound, i: int) -> None:
        # A `partial`, not a closure that names itself: that closure and its cell formed a
        # reference cycle holding the event, which only the cyclic collector could free (at
        # 1,000 chats it was all the cyclic garbage the gateway made: 9 objects an event).
        if i < len(self._steps):
            await self._steps[i](item, partial(self._call, item, i + 1))
