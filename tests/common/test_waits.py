"""hermes_common.waits: sleep or run something unless a stop comes first, and say which."""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.eventloop import loop_factory
from hermes_common.waits import cancel_and_wait, relay, run_unless, sleep_unless, wait_any


class Signal:
    """A stop that is not an asyncio.Event (like the agent's InterruptSignal)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self) -> str:
        await self._event.wait()
        return "stopped"


def _later(delay: float, event: asyncio.Event | Signal) -> asyncio.TimerHandle:
    return asyncio.get_running_loop().call_later(delay, event.set)


async def _sleep_then_mark(cleaned: asyncio.Event, cleanup_s: float = 0.0) -> int:
    """Sleeps long; on the way out (cancelled) takes `cleanup_s`, then sets `cleaned`."""
    try:
        await asyncio.sleep(30)
    finally:
        if cleanup_s:
            await asyncio.sleep(cleanup_s)
        cleaned.set()
    return 1


def _leftover_tasks() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()}


async def test_sleeps_the_whole_delay_when_nothing_stops_it() -> None:
    stop = asyncio.Event()
    t0 = time.monotonic()
    assert await sleep_unless(0.05, stop) is False
    assert time.monotonic() - t0 >= 0.045
    await asyncio.sleep(0)
    assert not _leftover_tasks()


async def test_a_stop_ends_the_sleep_early_and_says_so() -> None:
    stop = Signal()
    _later(0.02, stop)
    t0 = time.monotonic()
    assert await sleep_unless(5.0, asyncio.Event(), stop) is True
    assert time.monotonic() - t0 < 1.0
    await asyncio.sleep(0)
    assert not _leftover_tasks()


async def test_a_stop_already_set_wins_even_over_a_zero_delay() -> None:
    stop = asyncio.Event()
    stop.set()
    assert await sleep_unless(0.0, stop) is True
    assert await sleep_unless(10.0, stop) is True


async def test_no_stop_is_a_plain_sleep_and_negative_delays_do_not_raise() -> None:
    assert await sleep_unless(-1.0) is False
    assert await sleep_unless(0.0, asyncio.Event()) is False


async def test_an_injected_sleep_is_used_and_its_failure_propagates() -> None:
    seen: list[float] = []

    async def fake_sleep(delay: float) -> None:
        seen.append(delay)

    assert await sleep_unless(42.0, asyncio.Event(), sleep=fake_sleep) is False
    assert seen == [42.0]

    async def broken(delay: float) -> None:
        raise RuntimeError("clock broke")

    with pytest.raises(RuntimeError, match="clock broke"):
        await sleep_unless(1.0, asyncio.Event(), sleep=broken)


async def test_cancelling_the_caller_cancels_the_wait_and_leaves_nothing_behind() -> None:
    started = asyncio.Event()

    async def sleeper() -> bool:
        started.set()
        return await sleep_unless(30.0, asyncio.Event(), asyncio.Event())

    task = asyncio.create_task(sleeper(), name="test-sleeper")
    await started.wait()
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert not _leftover_tasks()


async def test_run_unless_returns_the_result_when_the_work_finishes_first() -> None:
    async def work() -> int:
        await asyncio.sleep(0.01)
        return 7

    assert await run_unless(work(), asyncio.Event()) == (True, 7)


async def test_run_unless_cancels_the_work_when_stopped() -> None:
    stop = asyncio.Event()
    cleaned = asyncio.Event()
    _later(0.02, stop)
    assert await run_unless(_sleep_then_mark(cleaned), stop) == (False, None)
    assert cleaned.is_set()
    assert not _leftover_tasks()


async def test_run_unless_propagates_the_work_error_and_caller_cancellation() -> None:
    async def fails() -> None:
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        await run_unless(fails(), asyncio.Event())

    cleaned = asyncio.Event()
    task = asyncio.create_task(run_unless(_sleep_then_mark(cleaned), asyncio.Event()),
                               name="test-run-unless")
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned.is_set()


async def test_wait_any_and_relay() -> None:
    first, second, target = asyncio.Event(), Signal(), asyncio.Event()
    forward = asyncio.create_task(relay(second, target), name="test-relay")
    _later(0.01, second)
    await asyncio.wait_for(wait_any(first, second), 2)
    await asyncio.wait_for(forward, 2)
    assert target.is_set()
    with pytest.raises(ValueError):
        await wait_any()


async def test_cancel_and_wait_lets_the_task_clean_up_and_reports_its_failure() -> None:
    cleaned = asyncio.Event()
    task = asyncio.create_task(_sleep_then_mark(cleaned, cleanup_s=0.01), name="test-slow")
    await asyncio.sleep(0)
    assert await cancel_and_wait(task) is None
    assert cleaned.is_set() and task.cancelled()

    async def refuses() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise OSError("broken while stopping") from None

    task = asyncio.create_task(refuses(), name="test-refuses")
    await asyncio.sleep(0)
    failure = await cancel_and_wait(task)
    assert isinstance(failure, OSError)

    async def done() -> int:
        return 3

    finished = asyncio.create_task(done(), name="test-done")
    await asyncio.sleep(0)
    assert await cancel_and_wait(finished) is None and finished.result() == 3


@settings(max_examples=40, deadline=None)
@given(preset=st.lists(st.booleans(), min_size=1, max_size=5))
def test_stopped_exactly_when_some_stop_is_set(preset: list[bool]) -> None:
    async def check() -> bool:
        stops = [asyncio.Event() for _ in preset]
        for stop, is_set in zip(stops, preset, strict=True):
            if is_set:
                stop.set()

        async def instant(_delay: float) -> None:
            return None

        return await sleep_unless(60.0, *stops, sleep=instant)

    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        assert runner.run(check()) is any(preset)
