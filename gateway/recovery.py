"""Start-up recovery of turns a restart interrupted (RELIABILITY.md item 8)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import structlog

from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.events import ChatType, MessageEvent, UserRef
from gateway.sessions import SessionManager
from gateway.sessions.inbox import DurableInbox
from storage.types import Session

__all__ = ["recover_held", "recover_session_turn", "recover_unanswered"]

log = structlog.get_logger("gateway.recovery")

RERUN_MAX_AGE_S = 3600.0
LOOKBACK_S = 24 * 3600.0
RESUME_NOTICE = "🔄 The gateway restarted while I was answering; picking your message up again."
TAKEOVER_NOTICE = "🔄 Another gateway replica took this conversation over; answering again."
LOST_NOTICE = ("⚠️ The gateway restarted before I could answer your last message. "
               "Please send it again if you still need an answer.")


async def recover_unanswered(store: Any, manager: SessionManager, delivery: DeliveryService,
                             *, adapters: Mapping[str, Any], now: float | None = None) -> int:
    """Sessions whose last message is an unanswered user message: re-run the turn when it is
    younger than an hour (with a notice), otherwise only tell the user. A reply already in the
    outbox (sent or about to be re-sent) counts as an answer. Returns how many turns re-run."""
    now = time.time() if now is None else now
    rerun = 0
    for s in await store.list_sessions(live_only=True, limit=1000):
        rerun += await recover_session_turn(store, manager, delivery, s, adapters=adapters,
                                            now=now)
    return rerun


async def recover_session_turn(store: Any, manager: SessionManager, delivery: DeliveryService,
                               s: Session, *, adapters: Mapping[str, Any], now: float,
                               notice: str = RESUME_NOTICE) -> bool:
    """One session of `recover_unanswered` (also a replica taking a session over from one
    that died mid-turn). Returns whether its turn is re-run."""
    if not _can_push(adapters, s.source) or not s.chat_id or not s.session_key:
        return False
    if (s.last_activity or s.started_at) < now - LOOKBACK_S:
        return False
    last_id = await store.last_message_id(s.id)
    msg = await store.get_message(last_id) if last_id is not None else None
    if not msg or msg.get("role") != "user":
        return False
    ts = float(msg.get("_ts") or 0)
    latest = await store.outbox_latest_for_session(s.id)
    if latest is not None and latest.created_at >= ts:
        return False
    event = MessageEvent(
        platform=s.source, event_id=f"recovery:{s.id}:{last_id}", chat_id=s.chat_id,
        chat_type=ChatType(s.chat_type or "dm"), thread_id=s.thread_id,
        user=UserRef(id=s.user_id or "unknown"), text=str(msg.get("content") or ""),
        message_id=msg.get("_platform_message_id"), raw={"recovered_message_id": last_id},
    )
    target = ReplyTarget.of(event)
    rerun = now - ts <= RERUN_MAX_AGE_S
    if rerun:
        await delivery.notify(target, notice)
        await manager.dispatch(s.session_key, event, recovered=True)
    else:
        await delivery.notify(target, LOST_NOTICE)
        # Recorded as the answer, so the history alternates and no later restart repeats it.
        await store.append_messages(s.id, [{"role": "assistant", "content": LOST_NOTICE,
                                            "_notice": True}])
    log.info("unanswered_turn_found", session_id=s.id, rerun=rerun)
    return rerun


HELD_NOTICE = "🔄 The gateway restarted; answering the message(s) you sent meanwhile."
HELD_LOST_NOTICE = ("⚠️ The gateway restarted and this message waited too long to be answered "
                    "now: “{preview}”. Please send it again if you still need an answer.")


async def recover_held(inbox: DurableInbox, manager: SessionManager, delivery: DeliveryService,
                       *, adapters: Mapping[str, Any], now: float | None = None) -> int:
    """Events a restart caught waiting in a mailbox (held in state.db): younger than an hour
    they are queued again in their order (one notice per chat); older ones are let go with
    a notice quoting them. Returns how many were queued again.

    The events are claimed for this boot in one transaction (`DurableInbox.claim_held`):
    those the live path of this boot has held are never among them, so no event is queued
    by both paths."""
    now = time.time() if now is None else now
    requeued, told = 0, set()
    for key, event, recorded_at in await inbox.claim_held():
        if event.platform not in adapters or not key:
            continue
        if not _can_push(adapters, event.platform):  # its client is gone: nobody to answer
            await inbox.release([event])
            continue
        target = ReplyTarget.of(event)
        if now - recorded_at <= RERUN_MAX_AGE_S:
            if key not in told:
                told.add(key)
                await delivery.notify(target, HELD_NOTICE)
            await manager.dispatch(key, event, recovered=True)
            requeued += 1
        else:
            preview = " ".join(event.text.split())[:80] or "an attachment"
            await delivery.notify(target, HELD_LOST_NOTICE.format(preview=preview))
            await inbox.release([event])
    if requeued:
        log.info("held_events_requeued", count=requeued)
    return requeued


def _can_push(adapters: Mapping[str, Any], platform: str) -> bool:
    adapter = adapters.get(platform)
    return adapter is not None and bool(getattr(adapter.capabilities, "push", True))
