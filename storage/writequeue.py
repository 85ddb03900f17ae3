"""The writer's queue, shared by both backends: operations queue up while a batch commits,
the next batch takes everything queued (group commit), and every caller's future gets its
operation's result or error. A backend subclass runs a batch on its connection
(`_run_batch`, then `_resolve`) and closes that connection."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from storage.errors import StoreClosedError
from storage.sqlconn import Conn

__all__ = ["MAX_BATCH", "GroupCommitWriter", "MergedOp", "Op", "WriteItem"]

MAX_BATCH = 512
Op = Callable[[Conn], Coroutine[Any, Any, Any]]
MergedOp = Callable[[Conn, list[Any]], Coroutine[Any, Any, list[Any]]]


@dataclass(slots=True)
class WriteItem:
    """One queued operation: `op`, or a `payload` for the merger registered as `merge_key`."""

    op: Op | None
    merge_key: str | None
    payload: Any
    future: asyncio.Future[Any] = field(repr=False)


class GroupCommitWriter:
    """The queue and the task that drains it; `_run_batch` is the backend's."""

    task_name = "storage-writer"

    def __init__(self) -> None:
        self._queue: asyncio.Queue[WriteItem | None] = asyncio.Queue()
        self._mergers: dict[str, MergedOp] = {}
        self._closed = False
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.ops = 0

    def _launch(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.task_name)

    def on_failure(self, callback: Callable[[BaseException], None]) -> None:
        """Call `callback(error)` if the writer stops on an error (its connection broke).
        Not called after `close()` or when the writer is cancelled."""

        def done(task: asyncio.Task[None]) -> None:
            exc = None if task.cancelled() else task.exception()
            if exc is not None and not self._closing:
                callback(exc)

        if self._task is not None:
            self._task.add_done_callback(done)

    def register_merger(self, key: str, merged: MergedOp) -> None:
        """`merged(conn, payloads)` runs several queued payloads at once, returning one
        result per payload; it is also called with a single payload as a fallback."""
        self._mergers[key] = merged

    async def submit(self, op: Op) -> Any:
        return await self._put(WriteItem(op, None, None, self._new_future()))

    async def submit_merged(self, key: str, payload: Any) -> Any:
        return await self._put(WriteItem(None, key, payload, self._new_future()))

    def _new_future(self) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().create_future()

    async def _put(self, item: WriteItem) -> Any:
        if self._closed or self._task is None or self._task.done():
            raise StoreClosedError("state store is closed")
        self._queue.put_nowait(item)
        return await asyncio.shield(item.future)

    async def _drain_for_close(self) -> bool:
        """Let the queued operations finish and the task end. False when already closing."""
        if self._closing:
            return False
        self._closing = True
        self._closed = True
        self._queue.put_nowait(None)
        if self._task is not None:
            # A writer that stopped on an error already handed it to every caller and to
            # `on_failure`; here it is only waited for.
            await asyncio.wait({self._task})
            if not self._task.cancelled():
                self._task.exception()
        return True

    async def _run(self) -> None:
        stop = False
        try:
            while not stop:
                first = await self._queue.get()
                if first is None:
                    break
                batch = [first]
                while len(batch) < MAX_BATCH and not self._queue.empty():
                    nxt = self._queue.get_nowait()
                    if nxt is None:
                        stop = True
                        break
                    batch.append(nxt)
                try:
                    await self._run_batch(batch)
                except BaseException:
                    # The writer cannot go on (its connection broke); no caller may wait forever.
                    self._fail(batch, StoreClosedError("state store writer stopped"))
                    raise
        finally:
            self._closed = True
            while not self._queue.empty():
                left = self._queue.get_nowait()
                if left is not None and not left.future.done():
                    left.future.set_exception(StoreClosedError("state store is closed"))

    async def _run_batch(self, batch: list[WriteItem]) -> None:
        raise NotImplementedError

    def _fail(self, batch: Sequence[WriteItem], exc: BaseException) -> None:
        for item in batch:
            if not item.future.done():
                item.future.set_exception(exc)

    def _resolve(self, batch: list[WriteItem], results: list[tuple[bool, Any]]) -> None:
        """A committed batch: count it and hand each caller its result."""
        self.batches += 1
        self.ops += len(batch)
        for item, (ok, value) in zip(batch, results, strict=True):
            if item.future.done():
                continue
            if ok:
                item.future.set_result(value)
            else:
                item.future.set_exception(value)
