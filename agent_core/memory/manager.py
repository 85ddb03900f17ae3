"""`MemoryManager`: the one way the agent and the gateway reach an external memory provider.

A slow or failing provider never blocks or breaks a turn:

* `recall` is bounded by `recall_timeout_s`; a call still running then is cancelled and left
  to end on its own (never awaited again), and while `max_abandoned` such calls linger new
  recalls are skipped, so a hung service cannot pile up work.
* `sync`, `session_switch` and `session_end` only enqueue: one named background task works a
  bounded queue (`sync_queue_size`; a full queue drops the newest job, logged) one job at a
  time, each bounded by `sync_timeout_s`.
* `pre_compress` is bounded by `hook_timeout_s`.

Every failure is logged with an event name, the provider, the call and the error's type, never
its message or any text (a client's error may quote a key or a memory). None of the methods
raise, except CancelledError when their caller is cancelled.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import structlog

from agent_core.memory.fence import fence_recall, strip_fences
from agent_core.memory.provider import MemoryProvider, Message, UserScope
from agent_core.threats import screen

__all__ = ["MemoryManager", "MemorySettings", "TurnMemory"]

log = structlog.get_logger("agent_core.memory")

T = TypeVar("T")
Job = tuple[str, Callable[[], Coroutine[Any, Any, None]], UserScope]


class _Failed:
    """The outcome of a provider call that raised, timed out or was skipped."""


FAILED = _Failed()


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """The `memory.*` limits of the provider's calls."""

    recall_timeout_s: float = 3.0
    sync_timeout_s: float = 30.0
    hook_timeout_s: float = 10.0
    sync_queue_size: int = 64
    recall_max_chars: int = 4000
    max_abandoned: int = 4


class TurnMemory(Protocol):
    """What one turn's agent is given: the provider bound to the turn's user and session."""

    async def recall(self, query: str) -> str:
        """The fenced `<memory-context>` block for `query`, or "" (nothing, slow, failed)."""
        ...

    def sync(self, user: str, reply: str) -> None:
        """Queue the finished turn for the provider. Never blocks."""
        ...


class _Bound:
    """`TurnMemory` over a manager and one `UserScope`."""

    def __init__(self, manager: MemoryManager, scope: UserScope) -> None:
        self._manager = manager
        self.scope = scope

    async def recall(self, query: str) -> str:
        return await self._manager.recall(query, self.scope)

    def sync(self, user: str, reply: str) -> None:
        self._manager.sync(user, reply, self.scope)


