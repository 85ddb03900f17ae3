"""Streams one turn's reply into one platform message, then finalizes it in place.

`on_delta` is called for every streamed token and costs only an append; a flusher task edits
the preview at most once per interval and only when the text changed. `finish()` replaces the
preview with the final text (split into parts when too long) exactly once, whatever happened
before: an interrupt, rate limits or failed edits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from gateway.events import ErrorKind, OutboundMessage, SendResult
from gateway.ports import BasePlatformAdapter
from hermes_common.waits import cancel_and_wait

__all__ = ["Budget", "DeliveryFailed", "Rendered", "StreamConsumer", "StreamSettings"]

log = structlog.get_logger("gateway.delivery")

CURSOR = " ▌"


class Budget(Protocol):
    """The chat's shared rate budget (see gateway.ratelimit)."""

    def try_acquire(self, kind: str) -> bool: ...

    async def acquire(self, kind: str) -> None: ...

    def throttle(self, retry_after: float) -> None: ...


@dataclass(frozen=True, slots=True)
class Rendered:
    """Final text converted to the platform dialect and split to its limit."""

    parts: list[str]
    formatted: bool = True


IN_FLIGHT_WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """`enabled=False` (config `gateway.streaming.enabled`) sends the final text only."""

    enabled: bool = True
    edit_interval_s: float = 1.0
    max_interval_s: float = 8.0
    max_edit_failures: int = 3
    preview_limit: int = 4000


