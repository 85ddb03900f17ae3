"""`ReplyRelay`: the answer to a request only this replica can reply to, run by another one.

An HTTP API request (an adapter whose replies only the receiving process can write,
`Capabilities.reply_anywhere` False) may belong to a session another replica owns. The event
is handed over like any other and the owner runs its turn once; the owner's own API adapter
has no open request for it, so its reply reaches only the outbox, which every replica shares.
The replica holding the request follows the outbox for the final that replies to it and
hands that to its adapter, which answers the waiting client; past `timeout_s` the request
ends with an error. The client gets the final text only (no streamed preview).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Protocol

import structlog

from gateway.events import MessageEvent, OutboundMessage
from gateway.ports import BasePlatformAdapter
from storage.types import OutboxItem

__all__ = ["RELAY_POLL_S", "RELAY_TIMEOUT_S", "ReplyReader", "ReplyRelay"]

log = structlog.get_logger("gateway.replicas")

#: How often the outbox is read for a followed request's reply.
RELAY_POLL_S = 0.2
#: How long a request is followed: the api adapter's default `turn_timeout_s` (the request
#: itself ends at the adapter's own timeout, whichever comes first).
RELAY_TIMEOUT_S = 600.0


class ReplyReader(Protocol):
    async def outbox_reply_for(self, platform: str, chat_id: str, reply_to: str,
                               since: float) -> OutboxItem | None: ...


class ReplyRelay:
    """Follows handed-over requests of this replica's reply-here-only adapters."""

    def __init__(self, store: ReplyReader, adapters: Mapping[str, BasePlatformAdapter], *,
                 timeout_s: float, poll_s: float = RELAY_POLL_S) -> None:
        self._store = store
        self._adapters = adapters
        self._timeout = timeout_s
        self._poll = poll_s
        self._tasks: set[asyncio.Task[None]] = set()

    def follow(self, event: MessageEvent) -> None:
        """Answer `event`'s waiting request from the final another replica records for it."""
        if self._adapters.get(event.platform) is None:
            return
        task = asyncio.create_task(self._follow(event), name=f"reply-relay:{event.event_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _follow(self, event: MessageEvent) -> None:
        adapter = self._adapters[event.platform]
        reply_to = event.message_id or event.event_id
        since = time.time() - 1.0  # another host's clock may be a little behind
        deadline = time.monotonic() + self._timeout
        try:
            while time.monotonic() < deadline:
                try:
                    row = await self._store.outbox_reply_for(event.platform, event.chat_id,
                                                             reply_to, since)
                except Exception as exc:  # noqa: BLE001 - read again at the next poll
                    log.warning("reply_relay_read_failed", error=type(exc).__name__)
                    row = None
                if row is not None:
                    await adapter.send(OutboundMessage(chat_id=event.chat_id, text=row.text,
                                                       thread_id=event.thread_id,
                                                       reply_to=reply_to))
                    await adapter.turn_complete(event.chat_id, reply_to=reply_to, ok=True)
                    log.debug("reply_relayed", platform=event.platform, outbox_id=row.id)
                    return
                await asyncio.sleep(self._poll)
            log.warning("reply_relay_timed_out", platform=event.platform,
                        timeout_s=self._timeout)
            await adapter.turn_complete(
                event.chat_id, reply_to=reply_to, ok=False,
                error="the replica that owns this conversation did not answer in time")
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one request, never the process
            log.exception("reply_relay_failed", platform=event.platform)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
