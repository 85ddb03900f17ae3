"""`CompressionService`: the turn layer's `CompressionHook` on top of a `CompressionPool`,
plus `compress_now` for /compress and `hermes sessions compress`."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

import structlog

from agent_core.compression import ContextEngine
from gateway.compression.guardstate import from_stored, to_fields
from gateway.compression.outcome import JobOutcome
from gateway.compression.pool import CompressionPool
from gateway.compression.ports import CompressionStore
from storage import GuardState, StorageError

__all__ = ["CompressionService"]

log = structlog.get_logger("gateway.compression")


class AsyncCloseable(Protocol):
    async def aclose(self) -> None: ...


class CompressionService:
    """Implements `gateway.turns.service.CompressionHook`.

    `enabled=False` turns every automatic trigger off (after_turn and overflow recovery);
    manual `compress_now` still works. `closers` are awaited by `close()` after the pool
    (e.g. the summarizer's HTTP client).
    """

    def __init__(
        self,
        pool: CompressionPool,
        *,
        enabled: bool = True,
        closers: list[AsyncCloseable] | None = None,
        overflow_wait_s: float | None = None,
    ) -> None:
        self.pool = pool
        self.enabled = enabled
        self._closers = list(closers or [])
        self._overflow_wait_s = overflow_wait_s

    @property
    def store(self) -> CompressionStore:
        return self.pool.store

    @property
    def engine(self) -> ContextEngine:
        return self.pool.engine

    async def wait_idle(self, session_id: str, within_s: float) -> bool:
        """True when no job for the session is queued or running, waiting at most `within_s`
        for one to finish. Must not raise."""
        fut = self.pool.active(session_id)
        if fut is None:
            return True
        done, _ = await asyncio.wait({fut}, timeout=max(0.0, within_s))
        return bool(done)

    async def after_turn(self, session_id: str, prompt_tokens: int | None,
                         stored: GuardState | None = None) -> None:
        """Judge a pending compression with the real prompt size, persist the guards, and
        queue a job when the engine says so. `stored` is the guard state the turn began with
        when the caller already has it (read fresh otherwise). Never waits for a job; must
        not raise."""
        if not self.enabled or not prompt_tokens or prompt_tokens <= 0:
            return
        try:
            if stored is None:
                stored = await self.store.get_guard(session_id)
            before = from_stored(stored)
            guards = self.engine.update_from_response({"prompt_tokens": prompt_tokens}, before)
            if guards != before:
                await self.store.update_guard(
                    session_id, **to_fields(guards, prompt_tokens=prompt_tokens))
            go, reason = self.engine.should_compress(prompt_tokens, guards)
        except (StorageError, ValueError) as exc:
            log.warning("after_turn_failed", session_id=session_id, error=type(exc).__name__)
            return
        except Exception:  # noqa: BLE001 - never fail the turn that called us
            log.exception("after_turn_crashed", session_id=session_id)
            return
        if go:
            log.info("compression_queued", session_id=session_id, prompt_tokens=prompt_tokens)
            self.pool.submit(session_id, origin="auto")
        elif reason != "below_threshold":
            log.info("compression_blocked", session_id=session_id, reason=reason)

    async def compress_for_overflow(self, session_id: str) -> str | None:
        """Forced compression after a context-length error; waits for it. Returns the session
        to continue in (the child after a rotation, the same id in place) or None. When
        another holder is compressing, waits for its lease to clear and follows its result."""
        if not self.enabled:
            return None
        try:
            before = (await self.store.get_guard(session_id)).compression_count
            out = await self.pool.run(session_id, force=True, origin="overflow")
            if out.continue_in:
                return out.continue_in
            if out.status != "deferred":
                return None
            return await self._follow_other_holder(session_id, before)
        except StorageError as exc:
            log.warning("overflow_compression_failed", session_id=session_id,
                        error=type(exc).__name__)
            return None

    async def _follow_other_holder(self, session_id: str, count_before: int) -> str | None:
        limit = self._overflow_wait_s
        if limit is None:
            limit = self.pool.runner.timeout_seconds + self.pool.runner.lease_seconds
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if await self.store.current_lease(session_id) is None:
                break
            await asyncio.sleep(0.2)  # another process holds it: nothing to wait on locally
        tip = await self.store.tip(session_id)
        if tip != session_id:
            return tip
        if (await self.store.get_guard(session_id)).compression_count > count_before:
            return session_id
        return None

    async def compress_now(
        self,
        session_id: str,
        *,
        force: bool = True,
        focus: str | None = None,
        keep_last_turns: int | None = None,
        preview: bool = False,
    ) -> JobOutcome:
        """Manual compression (/compress, CLI) through the same pool, lease and fence.
        `preview` reports what would happen and changes nothing. Must not raise
        (storage failures become a `failed` outcome)."""
        try:
            if preview:
                return await self.pool.preview(
                    session_id, force=force, focus=focus, keep_last_turns=keep_last_turns)
            return await self.pool.run(session_id, force=force, focus=focus,
                                       keep_last_turns=keep_last_turns, origin="manual")
        except StorageError as exc:
            return JobOutcome("failed", session_id, detail=f"storage error: {type(exc).__name__}")

    def status(self) -> dict[str, Any]:
        return {"enabled": self.enabled, **self.pool.status()}

    async def close(self) -> None:
        """Close the pool, then the summarizer client. Idempotent; must not raise."""
        await self.pool.close()
        closers, self._closers = self._closers, []
        for c in closers:
            try:
                await c.aclose()
            except Exception:  # noqa: BLE001 - best effort
                log.warning("compression_close_failed")

    aclose = close
