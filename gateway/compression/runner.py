"""One compression job, start to finish: lease → snapshot → engine → fenced commit → guards.

The job never touches the live session: it works on a snapshot read from storage (the history
up to a message id), and publishes only through the storage commit fence, which refuses a
result whose lease was lost, whose session is no longer the live head, or whose deadline
passed. Guards are read fresh from storage and written back after every outcome that the job
owns (a commit, a no-op, a summarizer failure, a host timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import structlog

from agent_core.compression import (
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    CompressionGuards,
    CompressionResult,
    ContextEngine,
    Summarizer,
    blocked_reason,
    record_failure,
)
from agent_core.provider import load_sdk
from agent_core.tokens import TOKEN_CACHE_KEY
from gateway.compression.guardstate import from_stored, to_fields
from gateway.compression.outcome import JobOutcome
from gateway.compression.ports import CompressionMemory, CompressionStore
from hermes_common.waits import cancel_and_wait
from storage import FenceRejected, Lease, Session, StorageError

__all__ = ["Emit", "JobRequest", "JobRunner", "NotifyingSummarizer"]

log = structlog.get_logger("gateway.compression")

Emit = Callable[[str, str, str], Coroutine[Any, Any, None]]
PromptBuilder = Callable[[Session], Awaitable[str]]
_first_call: ContextVar[Callable[[], None] | None] = ContextVar("compression_first_call", default=None)
_HOST = socket.gethostname()


@dataclass(slots=True)
class JobRequest:
    """What to compress and how. `origin` is auto (after a turn), overflow or manual."""

    session_id: str
    force: bool = False
    focus: str | None = None
    keep_last_turns: int | None = None
    origin: str = "auto"


class NotifyingSummarizer:
    """Wraps the engine's summarizer so the running job can announce "compacting" when (and
    only when) a summary is actually being written."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner

    async def summarize(self, messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        hook = _first_call.get()
        if hook is not None:
            hook()
        return await self.inner.summarize(messages, max_tokens=max_tokens)


def _summary_preview(summary: str | None, limit: int = 300) -> str | None:
    if not summary:
        return None
    body = summary.replace(SUMMARY_PREFIX, "").replace(SUMMARY_END_MARKER, "").strip()
    return body[:limit]


def _clean(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k not in (TOKEN_CACHE_KEY, "_id")} for m in messages]


