"""`DurableInbox`: a session's queued events survive a restart.

The mailbox of a session worker lives in memory, while the event was already recorded as seen
(dedup) and the platform's offset moved on: a restart or a crash would lose every message
still waiting behind a running turn. So an event is *held* in state.db when it is accepted for
a session, and released in the same transaction that stores its user message (or when it is
dropped on purpose: /stop, a full mailbox). Start-up recovery hands held events back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import structlog

from gateway.events import MessageEvent
from storage import scrub
from storage.ports import HeldEvents

__all__ = ["DurableInbox", "event_keys"]

log = structlog.get_logger("gateway.sessions")


def event_keys(events: Iterable[MessageEvent]) -> list[tuple[str, str]]:
    return [(e.platform, e.event_id) for e in events]


class DurableInbox:
    """Holds and releases events through the store. Storage failures are logged, never
    raised: the in-memory mailbox still works, it is only not durable for that event."""

    def __init__(self, store: HeldEvents) -> None:
        self._store = store
        self._tasks: set[asyncio.Task[None]] = set()

    async def hold(self, key: str, event: MessageEvent) -> bool:
        """True when the event is now held durably."""
        try:
            await self._store.inbound_hold(event.platform, event.event_id, key, _payload(event))
        except Exception as exc:  # noqa: BLE001 - see class docstring
            log.warning("inbound_hold_failed", session_key=key, error=type(exc).__name__)
            return False
        return True

    async def release(self, events: Iterable[MessageEvent]) -> None:
        try:
            await self._store.inbound_release(event_keys(events))
        except Exception as exc:  # noqa: BLE001 - see class docstring
            log.warning("inbound_release_failed", error=type(exc).__name__)

    def release_soon(self, events: Iterable[MessageEvent]) -> None:
        """`release` from synchronous code (a task; the writer keeps submission order)."""
        batch = list(events)
        if not batch:
            return
        task = asyncio.get_running_loop().create_task(self.release(batch),
                                                      name="inbox-release")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def held(self) -> list[tuple[str, MessageEvent, float]]:
        """Held events in order as (session key, event, recorded at). A payload that no longer
        parses is released and skipped."""
        out: list[tuple[str, MessageEvent, float]] = []
        bad: list[tuple[str, str]] = []
        for h in await self._store.inbound_held():
            try:
                out.append((h.session_key, MessageEvent.model_validate_json(h.payload),
                            h.recorded_at))
            except ValueError:
                bad.append((h.platform, h.event_id))
        if bad:
            log.warning("held_events_unreadable", count=len(bad))
            await self._store.inbound_release(bad)
        return out

    async def close(self) -> None:
        """Wait for pending releases (before the store closes)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _payload(event: MessageEvent) -> str:
    """The event as JSON; text that cannot be encoded (lone surrogates from a broken client)
    is held with those characters replaced, as storage stores it."""
    try:
        return event.model_dump_json()
    except ValueError:
        return event.model_copy(update={"text": scrub(event.text)}).model_dump_json()
