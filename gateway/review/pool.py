"""`ReviewPool`: a small bounded worker pool of its own for the background reviews.

Separate from the compression pool on purpose: its own queue and worker tasks (and the
review service's own HTTP client to the auxiliary model), so a compression job never waits
behind a review, however many are queued or however long one takes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import structlog

from hermes_common.waits import cancel_and_wait

__all__ = ["ReviewPool"]

log = structlog.get_logger("gateway.review")

J = TypeVar("J")


class ReviewPool(Generic[J]):
    """`workers` named tasks run `run(job)` for jobs taken from a queue of `queue_size`;
    workers start on the first `submit` (inside the running loop). A failing job is logged
    and the worker goes on. `close()` cancels the workers and drops what is queued."""

    def __init__(self, run: Callable[[J], Awaitable[None]], *, workers: int = 1,
                 queue_size: int = 16) -> None:
        self._run = run
        self.workers = max(1, workers)
        self._queue: asyncio.Queue[J] = asyncio.Queue(maxsize=max(1, queue_size))
        self._tasks: list[asyncio.Task[None]] = []
        self._running = 0
        self._closed = False

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    @property
    def running(self) -> int:
        return self._running

    def submit(self, job: J) -> bool:
        """Queue `job`; False (and nothing queued) when the queue is full or the pool
        closed. Never blocks."""
        if self._closed:
            return False
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            return False
        self._tasks = [t for t in self._tasks if not t.done()]
        while len(self._tasks) < self.workers:
            self._tasks.append(asyncio.create_task(
                self._worker(), name=f"review-worker-{len(self._tasks)}"))
        return True

    async def _worker(self) -> None:
        while True:
            job = await self._queue.get()
            self._running += 1
            try:
                await self._run(job)
            except Exception:  # noqa: BLE001 - a worker survives any job
                log.exception("review_job_crashed")
            finally:
                self._running -= 1
                self._queue.task_done()

    async def join(self) -> None:
        """Until every queued job ran (tests, benchmarks)."""
        await self._queue.join()

    async def close(self) -> None:
        """Cancel the workers (a running review stops) and drop the queue. Idempotent."""
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            if exc := await cancel_and_wait(task):
                log.warning("review_worker_failed", error=type(exc).__name__)
        dropped = 0
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
            dropped += 1
        if dropped:
            log.info("reviews_dropped_at_close", count=dropped)
