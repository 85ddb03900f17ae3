"""Approvals asked in the chat: a dangerous tool call waits for `/approve` or `/deny`.

`ApprovalDesk.ask` posts the request in the chat of the turn (with buttons where the
platform has them), stores it, and waits; a timeout denies. `ApprovalDesk.decide` is what
`/approve`, `/deny` and a button press reach: only the user who asked or an admin may
decide, anyone else is refused and the request stays open. Every request and decision is
stored (`ApprovalLedger`) and logged (`approval_requested`, `approval_decided`,
`approval_refused`).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from agent_core.ports import ApprovalDecision, ApprovalRequest
from gateway.delivery.service import DeliveryService, ReplyTarget
from gateway.events import Button, Principal
from hermes_common.redact import redact
from storage.ports import ApprovalLedger
from storage.types import ApprovalRecord

__all__ = ["APPROVE_ACTION", "DENY_ACTION", "ApprovalDesk", "TurnApprovals"]

log = structlog.get_logger("gateway.approvals")

APPROVE_ACTION = "approval:approve"
DENY_ACTION = "approval:deny"
MAX_PENDING = 1024
MAX_SHOWN_COMMAND = 1500
#: Replicas: how often a waiting request reads its stored decision.
SHARED_POLL_S = 0.5


@dataclass(slots=True)
class _Pending:
    record: ApprovalRecord
    requester: Principal
    future: asyncio.Future[ApprovalDecision] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())


def _shown(command: str) -> str:
    text = redact(command)
    return text if len(text) <= MAX_SHOWN_COMMAND else text[:MAX_SHOWN_COMMAND] + " …"


class ApprovalDesk:
    """One per gateway: the open requests of every chat."""

    def __init__(self, ledger: ApprovalLedger, delivery: DeliveryService, *,
                 clock: Callable[[], float] = time.time, shared: bool = False,
                 poll_s: float = SHARED_POLL_S) -> None:
        """`shared`: replicas on one database. `/approve` may then reach a replica other
        than the one whose turn waits (the approver's own session lives elsewhere): that
        replica decides the stored request, and the waiting one reads the decision from
        the store every `poll_s`."""
        self._ledger = ledger
        self._delivery = delivery
        self._clock = clock
        self._shared = shared
        self._poll_s = poll_s
        self._pending: dict[str, _Pending] = {}

    def pending_in(self, platform: str, chat_id: str) -> list[ApprovalRecord]:
        """Open requests of one chat, oldest first."""
        return [p.record for p in self._pending.values()
                if p.record.platform == platform and p.record.chat_id == chat_id]

    async def ask(self, target: ReplyTarget, requester: Principal, request: ApprovalRequest, *,
                  session_id: str | None, timeout_s: float) -> ApprovalDecision:
        """Ask in `target`'s chat and wait for the decision (at most `timeout_s`: then
        denied). Never raises but for cancellation (the request is then denied)."""
        if len(self._pending) >= MAX_PENDING:
            return ApprovalDecision(False, "too many approvals are waiting")
        approval_id = secrets.token_hex(4)
        command = _shown(request.command)
        record = ApprovalRecord(
            approval_id, session_id, requester.platform, target.chat_id, requester.user_id,
            request.tool, command, request.reason, created_at=self._clock())
        pending = self._pending[approval_id] = _Pending(record, requester)
        status, by = "timeout", None
        try:
            await self._store(self._ledger.record_approval(record))
            log.info("approval_requested", approval_id=approval_id, tool=request.tool,
                     reason=request.reason, platform=requester.platform,
                     chat_id=target.chat_id, session_id=session_id)
            minutes = f"{timeout_s / 60:g} min" if timeout_s >= 60 else f"{timeout_s:g} s"
            await self._delivery.notify(target, (
                f"⚠️ Approval needed ({request.reason}). The agent wants to run:\n\n"
                f"{command}\n\n"
                f"Reply /approve or /deny (id {approval_id}). Only the user who asked or an "
                f"admin may answer; without an answer in {minutes} it is denied."),
                buttons=(Button(label="Approve", action=APPROVE_ACTION, value=approval_id),
                         Button(label="Deny", action=DENY_ACTION, value=approval_id)))
            decision = await self._wait(pending, timeout_s)
            if decision is None:
                decision = ApprovalDecision(False, f"no answer within {timeout_s:g}s")
                await self._delivery.notify(
                    target, f"⌛ Approval {approval_id} timed out: the command was not run.")
            else:
                status = "approved" if decision.approved else "denied"
                by = decision.detail
            return decision
        except asyncio.CancelledError:
            status = "denied"
            raise
        finally:
            self._pending.pop(approval_id, None)
            if status == "timeout" or by is None:
                await self._store(self._ledger.decide_approval(approval_id, status=status,
                                                               decided_by=None))
                log.info("approval_decided", approval_id=approval_id, status=status,
                         decided_by=None)

    async def _wait(self, pending: _Pending, timeout_s: float) -> ApprovalDecision | None:
        """The decision, or None once `timeout_s` passed without one. Shared: a decision
        another replica stored counts; so does one stored just as the time ran out (the
        timeout is stored only while the request is still pending)."""
        if not self._shared:
            try:
                return await asyncio.wait_for(asyncio.shield(pending.future), timeout_s)
            except TimeoutError:
                return None
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                return await asyncio.wait_for(asyncio.shield(pending.future),
                                              max(0.0, min(self._poll_s, left)))
            except TimeoutError:
                pass
            stored = await self._stored_decision(pending.record)
            if stored is not None:
                return stored
            if left <= self._poll_s:
                break
        try:
            if await self._ledger.decide_approval(pending.record.id, status="timeout",
                                                  decided_by=None):
                return None
        except Exception as exc:  # noqa: BLE001 - denied by timeout all the same
            log.warning("approval_store_failed", error=type(exc).__name__)
            return None
        return await self._stored_decision(pending.record)

    async def _stored_decision(self, record: ApprovalRecord) -> ApprovalDecision | None:
        try:
            now = await self._ledger.get_approval(record.id)
        except Exception as exc:  # noqa: BLE001 - read again at the next poll
            log.warning("approval_store_failed", error=type(exc).__name__)
            return None
        if now is None or now.status not in ("approved", "denied"):
            return None
        who = "you" if now.decided_by == record.requester else f"admin {now.decided_by}"
        return ApprovalDecision(now.status == "approved", f"{now.status} by {who}")

    async def decide(self, *, platform: str, chat_id: str, user_id: str, approve: bool,
                     is_admin: bool, approval_id: str | None = None) -> str:
        """Apply `/approve` / `/deny` (or a button) from `user_id` in a chat; returns the
        reply for the chat. Must not raise."""
        verb = "approve" if approve else "deny"
        mine = [p for p in self._pending.values()
                if p.record.platform == platform and p.record.chat_id == chat_id
                and (approval_id is None or p.record.id == approval_id)]
        if not mine and self._shared:
            return await self._decide_stored(platform=platform, chat_id=chat_id,
                                             user_id=user_id, approve=approve,
                                             is_admin=is_admin, approval_id=approval_id)
        if not mine:
            return _nothing_waiting(approval_id)
        pending = mine[-1] if approval_id is None else mine[0]
        record = pending.record
        if user_id != record.requester and not is_admin:
            log.info("approval_refused", approval_id=record.id, platform=platform,
                     chat_id=chat_id, action=verb)
            return (f"🔒 Only the user who asked for it, or an admin, may {verb} this "
                    "command. It is still waiting.")
        if pending.future.done():
            return f"Approval {record.id} was already decided."
        status = "approved" if approve else "denied"
        await self._store(self._ledger.decide_approval(record.id, status=status,
                                                       decided_by=user_id))
        log.info("approval_decided", approval_id=record.id, status=status,
                 decided_by=user_id, by_admin=user_id != record.requester)
        who = "you" if user_id == record.requester else f"admin {user_id}"
        pending.future.set_result(ApprovalDecision(approve, f"{status} by {who}"))
        return (f"✅ Approved: running it now ({record.id})." if approve
                else f"🚫 Denied: the command will not run ({record.id}).")

    async def _decide_stored(self, *, platform: str, chat_id: str, user_id: str,
                             approve: bool, is_admin: bool, approval_id: str | None) -> str:
        """`decide` for a request whose turn waits on another replica: the stored request
        is decided here (first decision wins) and that replica reads it."""
        verb = "approve" if approve else "deny"
        try:
            open_here = await self._ledger.approvals_pending_in(platform, chat_id)
        except Exception as exc:  # noqa: BLE001 - the request stays open
            log.warning("approval_store_failed", error=type(exc).__name__)
            return "⚠️ The approval could not be read; try again in a moment."
        mine = [r for r in open_here if approval_id is None or r.id == approval_id]
        if not mine:
            return _nothing_waiting(approval_id)
        record = mine[-1] if approval_id is None else mine[0]
        if user_id != record.requester and not is_admin:
            log.info("approval_refused", approval_id=record.id, platform=platform,
                     chat_id=chat_id, action=verb)
            return (f"🔒 Only the user who asked for it, or an admin, may {verb} this "
                    "command. It is still waiting.")
        status = "approved" if approve else "denied"
        try:
            decided = await self._ledger.decide_approval(record.id, status=status,
                                                         decided_by=user_id)
        except Exception as exc:  # noqa: BLE001 - the request stays open
            log.warning("approval_store_failed", error=type(exc).__name__)
            return "⚠️ The decision could not be stored; try again in a moment."
        if not decided:
            return f"Approval {record.id} was already decided."
        log.info("approval_decided", approval_id=record.id, status=status,
                 decided_by=user_id, by_admin=user_id != record.requester, elsewhere=True)
        return (f"✅ Approved: running it now ({record.id})." if approve
                else f"🚫 Denied: the command will not run ({record.id}).")

    async def _store(self, op: Awaitable[object]) -> None:
        try:
            await op
        except Exception as exc:  # noqa: BLE001 - a store failure must not decide the request
            log.warning("approval_store_failed", error=type(exc).__name__)


def _nothing_waiting(approval_id: str | None) -> str:
    return ("Nothing is waiting for approval here." if approval_id is None
            else f"No approval {approval_id} is waiting here (it may have timed out).")


class TurnApprovals:
    """The `ApprovalPort` of one turn: asks in the turn's chat, for the turn's user."""

    def __init__(self, desk: ApprovalDesk, target: ReplyTarget, requester: Principal, *,
                 session_id: str | None, timeout_s: float) -> None:
        self._desk = desk
        self._target = target
        self._requester = requester
        self._session_id = session_id
        self._timeout_s = timeout_s

    async def request(self, request: ApprovalRequest) -> ApprovalDecision:
        return await self._desk.ask(self._target, self._requester, request,
                                    session_id=self._session_id, timeout_s=self._timeout_s)
