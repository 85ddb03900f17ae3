"""`TurnOpening`: the start of a turn up to its stored message: which session it runs in,
a compression still running there, and the message stored with the history read."""

from __future__ import annotations

from typing import Any

import structlog

from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.events import MessageEvent
from gateway.sessions.inbox import event_keys
from gateway.turns.ports import CompressionHook, TurnStore
from gateway.turns.sessions import SessionResolver
from storage.errors import SessionMovedError
from storage.types import Session

__all__ = ["TurnOpening"]

log = structlog.get_logger("gateway.turns")


class TurnOpening:
    def __init__(self, store: TurnStore, sessions: SessionResolver, delivery: DeliveryService,
                 compression: CompressionHook | None, compression_wait_s: float) -> None:
        self._store = store
        self._sessions = sessions
        self._delivery = delivery
        self._compression = compression
        self._compression_wait_s = compression_wait_s

    async def resolve(self, key: str, last: MessageEvent, target: ReplyTarget) -> str:
        """Look the key's live session up (the reset policy applied; created when missing),
        telling the user when the policy started a new one."""
        session, notice = await self._sessions.resolve(key, last)
        if notice:
            await self._delivery.notify(target, notice)
        return session.id

    async def compression_settled(self, session_id: str) -> None:
        """Wait (bounded) for a compression of the session that is still running."""
        if self._compression is not None and not await self._compression.wait_idle(
                session_id, self._compression_wait_s):
            log.info("turn_proceeds_uncompressed", session_id=session_id)

    async def append_first(self, key: str, last: MessageEvent, target: ReplyTarget,
                           sid: str, message: dict[str, Any], fresh: list[MessageEvent],
                           *, known: bool) -> tuple[Session, list[dict[str, Any]], list[int]]:
        """Store the turn's message (its events' holds let go) and read the history, in one
        transaction. A remembered session (`known`) is written under the resolver's live
        check; when that refuses it (another session is live for the key now, or the reset
        policy ends it), the key is resolved as usual and the write goes there."""
        release = event_keys(fresh)
        if known:
            try:
                stored = await self._store.append_and_read(
                    sid, [message], release=release, check=self._sessions.live_check(key))
            except SessionMovedError:
                log.debug("turn_session_moved", session_key=key, session_id=sid)
                sid = await self.resolve(key, last, target)
                await self.compression_settled(sid)
            else:
                self._sessions.remember(key, stored[0].id)
                return stored
        stored = await self._store.append_and_read(sid, [message], release=release)
        self._sessions.remember(key, stored[0].id)
        return stored