class JobRunner:
    """Runs jobs for a pool. `clock` must be the store's clock (epoch seconds): deadlines are
    checked by the storage fence. `renew_leases=False` turns lease renewal off (tests of a
    lease expiring mid-summary)."""

    def __init__(
        self,
        store: CompressionStore,
        engine: ContextEngine,
        *,
        mode: str = "rotate",
        lease_seconds: float = 60.0,
        timeout_seconds: float = 120.0,
        renew_leases: bool = True,
        clock: Callable[[], float] = time.time,
        emit: Emit,
        prompt_builder: PromptBuilder | None = None,
        memory: CompressionMemory | None = None,
    ) -> None:
        self.prompt_builder = prompt_builder
        self.memory = memory
        self.store = store
        self.engine = engine
        self.mode = mode
        self.lease_seconds = lease_seconds
        self.timeout_seconds = timeout_seconds
        self.renew_leases = renew_leases
        self.clock = clock
        self.emit = emit
        self._notices: set[asyncio.Task[None]] = set()

    def holder(self, job_id: str) -> str:
        return f"{_HOST}:{os.getpid()}:{job_id}"

    async def _quiet(self, session_id: str, kind: str, text: str) -> None:
        return None

    def _emitter(self, req: JobRequest) -> Emit:
        """Chat notices are for automatic jobs only: /compress, the CLI and an overflow inside
        a turn report their outcome themselves."""
        return self.emit if req.origin == "auto" else self._quiet

    async def run(self, job_id: str, req: JobRequest) -> JobOutcome:
        """Run one job. Must not raise (except CancelledError)."""
        sid = req.session_id
        emit = self._emitter(req)
        deadline = self.clock() + self.timeout_seconds
        try:
            session = await self.store.get_session(sid)
            if session is None:
                return JobOutcome("not_found", sid, detail="no such session")
            if not session.is_live:
                return JobOutcome("superseded", sid, detail="the session has already ended")
            # The summary needs the model SDK: load it (once per process, seconds on a busy
            # host) before the lease's clock starts, not while renewals must keep up.
            await load_sdk()
            lease = await self.store.acquire_lease(sid, self.holder(job_id), self.lease_seconds)
        except StorageError as exc:
            return JobOutcome("failed", sid, detail=f"storage error: {type(exc).__name__}")
        if lease is None:
            await emit(sid, "deferred", "⏳ This conversation is already being compacted "
                            "elsewhere; continuing without waiting.")
            return JobOutcome("deferred", sid, detail="another holder has the compression lease")
        try:
            out = await self._with_lease(lease, req, deadline)
        except StorageError as exc:
            out = JobOutcome("failed", sid, detail=f"storage error: {type(exc).__name__}",
                             lease_token=lease.token)
        finally:
            release = asyncio.ensure_future(self.store.release_lease(lease))
            try:
                await asyncio.shield(release)
            except Exception as exc:  # noqa: BLE001 - the lease expires on its own anyway
                log.warning("lease_release_failed", session_id=sid, error=type(exc).__name__)
        if out.status == "compressed":
            await emit(sid, "compacted", _compacted_text(out))
        elif out.status in ("failed", "timeout", "lease_lost", "superseded") and (
            req.origin != "auto" or out.status != "superseded"
        ):
            await emit(sid, "compaction_failed", f"⚠️ Compaction did not complete "
                            f"({out.status}: {out.detail}). The conversation continues unchanged.")
        return out

    async def _with_lease(self, lease: Lease, req: JobRequest, deadline: float) -> JobOutcome:
        sid = req.session_id
        session = await self.store.get_session(sid)
        if session is None or not session.is_live:
            return JobOutcome("superseded", sid, detail="the session has already ended",
                              lease_token=lease.token)
        guards = from_stored(await self.store.get_guard(sid))
        if not req.force and (why := blocked_reason(guards, self.clock())):
            return JobOutcome("skipped", sid, detail=f"blocked: {why}", lease_token=lease.token)
        history = await self.store.load_history(sid)
        snapshot_id = max((int(m.get("_id") or 0) for m in history), default=0)
        work, has_system = _with_system(session, history)
        box = [lease]
        lost = asyncio.Event()
        renewer = asyncio.create_task(self._renew(box, lost)) if self.renew_leases else None
        announced = False

        def announce() -> None:
            nonlocal announced
            if not announced:
                announced = True
                task = asyncio.get_running_loop().create_task(self._emitter(req)(
                    sid, "compacting", "🗜️ Compacting context — summarizing the earlier "
                    "conversation so it can continue…"))
                self._notices.add(task)
                task.add_done_callback(self._notices.discard)

        try:
            # The memory provider's text for the summary (bounded by its own timeout).
            recalled = await self.memory.pre_compress(session, history) if self.memory else ""
            token = _first_call.set(announce)
            try:
                engine_task = asyncio.create_task(self.engine.compress(
                    work, force=req.force, focus=req.focus, keep_last_turns=req.keep_last_turns,
                    memory_context=recalled or None, guards=guards),
                    name=f"compression-engine:{sid}")
            finally:
                _first_call.reset(token)
            result = await self._await_engine(engine_task, lost, deadline)
            if isinstance(result, JobOutcome):
                if result.status == "timeout":
                    failed = record_failure(guards, kind="transient", now=self.clock(),
                                            reason=f"timed out after {self.timeout_seconds:g}s")
                    await self._save_guards(sid, failed)
                return _with_token(result, sid, lease)
            if result.status != "compressed":
                await self._save_guards(sid, result.guards)
                return JobOutcome(result.status, sid, detail=result.reason,
                                  tokens_before=result.tokens_before, lease_token=lease.token)
            return await self._commit(box, session, result, snapshot_id, has_system, deadline,
                                      guards)
        finally:
            if renewer is not None:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer

    async def _await_engine(
        self, task: asyncio.Task[CompressionResult], lost: asyncio.Event, deadline: float
    ) -> CompressionResult | JobOutcome:
        waiter = asyncio.create_task(lost.wait())
        try:
            done, _ = await asyncio.wait(
                {task, waiter}, timeout=max(0.0, deadline - self.clock()),
                return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            if not task.done() and (late := await cancel_and_wait(task)):
                # the job already timed out or lost its lease: this result is discarded
                log.info("compression_engine_failed_late", error=type(late).__name__)
        if task in done and not task.cancelled():
            exc = task.exception()
            if exc is None:
                return task.result()
            log.error("compression_engine_crashed", error=type(exc).__name__, exc_info=exc)
            return JobOutcome("failed", "", detail=f"engine error: {type(exc).__name__}")
        if lost.is_set():
            return JobOutcome("lease_lost", "", detail="the lease could not be renewed; "
                              "the result was discarded")
        return JobOutcome("timeout", "", detail=f"no result within {self.timeout_seconds:g}s; "
                          "any late result is discarded")

    async def _commit(
        self,
        box: list[Lease],
        session: Session,
        result: CompressionResult,
        snapshot_id: int,
        has_system: bool,
        deadline: float,
        guards: CompressionGuards,
    ) -> JobOutcome:
        sid = session.id
        messages = _clean(result.messages)
        system_prompt: str | None = None
        if has_system and messages and messages[0].get("role") == "system":
            content = messages.pop(0).get("content")
            system_prompt = content if isinstance(content, str) else None
        if self.prompt_builder is not None:
            # A compaction is the moment a session's system prompt may change: memory
            # written since the session started reaches the prompt now (never mid-session).
            try:
                system_prompt = await self.prompt_builder(session)
            except Exception:  # noqa: BLE001 - keep the old prompt rather than fail the job
                log.warning("system_prompt_rebuild_failed", session_id=sid)
        fields = to_fields(result.guards)
        child: str | None = None
        try:
            if self.mode == "in_place":
                await self.store.commit_in_place(
                    box[0], sid, snapshot_last_message_id=snapshot_id,
                    compressed_messages=messages, deadline=deadline)
            else:
                child = await self.store.commit_rotation(
                    box[0], sid, snapshot_last_message_id=snapshot_id,
                    compressed_messages=messages, system_prompt=system_prompt,
                    deadline=deadline, **fields)
        except FenceRejected as exc:
            if exc.outcome == "timeout":
                failed = record_failure(guards, kind="transient", now=self.clock(),
                                        reason=f"timed out after {self.timeout_seconds:g}s")
                await self._save_guards(sid, failed)
            return JobOutcome(exc.outcome, sid, detail=f"result discarded: {exc}",
                              tokens_before=result.tokens_before, lease_token=box[0].token)
        if self.mode == "in_place":
            await self.store.update_guard(sid, **fields)
            if system_prompt is not None and system_prompt != session.system_prompt:
                await self.store.update_system_prompt(sid, system_prompt)
        elif child is not None and self.memory is not None:
            self.memory.rotated(session, child)
        return JobOutcome(
            "compressed", sid, child_session_id=child, detail=result.reason,
            tokens_before=result.tokens_before, tokens_after=result.tokens_after,
            summary_preview=_summary_preview(result.summary), lease_token=box[0].token)

    async def _renew(self, box: list[Lease], lost: asyncio.Event) -> None:
        interval = max(0.05, self.lease_seconds / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                renewed = await self.store.renew_lease(box[0], self.lease_seconds)
            except StorageError as exc:
                log.warning("lease_renew_error", session_id=box[0].session_id,
                            error=type(exc).__name__)
                continue
            if renewed is None:
                log.warning("lease_lost", session_id=box[0].session_id, token=box[0].token)
                lost.set()
                return
            box[0] = renewed

    async def _save_guards(self, sid: str, guards: CompressionGuards) -> None:
        try:
            await self.store.update_guard(sid, **to_fields(guards))
        except StorageError as exc:
            log.warning("guard_write_failed", session_id=sid, error=type(exc).__name__)

    async def preview(self, req: JobRequest) -> JobOutcome:
        """What a compression would do now; changes nothing. Must not raise."""
        sid = req.session_id
        session = await self.store.get_session(sid)
        if session is None:
            return JobOutcome("not_found", sid, detail="no such session")
        guards = from_stored(await self.store.get_guard(sid))
        work, _ = _with_system(session, await self.store.load_history(sid))
        try:
            result = await self.engine.compress(
                work, force=req.force, focus=req.focus, keep_last_turns=req.keep_last_turns,
                preview=True, guards=guards)
        except Exception as exc:  # noqa: BLE001 - an engine bug must not crash the caller
            return JobOutcome("failed", sid, detail=f"engine error: {type(exc).__name__}")
        details = ", ".join(f"{k}={v}" for k, v in sorted(result.details.items())
                            if isinstance(v, int | float | str))
        return JobOutcome("preview", sid, detail=f"{result.reason} ({details})".strip(),
                          tokens_before=result.tokens_before)


def _with_system(session: Session, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    if session.system_prompt and not (history and history[0].get("role") == "system"):
        return [{"role": "system", "content": session.system_prompt}, *history], True
    return list(history), False


def _with_token(out: JobOutcome, sid: str, lease: Lease) -> JobOutcome:
    return JobOutcome(out.status, sid, detail=out.detail, lease_token=lease.token)


def _compacted_text(out: JobOutcome) -> str:
    if out.tokens_before and out.tokens_after:
        return (f"🗜️ Context compacted: ~{out.tokens_before:,} → ~{out.tokens_after:,} tokens. "
                "Earlier turns are summarized; the full history stays searchable.")
    return "🗜️ Context compacted. Earlier turns are summarized; the full history stays searchable."
