"""Start-up recovery of the outbox: finals an earlier process recorded but did not finish
delivering (RELIABILITY.md item 8). Runs once, before intake opens, through the delivery
service's own sending paths."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from gateway.delivery.render import render_final
from gateway.delivery.service import (
    RECOVERED_MARKER,
    RECOVERY_MAX_AGE_S,
    PreparedFinal,
    ReplyTarget,
)
from gateway.events import OutboundAttachment
from gateway.ports import DeliveryRef

if TYPE_CHECKING:
    from gateway.delivery.service import DeliveryService

__all__ = ["recover_outbox", "resend_claimed"]

log = structlog.get_logger("gateway.delivery")


async def recover_outbox(svc: DeliveryService) -> tuple[int, int]:
    """At start-up: re-send undelivered finals younger than 24 h once, with a marker;
    mark older ones expired. Returns (resent, expired). Only finals an earlier process
    recorded are taken (claimed for this boot in one transaction): one recorded by this
    process is being sent by its own turn."""
    return await resend_claimed(svc, await svc._ledger.outbox_claim_undelivered(svc.boot_id))


async def resend_claimed(svc: DeliveryService, pending: list[Any]) -> tuple[int, int]:
    """Finish finals this boot has just claimed from another (start-up recovery, or a
    replica taking a session over): the same rules as `recover_outbox`."""
    now = svc._clock()
    old = [p.id for p in pending if now - p.created_at > RECOVERY_MAX_AGE_S]
    if old:
        await svc._ledger.outbox_mark_expired(old)
    resent = 0
    for item in pending:
        if item.id in old:
            continue
        target = ReplyTarget(item.platform, item.chat_id, item.thread_id, item.reply_to,
                             item.chat_type or "dm")
        if item.state == "sent":
            # The text reached the platform, its attachments may not have: send them
            # (one that went out just before the crash may come twice, none is lost).
            await _recover_attachments(svc, item, target)
            continue
        if await _found_delivered(svc, item, target):
            continue
        await svc.resend(item.id, target, marker=RECOVERED_MARKER)
        resent += 1
    return resent, len(old)


async def _found_delivered(svc: DeliveryService, item: Any, target: ReplyTarget) -> bool:
    """A final sent just before the crash, before its row was marked: where the platform
    can tell (`already_delivered`), every part of it is in the chat. Then the row is marked
    delivered instead of sending the reply a second time."""
    adapter = svc._adapters.get(target.adapter)
    if adapter is None or item.preview_message_id or item.attachments:
        return False  # a preview is finished in place; attachments are not keyed
    ref = DeliveryRef(item.id, target.chat_id, target.thread_id, target.reply_to,
                      float(item.created_at))
    try:
        found = await adapter.already_delivered(ref)
        parts = len((await render_final(item.text, adapter.capabilities)).parts or [""])
    except Exception as exc:  # noqa: BLE001 - cannot tell: send it again
        log.warning("final_delivery_check_failed", adapter=target.adapter,
                    outbox_id=item.id, error=type(exc).__name__)
        return False
    if not found or any(i not in found for i in range(parts)):
        return False
    ids = [found[i] for i in range(parts)]
    log.info("final_found_delivered", adapter=target.adapter, outbox_id=item.id)
    await svc._delivered(PreparedFinal(target, item.id, item.text, ()), ids, 0)
    return True


async def _recover_attachments(svc: DeliveryService, item: Any, target: ReplyTarget) -> None:
    files = tuple(OutboundAttachment(**a) for a in item.attachments or ())
    ids = list(item.platform_message_ids or [])
    adapter = svc._adapters.get(target.adapter)
    final = PreparedFinal(target, item.id, item.text, files)
    if not files:
        await svc._delivered(final, None, 0)
    elif adapter is not None and await svc._send_attachments(adapter, final, ids, 0):
        await svc._delivered(final, ids, 0)