class StreamConsumer:
    """One reply, one message (plus continuation parts when the final text is too long)."""

    def __init__(
        self,
        adapter: BasePlatformAdapter,
        *,
        chat_id: str,
        thread_id: str | None,
        reply_to: str | None,
        budget: Budget,
        preview: Callable[[str], str],
        settings: StreamSettings = StreamSettings(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._adapter = adapter
        self._chat = chat_id
        self._thread = thread_id
        self._reply_to = reply_to
        self._budget = budget
        self._preview = preview
        self._s = settings
        self._clock = clock
        self._can_edit = adapter.capabilities.edit and settings.enabled
        self._chunks: list[str] = []
        self._status: str | None = None
        self._dirty = False
        self._shown: str | None = None
        self.message_id: str | None = None
        #: the outbox id of the final being delivered: its sends carry "<id>.<part>"
        self.delivery_key: str | None = None
        self._interval = settings.edit_interval_s
        self._failures = 0
        self._flusher: asyncio.Task[None] | None = None
        self._pushing = False  # a preview send/edit is on its way to the platform
        self._wake = asyncio.Event()
        self._finished = False
        self._done: dict[int, list[str]] = {}
        self.edits = 0

    # -- streaming ---------------------------------------------------------------------
    def on_delta(self, text: str) -> None:
        """Append streamed text. O(1); never awaits."""
        if not text or self._finished:
            return
        self._chunks.append(text)
        self._dirty = True
        if not self._can_edit:
            return
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_loop(), name=f"stream:{self._chat}")
        else:
            self._wake.set()

    def on_status(self, text: str | None) -> None:
        """A short status line shown under the preview (tool progress, compaction)."""
        if self._finished:
            return
        self._status = text
        self._dirty = True
        if not self._can_edit:
            return
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_loop(), name=f"stream:{self._chat}")
        else:
            self._wake.set()

    @property
    def text(self) -> str:
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    def _preview_text(self) -> str:
        body = self.text
        if self._status:
            # the preview is sent as plain text: markdown markers would show as they are
            body = f"{body}\n\n{self._status}" if body else self._status
        return self._preview(body + CURSOR)

    async def _flush_loop(self) -> None:
        """Push the preview when it changed, then rest for the (backed-off) interval: the
        first preview goes out at once, later edits at most once per interval."""
        while not self._finished:
            if not self._dirty:
                self._wake.clear()
                await self._wake.wait()
                continue
            self._dirty = False
            self._pushing = True
            try:
                await self._push_preview()
            finally:
                self._pushing = False
            if not self._can_edit or self._finished:
                return
            await asyncio.sleep(self._interval)

    async def _push_preview(self) -> None:
        text = self._preview_text()
        if text == self._shown:
            return
        if self.message_id is None:
            if not self._budget.try_acquire("send"):
                self._dirty = True
                return
            res = await self._adapter.send(self._out(text, formatted=False))
            if res.ok and res.message_ids:
                self.message_id = res.message_ids[-1]
                self._shown = text
            else:
                self._note_failure(res)
            return
        if not self._budget.try_acquire("edit"):  # cosmetic: shed first
            self._dirty = True
            return
        res = await self._adapter.edit(self._chat, self.message_id, text, formatted=False)
        if res.ok or res.error_kind is ErrorKind.NOT_MODIFIED:
            self._shown = text
            self.edits += 1
            self._failures = 0
        else:
            self._note_failure(res)

    def _note_failure(self, res: SendResult) -> None:
        self._failures += 1
        self._dirty = True
        if res.error_kind is ErrorKind.RATE_LIMITED:
            self._budget.throttle(res.retry_after or self._interval * 2)
            self._interval = min(self._interval * 2, self._s.max_interval_s)
        if self._failures >= self._s.max_edit_failures:
            log.warning("stream_edits_disabled", chat_id=self._chat, error=res.error)
            self._can_edit = False

    def _out(self, text: str, *, formatted: bool, part: int | None = None) -> OutboundMessage:
        key = None if part is None or self.delivery_key is None else f"{self.delivery_key}.{part}"
        return OutboundMessage(
            chat_id=self._chat,
            thread_id=self._thread,
            reply_to=self._reply_to,
            text=text,
            formatted=formatted,
            delivery_key=key,
        )

    async def stop_streaming(self) -> None:
        """Stop the flusher (idempotent); the preview stays until `finish()`.

        A preview send or edit already on its way is let land first (up to
        `IN_FLIGHT_WAIT_S`): cut short, the platform may have the message while we never learn
        its id, and the final would then go out as a second message beside it."""
        self._finished = True
        self._wake.set()
        if self._flusher is not None:
            if self._pushing:
                await asyncio.wait((self._flusher,), timeout=IN_FLIGHT_WAIT_S)
            if exc := await cancel_and_wait(self._flusher):
                log.warning("preview_flush_failed", chat_id=self._chat,
                            error=type(exc).__name__)
            self._flusher = None

    # -- final -------------------------------------------------------------------------
    async def finish(
        self,
        rendered: Rendered,
        plain: Callable[[], Rendered],
        send_final: Callable[[OutboundMessage], Awaitable[SendResult]] | None = None,
    ) -> list[str]:
        """Deliver the final reply exactly once; returns the platform message ids.

        The first part replaces the preview in place when there is one and editing still
        works; otherwise it is sent as a new message (and the stale preview is removed where
        the platform allows). A part the platform rejects for its formatting is retried once as
        plain text (`plain()` renders the same reply unformatted): the text is never lost.

        May be called again with the same reply after it raised (a retry): parts already
        delivered are not sent again, and the first part still replaces the preview.

        Raises:
            DeliveryFailed: a part could not be delivered (its `result` says why).
            gateway.ratelimit.Deferred: the chat's budget allows no send soon enough.
        """
        await self.stop_streaming()
        send = send_final or self._adapter.send
        parts = rendered.parts or [""]
        fallback: list[str] | None = None
        for i, part in enumerate(parts):
            if i in self._done:
                continue
            res = await self._deliver_part(i, part, rendered.formatted, send)
            got: list[str] = []
            if not res.ok and res.error_kind in (ErrorKind.BAD_FORMAT, ErrorKind.TOO_LONG):
                if fallback is None:
                    fallback = plain().parts
                alt = fallback[i] if i < len(fallback) else part
                res = await self._deliver_part(i, alt, False, send)
                if res.ok and i == len(parts) - 1 and len(fallback) > len(parts):
                    for extra in fallback[len(parts):]:
                        await self._budget.acquire("final")
                        more = await send(self._out(extra, formatted=False))
                        got.extend(more.message_ids)
            if not res.ok:
                raise DeliveryFailed(res)
            first = (self.message_id,) if i == 0 and self.message_id else ()
            self._done[i] = [*(res.message_ids or first), *got]
        return [m for i in sorted(self._done) for m in self._done[i] if m]

    async def _deliver_part(
        self,
        index: int,
        text: str,
        formatted: bool,
        send: Callable[[OutboundMessage], Awaitable[SendResult]],
    ) -> SendResult:
        if index == 0 and self.message_id is not None and self._can_edit:
            await self._budget.acquire("final")
            res = await self._adapter.edit(self._chat, self.message_id, text, formatted=formatted)
            if res.ok or res.error_kind is ErrorKind.NOT_MODIFIED:
                return SendResult.success(self.message_id)
            if res.error_kind in (ErrorKind.BAD_FORMAT, ErrorKind.TOO_LONG):
                return res
            if res.error_kind is ErrorKind.RATE_LIMITED:
                self._budget.throttle(res.retry_after or 1.0)
                return res
            # The preview can no longer be edited: send the final as a new message instead.
            self._can_edit = False
        await self._budget.acquire("final")
        res = await send(self._out(text, formatted=formatted, part=index))
        if res.error_kind is ErrorKind.RATE_LIMITED:
            self._budget.throttle(res.retry_after or 1.0)
        if res.ok and index == 0 and self.message_id is not None and not self._can_edit:
            await self._delete_preview(self.message_id)
        return res

    async def _delete_preview(self, message_id: str) -> None:
        """Remove the preview the final replaced; if that cannot be done it stays. Must not
        raise."""
        try:
            await self._budget.acquire("delete")
            res = await self._adapter.delete(self._chat, message_id)
        except Exception as exc:  # deferred or closed budget, or an adapter bug
            log.info("preview_delete_skipped", chat_id=self._chat, error=type(exc).__name__)
            return
        if not res.ok:
            log.info("preview_delete_failed", chat_id=self._chat, kind=str(res.error_kind))


class DeliveryFailed(Exception):
    """A final part was refused; `result` is the platform's answer."""

    def __init__(self, result: SendResult) -> None:
        super().__init__(result.error or str(result.error_kind))
        self.result = result
