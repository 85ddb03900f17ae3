"""Self/bot filter and durable dedup: the first two steps of every inbound event."""

from __future__ import annotations

from typing import Protocol

from gateway.pipeline.chain import Inbound, Next

__all__ = ["DedupLedger", "Dedup", "drop_self_and_bots"]


async def drop_self_and_bots(item: Inbound, nxt: Next) -> None:
    """The bot's own messages and other bots never reach the agent."""
    user = item.event.user
    if user.is_self:
        item.drop("self")
        return
    if user.is_bot:
        item.drop("bot")
        return
    await nxt()


class DedupLedger(Protocol):
    async def record_inbound(self, platform: str, event_id: str) -> bool:
        """Durably record the event; True when it was not recorded before."""


class Dedup:
    """Durable dedup by (platform, event id) before anything else looks at the event.

    A redelivered event (webhook retry, re-polled update, reconnect replay) never makes a
    second turn, also across restarts, because the ledger lives in state.db.
    """

    def __init__(self, ledger: DedupLedger) -> None:
        self._ledger = ledger

    async def __call__(self, item: Inbound, nxt: Next) -> None:
        ev = item.event
        item.new = await self._ledger.record_inbound(ev.platform, ev.event_id)
        item.recorded = True
        if not item.new:
            item.drop("duplicate")
            return
        await nxt()