class MemoryManager:
    """Runs one `MemoryProvider`. Build it anywhere; the background task starts with the
    first queued job (inside the running loop). `aclose()` drains the queue (bounded)."""

    def __init__(self, provider: MemoryProvider, settings: MemorySettings | None = None) -> None:
        self.provider = provider
        self.settings = settings or MemorySettings()
        self.stats: Counter[str] = Counter()
        self._queue: asyncio.Queue[Job] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._abandoned: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._started = False

    @property
    def name(self) -> str:
        return self.provider.name

    def for_turn(self, scope: UserScope) -> TurnMemory:
        return _Bound(self, scope)

    async def start(self) -> None:
        """Open the provider (bounded by `hook_timeout_s`; a failure is logged). Idempotent."""
        if self._started:
            return
        self._started = True
        if await self._call("start", self.provider.start(), self.settings.hook_timeout_s,
                            None) is not FAILED:
            log.info("memory_provider_started", provider=self.name)

    # -- before and after a turn ----------------------------------------------------------
    async def recall(self, query: str, scope: UserScope) -> str:
        """The fenced block of what the provider recalls for `query`, or ""."""
        if self._closed or not query.strip():
            return ""
        if len(self._abandoned) >= self.settings.max_abandoned:
            self.stats["recall_skipped"] += 1
            log.warning("memory_recall_skipped", provider=self.name, session_id=scope.session_id,
                        reason="earlier calls still hang", hanging=len(self._abandoned))
            return ""
        self.stats["recalls"] += 1
        entries = await self._call("recall", self.provider.recall(query, scope),
                                   self.settings.recall_timeout_s, scope)
        if isinstance(entries, _Failed) or not entries:
            return ""
        fenced = await asyncio.to_thread(fence_recall, entries, provider=self.name,
                                         max_chars=self.settings.recall_max_chars)
        if fenced.blocked:
            self.stats["recall_blocked"] += fenced.blocked
        log.debug("memory_recalled", provider=self.name, session_id=scope.session_id,
                 kept=fenced.kept, blocked=fenced.blocked, truncated=fenced.truncated,
                 chars=len(fenced.block))
        return fenced.block

    def sync(self, user: str, reply: str, scope: UserScope) -> bool:
        """Queue `sync_turn` for a finished turn. False when it was dropped."""
        provider = self.provider
        return self._enqueue("sync", lambda: provider.sync_turn(user, reply, scope), scope)

    # -- compression and session lifecycle --------------------------------------------------
    async def pre_compress(self, messages: Sequence[Message], scope: UserScope) -> str:
        """The provider's text for the summarizer, scanned (a finding drops it whole), or
        ""; bounded by `hook_timeout_s`."""
        if self._closed:
            return ""
        copy = [dict(m) for m in messages]
        text = await self._call("pre_compress", self.provider.on_pre_compress(copy, scope),
                                self.settings.hook_timeout_s, scope)
        if not isinstance(text, str) or not text.strip():
            return ""
        clean = strip_fences(text).strip()
        verdict = await asyncio.to_thread(
            screen, clean, source="the memory provider's pre-compression context",
            kind="memory_recall", scope="strict")
        if verdict.finding is not None:
            self.stats["pre_compress_blocked"] += 1
            log.warning("memory_pre_compress_blocked", provider=self.name,
                        session_id=scope.session_id, pattern_id=verdict.finding.pattern_id)
            return ""
        return clean

    def session_switch(self, scope: UserScope, new_session_id: str,
                       reason: str = "compression") -> bool:
        """Queue `on_session_switch` (after the turns' syncs already queued)."""
        provider = self.provider
        return self._enqueue(
            "session_switch",
            lambda: provider.on_session_switch(scope, new_session_id, reason), scope)

    def session_end(self, scope: UserScope, reason: str) -> bool:
        """Queue `on_session_end`."""
        provider = self.provider
        return self._enqueue("session_end", lambda: provider.on_session_end(scope, reason),
                             scope)

    async def idle(self) -> None:
        """Return once every queued job has run (tests, and the drain at close)."""
        if self._queue is not None:
            await self._queue.join()

    async def aclose(self, drain_s: float = 5.0) -> None:
        """Stop taking jobs, run what is queued (at most `drain_s`), then close the provider.
        Idempotent; must not raise."""
        if self._closed:
            return
        self._closed = True
        if self._queue is not None and self._worker is not None:
            try:
                await asyncio.wait_for(self._queue.join(), timeout=drain_s)
            except TimeoutError:
                log.warning("memory_sync_abandoned", provider=self.name,
                            pending=self._queue.qsize())
            self._worker.cancel()
            await asyncio.wait({self._worker})
        for task in list(self._abandoned):
            task.cancel()
        await self._call("close", self.provider.aclose(), self.settings.hook_timeout_s, None)

    # -- helpers ---------------------------------------------------------------------------
    def _enqueue(self, label: str, factory: Callable[[], Coroutine[Any, Any, None]],
                 scope: UserScope) -> bool:
        if self._closed:
            log.warning("memory_sync_dropped", provider=self.name, call=label,
                        session_id=scope.session_id, reason="closed")
            return False
        if self._queue is None:
            self._queue = asyncio.Queue(maxsize=max(1, self.settings.sync_queue_size))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(
                self._work(), name=f"memory-sync:{self.name}")
        try:
            self._queue.put_nowait((label, factory, scope))
        except asyncio.QueueFull:
            self.stats[f"{label}_dropped"] += 1
            log.warning("memory_sync_dropped", provider=self.name, call=label,
                        session_id=scope.session_id, reason="queue full",
                        queue_size=self._queue.maxsize)
            return False
        return True

    async def _work(self) -> None:
        assert self._queue is not None
        while True:
            label, factory, scope = await self._queue.get()
            try:
                if len(self._abandoned) >= self.settings.max_abandoned:
                    self.stats[f"{label}_skipped"] += 1
                    log.warning("memory_sync_skipped", provider=self.name, call=label,
                                session_id=scope.session_id, reason="earlier calls still hang")
                    continue
                self.stats[label] += 1
                await self._call(label, factory(), self.settings.sync_timeout_s, scope)
            except Exception:  # noqa: BLE001 - the worker outlives any one job
                log.exception("memory_sync_crashed", provider=self.name, call=label)
            finally:
                self._queue.task_done()

    async def _call(self, label: str, coro: Coroutine[Any, Any, T], timeout_s: float,
                    scope: UserScope | None) -> T | _Failed:
        """Run one provider coroutine for at most `timeout_s`. A call past its time is
        cancelled and abandoned (never awaited: a provider that ignores cancellation cannot
        hold up the caller)."""
        task = asyncio.get_running_loop().create_task(coro, name=f"memory-{label}:{self.name}")
        session = scope.session_id if scope is not None else None
        try:
            done, _ = await asyncio.wait({task}, timeout=max(0.0, timeout_s))
        except asyncio.CancelledError:
            self._abandon(task)
            raise
        if not done:
            self._abandon(task)
            self.stats[f"{label}_timeouts"] += 1
            log.warning("memory_provider_timeout", provider=self.name, call=label,
                        session_id=session, timeout_s=timeout_s)
            return FAILED
        if task.cancelled():
            self.stats[f"{label}_failures"] += 1
            log.warning("memory_provider_failed", provider=self.name, call=label,
                        session_id=session, error="CancelledError")
            return FAILED
        exc = task.exception()
        if exc is not None:
            self.stats[f"{label}_failures"] += 1
            log.warning("memory_provider_failed", provider=self.name, call=label,
                        session_id=session, error=type(exc).__name__)
            return FAILED
        return task.result()

    def _abandon(self, task: asyncio.Task[Any]) -> None:
        task.cancel()
        if task.done():
            return
        self._abandoned.add(task)
        task.add_done_callback(_forget(self._abandoned))


def _forget(tasks: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a late failure is not reported as unhandled

    return done
