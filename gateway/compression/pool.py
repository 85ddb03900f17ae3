"""`CompressionPool`: a bounded worker pool for compression jobs (DESIGN.md §4).

* `workers` asyncio tasks take jobs from a bounded queue (`queue_size`); a full queue answers
  `queue_full` at once. Nothing here blocks the event loop (the engine offloads CPU work).
* One job per session: a request for a session whose job is queued or running joins it (a
  queued automatic job is upgraded by a forced request's flags).
* Each job runs through `JobRunner`: durable lease (held elsewhere → `deferred`), renewal
  every ttl/3, deep snapshot, engine with guards read fresh, host timeout, fenced commit,
  guards written back, lease released.
* Status events go to `on_status(session_id, kind, text)` (sync or async; kinds
  `compacting`, `compacted`, `compaction_failed`, `deferred`); outcomes to
  `metrics.compression_outcome(status)`.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from agent_core.compression import ContextCompressor, ContextEngine
from gateway.compression.outcome import JobOutcome
from gateway.compression.ports import CompressionMemory, CompressionStore
from gateway.compression.runner import JobRequest, JobRunner, NotifyingSummarizer, PromptBuilder
from gateway.metrics import GatewayMetrics
from hermes_common.waits import cancel_and_wait

__all__ = ["CompressionPool", "StatusCallback"]

log = structlog.get_logger("gateway.compression")

StatusCallback = Callable[[str, str, str], Awaitable[None] | None]


@dataclass(slots=True)
class _Job:
    id: str
    request: JobRequest
    future: asyncio.Future[JobOutcome]
    running: bool = False
    started: float = 0.0
    task: asyncio.Task[Any] | None = field(default=None, repr=False)


class CompressionPool:
    """Schedules compression jobs; worker tasks start on the first `submit` (inside the running
    loop). Call `close()` when done. The engine's summarizer is wrapped once so jobs can
    announce `compacting`; `renew_leases=False` turns lease renewal off (tests)."""

    def __init__(
        self,
        store: CompressionStore,
        engine: ContextEngine,
        *,
        workers: int = 2,
        queue_size: int = 64,
        mode: str = "rotate",
        lease_seconds: float = 60.0,
        timeout_seconds: float = 120.0,
        renew_leases: bool = True,
        on_status: StatusCallback | None = None,
        metrics: GatewayMetrics | None = None,
        clock: Callable[[], float] = time.time,
        prompt_builder: PromptBuilder | None = None,
        memory: CompressionMemory | None = None,
    ) -> None:
        if mode not in ("rotate", "in_place"):
            raise ValueError(f"unknown compression mode {mode!r}")
        if isinstance(engine, ContextCompressor) and engine.summarizer is not None and not (
            isinstance(engine.summarizer, NotifyingSummarizer)
        ):
            engine.summarizer = NotifyingSummarizer(engine.summarizer)
        self.store = store
        self.engine = engine
        self.workers = max(1, int(workers))
        self.on_status = on_status
        self.metrics = metrics
        self.runner = JobRunner(
            store, engine, mode=mode, lease_seconds=lease_seconds,
            timeout_seconds=timeout_seconds, renew_leases=renew_leases, clock=clock,
            emit=self._emit, prompt_builder=prompt_builder, memory=memory)
        self._queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize=max(1, int(queue_size)))
        self._jobs: dict[str, _Job] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._outcomes: Counter[str] = Counter()
        self._closed = False

    @property
    def mode(self) -> str:
        return self.runner.mode

    # -- submitting ----------------------------------------------------------------------------
    def submit(
        self,
        session_id: str,
        *,
        force: bool = False,
        focus: str | None = None,
        keep_last_turns: int | None = None,
        origin: str = "auto",
    ) -> asyncio.Future[JobOutcome]:
        """Queue a job (or join the session's queued/running one); the future resolves with
        its `JobOutcome` and never raises (cancellation resolves it as `cancelled`)."""
        loop = asyncio.get_running_loop()
        existing = self._jobs.get(session_id)
        if existing is not None and not existing.future.done():
            if not existing.running and force:
                r = existing.request
                r.force = True
                r.focus = focus or r.focus
                r.keep_last_turns = keep_last_turns if keep_last_turns is not None else (
                    r.keep_last_turns)
                r.origin = origin
            return existing.future
        fut: asyncio.Future[JobOutcome] = loop.create_future()
        if self._closed:
            fut.set_result(JobOutcome("cancelled", session_id, detail="the pool is closed"))
            return fut
        req = JobRequest(session_id, force, focus, keep_last_turns, origin)
        job = _Job(uuid.uuid4().hex[:12], req, fut)
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            self._finish(job, JobOutcome("queue_full", session_id,
                                         detail="too many compression jobs are waiting"))
            return fut
        self._jobs[session_id] = job
        self._ensure_workers()
        return fut

    async def run(self, session_id: str, *, force: bool = False, focus: str | None = None,
                  keep_last_turns: int | None = None, origin: str = "auto") -> JobOutcome:
        """`submit` and wait for the outcome."""
        return await asyncio.shield(self.submit(
            session_id, force=force, focus=focus, keep_last_turns=keep_last_turns,
            origin=origin))

    async def preview(self, session_id: str, *, force: bool = False, focus: str | None = None,
                      keep_last_turns: int | None = None) -> JobOutcome:
        """What a compression would do now (no lease, nothing written)."""
        return await self.runner.preview(JobRequest(session_id, force, focus, keep_last_turns))

    def active(self, session_id: str) -> asyncio.Future[JobOutcome] | None:
        """The future of the session's queued or running job, if any."""
        job = self._jobs.get(session_id)
        return job.future if job is not None and not job.future.done() else None

    # -- workers -------------------------------------------------------------------------------
    def _ensure_workers(self) -> None:
        self._tasks = [t for t in self._tasks if not t.done()]
        while len(self._tasks) < self.workers:
            self._tasks.append(asyncio.create_task(self._worker(), name="compression-worker"))

    async def _worker(self) -> None:
        while True:
            job = await self._queue.get()
            try:
                if job.future.done():
                    continue
                job.running, job.started = True, time.monotonic()
                job.task = asyncio.current_task()
                try:
                    outcome = await self.runner.run(job.id, job.request)
                except asyncio.CancelledError:
                    self._finish(job, JobOutcome("cancelled", job.request.session_id,
                                                 detail="the pool was closed"))
                    raise
                except Exception as exc:  # noqa: BLE001 - a worker must survive any job
                    log.exception("compression_job_crashed", session_id=job.request.session_id)
                    outcome = JobOutcome("failed", job.request.session_id,
                                         detail=f"internal error: {type(exc).__name__}")
                self._finish(job, outcome)
            finally:
                self._queue.task_done()

    def _finish(self, job: _Job, outcome: JobOutcome) -> None:
        if self._jobs.get(job.request.session_id) is job:
            del self._jobs[job.request.session_id]
        if job.future.done():
            return
        job.future.set_result(outcome)
        self._outcomes[outcome.status] += 1
        log.info("compression_outcome", session_id=outcome.session_id, status=outcome.status,
                 child_session_id=outcome.child_session_id, detail=outcome.detail,
                 origin=job.request.origin)
        if self.metrics is not None:
            try:
                self.metrics.compression_outcome(outcome.status)
            except Exception:  # noqa: BLE001 - metrics never break a job
                log.warning("metrics_failed")

    async def _emit(self, session_id: str, kind: str, text: str) -> None:
        if self.on_status is None:
            return
        try:
            res = self.on_status(session_id, kind, text)
            if inspect.isawaitable(res):
                await res
        except Exception:  # noqa: BLE001 - a status sink never breaks a job
            log.warning("compression_status_failed", session_id=session_id, kind=kind)

    # -- introspection / shutdown --------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Snapshot for /status: queue depth, running jobs, outcome counts."""
        now = time.monotonic()
        running = [
            {"session_id": j.request.session_id, "job_id": j.id, "origin": j.request.origin,
             "seconds": round(now - j.started, 1)}
            for j in self._jobs.values() if j.running and not j.future.done()
        ]
        return {
            "workers": self.workers,
            "queued": self._queue.qsize(),
            "running": running,
            "outcomes": dict(self._outcomes),
            "mode": self.mode,
        }

    async def close(self) -> None:
        """Cancel workers (running jobs release their leases) and resolve every pending
        future as `cancelled`. Idempotent."""
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        for t in tasks:
            if exc := await cancel_and_wait(t):
                log.warning("compression_worker_failed", error=type(exc).__name__)
        while not self._queue.empty():
            job = self._queue.get_nowait()
            self._finish(job, JobOutcome("cancelled", job.request.session_id,
                                         detail="the pool was closed"))
        for job in list(self._jobs.values()):
            self._finish(job, JobOutcome("cancelled", job.request.session_id,
                                         detail="the pool was closed"))
