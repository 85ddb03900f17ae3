"""Cancellable waits: sleep, or run something, unless a stop signal comes first.

One job, used by every loop of ours that pauses between tries or polls (the supervisor's
restart backoff, a chat's rate budget, the agent's retry waits, the adapters' transports):

- `sleep_unless(delay, *stops)` sleeps `delay` seconds unless one of `stops` is set first and
  says which happened (True: stopped);
- `run_unless(awaitable, *stops)` runs an awaitable unless a stop comes first (it is then
  cancelled) and hands back its result;
- `wait_any(*stops)` returns once any stop is set;
- `relay(source, target)` sets `target` once `source` is set;
- `cancel_and_wait(task)` cancels a task, waits for its end and hands back its failure.

A stop is anything with an awaitable `wait()` that returns once it is set (`asyncio.Event`,
the agent's `InterruptSignal`). Cancelling the caller cancels the wait (CancelledError
propagates); the helper tasks are always cancelled on the way out, so nothing is left behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar

__all__ = [
    "Settable", "Sleep", "cancel_and_wait", "relay", "run_unless", "sleep_unless", "wait_any",
]

T = TypeVar("T")

#: A sleep function (`asyncio.sleep` or a test clock's); its result is ignored.
Sleep = Callable[[float], Awaitable[object]]


class Settable(Protocol):
    """A one-shot signal: `wait()` returns once it is set (at once if it already is)."""

    def wait(self) -> Awaitable[object]: ...


async def sleep_unless(delay: float, *stops: Settable, sleep: Sleep | None = None) -> bool:
    """Sleep `delay` seconds (at least one loop turn) unless a stop is set first.

    Returns True when a stop was set before the time was up (a stop already set counts; a
    stop and the timer together count as stopped), False when the whole delay elapsed.
    `sleep` replaces `asyncio.sleep` (injected clocks). Raises what `sleep` raises;
    CancelledError when the caller is cancelled.
    """
    delay = max(0.0, delay)
    if not stops:
        await (sleep or asyncio.sleep)(delay)
        return False
    waiters = [_future(s.wait()) for s in stops]
    timer = _future(sleep(delay)) if sleep is not None else None
    try:
        if timer is None:
            await asyncio.wait(waiters, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
        else:
            await asyncio.wait([*waiters, timer], return_when=asyncio.FIRST_COMPLETED)
        stopped = any(w.done() and not w.cancelled() for w in waiters)
        if timer is not None and timer.done() and not timer.cancelled():
            failure = timer.exception()  # retrieved either way
            if failure is not None and not stopped:
                raise failure
        return stopped
    finally:
        _cancel(waiters, timer)


async def run_unless(aw: Awaitable[T], *stops: Settable) -> tuple[bool, T | None]:
    """Run `aw` unless a stop is set first; it is then cancelled (and awaited).

    Returns `(True, result)` when `aw` finished first (also when both happened together),
    `(False, None)` when a stop came first. Raises what `aw` raises; CancelledError when the
    caller is cancelled (`aw` is cancelled too).
    """
    task: asyncio.Future[T] = asyncio.ensure_future(aw)
    waiters = [_future(s.wait()) for s in stops]
    racing: list[asyncio.Future[Any]] = [task, *waiters]
    try:
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        await cancel_and_wait(task)
        raise
    finally:
        _cancel(waiters)
    if task.done():
        return True, task.result()
    await cancel_and_wait(task)
    return False, None


async def wait_any(*stops: Settable) -> None:
    """Return once any of `stops` is set. Raises CancelledError when the caller is cancelled."""
    if not stops:
        raise ValueError("wait_any() needs at least one stop")
    waiters = [_future(s.wait()) for s in stops]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        _cancel(waiters)


async def relay(source: Settable, target: asyncio.Event) -> None:
    """Set `target` once `source` is set (run it as a named task; cancel it when done)."""
    await source.wait()
    target.set()


async def cancel_and_wait(task: asyncio.Future[Any]) -> BaseException | None:
    """Cancel `task` unless it is done, and wait until it has ended (it may clean up first).

    Returns the exception it ended with (retrieved, so asyncio does not report it), None when
    it returned or was cancelled. Raises CancelledError only when the caller is cancelled.
    """
    if not task.done():
        task.cancel()
        await asyncio.wait({task})
    return None if task.cancelled() else task.exception()


def _future(aw: Awaitable[object]) -> asyncio.Future[object]:
    return asyncio.ensure_future(aw)


def _cancel(futures: Iterable[asyncio.Future[object]], extra: asyncio.Future[object] | None = None
            ) -> None:
    for fut in futures:
        fut.cancel()
    if extra is not None:
        extra.cancel()
