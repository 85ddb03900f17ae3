"""A cooperative interrupt flag shared by the turn loop and the tools it runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["InterruptSignal"]


class InterruptSignal:
    """Set once with a reason; observed by the loop at each iteration and by running tools.

    `set()` is idempotent (the first reason wins). `wait()` returns when set. Create it
    inside a running event loop or lazily: the asyncio.Event is created on first use.
    """

    __slots__ = ("_event", "_reason", "_callbacks")

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._reason: str | None = None
        self._callbacks: list[Callable[[], object]] = []

    def _ev(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
            if self._reason is not None:
                self._event.set()
        return self._event

    def set(self, reason: str = "interrupted") -> None:
        if self._reason is None:
            self._reason = reason
        self._ev().set()
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb()

    def on_set(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call `callback()` once when the signal is set (at once if it already is), without
        a task of its own. Returns a function that unregisters it. `callback` must not
        raise."""
        if self._reason is not None:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    @property
    def is_set(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    async def wait(self) -> str:
        await self._ev().wait()
        return self._reason or "interrupted"

    def clear(self) -> None:
        """Re-arm for the next turn."""
        self._reason = None
        if self._event is not None:
            self._event.clear()
