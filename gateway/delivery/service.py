"""Delivery service: notices, streamed turns, final replies through the outbox, recovery."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import structlog

from gateway.delivery.chat_order import EARLIER_FINALS_WAIT_S, ChatKey, ChatOrder
from gateway.delivery.files import OutboundFiles
from gateway.delivery.finals import DraftFinal, PreparedFinal, ReplyTarget, draft_final
from gateway.delivery.render import preview_text, render_final, render_plain
from gateway.delivery.sending import send_attachment
from gateway.delivery.stream import DeliveryFailed, StreamConsumer, StreamSettings
from gateway.events import (
    Button,
    ErrorKind,
    OutboundAttachment,
    OutboundMessage,
    SendResult,
)
from gateway.ports import BasePlatformAdapter
from gateway.ratelimit import ChatRateBudget, Deferred, RateBudgets
from hermes_common.backoff import Backoff
from hermes_common.redact import redact
from storage.ports import OutboxLedger, Reachability

__all__ = ["DeliveryLedger", "DeliveryService", "DraftFinal", "PreparedFinal", "ReplyTarget", "RECOVERED_MARKER"]

log = structlog.get_logger("gateway.delivery")

RECOVERED_MARKER = "♻️ Recovered reply (the gateway restarted before it was sent):"
RECOVERY_MAX_AGE_S = 24 * 3600
TYPING_REFRESH_S = 4.0
MAX_RETRIES = 8
#: Pause before re-sending a final after a transient failure: 2 s doubling to 60 s, jittered.
_RESEND = Backoff(base_s=2.0, cap_s=60.0)
#: A retry that could not read its outbox row (the database away) tries again sooner.
_DEFERRED = Backoff(base_s=0.5, cap_s=5.0)
_MARK_RETRY = Backoff(base_s=0.25, cap_s=5.0)
_MARK_ATTEMPTS = 10  # about 30 s in all


class DeliveryLedger(OutboxLedger, Reachability, Protocol):
    """The outbox (a reply is recorded before it is sent) and the chats that are unreachable."""


class DeliveryService:
    """All outbound traffic of the gateway goes through here, on each chat's rate budget."""

    def __init__(
        self,
        adapters: Mapping[str, BasePlatformAdapter],
        ledger: DeliveryLedger,
        *,
        budgets: RateBudgets | None = None,
        files: OutboundFiles | None = None,
        stream: StreamSettings = StreamSettings(),
        clock: Callable[[], float] = time.time,
        on_outbound: Callable[[str], None] = lambda _adapter: None,
        boot_id: str | None = None,
    ) -> None:
        """`on_outbound(adapter name)` is called after every successful platform send.
        Without `files` no reply may attach a file. `boot_id` (this process's lifetime; a
        random one by default) claims every final this service records, so `recover()` never
        re-sends a final that is being sent live."""
        self._adapters = adapters
        self._ledger = ledger
        self.budgets = budgets or RateBudgets()
        self._files = files
        self._stream = stream
        self._clock = clock
        #: finals not out yet (a send, a retry), per chat and thread: later replies wait
        self._order = ChatOrder()
        self._unreachable: set[tuple[str, str]] = set()
        self._typing: dict[ReplyTarget, asyncio.Task[None]] = {}
        self._on_outbound = on_outbound
        self.boot_id = boot_id or uuid.uuid4().hex

    async def load_unreachable(self) -> None:
        """Remember which chats were marked unreachable (by an earlier run too)."""
        rows = await self._ledger.unreachable_chats()
        self._unreachable = {(r[0], str(r[1])) for r in rows}

    def maybe_unreachable(self, platform: str, chat_id: str) -> bool:
        return (platform, str(chat_id)) in self._unreachable

    def forget_unreachable(self, platform: str, chat_id: str) -> None:
        self._unreachable.discard((platform, str(chat_id)))

    async def _mark_unreachable(self, platform: str, chat_id: str, reason: str) -> None:
        self._unreachable.add((platform, str(chat_id)))
        await self._ledger.mark_unreachable(platform, chat_id, reason)

    def adapter(self, name: str) -> BasePlatformAdapter | None:
        return self._adapters.get(name)

    def _budget(self, t: ReplyTarget) -> ChatRateBudget:
        adapter = self._adapters.get(t.adapter)
        profile = adapter.capabilities.rate_profile if adapter is not None else t.adapter
        return self.budgets.for_chat(profile, f"{t.adapter}:{t.chat_id}", t.chat_type)

    # -- notices ---------------------------------------------------------------------------
    async def notify(self, target: ReplyTarget, text: str, *,
                     buttons: tuple[Button, ...] = ()) -> bool:
        """A short plain-text notice (command answers, busy acks, pairing codes), with
        `buttons` where the platform shows them. Never raises."""
        adapter = self._adapters.get(target.adapter)
        if adapter is None:
            return False
        try:
            await self._budget(target).acquire("send")
            res = await adapter.send(OutboundMessage(
                chat_id=target.chat_id, thread_id=target.thread_id, reply_to=target.reply_to,
                text=text, formatted=False, buttons=buttons))
        except Deferred:
            log.info("notice_shed", adapter=target.adapter, chat_id=target.chat_id)
            return False
        except Exception as exc:  # an adapter bug must not break the caller
            log.warning("notice_failed", adapter=target.adapter, error=type(exc).__name__)
            return False
        await self._after_send(target, res)
        return res.ok

    async def turn_complete(self, target: ReplyTarget, *, ok: bool, error: str | None = None) -> None:
        adapter = self._adapters.get(target.adapter)
        if adapter is not None:
            try:
                await adapter.turn_complete(target.chat_id, reply_to=target.reply_to, ok=ok,
                                            error=error)
            except Exception as exc:  # the hook must not raise; an adapter bug is logged
                log.warning("turn_complete_failed", adapter=target.adapter,
                            error=type(exc).__name__)

    # -- streaming ---------------------------------------------------------------------------
    def begin(self, target: ReplyTarget) -> StreamConsumer | None:
        adapter = self._adapters.get(target.adapter)
        if adapter is None:
            return None
        caps = adapter.capabilities
        return StreamConsumer(
            adapter, chat_id=target.chat_id, thread_id=target.thread_id,
            reply_to=target.reply_to, budget=self._budget(target),
            preview=lambda text: preview_text(text, caps), settings=self._stream,
        )

    def typing_loop(self, target: ReplyTarget) -> asyncio.Task[None] | None:
        """Refresh the typing indicator until the returned task is cancelled or the final
        reply to `target` is sent (whichever comes first). Never blocks delivery: typing is
        cosmetic and skipped whenever the chat's budget is short."""
        adapter = self._adapters.get(target.adapter)
        if adapter is None or not adapter.capabilities.typing:
            return None

        async def loop() -> None:
            budget = self._budget(target)
            while True:
                if budget.try_acquire("typing"):
                    try:
                        await adapter.typing(target.chat_id, target.thread_id)
                    except Exception as exc:  # typing must not raise; cosmetic, so go on
                        log.warning("typing_failed", adapter=target.adapter,
                                    error=type(exc).__name__)
                await asyncio.sleep(TYPING_REFRESH_S)

        self._stop_typing(target)
        task = asyncio.create_task(loop(), name=f"typing:{target.adapter}:{target.chat_id}")
        self._typing[target] = task
        task.add_done_callback(lambda t: self._typing.pop(target, None)
                               if self._typing.get(target) is t else None)
        return task

    def _stop_typing(self, target: ReplyTarget) -> None:
        task = self._typing.pop(target, None)
        if task is not None:
            task.cancel()

    # -- finals ------------------------------------------------------------------------------
    async def record_final(self, target: ReplyTarget, text: str, *, session_id: str | None,
                           preview_message_id: str | None = None) -> PreparedFinal:
        """Resolve MEDIA lines and record the reply in the outbox (`pending`) before anything
        is sent, so a crash from here on ends in exactly one delivery after restart. The row
        keeps what a re-send needs: the chat type, the attachments and the streaming preview's
        message id (recovery edits that preview in place)."""
        return await self.record_final_draft(await self.draft_final(
            target, text, session_id=session_id, preview_message_id=preview_message_id))

    async def record_final_draft(self, draft: DraftFinal) -> PreparedFinal:
        """Record a drafted final in the outbox on its own (see `draft_final`)."""
        return draft.recorded(await self._ledger.outbox_add(**asdict(draft.row)))

    async def draft_final(self, target: ReplyTarget, text: str, *, session_id: str | None,
                          preview_message_id: str | None = None) -> DraftFinal:
        """`record_final` without the write: the outbox row to record (the caller stores it,
        with the turn's messages) and, from its id, the final to send."""
        return await draft_final(target, text, files=self._files,
                                 adapter=self._adapters.get(target.adapter),
                                 boot_id=self.boot_id, session_id=session_id,
                                 preview_message_id=preview_message_id)

    async def send_final(self, final: PreparedFinal,
                         consumer: StreamConsumer | None = None) -> list[str]:
        """Send a recorded final reply and mark it delivered. Returns the platform message ids
        ([] when it could not be sent now: it then stays pending and is retried in the
        background after a rate limit or transient error, replacing the same preview, or
        marked failed when the chat is unreachable). Stops the turn's typing indicator."""
        self._stop_typing(final.target)
        chat = _chat_key(final.target)
        earlier = self._order.earlier(chat)
        # A task of its own, shielded: a turn cancelled while its final goes out (an
        # interrupt's grace ran out while the chat's rate limit held the send; chaos seed
        # 772018) must not cut the send off, and the chat's later answers wait behind it.
        task: asyncio.Task[Any] = asyncio.create_task(
            self._send_after(earlier, final, consumer), name=f"final-send:{final.outbox_id}")
        self._order.track(chat, task)
        task.add_done_callback(_retrieved)
        return list(await asyncio.shield(task))

    async def _send_after(self, earlier: set[asyncio.Task[Any]], final: PreparedFinal,
                          consumer: StreamConsumer | None) -> list[str]:
        """`send_final`'s task: after the chat's finals sent or retried before it (at most
        `EARLIER_FINALS_WAIT_S`), one attempt."""
        if earlier:
            await asyncio.wait(earlier, timeout=EARLIER_FINALS_WAIT_S)
        return await self._attempt(final, consumer, 0)

    async def deliver_final(self, target: ReplyTarget, text: str, *, session_id: str | None,
                            consumer: StreamConsumer | None = None) -> list[str]:
        """`record_final` then `send_final`."""
        final = await self.record_final(target, text, session_id=session_id)
        return await self.send_final(final, consumer)

    def _consumer(self, target: ReplyTarget) -> StreamConsumer:
        adapter = self._adapters[target.adapter]
        caps = adapter.capabilities
        return StreamConsumer(
            adapter, chat_id=target.chat_id, thread_id=target.thread_id,
            reply_to=target.reply_to, budget=self._budget(target),
            preview=lambda t: preview_text(t, caps), settings=self._stream)

    async def _attempt(self, final: PreparedFinal, consumer: StreamConsumer | None,
                       tries: int) -> list[str]:
        target, outbox_id = final.target, final.outbox_id
        adapter = self._adapters.get(target.adapter)
        if adapter is None:
            await self._ledger.outbox_record_attempt(outbox_id, "adapter not available")
            return []
        if self.maybe_unreachable(target.adapter, target.chat_id):
            await self._ledger.outbox_mark_failed(outbox_id, "chat unreachable")
            return []
        consumer = consumer or self._consumer(target)
        consumer.delivery_key = str(outbox_id)
        ids = await self._send_body(adapter, final, consumer, tries)
        if ids is None:
            return []
        if await self._send_attachments(adapter, final, ids, tries):
            await self._delivered(final, ids, tries)
        return ids

    async def _delivered(self, final: PreparedFinal, ids: list[str] | None, tries: int) -> None:
        """Mark the row delivered (its text and every attachment are out) and say so. The
        reply is in the chat already: a failing write (disk full, a long lock) is retried for
        a while, since a row left open is sent again after a restart (a duplicate)."""
        for attempt in range(1, _MARK_ATTEMPTS + 1):
            try:
                await self._ledger.outbox_mark_delivered([final.outbox_id], ids)
                break
            except Exception as exc:  # noqa: BLE001 - retried; the reply itself is out
                log.warning("final_mark_failed", adapter=final.target.adapter,
                            outbox_id=final.outbox_id, attempt=attempt,
                            error=type(exc).__name__)
                if attempt == _MARK_ATTEMPTS:
                    return
                await asyncio.sleep(_MARK_RETRY.delay(attempt))
        log.debug("final_delivered", adapter=final.target.adapter, outbox_id=final.outbox_id,
                 parts=len(ids or ()), attachments=len(final.attachments), retries=tries)

    async def _send_attachments(self, adapter: BasePlatformAdapter, final: PreparedFinal,
                                ids: list[str], tries: int) -> bool:
        """Send the final's attachments in order, after its text (the row is `sent`). True
        when every one went out. Otherwise the row is never marked delivered: after a rate
        limit or a transient failure the rest is retried later (and by start-up recovery);
        any other failure marks the row failed and tells the chat which file did not go."""
        target = final.target
        for i, att in enumerate(final.attachments):
            loaded = await self._load(att, target)
            if isinstance(loaded, str):  # refused when read: the chat is told, the rest go on
                log.warning("final_attachment_refused", adapter=target.adapter,
                            outbox_id=final.outbox_id, attachment=Path(att.path).name)
                await self.notify(target, loaded)
                continue
            res = await send_attachment(adapter, self._budget(target), target, loaded)
            if res.ok:
                self._on_outbound(target.adapter)
                continue
            name = Path(att.path).name
            kind = res.error_kind
            log.warning("final_attachment_failed", adapter=target.adapter,
                        outbox_id=final.outbox_id, attachment=name, kind=str(kind))
            if kind in (ErrorKind.RATE_LIMITED, ErrorKind.TRANSIENT):
                rest = replace(final, attachments=final.attachments[i:])
                hint = res.retry_after if kind is ErrorKind.RATE_LIMITED else None
                self._schedule(final, _RESEND.delay(tries + 1, retry_after=hint), tries,
                               partial(self._retry_attachments, rest, ids, tries + 1), ("sent",))
                return False
            reason = redact(f"attachment not sent: {name}: {res.error or kind}")
            await self._ledger.outbox_mark_failed(final.outbox_id, reason)
            await self.notify(target, f"⚠️ Attachment not sent: {name} ({kind or 'error'}).")
            return False
        return True

    async def _load(self, att: OutboundAttachment,
                    target: ReplyTarget) -> OutboundAttachment | str:
        """Check the file again and read it (off the event loop): the attachment with its
        bytes, or the note to show instead. Never raises."""
        if self._files is None:
            return f"⚠️ Attachment not sent: {Path(att.path).name}"
        return await asyncio.to_thread(self._files.load, att, target.adapter, target.chat_id)

    def takes_files(self, adapter: str) -> bool:
        """The adapter is here and its chats take files."""
        found = self._adapters.get(adapter)
        return found is not None and found.capabilities.media

    async def send_voice(self, target: ReplyTarget, data: bytes, name: str) -> SendResult:
        """Send `data` (OGG/Opus) as a voice note, where the platform has them, else as the
        file `name`: the spoken version of a reply already delivered, on the chat's budget.
        Not recorded in the outbox (an extra, not the reply). Never raises."""
        adapter = self._adapters.get(target.adapter)
        if adapter is None or not adapter.capabilities.media:
            return SendResult.failure(ErrorKind.UNKNOWN, "this chat takes no files")
        res = await send_attachment(adapter, self._budget(target), target,
                                    OutboundAttachment(path=name, as_voice=True, data=data))
        if res.ok:
            self._on_outbound(target.adapter)
        return res

    async def _retry_attachments(self, final: PreparedFinal, ids: list[str], tries: int) -> None:
        adapter = self._adapters.get(final.target.adapter)
        if adapter is not None and await self._send_attachments(adapter, final, ids, tries):
            await self._delivered(final, ids, tries)

    async def _send_body(self, adapter: BasePlatformAdapter, final: PreparedFinal,
                         consumer: StreamConsumer, tries: int) -> list[str] | None:
        target, outbox_id = final.target, final.outbox_id
        caps = adapter.capabilities
        body = final.body
        rendered = await render_final(body, caps)
        try:
            ids = await consumer.finish(rendered, lambda: render_plain(body, caps))
        except Deferred as d:
            await self._ledger.outbox_record_attempt(outbox_id, "deferred by the rate budget")
            self._retry_later(final, consumer, d.until - time.monotonic(), tries)
            return None
        except DeliveryFailed as f:
            await self._handle_failure(final, consumer, f.result, tries)
            return None
        except Exception as exc:
            await self._ledger.outbox_record_attempt(outbox_id, type(exc).__name__)
            log.warning("final_send_error", adapter=target.adapter, outbox_id=outbox_id,
                        error=type(exc).__name__)
            return None
        self._on_outbound(target.adapter)
        if final.attachments:
            # Attachments follow: record that the text is out before sending them.
            await self._ledger.outbox_mark_sent(outbox_id, ids)
        return ids

    async def _handle_failure(self, final: PreparedFinal, consumer: StreamConsumer,
                              res: SendResult, tries: int) -> None:
        target, outbox_id = final.target, final.outbox_id
        kind = res.error_kind
        err = res.error or str(kind)
        if kind in (ErrorKind.FORBIDDEN, ErrorKind.NOT_FOUND):
            await self._mark_unreachable(target.adapter, target.chat_id, err)
            await self._ledger.outbox_mark_failed(outbox_id, err)
        elif kind is ErrorKind.RATE_LIMITED:
            await self._ledger.outbox_record_attempt(outbox_id, err)
            self._retry_later(final, consumer,
                              _RESEND.delay(tries + 1, retry_after=res.retry_after or 1.0), tries)
        elif kind is ErrorKind.TRANSIENT:
            await self._ledger.outbox_record_attempt(outbox_id, err)
            self._retry_later(final, consumer, _RESEND.delay(tries + 1), tries)
        else:
            # A timeout may have delivered the message: don't send blindly again.
            await self._ledger.outbox_mark_failed(outbox_id, err)
        log.warning("final_send_failed", adapter=target.adapter, outbox_id=outbox_id,
                    kind=str(kind))

    def _retry_later(self, final: PreparedFinal, consumer: StreamConsumer, delay: float,
                     tries: int) -> None:
        """Try again after `delay` with the same consumer, so the retry replaces the same
        preview and skips parts already delivered."""
        self._schedule(final, delay, tries, lambda: self._attempt(final, consumer, tries + 1),
                       ("pending", "sent"))

    def _schedule(self, final: PreparedFinal, delay: float, tries: int,
                  again: Callable[[], Awaitable[object]], states: tuple[str, ...]) -> None:
        """Run `again()` after `delay` if the row is still in one of `states`. After
        `MAX_RETRIES` the row stays open for start-up recovery."""
        if tries >= MAX_RETRIES:
            log.warning("final_retries_exhausted", adapter=final.target.adapter,
                        outbox_id=final.outbox_id)
            return

        async def retry() -> None:
            await asyncio.sleep(max(delay, 0.05))
            try:
                item = await self._ledger.outbox_get(final.outbox_id)
            except Exception as exc:  # noqa: BLE001 - the database is away: try later
                # Rescheduled before this task ends, so the chat's later replies keep
                # waiting behind this one (chaos seed 2021: a cut-off database ended the
                # retry, and the next answer went out first).
                log.warning("final_retry_deferred", adapter=final.target.adapter,
                            outbox_id=final.outbox_id, error=type(exc).__name__)
                self._schedule(final, _DEFERRED.delay(tries + 1), tries + 1, again, states)
                return
            if item is not None and item.state in states:
                try:
                    await again()
                except Exception as exc:  # noqa: BLE001 - the row stays open for recovery
                    log.warning("final_retry_failed", adapter=final.target.adapter,
                                outbox_id=final.outbox_id, error=type(exc).__name__)

        task = asyncio.create_task(retry(), name=f"outbox-retry:{final.outbox_id}")
        self._order.track(_chat_key(final.target), task)

    async def wait_earlier_finals(self, target: ReplyTarget,
                                  timeout_s: float = EARLIER_FINALS_WAIT_S) -> None:
        """Wait (at most `timeout_s`) until no final of this chat and thread is still on its
        way (a send, a retry after a rate limit): a reply never overtakes an earlier one."""
        if not await self._order.wait(_chat_key(target), timeout_s):
            log.warning("earlier_final_still_pending", adapter=target.adapter)

    async def resend(self, outbox_id: int, target: ReplyTarget, marker: str | None = None) -> None:
        """Send an outbox row again (start-up recovery), prefixed with `marker` if given.
        Does nothing for a row that is missing or no longer open."""
        item = await self._ledger.outbox_get(outbox_id)
        if item is None or item.state not in ("pending", "sent"):
            return
        text = f"{marker}\n\n{item.text}" if marker else item.text
        files = tuple(OutboundAttachment(**a) for a in item.attachments or ())
        consumer = None
        adapter = self._adapters.get(target.adapter)
        if item.preview_message_id and adapter is not None and adapter.capabilities.edit:
            # The dead process left its streaming preview (with the cursor): finish it in place.
            consumer = self._consumer(target)
            consumer.message_id = item.preview_message_id
        await self._attempt(PreparedFinal(target, outbox_id, text, files), consumer, 0)

    async def _after_send(self, target: ReplyTarget, res: SendResult) -> None:
        if res.ok:
            self._on_outbound(target.adapter)
            return
        if res.error_kind is ErrorKind.RATE_LIMITED and res.retry_after:
            self._budget(target).throttle(res.retry_after)
        elif res.error_kind in (ErrorKind.FORBIDDEN, ErrorKind.NOT_FOUND):
            await self._mark_unreachable(target.adapter, target.chat_id,
                                         res.error or str(res.error_kind))

    # -- recovery ------------------------------------------------------------------------------
    async def recover(self) -> tuple[int, int]:
        """At start-up: re-send undelivered finals younger than 24 h once, with a marker;
        mark older ones expired. Returns (resent, expired). See `gateway.delivery.recovery`."""
        from gateway.delivery.recovery import recover_outbox  # it builds on this module

        return await recover_outbox(self)

    async def close(self) -> None:
        """Cancel pending retries and typing loops, close the budgets. Pending finals stay in
        the outbox for the next start."""
        for t in [*self._order.all, *self._typing.values()]:
            t.cancel()
        self.budgets.close()


def _retrieved(task: asyncio.Task[Any]) -> None:
    """A final's send whose turn was cancelled: its failure is logged, not left unread."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.warning("final_send_task_failed", error=type(exc).__name__)


def _chat_key(target: ReplyTarget) -> ChatKey:
    return (target.adapter, target.chat_id, target.thread_id)
