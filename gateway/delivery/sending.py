"""One attachment sent on a chat's rate budget, with every failure read as a `SendResult`
(the delivery service's final attachments and its voice replies both send this way)."""

from __future__ import annotations

import time

import structlog

from gateway.delivery.finals import ReplyTarget
from gateway.events import ErrorKind, OutboundAttachment, SendResult
from gateway.ports import BasePlatformAdapter
from gateway.ratelimit import BudgetClosed, ChatRateBudget, Deferred

__all__ = ["send_attachment"]

log = structlog.get_logger("gateway.delivery")


async def send_attachment(adapter: BasePlatformAdapter, budget: ChatRateBudget,
                          target: ReplyTarget, att: OutboundAttachment) -> SendResult:
    """One attachment on the chat's budget. Never raises: a budget deferral reads as a rate
    limit, a closed budget as transient, an adapter that raised as unknown."""
    try:
        await budget.acquire("send")
    except Deferred as d:
        return SendResult.failure(ErrorKind.RATE_LIMITED, "deferred by the rate budget",
                                  retry_after=max(0.0, d.until - time.monotonic()))
    except BudgetClosed:
        return SendResult.failure(ErrorKind.TRANSIENT, "delivery is closing")
    try:
        res = await adapter.send_media(target.chat_id, att, thread_id=target.thread_id)
    except Exception as exc:  # send_media must not raise: an adapter bug
        log.warning("attachment_send_error", adapter=target.adapter, error=type(exc).__name__)
        return SendResult.failure(ErrorKind.UNKNOWN, type(exc).__name__)
    if res.error_kind is ErrorKind.RATE_LIMITED and res.retry_after:
        budget.throttle(res.retry_after)
    return res
